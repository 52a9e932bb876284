// Search policies by name: `evolutionary` (default, guided by the cost model), and the
// baselines at equal budget of the AutoTVM seed's tuner choice: `ga` (a genetic search on
// measured speed, no model), `random` and `grid`.

import type { SpaceOptions } from './candidates';
import { EvolutionaryPolicy, type EvolutionOptions } from './evolutionary';
import { GeneticPolicy, type GeneticOptions } from './ga';
import { GridPolicy } from './grid';
import { RandomPolicy } from './random';
import type { PolicyContext, PolicyName, SearchPolicy } from './types';

/** Every policy name, for option checks. */
export const POLICY_NAMES: readonly PolicyName[] = ['evolutionary', 'ga', 'random', 'grid'];

export function createPolicy(name: PolicyName, ctx: PolicyContext, opts: EvolutionOptions & GeneticOptions & SpaceOptions = {}): SearchPolicy {
  switch (name) {
    case 'evolutionary': return new EvolutionaryPolicy(ctx, opts);
    case 'ga': return new GeneticPolicy(ctx, opts);
    case 'random': return new RandomPolicy(ctx, opts);
    case 'grid': return new GridPolicy(ctx, opts);
  }
}
