// The graph pass pipeline run before fusion, in TVM's order of effect: layout conversion
// (if asked), batch-norm to scale + shift, broadcast constants to full rank, identities out,
// 2-D transposed convs as conv2d + interleave (sub-pixel convolution), constants folded,
// written-out layer norms as layer_norm, per-channel scales folded into conv/dense weights,
// constant chains merged.

import type { Layout } from '../../topi/nn';
import type { Graph } from '../graph';
import { canonicalizeBias } from './canonicalize-bias';
import { convertLayout } from './convert-layout';
import { convTransposeAsConv } from './conv-transpose-as-conv';
import { foldConstants, mergeConstantChains } from './fold-constant';
import { foldScaleIntoWeights } from './fold-scale';
import { fuseLayerNorm } from './fuse-layer-norm';
import { removeIdentityOps } from './remove-identity';
import { simplifyInference } from './simplify-inference';

export { canonicalizeBias } from './canonicalize-bias';
export { convertLayout } from './convert-layout';
export { convTransposeAsConv } from './conv-transpose-as-conv';
export { foldConstants, mergeConstantChains } from './fold-constant';
export { foldScaleIntoWeights } from './fold-scale';
export { fuseLayerNorm } from './fuse-layer-norm';
export { removeIdentityOps } from './remove-identity';
export { simplifyInference } from './simplify-inference';

export interface OptimizeOptions {
  /** Run convs and pools in this layout (the model's inputs and outputs keep theirs). */
  layout?: Layout;
}

/** Every inference-time simplification, in order. The result computes the same function. */
export function optimize(g: Graph, opts: OptimizeOptions = {}): Graph {
  if (opts.layout) g = convertLayout(g, opts.layout);
  g = simplifyInference(g);
  g = canonicalizeBias(g);
  g = removeIdentityOps(g);
  g = convTransposeAsConv(g);
  g = foldConstants(g);
  g = fuseLayerNorm(g);
  g = foldScaleIntoWeights(g);
  g = mergeConstantChains(g);
  return g;
}
