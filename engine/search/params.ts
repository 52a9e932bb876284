// The values an annotation asks for, and what a build returns: the contract between the
// annotation builders (annotate.ts for CPU sketches, annotate-gpu.ts for GPU ones, the
// walk they share in step-builder.ts) and the sources of values (random sampling, a
// genome, a grid). Kept apart so each builder takes it without importing another.

import { ScheduleError, type State } from '../schedule/state';
import type { Step } from '../schedule/steps';
import { tilings } from './factors';

/** What a value is, for mutation weights (reference §4.3). */
export type ParamKind = 'tile' | 'unroll' | 'location' | 'parallel' | 'order' | 'align';

/**
 * A constraint a tile must meet besides its product and innermost bound (GPU: the threads,
 * vthreads and registers its factors give together with the other axes' tiles).
 */
export type TileFits = (factors: readonly number[]) => boolean;

/**
 * The factorizations a ParamSource chooses a tile from: those `fits` accepts, if given;
 * with `padded`, also those of the extent's padded extents. Throws when there are none.
 */
export function tileChoices(extent: number, parts: number, maxInner: number, fits?: TileFits, padded = false): readonly (readonly number[])[] {
  const every = tilings(extent, parts, maxInner, padded);
  const all = fits ? every.filter(fits) : every;
  if (all.length === 0) throw new ScheduleError(`no tile of ${extent} in ${parts} parts meets the limits`);
  return all;
}

export type ParamSpec =
  | { kind: 'tile'; extent: number; parts: number; maxInner: number; fits?: TileFits; padded?: boolean }
  | { kind: Exclude<ParamKind, 'tile'>; n: number };

export type ParamValue = number | readonly number[];

export interface Genome {
  readonly sketch: number;
  readonly values: ReadonlyMap<string, ParamValue>;
}

export interface ParamSource {
  /** Factors (outermost first) of `extent` in `parts` pieces, innermost at most `maxInner`;
   *  `vector`: the innermost factor becomes a vectorised loop; `fits`: only factor lists it accepts;
   *  `padded`: the factors of a padded extent may tile it too (tileChoices). */
  tile(key: string, extent: number, parts: number, maxInner: number, vector?: boolean, fits?: TileFits, padded?: boolean): readonly number[];
  /** An index in [0, n). */
  choice(key: string, kind: Exclude<ParamKind, 'tile'>, n: number): number;
}

export interface Built {
  readonly steps: Step[];
  readonly state: State;
  readonly genome: Genome;
  readonly specs: ReadonlyMap<string, ParamSpec>;
}
