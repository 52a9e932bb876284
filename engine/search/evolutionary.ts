// The default policy (TVM's SketchPolicy, reference §4.2–4.4): each round samples an
// initial population of random annotations of the sketches, adds the best states measured
// so far, evolves it for a few generations with the cost model as fitness, and proposes
// mostly the model's best states plus a few random ones (ε-greedy), never a program that
// was measured or proposed before. A batch's search stops early once it has worked
// searchBudgetMs (then it is not deterministic for a seed: where it stops depends on speed).

import type { State } from '../schedule/state';
import { stepsKey, type Step } from '../schedule/steps';
import type { Built } from './annotate';
import { SpacePolicy, type SpaceOptions } from './candidates';
import { mutate } from './mutate';
import { Rng } from './rng';
import type { CostModel, MeasuredState, PolicyContext } from './types';

export interface EvolutionOptions extends SpaceOptions {
  /** States per generation. TVM uses 2048; JS building and scoring cost ~1 ms a state, so 512 by default. */
  population?: number;
  /** Generations after the initial population (TVM: 4). */
  generations?: number;
  /** Probability that a child is a mutation rather than a copy (TVM: 0.85). */
  mutationProb?: number;
  /** Share of each batch drawn at random instead of from the model's best (TVM: 0.05). */
  epsGreedy?: number;
  /** At most this share of the population is seeded with the best measured states (TVM: 0.2). */
  measuredRatio?: number;
  /**
   * Milliseconds of work (building and scoring states, not the pauses of the async search)
   * after which a batch's evolution stops and proposes the best states scored so far. Not
   * TVM's: its population is fixed. A state of a Winograd task took ~150 ms to lower and
   * describe for the model (a direct conv's a few ms; 25-40 ms since rewrite shares the
   * transform's repeated terms), so a full evolution of one batch took 6 minutes on a
   * 2-core box, longer than the whole batch's compiling and timing.
   */
  searchBudgetMs?: number;
}

export const EVOLUTION_DEFAULTS = {
  population: 512, generations: 4, mutationProb: 0.85, epsGreedy: 0.05, measuredRatio: 0.2, searchBudgetMs: 20_000,
} as const;

interface Scored { built: Built; key: string; score: number }

/** States built or scored between two yields of the search (a few milliseconds of work). */
const SLICE = 16;

/** Runs a generator that only yields to let others run, to its end, at once. */
function runToEnd<T>(it: Generator<void, T>): T {
  for (;;) {
    const r = it.next();
    if (r.done) return r.value;
  }
}

/** Model scores; a model that fails on a state gives that state -Infinity rather than failing the search. */
function predictSafely(model: CostModel, ctx: PolicyContext, states: State[]): number[] {
  if (states.length === 0) return [];
  try {
    const out = model.predict(ctx.task, states);
    if (out.length === states.length) return out.map((x) => (Number.isFinite(x) ? x : -Infinity));
  } catch {
    // fall through: score one by one so a single bad state costs only itself
  }
  return states.map((s) => {
    try {
      const [x] = model.predict(ctx.task, [s]);
      return Number.isFinite(x) ? x : -Infinity;
    } catch {
      return -Infinity;
    }
  });
}

export class EvolutionaryPolicy extends SpacePolicy {
  readonly name = 'evolutionary' as const;
  private readonly ctx: PolicyContext;
  private readonly opts: Required<Omit<EvolutionOptions, keyof SpaceOptions>>;
  private readonly rng: Rng;
  /** Proposed states awaiting their measurement, by key. */
  private readonly pending = new Map<string, Built>();
  /** Measured valid states whose genome we know (proposed by this policy), with their cost. */
  private readonly measuredSeeds: { built: Built; cost: number }[] = [];

  constructor(ctx: PolicyContext, opts: EvolutionOptions = {}) {
    super(ctx, opts);
    this.ctx = ctx;
    this.opts = {
      population: opts.population ?? EVOLUTION_DEFAULTS.population,
      generations: opts.generations ?? EVOLUTION_DEFAULTS.generations,
      mutationProb: opts.mutationProb ?? EVOLUTION_DEFAULTS.mutationProb,
      epsGreedy: opts.epsGreedy ?? EVOLUTION_DEFAULTS.epsGreedy,
      measuredRatio: opts.measuredRatio ?? EVOLUTION_DEFAULTS.measuredRatio,
      searchBudgetMs: opts.searchBudgetMs ?? EVOLUTION_DEFAULTS.searchBudgetMs,
    };
    this.rng = new Rng(ctx.seed);
    // Resuming: the best states of earlier runs seed the population, where their records
    // say how they were built (only the best ones can ever be picked, so only those are rebuilt).
    const prior = ctx.measured.filter((m) => m.cost_ms !== null && m.genome).sort((a, b) => a.cost_ms! - b.cost_ms!);
    for (const m of prior) {
      if (this.measuredSeeds.length >= this.seedLimit) break;
      const built = this.space.rebuild(m);
      if (built) this.measuredSeeds.push({ built, cost: m.cost_ms! });
    }
  }

  /** How many measured states seed each round's population (TVM: 20% of it). */
  private get seedLimit(): number {
    return Math.floor(this.opts.measuredRatio * this.opts.population);
  }

  /** Measured states available as seeds (from this run and from resumed records). */
  get seedCount(): number {
    return this.measuredSeeds.length;
  }

  nextBatch(n: number): Step[][] {
    return runToEnd(this.search(n));
  }

  /** nextBatch in slices: `pause` is awaited between them, so the event loop (a measurement in flight) keeps going. */
  async nextBatchAsync(n: number, pause: () => Promise<void>): Promise<Step[][]> {
    const it = this.search(n);
    for (;;) {
      const r = it.next();
      if (r.done) return r.value;
      await pause();
    }
  }

  /** Work done by the current batch's search so far (ms), and when it last resumed. */
  private worked = 0;
  private resumed = 0;

  /** A point where the search may pause: the work since it last resumed is counted. */
  private *pausePoint(): Generator<void, void> {
    this.worked += performance.now() - this.resumed;
    yield;
    this.resumed = performance.now();
  }

  /** Whether the current batch's search has used its budget (searchBudgetMs). */
  private get spent(): boolean {
    return this.worked + (performance.now() - this.resumed) > this.opts.searchBudgetMs;
  }

  /** The search of one batch, as a generator that yields between slices of a few milliseconds' work. */
  private *search(n: number): Generator<void, Step[][]> {
    if (n <= 0) return [];
    this.worked = 0;
    this.resumed = performance.now();
    const init = yield* this.initialPopulation();
    const seeds = [...this.measuredSeeds].sort((a, b) => a.cost - b.cost).slice(0, this.seedLimit).map((s) => s.built);
    const best = yield* this.evolve([...init, ...seeds]);
    const picks: Built[] = [];
    const take = (b: Built, key = stepsKey(b.steps)): void => {
      if (this.space.isSeen(key) || !this.space.lowers(b, key)) return;
      this.space.propose(b, key);
      this.pending.set(key, b);
      picks.push(b);
    };
    const nBest = n - Math.floor(this.opts.epsGreedy * n);
    for (const s of best) {
      if (picks.length >= nBest) break;
      take(s.built, s.key);
    }
    // ε-greedy: the rest at random from the initial population, then fresh random states.
    const pool = [...init];
    while (picks.length < n && pool.length > 0) take(pool.splice(this.rng.int(pool.length), 1)[0]);
    for (const b of this.space.randomBatch(n - picks.length, this.rng)) {
      this.pending.set(stepsKey(b.steps), b);
      picks.push(b);
    }
    return picks.map((b) => b.steps);
  }

  override notify(measured: readonly MeasuredState[]): void {
    super.notify(measured);
    for (const m of measured) {
      const key = stepsKey(m.steps);
      const built = this.pending.get(key);
      this.pending.delete(key);
      if (built && m.cost_ms !== null) this.measuredSeeds.push({ built, cost: m.cost_ms });
    }
  }

  /** Random annotations of the sketches, distinct, replaying (TVM's SampleInitPopulation). */
  private *initialPopulation(): Generator<void, Built[]> {
    const out: Built[] = [];
    const keys = new Set<string>();
    const target = this.opts.population;
    for (let attempt = 0; attempt < target * 3 && out.length < target && !this.spent; attempt++) {
      if (attempt % SLICE === SLICE - 1) yield* this.pausePoint();
      const b = this.space.sample(this.rng);
      if (!b) continue;
      const key = stepsKey(b.steps);
      if (keys.has(key)) continue;
      keys.add(key);
      out.push(b);
    }
    return out;
  }

  /** Evolve `population`; returns every never-measured state it scored, best predicted first. */
  private *evolve(population: Built[]): Generator<void, Scored[]> {
    const scores = new Map<string, number>();
    const best = new Map<string, Scored>();
    let pop = population;
    for (let g = 0; ; g++) {
      let keys = pop.map((b) => stepsKey(b.steps));
      const fresh = new Map<string, Built>();
      keys.forEach((k, i) => { if (!scores.has(k)) fresh.set(k, pop[i]); });
      const freshKeys = [...fresh.keys()];
      for (let at = 0; at < freshKeys.length && !this.spent; at += SLICE) {
        const slice = freshKeys.slice(at, at + SLICE);
        const predicted = predictSafely(this.ctx.costModel, this.ctx, slice.map((k) => fresh.get(k)!.state));
        slice.forEach((k, i) => scores.set(k, predicted[i]));
        yield* this.pausePoint();
      }
      // Over the budget, states left unscored are dropped: the best scored so far are proposed.
      if (this.spent) {
        pop = pop.filter((_, i) => scores.has(keys[i]));
        keys = keys.filter((k) => scores.has(k));
      }
      pop.forEach((b, i) => {
        const key = keys[i], score = scores.get(key)!;
        if (score > -Infinity && !this.space.isSeen(key) && !best.has(key)) best.set(key, { built: b, key, score });
      });
      if (g >= this.opts.generations || pop.length === 0 || this.spent) break;
      // Fitness-proportional selection on scores shifted to be positive.
      const raw = keys.map((k) => scores.get(k)!);
      const finite = raw.filter((x) => x > -Infinity);
      const lo = finite.length ? Math.min(...finite) : 0, hi = finite.length ? Math.max(...finite) : 0;
      const weights = raw.map((x) => (x === -Infinity ? 0 : hi > lo ? (x - lo) / (hi - lo) + 1e-3 : 1));
      if (weights.every((w) => w === 0)) break;
      const next: Built[] = [];
      for (let attempt = 0; next.length < this.opts.population && attempt < this.opts.population * 3; attempt++) {
        if (attempt % SLICE === SLICE - 1) yield* this.pausePoint();
        const parent = pop[this.rng.weighted(weights)];
        if (this.rng.float() < this.opts.mutationProb) {
          const child = this.space.tryBuild(() => mutate(this.space.dag, this.space.sketches, parent, this.rng));
          if (child) next.push(child);
        } else {
          next.push(parent);
        }
      }
      pop = next;
    }
    return [...best.values()].sort((a, b) => b.score - a.score);
  }
}
