// The prelude's 8- and 4-bit float rounding helpers (tt_round_f8e4m3fnf, ..., the
// round_f8e4m3fn ... intrinsics, miniFloatHelpers in c.ts) and their vector forms, built
// with the kernels' flags, bit for bit against ir/float8.ts (itself checked against onnx's
// values in float8.test.ts) over every value of each type, each midpoint between neighbours
// and the float32s beside it, the float32 edges and random float32 bit patterns; the
// reference evaluator on the same; the CUDA and OpenCL preludes' helpers, built and run on
// an OpenCL device where there is one.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ComputeDAG } from '../ir/dag';
import { evaluate } from '../ir/evaluate';
import { call, f32, load, mul } from '../ir/expr';
import { MINI_FLOAT_FNS, MINI_FLOATS, miniFloatValue, roundMiniFloat } from '../ir/float8';
import { compute, placeholder } from '../ir/tensor';
import { LocalMeasurer } from '../measure/measurer';
import { openclAvailable } from '../native/opencl';
import type { Step } from '../schedule/steps';
import { skip } from '../skip.fixture';
import { parseTarget } from '../target';
import { unaryOp } from '../topi/elemwise';
import { MINI_FLOAT_C_NAMES } from './c';
import { CUDA_PRELUDE } from './cuda';
import { OPENCL_PRELUDE } from './opencl';
import { runPreludeLoops } from './prelude-loops.fixture';

const word = new Float32Array(1);
const bits = new Uint32Array(word.buffer);
const fromBits = (u: number): number => { bits[0] = u >>> 0; return word[0]; };
const toBits = (x: number): number => { word[0] = x; return bits[0]; };

/** Every value of every type, midpoints and their float32 neighbours, float32 edges, random bit patterns; a multiple of 16 long. */
function samples(): Float32Array {
  const out: number[] = [0, -0, Infinity, -Infinity, NaN, 3.4028234663852886e38, -3.4028234663852886e38, 2 ** -149, 2 ** -126, 1e-7, -1e-7, 1e6, -1e6];
  for (const [kind, f] of Object.entries(MINI_FLOATS)) {
    const values = Array.from({ length: 1 << (1 + f.exp + f.man) }, (_, b) => miniFloatValue(kind as keyof typeof MINI_FLOATS, b))
      .filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
    values.push(f.max * 2, -f.max * 2);
    values.sort((a, b) => a - b);
    for (let i = 0; i < values.length; i++) {
      out.push(values[i]);
      if (i + 1 < values.length) {
        const m = Math.fround((values[i] + values[i + 1]) / 2), u = toBits(m);
        out.push(m, fromBits(u - 1), fromBits(u + 1));
      }
    }
  }
  let s = 0x9e3779b9;
  for (let i = 0; i < 50_000; i++) {
    s = (Math.imul(s ^ (s >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0;
    out.push(fromBits(s));
  }
  while (out.length % 16) out.push(0);
  return Float32Array.from(out);
}

/** Runs each helper over `xs`, scalar and 8-lane: one array per (helper, form), in MINI_FLOAT_FNS order. */
function runPrelude(xs: Float32Array): Float32Array[] {
  return runPreludeLoops(xs, MINI_FLOAT_FNS.flatMap(({ fn }) => [
    `for (long i = 0; i < n; ++i) out[i] = ${MINI_FLOAT_C_NAMES[fn]}(in[i]);`,
    `for (long i = 0; i < n; i += 8) tt_v8_store(&out[i], tt_v8_${fn}(tt_v8_load(&in[i])));`,
  ]));
}

const same = (a: number, b: number): boolean => Object.is(a, b) || (Number.isNaN(a) && Number.isNaN(b));

test('the C prelude rounds to each 8/4-bit float bit for bit as ir/float8.ts, scalar and vector, saturating or not', () => {
  const xs = samples();
  const outs = runPrelude(xs);
  MINI_FLOAT_FNS.forEach(({ fn, kind, saturate }, k) => {
    const [scalar, vector] = [outs[2 * k], outs[2 * k + 1]];
    for (let i = 0; i < xs.length; i++) {
      const want = Math.fround(roundMiniFloat(kind, xs[i], saturate));
      if (!same(scalar[i], want)) assert.unreachable(`${MINI_FLOAT_C_NAMES[fn]}(${xs[i]}) = ${scalar[i]}, expected ${want}`);
      if (!same(vector[i], want)) assert.unreachable(`tt_v8_${fn}(${xs[i]}) = ${vector[i]}, expected ${want}`);
    }
  });
});

const EDGES = [0, -0, NaN, Infinity, -Infinity, 448, 464, 480, 240, 248, 57344, 61440, 65536, 6, 7, 5, 0.25, 2 ** -9, 2 ** -10, 3 * 2 ** -10, 2 ** -17, -(2 ** -20), 1.0625, 1.1875, 1e6, -1e6];

test('the reference evaluator runs the graph ops round_f8e4m3fn ... as ir/float8.ts', () => {
  for (const { fn, kind, saturate } of MINI_FLOAT_FNS) {
    const x = placeholder('x', [EDGES.length]);
    const out = unaryOp(fn, x);
    const got = evaluate(new ComputeDAG([out]), new Map([[x, Float32Array.from(EDGES)]])).get(out.name)!;
    EDGES.forEach((e, i) => assert.ok(same(got[i], Math.fround(roundMiniFloat(kind, e, saturate))), `${fn}(${e}) = ${got[i]}`));
  }
});

test('the CUDA and OpenCL preludes define the helpers and their vector forms', () => {
  for (const [name, prelude] of [['CUDA', CUDA_PRELUDE], ['OpenCL', OPENCL_PRELUDE]] as const) {
    for (const { fn } of MINI_FLOAT_FNS) {
      for (const helper of [`${MINI_FLOAT_C_NAMES[fn]}(float x)`, `tt_v4_${fn}(`]) assert.ok(prelude.includes(helper), `${name}: ${helper}`);
    }
  }
});

test('on an OpenCL device the helpers build and match the reference evaluator, scalar past the range and 4-lane in the subnormals', async () => {
  const why = openclAvailable();
  if (why) { skip('round_f8e4m3fn ... on the OpenCL device', why); return; }
  const measurer = new LocalMeasurer(parseTarget('opencl -max_vthread_extent=4'), { threads: 1, repeat: 1, number: 1 });
  try {
    // The measurer's random inputs, scaled past each type's range (scalar code) and into its
    // subnormals (4-lane code, which calls the scalar helper lane by lane).
    for (const [k, { fn, kind }] of MINI_FLOAT_FNS.entries()) {
      const f = MINI_FLOATS[kind];
      for (const [j, scale] of [f.max * 2, 2 ** (3 - f.bias)].entries()) {
        const x = placeholder('x', [1024]);
        const T = `T_m${k}_${j}`;
        const dag = new ComputeDAG([compute(T, [1024], ['i'], (i) => call(fn, mul(load(x, [i]), f32(scale))), 'elemwise')]);
        const steps: Step[] = j === 0
          ? [{ s: 'split', stage: T, iter: 'i', lengths: [64] }, { s: 'bind', stage: T, iter: 'i.0', thread: 'blockIdx.x' }, { s: 'bind', stage: T, iter: 'i.1', thread: 'threadIdx.x' }]
          : [
            { s: 'split', stage: T, iter: 'i', lengths: [64, 4] }, { s: 'bind', stage: T, iter: 'i.0', thread: 'blockIdx.x' },
            { s: 'bind', stage: T, iter: 'i.1', thread: 'threadIdx.x' }, { s: 'annotate', stage: T, iter: 'i.2', ann: 'vectorize' },
          ];
        const [o] = await measurer.measure({ dag }, [steps]);
        assert.is(o.error, null, `${fn} x ${scale}, ${j === 0 ? 'scalar' : 'vector'}: ${o.error}: ${o.message ?? ''}`);
      }
    }
  } finally {
    await measurer.close();
  }
});

test.run();
