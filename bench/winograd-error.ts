// Numerical error of Winograd F(2x2, 3x3) and F(4x4, 3x3) against the direct conv, on the
// 3x3 stride-1 layers of the builtin ResNets with their (seeded) weights, as the measurer
// compares: max |winograd - direct| / max |direct| over the layer's output, plus the
// largest element-wise excess over the default rtol.
//
// Both convs run in the reference evaluator (float64 arithmetic, every stage stored as
// float32, so Winograd's transformed tiles and GEMM results are rounded to float32 as a
// float32 kernel rounds them). Inputs: uniform [0, 1) (what the measurer feeds; post-ReLU
// activations are non-negative too) and uniform [-1, 1).
//
//   npx tsx bench/winograd-error.ts [--networks resnet-18,resnet-50]

import { getNetwork } from '../engine/frontend/networks';
import type { ConstantNode, OpNode } from '../engine/graph/graph';
import { optimize } from '../engine/graph/passes';
import { winogradEligible } from '../engine/graph/winograd';
import { ComputeDAG } from '../engine/ir/dag';
import { evaluate } from '../engine/ir/evaluate';
import { numElements, placeholder, type Tensor, type TensorData } from '../engine/ir/tensor';
import { uniform } from '../engine/runtime/random';
import { conv2dNHWC } from '../engine/topi/nn';
import { conv2dWinogradNHWC, winogradMatrices, winogradWeightTransform, type WinogradTile } from '../engine/topi/winograd';
import { benchArgs } from './args';

const args = benchArgs('bench/winograd-error.ts', 'npx tsx bench/winograd-error.ts [--networks resnet-18,resnet-50]', { networks: 'resnet-18,resnet-50' });

/** max |got - ref| / max |ref|, and max over elements of (|got - ref| - 1e-4 |ref|) / max |ref|. */
function relError(got: Float32Array, ref: Float32Array): { peak: number; excess: number } {
  let peak = 0;
  for (const x of ref) peak = Math.max(peak, Math.abs(x));
  let worst = 0, excess = 0;
  for (let i = 0; i < ref.length; i++) {
    const d = Math.abs(got[i] - ref[i]);
    worst = Math.max(worst, d);
    excess = Math.max(excess, d - 1e-4 * Math.abs(ref[i]));
  }
  return { peak: worst / peak, excess: excess / peak };
}

const rows: string[] = [];
const worst = new Map<string, number>();
for (const name of args.list('networks')) {
  const g = optimize(getNetwork(name, {}).graph);
  const seen = new Set<string>();
  for (const id of winogradEligible(g)) {
    const n = g.node(id) as OpNode;
    const w = g.node(n.inputs[1]) as ConstantNode & { data: Float32Array };
    const inShape = g.node(n.inputs[0]).shape;
    const padding = (n.attrs.padding as [number, number, number, number] | undefined) ?? [0, 0, 0, 0];
    const layer = `${inShape.join('x')} -> ${n.shape.join('x')}`;
    if (seen.has(layer)) continue; // one layer per shape: the figures repeat
    seen.add(layer);
    for (const dist of ['[0,1)', '[-1,1)'] as const) {
      const dataV = Float32Array.from(uniform(numElements(inShape), 11, 0), (x) => (dist === '[0,1)' ? x : 2 * x - 1));
      const data = placeholder('p0', inShape);
      const wt = placeholder('p1', w.shape);
      const direct = conv2dNHWC(data, wt, { strides: [1, 1], padding, dilation: [1, 1] });
      const ref = evaluate(new ComputeDAG([direct]), new Map<Tensor, TensorData>([[data, dataV], [wt, w.data]])).get(direct.name) as Float32Array;
      const cells: string[] = [];
      for (const m of [2, 4] as WinogradTile[]) {
        const { alpha } = winogradMatrices(m);
        const u = placeholder('p1', [alpha, alpha, w.shape[2], w.shape[3]]);
        const out = conv2dWinogradNHWC(data, u, { padding, tileSize: m });
        const got = evaluate(new ComputeDAG([out]), new Map<Tensor, TensorData>([[data, dataV], [u, winogradWeightTransform(w.data, w.shape, m)]])).get(out.name) as Float32Array;
        const e = relError(got, ref);
        worst.set(`F(${m})`, Math.max(worst.get(`F(${m})`) ?? 0, e.peak));
        cells.push(`${e.peak.toExponential(2)} (${e.excess.toExponential(2)})`);
      }
      rows.push(`| ${name} | ${layer} | ${dist} | ${cells.join(' | ')} |`);
    }
  }
}
console.log('| network | layer | input | F(2x2,3x3) max err / max|ref| (excess over 1e-4 rtol) | F(4x4,3x3) |');
console.log('|---|---|---|---|---|');
for (const r of rows) console.log(r);
console.log(`worst: ${[...worst].map(([k, v]) => `${k} ${v.toExponential(2)}`).join(', ')}`);
