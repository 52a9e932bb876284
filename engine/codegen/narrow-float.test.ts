// The prelude's tt_round_f16f / tt_round_bf16f (the round_f16 / round_bf16 intrinsics,
// narrowFloatHelpers in c.ts) and their vector forms, built with the kernels' flags, bit for
// bit against ir/half.ts (itself checked against the definition in half.test.ts) over
// every float16 and bfloat16 value, midpoint and neighbour of a midpoint, the float32 edges
// and random float32 bit patterns; and the reference evaluator and a generated kernel of the
// graph ops round_f16 / round_bf16 on the edge cases (subnormals, ties, overflow, NaN, ±0).

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ComputeDAG } from '../ir/dag';
import { evaluate } from '../ir/evaluate';
import { roundBfloat16, roundFloat16 } from '../ir/half';
import { narrowFloatSamples } from '../ir/half.fixture';
import { call, f32, load, mul } from '../ir/expr';
import { compute, placeholder } from '../ir/tensor';
import { LocalMeasurer } from '../measure/measurer';
import { openclAvailable } from '../native/opencl';
import type { Step } from '../schedule/steps';
import { skip } from '../skip.fixture';
import { parseTarget } from '../target';
import { unaryOp } from '../topi/elemwise';
import { CUDA_PRELUDE } from './cuda';
import { OPENCL_PRELUDE } from './opencl';
import { runPreludeLoops } from './prelude-loops.fixture';

/** Runs the prelude's scalar and 8- and 16-lane rounding over `xs` (a multiple of 16 long): f16, bf16, v8 f16, v16 bf16. */
function runPrelude(xs: Float32Array): Float32Array[] {
  return runPreludeLoops(xs, [
    'for (long i = 0; i < n; ++i) out[i] = tt_round_f16f(in[i]);',
    'for (long i = 0; i < n; ++i) out[i] = tt_round_bf16f(in[i]);',
    'for (long i = 0; i < n; i += 8) tt_v8_store(&out[i], tt_v8_round_f16(tt_v8_load(&in[i])));',
    'for (long i = 0; i < n; i += 16) tt_v16_store(&out[i], tt_v16_round_bf16(tt_v16_load(&in[i])));',
  ]);
}

const same = (a: number, b: number): boolean => Object.is(a, b) || (Number.isNaN(a) && Number.isNaN(b));

function padded(xs: Float32Array): Float32Array {
  const out = new Float32Array(Math.ceil(xs.length / 16) * 16);
  out.set(xs);
  return out;
}

test('the C prelude rounds to float16 and bfloat16 bit for bit as ir/half.ts, scalar and vector', () => {
  const xs = padded(narrowFloatSamples());
  const [f16, bf16, v8f16, v16bf16] = runPrelude(xs);
  for (let i = 0; i < xs.length; i++) {
    const x = xs[i], h = Math.fround(roundFloat16(x)), b = Math.fround(roundBfloat16(x));
    if (!same(f16[i], h)) assert.unreachable(`tt_round_f16f(${x}) = ${f16[i]}, expected ${h}`);
    if (!same(v8f16[i], h)) assert.unreachable(`tt_v8_round_f16(${x}) = ${v8f16[i]}, expected ${h}`);
    if (!same(bf16[i], b)) assert.unreachable(`tt_round_bf16f(${x}) = ${bf16[i]}, expected ${b}`);
    if (!same(v16bf16[i], b)) assert.unreachable(`tt_v16_round_bf16(${x}) = ${v16bf16[i]}, expected ${b}`);
  }
});

const EDGES = [0, -0, NaN, Infinity, -Infinity, 65504, 65519.99609375, 65520, -65520, 1 + 2 ** -11, 1 + 3 * 2 ** -11, 2 ** -25, 3 * 2 ** -25, 2 ** -24, -(2 ** -26), 1 + 2 ** -8, 3.4028234663852886e38, 2 ** -149];

test('the reference evaluator runs the graph ops round_f16 / round_bf16 as ir/half.ts', () => {
  for (const [kind, f] of [['round_f16', roundFloat16], ['round_bf16', roundBfloat16]] as const) {
    const x = placeholder('x', [EDGES.length]);
    const out = unaryOp(kind, x);
    const got = evaluate(new ComputeDAG([out]), new Map([[x, Float32Array.from(EDGES)]])).get(out.name)!;
    EDGES.forEach((e, i) => assert.ok(same(got[i], Math.fround(f(e))), `${kind}(${e}) = ${got[i]}`));
  }
  assert.equal([...evaluate(new ComputeDAG([unaryOp('round_f16', placeholder('y', [3]))]), new Map([['y', Float32Array.from([65520, 2 ** -25, 3 * 2 ** -25])]])).get('T_round_f16')!], [Infinity, 0, 2 ** -23]);
});

test('the CUDA and OpenCL preludes define the helpers and their vector forms', () => {
  for (const [name, prelude] of [['CUDA', CUDA_PRELUDE], ['OpenCL', OPENCL_PRELUDE]] as const) {
    for (const helper of ['tt_round_f16f(float x)', 'tt_round_bf16f(float x)', 'tt_v4_round_f16(', 'tt_v16_round_bf16(']) {
      assert.ok(prelude.includes(helper), `${name}: ${helper}`);
    }
  }
  assert.ok(CUDA_PRELUDE.includes('__float_as_uint(x)') && OPENCL_PRELUDE.includes('as_uint(x)'));
});

test('on an OpenCL device the helpers build and match the reference evaluator, scalar and 4-lane, on normal, overflowing and subnormal values', async () => {
  const why = openclAvailable();
  if (why) { skip('round_f16 / round_bf16 on the OpenCL device', why); return; }
  const measurer = new LocalMeasurer(parseTarget('opencl -max_vthread_extent=4'), { threads: 1, repeat: 1, number: 1 });
  try {
    // The measurer's random inputs, scaled into float16's overflow (1e5) and subnormal (1e-6) ranges.
    // Each DAG's stage has a name of its own: the measurer keeps one reference per workload.
    for (const [k, [fn, scale]] of ([['round_f16', 1], ['round_f16', 1e5], ['round_f16', 1e-6], ['round_bf16', 1], ['round_bf16', 1e-39]] as const).entries()) {
      const x = placeholder('x', [1024]);
      const T = `T_r${k}`;
      const dag = new ComputeDAG([compute(T, [1024], ['i'], (i) => call(fn, mul(load(x, [i]), f32(scale))), 'elemwise')]);
      const scalar: Step[] = [{ s: 'split', stage: T, iter: 'i', lengths: [64] }, { s: 'bind', stage: T, iter: 'i.0', thread: 'blockIdx.x' }, { s: 'bind', stage: T, iter: 'i.1', thread: 'threadIdx.x' }];
      const vector: Step[] = [
        { s: 'split', stage: T, iter: 'i', lengths: [64, 4] }, { s: 'bind', stage: T, iter: 'i.0', thread: 'blockIdx.x' },
        { s: 'bind', stage: T, iter: 'i.1', thread: 'threadIdx.x' }, { s: 'annotate', stage: T, iter: 'i.2', ann: 'vectorize' },
      ];
      for (const [what, steps] of [['scalar', scalar], ['vector', vector]] as const) {
        const [o] = await measurer.measure({ dag }, [steps]);
        assert.is(o.error, null, `${fn} x ${scale}, ${what}: ${o.error}: ${o.message ?? ''}`);
      }
    }
  } finally {
    await measurer.close();
  }
});

test.run();
