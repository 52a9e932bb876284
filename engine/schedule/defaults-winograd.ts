// The default schedule of a Winograd conv task (topi/winograd.ts): the tile gather, the
// output's index stage and the elementwise epilogue are inlined; every other stage is
// computed at root with a parallel outer loop and a vector loop over channels:
//  - data_pack and inverse: channels split into vectors, the alpha x alpha (or m x m) tile
//    axes unrolled, so the selects on them fold to the explicit sums of non-zero terms;
//  - bgemm: a register tile like the direct conv's default (defaults.ts): a block of tiles
//    times two vectors of output channels, accumulated in a local copy over all input
//    channels;
//  - the padded input (a copy, so the transform's loads need no bound checks) and the output
//    (the epilogue with the inverse's index map): fused outer loops, a vector loop.

import type { ComputeDAG } from '../ir/dag';
import { numElements } from '../ir/tensor';
import type { DefaultOptions } from './default-options';
import { State } from './state';
import { channelTile, largestDivisorAtMost, positionTileRows } from './tile-rows';
import type { Step } from './steps';

export function winogradDefaultSchedule(dag: ComputeDAG, opts: DefaultOptions): Step[] {
  const steps: Step[] = [];
  const state = new State(dag);
  const apply = (st: Step): void => { state.apply(st); steps.push(st); };
  const lanes = opts.vectorLanes;
  const minParallel = opts.minParallelElements ?? 4096;
  const byTag = (tag: string): string => state.stages.find((s) => s.tensor.op.kind === 'compute' && s.tensor.op.tag === tag)!.name;

  // 1. Inline the stages without a reduction that are not the output, except the transforms
  //    and the padded input (copied once, so the transform reads it without bound checks).
  const transforms = ['winograd_data_pack', 'winograd_inverse'];
  for (const s of [...state.stages]) {
    if (s.isOutput || s.reduceAxes.length > 0 || s.name === 'data_pad' || (s.tensor.op.kind === 'compute' && transforms.includes(s.tensor.op.tag))) continue;
    if (state.readers(s.name).length === 1) apply({ s: 'compute_inline', stage: s.name });
  }

  // 2. The transforms [t0, t1, p, c]: loops p, c.0 | t0 t1 unrolled (the selects on them fold) | c.1 vector.
  for (const tag of transforms) {
    const name = byTag(tag);
    const [t0, t1, p, c] = state.stage(name).axes.map((a) => ({ name: a.name, extent: a.extent }));
    const vec = largestDivisorAtMost(c.extent, lanes);
    apply({ s: 'split', stage: name, iter: c.name, lengths: [vec] });
    // A loop unrolled at root must have an extent the steps fix (validate-steps.ts): each
    // tile axis is split by its whole extent, its outer part (one iteration) left outside.
    for (const a of [t0, t1]) apply({ s: 'split', stage: name, iter: a.name, lengths: [a.extent] });
    apply({ s: 'reorder', stage: name, order: [p.name, `${c.name}.0`, `${t0.name}.0`, `${t1.name}.0`, `${t0.name}.1`, `${t1.name}.1`, `${c.name}.1`] });
    apply({ s: 'fuse', stage: name, iters: [p.name, `${c.name}.0`] });
    apply({ s: 'annotate', stage: name, iter: `${p.name}@${c.name}.0`, ann: 'parallel' });
    for (const a of [t0, t1]) apply({ s: 'annotate', stage: name, iter: `${a.name}.1`, ann: 'unroll' });
    apply({ s: 'annotate', stage: name, iter: `${c.name}.1`, ann: 'vectorize' });
  }

  // 3. The batched GEMM: [eps, nu, p, co] += data_pack[eps, nu, p, rc] * U[eps, nu, rc, co].
  const gemm = byTag('winograd_bgemm');
  apply({ s: 'cache_write', stage: gemm });
  const local = `${gemm}.local`;
  const [eps, nu, p, co] = state.stage(gemm).axes.map((a) => ({ name: a.name, extent: a.extent }));
  const { vec, rows: tileRows } = channelTile(co.extent, p.extent, lanes);
  // Two vectors of channels on an 8-lane target: 6 tiles, as the direct conv's position tile
  // (tile-rows.ts); 7 spilled.
  const rows = positionTileRows(p.extent, vec, lanes) ?? tileRows;
  apply({ s: 'split', stage: gemm, iter: co.name, lengths: [vec] });
  apply({ s: 'split', stage: gemm, iter: p.name, lengths: [rows] });
  apply({ s: 'reorder', stage: gemm, order: [eps.name, nu.name, `${p.name}.0`, `${co.name}.0`, `${p.name}.1`, `${co.name}.1`] });
  const outer = [eps.name, nu.name, `${p.name}.0`];
  apply({ s: 'fuse', stage: gemm, iters: outer });
  apply({ s: 'annotate', stage: gemm, iter: outer.join('@'), ann: 'parallel' });
  const wholeVectors = vec % lanes === 0;
  if (wholeVectors) apply({ s: 'annotate', stage: gemm, iter: `${p.name}.1`, ann: 'unroll' });
  apply({ s: 'annotate', stage: gemm, iter: `${co.name}.1`, ann: 'vectorize' });
  apply({ s: 'compute_at', stage: local, target: gemm, iter: `${co.name}.0` });
  const reduce = state.stage(local).reduceAxes.map((a) => a.name);
  apply({ s: 'reorder', stage: local, order: [eps.name, nu.name, ...reduce, p.name, co.name] });
  if (wholeVectors) apply({ s: 'annotate', stage: local, iter: p.name, ann: 'unroll' });
  apply({ s: 'annotate', stage: local, iter: co.name, ann: 'vectorize' });

  // 4. The padded input and the output ([n, h, w, co] with the inverse's index map and the
  //    epilogue inlined): fused outer loops, a vector loop over channels.
  for (const s of [state.stage('data_pad'), state.stages.find((x) => x.isOutput)!]) {
    const axes = s.axes.map((a) => ({ name: a.name, extent: a.extent }));
    const last = axes[axes.length - 1];
    const outer = axes.slice(0, -1).map((a) => a.name);
    let inner = last.name;
    if (last.extent >= 2 * lanes && last.extent % lanes === 0) {
      apply({ s: 'split', stage: s.name, iter: last.name, lengths: [lanes] });
      outer.push(`${last.name}.0`);
      inner = `${last.name}.1`;
    }
    apply({ s: 'fuse', stage: s.name, iters: outer });
    if (numElements(s.tensor.shape) >= minParallel) apply({ s: 'annotate', stage: s.name, iter: outer.join('@'), ann: 'parallel' });
    if (inner !== last.name || last.extent <= 4 * lanes) apply({ s: 'annotate', stage: s.name, iter: inner, ann: 'vectorize' });
  }
  state.validate();
  return steps;
}
