// The grid_sample compute (topi/grid-sample.ts) against a plain TypeScript reference written
// the way ONNX Runtime's CPU kernel and the ONNX reference read the spec: per output point,
// unnormalise, round (nearest: half to even), fold an outside coordinate back with
// reflection (repeatedly about the near border), then interpolate axis by axis over pixels
// fetched with the padding rule (border clamps each tap, as ONNX Runtime and PyTorch do; the
// ONNX reference's clamping of the coordinate itself differs for cubic, checked apart). Every mode x padding_mode x align_corners, 4-D and
// 5-D, on grids with points inside, exactly on the borders (-1, 1), outside (to +-7.375:
// several reflections), at exact halves (nearest's ties: -0.5 with align_corners 0 on an axis
// of 4 pixels is a half, so is -0.25 with align_corners 1 on an axis of 5) and random ones.
// Both sides run in float64 (the evaluator rounds each stored element to float32):
// |got - want| <= 1e-5.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ComputeDAG } from '../ir/dag';
import { evaluate } from '../ir/evaluate';
import { placeholder } from '../ir/tensor';
import { random } from './check.fixture';
import { CUBIC_A, gridSample, type GridSampleMode, type GridSampleOptions, type GridSamplePadding } from './grid-sample';

const TOL = 1e-5;
const MODES: readonly GridSampleMode[] = ['nearest', 'linear', 'cubic'];
const PADDINGS: readonly GridSamplePadding[] = ['zeros', 'border', 'reflection'];

/** Half to even, as rintf. */
function rint(x: number): number {
  const f = Math.floor(x), d = x - f;
  return d < 0.5 ? f : d > 0.5 ? f + 1 : f % 2 === 0 ? f : f + 1;
}

/** Fold x back into [lo, hi] by reflecting about the near border until inside (ONNX Runtime's GsReflect). */
function reflect(x: number, lo: number, hi: number): number {
  const range = hi - lo;
  if (range === 0) return lo;
  if (x < lo) {
    const dx = lo - x, k = Math.trunc(dx / range), rest = dx - k * range;
    return k % 2 === 0 ? lo + rest : hi - rest;
  }
  if (x > hi) {
    const dx = x - hi, k = Math.trunc(dx / range), rest = dx - k * range;
    return k % 2 === 0 ? hi - rest : lo + rest;
  }
  return x;
}

function cubicCoeffs(t: number): number[] {
  const a = CUBIC_A;
  const far = (s: number): number => ((a * s - 5 * a) * s + 8 * a) * s - 4 * a;
  const near = (s: number): number => ((a + 2) * s - (a + 3)) * s * s + 1;
  return [far(t + 1), near(t), near(1 - t), far(2 - t)];
}

/** The reference GridSample of x [N, C, d...] at grid [N, o..., r]. */
function reference(x: Float32Array, xs: readonly number[], grid: Float32Array, gs: readonly number[], o: GridSampleOptions): number[] {
  const r = xs.length - 2, dims = xs.slice(2), outPos = gs.slice(1, -1);
  const [N, C] = xs;
  const bounds = dims.map((d) => (o.alignCorners ? [0, d - 1] : [-0.5, d - 0.5]));
  const positions = outPos.reduce((p, d) => p * d, 1), pixels = dims.reduce((p, d) => p * d, 1);
  const out: number[] = [];
  for (let n = 0; n < N; n++) for (let c = 0; c < C; c++) {
    const image = x.subarray((n * C + c) * pixels, (n * C + c + 1) * pixels);
    /** The pixel at integer indices under the padding rule (zeros: 0 outside). */
    const pixel = (idx: number[]): number => {
      let flat = 0;
      for (let i = 0; i < r; i++) {
        let k = idx[i];
        const d = dims[i];
        if (o.padding === 'zeros' && (k < 0 || k >= d)) return 0;
        if (o.padding === 'border') k = Math.min(Math.max(k, 0), d - 1);
        if (o.padding === 'reflection') k = Math.trunc(reflect(k, bounds[i][0], bounds[i][1]));
        flat = flat * d + k;
      }
      return image[flat];
    };
    for (let p = 0; p < positions; p++) {
      const coords = dims.map((d, i) => {
        const g = grid[(n * positions + p) * r + (r - 1 - i)];
        let u = o.alignCorners ? ((g + 1) / 2) * (d - 1) : ((g + 1) * d - 1) / 2;
        if (o.mode === 'nearest') u = rint(u);
        const [lo, hi] = bounds[i];
        return o.padding === 'reflection' ? reflect(u, lo, hi) : u;
      });
      if (o.mode === 'nearest') { out.push(pixel(coords.map((u) => Math.trunc(u)))); continue; }
      // Interpolate the first axis over values interpolated along the later ones.
      const interp = (i: number, prefix: number[]): number => {
        if (i === r) return pixel(prefix);
        const f = Math.floor(coords[i]), t = coords[i] - f;
        const [first, weights] = o.mode === 'linear' ? [f, [1 - t, t]] : [f - 1, cubicCoeffs(t)];
        return weights.reduce((s, w, k) => s + w * interp(i + 1, [...prefix, first + k]), 0);
      };
      out.push(interp(0, []));
    }
  }
  return out;
}

/** Grid points: the special values (in every component, cycling) then seeded random ones in [-1.6, 1.6). */
const SPECIAL = [-1, 1, 0, -0.5, 0.5, -0.25, 0.25, -0.75, 0.75, 1.5, -1.5, 1.0625, -1.0625, 2.25, -3.125, 4.625, -7.375, 7.375, -0.125, 0.375];

function makeGrid(gs: readonly number[], seed: number): Float32Array {
  const total = gs.reduce((p, d) => p * d, 1);
  const g = random(total, seed, -1.6, 1.6);
  const r = gs[gs.length - 1];
  // The first points take the special values, each component shifted so pairs vary.
  for (let p = 0; p * r < Math.min(total, SPECIAL.length * r * 2); p++) {
    for (let k = 0; k < r; k++) g[p * r + k] = SPECIAL[(p + 7 * k) % SPECIAL.length];
  }
  return g;
}

function check(xs: number[], gs: number[], o: GridSampleOptions, seed: number): void {
  const x = placeholder('x', xs), grid = placeholder('grid', gs);
  const out = gridSample(x, grid, o);
  assert.equal(out.shape, [xs[0], xs[1], ...gs.slice(1, -1)]);
  const xd = random(x.shape.reduce((p, d) => p * d, 1), seed), gd = makeGrid(gs, seed + 1);
  const got = evaluate(new ComputeDAG([out]), new Map([[x, xd], [grid, gd]])).get(out.name)!;
  const want = reference(xd, xs, gd, gs, o);
  assert.is(got.length, want.length);
  for (let i = 0; i < want.length; i++) {
    if (!(Math.abs(got[i] - want[i]) <= TOL)) assert.unreachable(`${JSON.stringify(o)} x [${xs}] grid [${gs}]: element ${i} is ${got[i]}, expected ${want[i]}`);
  }
}

for (const mode of MODES) {
  test(`4-D, ${mode}: every padding_mode and align_corners (axes of 4 and 5 pixels, and of 2 and 1)`, () => {
    for (const padding of PADDINGS) {
      for (const alignCorners of [false, true]) {
        check([2, 3, 4, 5], [2, 6, 7, 2], { mode, padding, alignCorners }, 3);
        check([1, 2, 2, 1], [1, 5, 8, 2], { mode, padding, alignCorners }, 9);
      }
    }
  });
  test(`5-D, ${mode}: every padding_mode and align_corners`, () => {
    for (const padding of PADDINGS) {
      for (const alignCorners of [false, true]) check([1, 2, 3, 4, 5], [1, 2, 5, 6, 3], { mode, padding, alignCorners }, 21);
    }
  });
}

test('nearest ties round half to even, at the borders too', () => {
  // W = 4 pixels, align_corners 0: g = -1 is x = -0.5 (rounds to 0), g = -0.5 is 0.5 (0),
  // g = 0 is 1.5 (2), g = 0.5 is 2.5 (2), g = 1 is 3.5 (4: outside, then the padding rule).
  const x = placeholder('x', [1, 1, 1, 4]), grid = placeholder('grid', [1, 1, 5, 2]);
  const data = Float32Array.of(10, 11, 12, 13);
  const g = Float32Array.of(-1, 0, -0.5, 0, 0, 0, 0.5, 0, 1, 0);
  const want: Record<GridSamplePadding, number[]> = { zeros: [10, 10, 12, 12, 0], border: [10, 10, 12, 12, 13], reflection: [10, 10, 12, 12, 13] };
  for (const padding of PADDINGS) {
    const out = gridSample(x, grid, { mode: 'nearest', padding, alignCorners: false });
    const got = evaluate(new ComputeDAG([out]), new Map([[x, data], [grid, g]])).get(out.name)!;
    assert.equal([...got], want[padding], padding);
  }
  // W = 5, align_corners 1: x = 2 (g + 1); g = -0.75 is 0.5 (0), -0.25 is 1.5 (2), 0.25 is 2.5 (2), 0.75 is 3.5 (4).
  const x5 = placeholder('x5', [1, 1, 1, 5]);
  const out = gridSample(x5, grid, { mode: 'nearest', padding: 'zeros', alignCorners: true });
  const got = evaluate(new ComputeDAG([out]), new Map([[x5, Float32Array.of(10, 11, 12, 13, 14)], [grid, Float32Array.of(-0.75, 0, -0.25, 0, 0.25, 0, 0.75, 0, 1, 0)]])).get(out.name)!;
  assert.equal([...got], [10, 12, 12, 14, 14]);
});

test('linear on the borders and outside: zeros fades to 0, border holds the edge, reflection mirrors', () => {
  const x = placeholder('x', [1, 1, 1, 3]), grid = placeholder('grid', [1, 1, 3, 2]);
  const data = Float32Array.of(1, 2, 4);
  // align_corners 0, W = 3: g = -1 is x = -0.5, g = 1 is 2.5, g = -5/3 is -1.5.
  const g = Float32Array.of(-1, 0, 1, 0, -5 / 3, 0);
  const cases: [GridSamplePadding, number[]][] = [['zeros', [0.5, 2, 0]], ['border', [1, 4, 1]], ['reflection', [1, 4, 1.5]]];
  for (const [padding, want] of cases) {
    const out = gridSample(x, grid, { mode: 'linear', padding, alignCorners: false });
    const got = evaluate(new ComputeDAG([out]), new Map([[x, data], [grid, g]])).get(out.name)!;
    [...got].forEach((v, i) => assert.ok(Math.abs(v - want[i]) <= TOL, `${padding}[${i}]: ${v}, expected ${want[i]}`));
  }
});

test('cubic with border clamps the taps, not the coordinate (as ONNX Runtime; the ONNX reference differs)', () => {
  // X[h, w] = (5h + w)^2 on 4 x 5 pixels, align_corners 0, x = 3.25 and y just past the
  // border. ONNX Runtime 1.30 gives 346.51038, 7.2689247, 10.719614 (measured); clamping y
  // to [0, 3] first, as the ONNX reference does, would give 336.07422, 11.113281, 11.113281.
  // Within 1e-4: values near 350, measured to 8 digits.
  const x = placeholder('x', [1, 1, 4, 5]), grid = placeholder('grid', [1, 1, 3, 2]);
  const data = Float32Array.from({ length: 20 }, (_, i) => i * i);
  const out = gridSample(x, grid, { mode: 'cubic', padding: 'border', alignCorners: false });
  const got = evaluate(new ComputeDAG([out]), new Map([[x, data], [grid, Float32Array.of(0.5, 1.0625, 0.5, -1.0625, 0.5, -1.2)]])).get(out.name)!;
  [346.51038, 7.2689247, 10.719614].forEach((w, i) => assert.ok(Math.abs(got[i] - w) <= 1e-4, `[${i}]: ${got[i]}, expected ${w}`));
});

test('bad inputs are refused in one line', () => {
  const o: GridSampleOptions = { mode: 'linear', padding: 'zeros', alignCorners: false };
  assert.throws(() => gridSample(placeholder('x', [1, 2, 3, 4]), placeholder('g', [1, 2, 2, 3]), o), /grid \[1, 2, 2, 3\] for input \[1, 2, 3, 4\] \(expected \[1, \.\.\., 2\]\)/);
  assert.throws(() => gridSample(placeholder('x', [1, 2, 3, 4]), placeholder('g', [2, 2, 2, 2]), o), /grid \[2, 2, 2, 2\]/);
  assert.throws(() => gridSample(placeholder('x', [1, 2, 3, 4], 'int32'), placeholder('g', [1, 2, 2, 2]), o), /int32 input and float32 grid \(float32 both\)/);
  assert.throws(() => gridSample(placeholder('x', [1, 2]), placeholder('g', [1, 2]), o), /input of rank 2/);
});

test.run();
