// Annotation: a sketch plus concrete values (tile sizes, compute locations, parallel
// granularity, unroll depth) gives a step list. The builder asks a ParamSource for each
// value as it goes, so the same code samples a random state (TVM's init rules, reference
// §3.3), rebuilds a mutated genome (mutate.ts) and enumerates a grid (grid.ts).
//
// A Genome is the values a build used, by parameter key; with the sketch it determines the
// steps, so mutation edits values and never has to patch steps by hand.

import type { ComputeDAG } from '../ir/dag';
import { numElements } from '../ir/tensor';
import { MAX_LOCAL_FLOATS } from '../codegen/lower';
import type { RecordGenome } from '../records/record';
import { ScheduleError } from '../schedule/state';
import { buildGpuState } from './annotate-gpu';
import { MAX_INNERMOST_FACTOR, tilesExtent } from './factors';
import { tileChoices, type Built, type Genome, type ParamKind, type ParamSource, type ParamValue, type TileFits } from './params';
import type { Rng } from './rng';
import type { Plan, Sketch } from './sketch';
import { StepBuilder } from './step-builder';

export { tileChoices, type Built, type Genome, type ParamKind, type ParamSource, type ParamSpec, type ParamValue, type TileFits } from './params';

/**
 * The longest vector loop of a Winograd transform (a CONST_INDEXED stage): its taps are
 * unrolled around it (36 for F(4x4)), so its length multiplies the C. Up to 64 (the
 * innermost factor of other stages) random resnet-18 candidates rendered 67 to 657 KB of C,
 * took 0.7 to 8 s to lower and 1 to 14 s of GCC each, and the transforms are bound by
 * memory, not by the vector width: 16 floats is one AVX-512 register or two AVX2 ones.
 */
export const CONST_INDEXED_MAX_VECTOR = 16;

/** TVM's CPU candidates for auto_unroll_max_step. */
export const UNROLL_STEPS: readonly number[] = [0, 16, 64, 512];

/**
 * Fewest iterations of a parallel loop: the chosen number of fused outer loops is raised
 * until they give this many. Candidates are measured at one thread by default, where an
 * outer loop of extent 1 marked parallel costs nothing, so without this floor the search
 * kept such schedules and the tuned model ran on one core at two threads (mobilenet tuned
 * at 1 thread: 1.02x ONNX Runtime at 1 thread, 1.67x at 2). TVM fuses outer loops up to
 * 16 x the core count; 32 serves up to ~8 cores evenly and costs nothing on one.
 */
export const MIN_PARALLEL_ITERS = 32;

/** Stages with this many outputs or more must have MIN_PARALLEL_ITERS parallel iterations (tiled reductions). */
export const PARALLEL_WORK = 8192;

/**
 * How many of the outer loops (with these extents, outermost first) to fuse into the
 * parallel loop for the `n` chosen (0: none): raised until they give MIN_PARALLEL_ITERS
 * iterations, or all of them.
 */
export function parallelCount(n: number, extents: readonly number[]): number {
  if (n <= 0) return 0;
  let k = Math.min(n, extents.length);
  let iters = numElements(extents.slice(0, k));
  while (k < extents.length && iters < MIN_PARALLEL_ITERS) iters *= extents[k++];
  return k;
}

/** Share of vectorised tiles drawn among the factorisations whose innermost factor fills whole vectors. */
const WHOLE_VECTOR_BIAS = 0.8;

/**
 * Samples every value uniformly (tile sizes uniformly over the factorisations, as TVM),
 * except that a tile whose innermost loop is vectorised is drawn, most of the time, among
 * the factorisations whose innermost factor is a multiple of the target's vector width:
 * the C renderer emits whole vectors only, and a remainder runs as scalar code, so those
 * candidates are rarely worth a measurement. (TVM leaves this to LLVM's vectoriser.)
 */
export class RandomSource implements ParamSource {
  constructor(private readonly rng: Rng, private readonly vectorLanes = 0) {}
  tile(_key: string, extent: number, parts: number, maxInner: number, vector = false, fits?: TileFits, padded = false): readonly number[] {
    const all = tileChoices(extent, parts, maxInner, fits, padded);
    if (vector && this.vectorLanes > 1) {
      const whole = all.filter((f) => f[f.length - 1] % this.vectorLanes === 0);
      if (whole.length > 0 && this.rng.float() < WHOLE_VECTOR_BIAS) return this.rng.pick(whole);
    }
    return this.rng.pick(all);
  }
  choice(_key: string, _kind: ParamKind, n: number): number {
    return this.rng.int(n);
  }
}

/** Takes values from a genome where they fit the requested domain, else from `fallback`. */
export class GenomeSource implements ParamSource {
  constructor(private readonly values: ReadonlyMap<string, ParamValue>, private readonly fallback: ParamSource) {}
  tile(key: string, extent: number, parts: number, maxInner: number, vector = false, fits?: TileFits, padded = false): readonly number[] {
    const v = this.values.get(key);
    if (Array.isArray(v) && v.length === parts && tilesExtent(numElements(v), extent, padded) && v[parts - 1] <= maxInner && (!fits || fits(v))) return v;
    return this.fallback.tile(key, extent, parts, maxInner, vector, fits, padded);
  }
  choice(key: string, kind: ParamKind, n: number): number {
    const v = this.values.get(key);
    if (typeof v === 'number' && v < n) return v;
    return this.fallback.choice(key, kind as Exclude<ParamKind, 'tile'>, n);
  }
}

/** A genome as a record stores it (plain object, arrays copied). */
export function genomeToJson(g: Genome): RecordGenome {
  const values: Record<string, number | number[]> = {};
  for (const [k, v] of g.values) values[k] = typeof v === 'number' ? v : [...v];
  return { sketch: g.sketch, values };
}

/** Refuses every value a genome does not hold: rebuilding must reproduce the genome exactly. */
export const NO_FALLBACK: ParamSource = {
  tile(key) { throw new ScheduleError(`genome has no value for ${key}`); },
  choice(key) { throw new ScheduleError(`genome has no value for ${key}`); },
};

/**
 * Build the steps of `sketches[index]` with values from `src`. Throws ScheduleError when
 * the values make an invalid state (a local buffer too large, a bad compute location).
 */
export function buildState(dag: ComputeDAG, sketches: readonly Sketch[], index: number, src: ParamSource): Built {
  const sketch = sketches[index];
  if (sketch.gpu) return buildGpuState(dag, sketch, index, src);
  return new Builder(dag, sketch, index, src).build();
}

class Builder extends StepBuilder {
  protected readonly unrollSteps = UNROLL_STEPS;

  protected buildStage(x: string, p: Plan): void {
    if (p.k === 'tile') this.tile(x, p);
    else if (p.k === 'rfactor') this.rfactor(x, p.inner);
    else if (p.k === 'simple') this.simple(x);
    else if (p.k === 'const-tensor') this.constIndexed(x);
  }

  /**
   * Fuse the outer `loops` (consecutive, outermost first, with these `extents`) into one
   * parallel loop: the `chosen` count raised by parallelCount. Returns the count and the
   * fused loop's name (none for a count of 0).
   */
  private parallel(stage: string, loops: readonly string[], chosen: number, extents: readonly number[]): { count: number; name?: string } {
    const count = parallelCount(chosen, extents);
    if (count <= 0) return { count };
    const name = this.fuse(stage, loops.slice(0, count));
    this.emit({ s: 'annotate', stage, iter: name, ann: 'parallel' });
    return { count, name };
  }

  /** The parallel loop of tiled stage `x`'s tiles (at least one outer loop), refused when too small for its work. */
  private tileParallel(x: string, stage: string, loops: readonly string[], extents: readonly number[]): { count: number; name?: string } {
    const p = this.parallel(stage, loops, this.choiceOf(`${x}/parallel`, 'parallel', loops.length) + 1, extents);
    this.requireParallelism(x, numElements(extents.slice(0, p.count)));
    return p;
  }

  /**
   * Refuses a tiling of a large stage whose parallel loop has fewer than MIN_PARALLEL_ITERS
   * iterations (its outer tiles too few): it would leave cores idle wherever the model runs
   * on more threads than the candidates were measured with.
   */
  private requireParallelism(x: string, iterations: number): void {
    const outputs = numElements(this.state.stage(x).tensor.shape);
    if (iterations < MIN_PARALLEL_ITERS && outputs >= PARALLEL_WORK) {
      throw new ScheduleError(`${x}: a parallel loop of ${iterations} iteration(s) for ${outputs} outputs`);
    }
  }

  /** Extents of root axes `names` of `stage` (loops not yet split). */
  private extentsOf(stage: string, names: readonly string[]): number[] {
    const axes = this.state.stage(stage).axes;
    return names.map((n) => axes.find((a) => a.name === n)?.extent ?? 1);
  }

  private vectorize(stage: string, iter: string, extent: number): void {
    if (extent > 1) this.emit({ s: 'annotate', stage, iter, ann: 'vectorize' });
  }

  // ------------------------------------------------------------ multi-level tiling

  private tile(x: string, p: Extract<Plan, { k: 'tile' }>): void {
    const { t, c } = this.tiledStages(x, p);
    const ts = this.state.stage(t);
    const sp = ts.axes, rd = ts.reduceAxes;
    // Spatial axes may take padded tilings (factors.ts paddedExtents): a partial last tile.
    const fs = sp.map((a, i) => this.tileOf(`${x}/S/${a.name}`, a.extent, 4, MAX_INNERMOST_FACTOR, i === sp.length - 1, undefined, true));
    // The loops' extents: a padded tiling's outer loop covers the extent, not the padding.
    const ext = fs.map((f, i) => [Math.ceil(sp[i].extent / numElements(f.slice(1))), ...f.slice(1)]);
    const gs = rd.map((r) => this.tileOf(`${x}/R/${r.name}`, r.extent, 2));
    const lvl = (names: readonly string[], k: number): string[] => names.map((n) => `${n}.${k}`);
    const sn = sp.map((a) => a.name), rn = rd.map((r) => r.name);
    const last = sp.length - 1;
    if (p.level === 0) {
      sp.forEach((a, i) => this.emit({ s: 'split', stage: t, iter: a.name, lengths: fs[i].slice(1) }));
      rd.forEach((r, i) => this.emit({ s: 'split', stage: t, iter: r.name, lengths: gs[i].slice(1) }));
      this.emit({ s: 'reorder', stage: t, order: [...lvl(sn, 0), ...lvl(sn, 1), ...lvl(rn, 0), ...lvl(sn, 2), ...lvl(rn, 1), ...lvl(sn, 3)] });
      const outer = [...lvl(sn, 0), ...lvl(sn, 1)];
      const extents = [...ext.map((f) => f[0]), ...ext.map((f) => f[1])];
      this.tileParallel(x, t, outer, extents);
      this.unroll(t, `${x}/unroll`);
      this.vectorize(t, `${sn[last]}.3`, fs[last][3]);
      return;
    }
    const L = p.level;
    const cs = this.state.stage(c!);
    const cn = cs.axes.map((a) => a.name);
    if (cn.length !== sn.length) throw new ScheduleError(`${c}: cannot follow the tiles of ${t}`);
    // The consumer takes the outer L levels; the reduction fills the region of the inner ones.
    cn.forEach((a, i) => {
      const f = fs[i];
      this.emit({ s: 'split', stage: c!, iter: a, lengths: L === 1 ? [f[1] * f[2] * f[3]] : [f[1], f[2] * f[3]] });
    });
    const corder: string[] = [];
    for (let k = 0; k <= L; k++) corder.push(...lvl(cn, k));
    this.emit({ s: 'reorder', stage: c!, order: corder });
    const outer = corder.slice(0, cn.length * L);
    const region = numElements(fs.map((f) => numElements(f.slice(L))));
    if (region > MAX_LOCAL_FLOATS) throw new ScheduleError(`${t}: a tile of ${region} floats is too large for a local buffer`);
    // The consumer's outer levels k < L have the extents f[k] of the tiles.
    const outerExtents = Array.from({ length: L }, (_, k) => ext.map((f) => f[k])).flat();
    const fused = this.tileParallel(x, c!, outer, outerExtents);
    const attach = fused.count === outer.length ? fused.name! : outer[outer.length - 1];
    this.vectorize(c!, `${cn[last]}.${L}`, numElements(fs[last].slice(L)));
    this.emit({ s: 'compute_at', stage: t, target: c!, iter: attach });
    sp.forEach((a, i) => this.emit({ s: 'split', stage: t, iter: a.name, lengths: fs[i].slice(L + 1) }));
    rd.forEach((r, i) => this.emit({ s: 'split', stage: t, iter: r.name, lengths: gs[i].slice(1) }));
    const order = L === 1
      ? [...lvl(sn, 0), ...lvl(rn, 0), ...lvl(sn, 1), ...lvl(rn, 1), ...lvl(sn, 2)]
      : [...lvl(rn, 0), ...lvl(sn, 0), ...lvl(rn, 1), ...lvl(sn, 1)];
    this.emit({ s: 'reorder', stage: t, order });
    this.unroll(t, `${x}/unroll`);
    this.vectorize(t, `${sn[last]}.${L === 1 ? 2 : 1}`, fs[last][3]);
  }

  // ------------------------------------------------------------ rfactor

  private rfactor(x: string, inner: boolean): void {
    const s = this.state.stage(x);
    const rn = s.reduceAxes.map((r) => r.name);
    const total = numElements(s.reduceAxes.map((r) => r.extent));
    const r = this.fuse(x, rn);
    const [, g1] = this.tileOf(`${x}/rf`, total, 2);
    this.emit({ s: 'split', stage: x, iter: r, lengths: [g1] });
    const factor = inner ? `${r}.1` : `${r}.0`, rest = inner ? `${r}.0` : `${r}.1`;
    this.emit({ s: 'rfactor', stage: x, iter: factor });
    this.simple(x);
    // The partial reduction: spatial loops (with the factor axis), then the rest of the reduction.
    const rf = `${x}.rf`;
    const spatial = this.state.stage(rf).axes.map((a) => a.name);
    if (!this.locate(rf)) return;
    const attached = this.state.stage(rf).attach.k === 'at';
    if (inner) {
      const outer = spatial.slice(0, -1);
      this.emit({ s: 'reorder', stage: rf, order: [...outer, rest, factor] });
      if (!attached) this.parallel(rf, outer, this.choiceOf(`${rf}/parallel`, 'parallel', outer.length + 1), this.extentsOf(rf, outer));
      this.vectorize(rf, factor, g1);
    } else if (!attached) {
      this.parallel(rf, spatial, this.choiceOf(`${rf}/parallel`, 'parallel', spatial.length + 1), this.extentsOf(rf, spatial));
    }
    this.unroll(rf, `${rf}/unroll`);
  }

  // ------------------------------------------------------------ no tiling

  /**
   * Choose where a non-tiled stage is computed: root, inline (no reduction), or at a loop
   * of its single consumer. Returns false when it was inlined.
   */
  private locate(x: string): boolean {
    const s = this.state.stage(x);
    if (s.isOutput) return true;
    const consumers = this.state.effectiveReaders(x);
    const canInline = s.reduceAxes.length === 0;
    const options: ({ k: 'root' } | { k: 'inline' } | { k: 'at'; target: string; iter: string })[] = [{ k: 'root' }];
    if (canInline) options.push({ k: 'inline' });
    if (consumers.length === 1) {
      const c = this.state.stage(consumers[0]);
      // Inside a multi-level tile a producer may also sit between the reduce loops.
      const tiled = this.sketch.plans.get(c.name.replace(/\.local$/, ''))?.k === 'tile';
      for (const leaf of c.leaves) {
        if (!tiled && c.kinds.get(leaf) === 'R') break;
        if (c.ann.get(leaf) === 'vectorize') break;
        options.push({ k: 'at', target: c.name, iter: leaf });
      }
    }
    const o = options[this.choiceOf(`${x}/location`, 'location', options.length)];
    if (o.k === 'inline') { this.emit({ s: 'compute_inline', stage: x }); return false; }
    if (o.k === 'at') this.emit({ s: 'compute_at', stage: x, target: o.target, iter: o.iter });
    return true;
  }

  private simple(x: string): void {
    if (!this.locate(x)) return;
    const s = this.state.stage(x);
    const sp = s.axes;
    if (sp.length === 0) return;
    const hasReduce = s.reduceAxes.length > 0;
    const reduceLeaves = s.leaves.filter((l) => s.kinds.get(l) === 'R');
    const last = sp[sp.length - 1];
    if (s.attach.k === 'at') {
      // Inside a consumer's loops the region is small: keep the loops, vectorise a contiguous inner one.
      if (!hasReduce && s.leaves[s.leaves.length - 1] === last.name) this.vectorize(x, last.name, 2);
      return;
    }
    const [, inner] = this.tileOf(`${x}/vec`, last.extent, 2, MAX_INNERMOST_FACTOR, true);
    const outerSpatial = sp.slice(0, -1).map((a) => a.name);
    let lastOuter = last.name, lastInner: string | undefined;
    if (inner > 1 && inner < last.extent) {
      this.emit({ s: 'split', stage: x, iter: last.name, lengths: [inner] });
      lastOuter = `${last.name}.0`;
      lastInner = `${last.name}.1`;
    } else if (inner === last.extent) {
      lastOuter = '';
      lastInner = last.name;
    }
    const outer = lastOuter ? [...outerSpatial, lastOuter] : outerSpatial;
    // With a reduction: keep it innermost, or move it outside the vector loop.
    const reduceOutside = hasReduce && lastInner !== undefined && this.choiceOf(`${x}/order`, 'order', 2) === 1;
    const order = [...outer, ...(reduceOutside ? reduceLeaves : []), ...(lastInner ? [lastInner] : []), ...(reduceOutside ? [] : reduceLeaves)];
    if (order.join() !== s.leaves.join()) this.emit({ s: 'reorder', stage: x, order });
    const lastOuterExtent = lastOuter === last.name ? last.extent : Math.ceil(last.extent / inner);
    const outerExtents = [...sp.slice(0, -1).map((a) => a.extent), ...(lastOuter ? [lastOuterExtent] : [])];
    this.parallel(x, outer, this.choiceOf(`${x}/parallel`, 'parallel', outer.length + 1), outerExtents);
    if (lastInner && (!hasReduce || reduceOutside)) this.vectorize(x, lastInner, inner);
    if (hasReduce) this.unroll(x, `${x}/unroll`);
  }

  /**
   * A stage whose first two axes index constant matrices (a Winograd transform,
   * CONST_INDEXED_TAGS: the plan of sketch.ts's simplify-compute-with-const-tensor rule),
   * after TVM's SimplifyComputeWithConstTensor rule: it stays at root
   * (TVM does not move a stage that rule tiled), and those two axes are unrolled inside the
   * other loops, outside the vector loop, so that the selects on them fold to the non-zero
   * terms of each output. Without it every element evaluates the whole chain (36 branches
   * of up to 36 terms for F(4x4)), and GCC took 12 to 25 s to compile one such candidate. The other axes: parallel outer loops, a vector loop.
   * That vector loop is at most CONST_INDEXED_MAX_VECTOR long: every element of it is
   * repeated for each of the unrolled taps.
   */
  private constIndexed(x: string): void {
    const sp = this.state.stage(x).axes;
    const [t0, t1, ...rest] = sp;
    const last = rest[rest.length - 1];
    const [, inner] = this.tileOf(`${x}/vec`, last.extent, 2, CONST_INDEXED_MAX_VECTOR, true);
    const outer = rest.slice(0, -1).map((a) => a.name);
    const outerExtents = rest.slice(0, -1).map((a) => a.extent);
    let lastInner = last.name;
    if (inner < last.extent) {
      this.emit({ s: 'split', stage: x, iter: last.name, lengths: [inner] });
      outer.push(`${last.name}.0`);
      outerExtents.push(Math.ceil(last.extent / inner));
      lastInner = `${last.name}.1`;
    }
    // A loop unrolled at root must have an extent the steps fix: each constant axis is split
    // by its whole extent, its outer part (one iteration) left outside.
    for (const a of [t0, t1]) this.emit({ s: 'split', stage: x, iter: a.name, lengths: [a.extent] });
    this.emit({ s: 'reorder', stage: x, order: [...outer, `${t0.name}.0`, `${t1.name}.0`, `${t0.name}.1`, `${t1.name}.1`, lastInner] });
    this.parallel(x, outer, this.choiceOf(`${x}/parallel`, 'parallel', outer.length + 1), outerExtents);
    for (const a of [t0, t1]) this.emit({ s: 'annotate', stage: x, iter: `${a.name}.1`, ann: 'unroll' });
    if (inner > 1) this.vectorize(x, lastInner, inner);
  }
}
