// The graph pass pipeline run before fusion, in TVM's order of effect: batch-norm to
// scale + shift, broadcast constants to full rank, identities out, constants folded,
// per-channel scales folded into conv/dense weights, constant chains merged.

import type { Graph } from '../graph';
import { canonicalizeBias } from './canonicalize-bias';
import { foldConstants, mergeConstantChains } from './fold-constant';
import { foldScaleIntoWeights } from './fold-scale';
import { removeIdentityOps } from './remove-identity';
import { simplifyInference } from './simplify-inference';

export { canonicalizeBias } from './canonicalize-bias';
export { foldConstants, mergeConstantChains } from './fold-constant';
export { foldScaleIntoWeights } from './fold-scale';
export { removeIdentityOps } from './remove-identity';
export { simplifyInference } from './simplify-inference';

/** Every inference-time simplification, in order. The result computes the same function. */
export function optimize(g: Graph): Graph {
  g = simplifyInference(g);
  g = canonicalizeBias(g);
  g = removeIdentityOps(g);
  g = foldConstants(g);
  g = foldScaleIntoWeights(g);
  g = mergeConstantChains(g);
  return g;
}
