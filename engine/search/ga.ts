// The `ga` policy: a genetic search without a cost model, as AutoTVM's GATuner (one of
// AutoTVM's tuners: xgb, ga, random, grid). Individuals are genomes (a sketch and the values its
// builder asked for); fitness is measured throughput (1 / cost, 0 for an error). Each
// batch is a new generation: parents drawn with probability proportional to fitness from
// the fittest measured states (the elites among them always eligible, as measured states
// are never measured again), a uniform crossover of two parents of the same sketch (each
// value from one parent or the other; a value the child's builder asks for that neither
// parent holds is drawn at random), then, with probability `mutationProb`, one value
// mutated (mutate.ts, the evolutionary search's own operator). Until something has been
// measured, and where breeding keeps giving states already seen, random states fill the
// batch. Beside `random` at equal budget it shows what selection alone buys; beside
// `evolutionary`, what the cost model buys on top.
//
// AutoTVM's defaults: pop_size 100, elite_num 3, mutation_prob 0.1
// (python/tvm/autotvm/tuner/ga_tuner.py). The population here is the batch the task
// scheduler asks for; the parents are the `poolSize` fittest measured states.

import { stepsKey, type Step } from '../schedule/steps';
import { GenomeSource, RandomSource, buildState, type Built, type ParamValue } from './annotate';
import { SpacePolicy, type SpaceOptions } from './candidates';
import { mutate } from './mutate';
import { Rng } from './rng';
import type { MeasuredState, PolicyContext } from './types';

export interface GeneticOptions extends SpaceOptions {
  /** How many of the fittest measured states may be parents (default 100, AutoTVM's pop_size). */
  poolSize?: number;
  /** The fittest states, always kept among the parents whatever the pool's size (default 3, AutoTVM's elite_num). */
  eliteNum?: number;
  /** Chance that a child gets one mutation after the crossover (default 0.1, AutoTVM's mutation_prob). */
  mutationProb?: number;
}

interface Individual { readonly built: Built; readonly fitness: number }

export class GeneticPolicy extends SpacePolicy {
  readonly name = 'ga' as const;
  private readonly rng: Rng;
  private readonly poolSize: number;
  private readonly eliteNum: number;
  private readonly mutationProb: number;
  /** What this policy proposed, by step key, until its measurement comes back. */
  private readonly proposed = new Map<string, Built>();
  /** Every measured state with a genome, fittest first. */
  private population: Individual[] = [];

  constructor(ctx: PolicyContext, opts: GeneticOptions = {}) {
    super(ctx, opts);
    this.rng = new Rng(ctx.seed);
    this.poolSize = Math.max(2, opts.poolSize ?? 100);
    this.eliteNum = Math.max(0, opts.eliteNum ?? 3);
    this.mutationProb = opts.mutationProb ?? 0.1;
    // Resumed records whose genome rebuilds their steps join the population.
    this.add(ctx.measured.flatMap((m) => {
      const b = this.space.rebuild(m);
      return b ? [{ built: b, fitness: fitnessOf(m) }] : [];
    }));
  }

  nextBatch(n: number): Step[][] {
    const out: Built[] = [];
    const parents = this.parents();
    if (parents.length >= 2) {
      const weights = parents.map((p) => p.fitness);
      for (let attempt = 0; attempt < n * 20 && out.length < n; attempt++) {
        const a = parents[this.rng.weighted(weights)], b = parents[this.rng.weighted(weights)];
        const child = this.breed(a.built, b.built);
        if (!child) continue;
        const key = stepsKey(child.steps);
        if (this.space.isSeen(key) || !this.space.lowers(child, key)) continue;
        this.space.propose(child, key);
        out.push(child);
      }
    }
    if (out.length < n) out.push(...this.space.randomBatch(n - out.length, this.rng));
    for (const b of out) this.proposed.set(stepsKey(b.steps), b);
    return out.map((b) => b.steps);
  }

  override notify(measured: readonly MeasuredState[]): void {
    super.notify(measured);
    const news: Individual[] = [];
    for (const m of measured) {
      const key = stepsKey(m.steps);
      const b = this.proposed.get(key);
      if (!b) continue;
      this.proposed.delete(key);
      news.push({ built: b, fitness: fitnessOf(m) });
    }
    this.add(news);
  }

  private add(individuals: readonly Individual[]): void {
    if (individuals.length === 0) return;
    this.population = [...this.population, ...individuals].sort((x, y) => y.fitness - x.fitness);
  }

  /** The fittest `poolSize` measured states that ran (the elites first); empty when fewer than two ran. */
  private parents(): Individual[] {
    const ran = this.population.filter((p) => p.fitness > 0);
    return ran.length < 2 ? [] : ran.slice(0, Math.max(this.poolSize, this.eliteNum));
  }

  /** A child of `a` and `b`: their values crossed where they share a sketch (else `a`'s), maybe mutated once; null when invalid. */
  private breed(a: Built, b: Built): Built | null {
    const values = new Map<string, ParamValue>(a.genome.values);
    if (a.genome.sketch === b.genome.sketch) {
      for (const [key, v] of b.genome.values) if (!values.has(key) || this.rng.float() < 0.5) values.set(key, v);
    }
    const { dag, sketches } = this.space;
    let child = this.space.tryBuild(() => buildState(dag, sketches, a.genome.sketch, new GenomeSource(values, new RandomSource(this.rng))));
    if (child && this.rng.float() < this.mutationProb) {
      const parent = child;
      child = this.space.tryBuild(() => mutate(dag, sketches, parent, this.rng)) ?? child;
    }
    return child;
  }
}

function fitnessOf(m: MeasuredState): number {
  return m.cost_ms !== null && m.cost_ms > 0 ? 1 / m.cost_ms : 0;
}
