// The `grid` policy: walks the space in a fixed order (sketch by sketch, every value of
// every parameter, the last-asked parameter fastest, like an odometer). Exhaustive and
// deterministic, so it suits small spaces; on large ones it only explores the innermost
// parameters within the budget.

import { stepsKey, type Step } from '../schedule/steps';
import { buildState, tileChoices, type ParamKind, type ParamSource, type TileFits } from './annotate';
import { SpacePolicy } from './candidates';

/** Reads the i-th value of the i-th request from `digits` and records each request's domain size. */
class OdometerSource implements ParamSource {
  readonly radix: number[] = [];
  private pos = 0;
  constructor(private readonly digits: readonly number[]) {}
  private next(n: number): number {
    const i = this.pos++;
    this.radix[i] = n;
    return Math.min(this.digits[i] ?? 0, n - 1);
  }
  tile(_key: string, extent: number, parts: number, maxInner: number, _vector = false, fits?: TileFits, padded = false): readonly number[] {
    const all = tileChoices(extent, parts, maxInner, fits, padded);
    return all[this.next(all.length)];
  }
  choice(_key: string, _kind: ParamKind, n: number): number {
    return this.next(n);
  }
}

export class GridPolicy extends SpacePolicy {
  readonly name = 'grid' as const;
  private sketch = 0;
  private digits: number[] = [];
  private exhausted = false;

  nextBatch(n: number): Step[][] {
    const out: Step[][] = [];
    while (out.length < n && !this.exhausted) {
      const src = new OdometerSource(this.digits);
      const b = this.space.tryBuild(() => buildState(this.space.dag, this.space.sketches, this.sketch, src));
      this.advance(src.radix);
      if (!b) continue;
      const key = stepsKey(b.steps);
      if (this.space.isSeen(key) || !this.space.lowers(b, key)) continue;
      this.space.propose(b, key);
      out.push(b.steps);
    }
    return out;
  }

  private advance(radix: readonly number[]): void {
    const d = this.digits.slice(0, radix.length);
    while (d.length < radix.length) d.push(0);
    for (let i = d.length - 1; i >= 0; i--) {
      d[i]++;
      if (d[i] < radix[i]) { this.digits = d; return; }
      d[i] = 0;
    }
    this.digits = [];
    this.sketch++;
    if (this.sketch >= this.space.sketches.length) this.exhausted = true;
  }
}
