// Ordered reductions: combiners whose result depends on the order of the values (each
// partial result rounded, so the combination is not associative). A schedule keeps such a
// reduction one serial accumulation in the order of its reduce axes: no rfactor, no
// cross-thread reduction, no vector or parallel reduce loop, and its reduce loops nested
// in axis order (schedule/state.ts refuses the rest; the search and the default schedules
// do not try them).

import type { Combiner, Expr, IterVar, Reduce } from './nodes';

const ORDERED: ReadonlySet<Combiner> = new Set<Combiner>(['sum_bf16']);

/** Whether `combiner` must combine its values one at a time in axis order. */
export const isOrderedCombiner = (combiner: Combiner): boolean => ORDERED.has(combiner);

/** Whether `body` (a compute stage's body) is an ordered reduction. */
export const isOrderedReduction = (body: Expr): boolean => body.k === 'reduce' && isOrderedCombiner(body.combiner);

/** ml_dtypes' bfloat16 sum of `source` over `axes`: from +0 (numpy's identity), each partial sum rounded to bfloat16, in axis order. */
export const sumBf16 = (source: Expr, axes: readonly IterVar[]): Reduce => ({ k: 'reduce', combiner: 'sum_bf16', source, axes });
