// Annotation of GPU sketches (sketch-gpu.ts): TVM's GPU initial-population rules
// (apache/tvm v0.19 sketch_policy_rules.cc: InitFillTileSize, InitThreadBind, InitUnroll,
// and on Mali InitVectorization) as one builder that asks a ParamSource for each value, as
// annotate.ts does for CPUs, so sampling, mutation (mutate.ts) and the grid share it.
//
// Multi-level tiling SSSRRSRS: every spatial axis of the tiled stage is split in five
// (S0 S1 S2 S3 S4), every reduce axis in three (R0 R1 R2). The bound stage (the fused
// consumer, or the stage itself holding `<stage>.local`) keeps S0 | S1 | S2 | S3·S4, each
// level fused over the axes: S0 -> blockIdx.x, S1 -> vthread, S2 -> threadIdx.x; the
// reduction is computed in per-thread memory at the thread loop, its loops ordered
// R0 R1 S3 R2 S4. Each shared input is copied at the last R0 loop: its loops fused, split
// by the block's thread count (Π S2, so a mutated tile changes the fetch with it: TVM's
// FollowFusedSplit comes free from rebuilding) and bound to threadIdx.x, with an inner
// vector split (a tile of the vector width, so mutation moves it as TVM's tile mutation
// moves the fetch's vector split).
//
// Tiles are drawn within the device's limits, axis after axis: vthreads Π S1 <= the
// max vthread extent, threads Π S2 <= max threads per block, registers per thread
// Π S1·S3·S4 <= GPU_MAX_LOCAL_FLOATS (our cap: TVM has none but its innermost factor and
// the device's compile), innermost factors <= 64 (TVM's max_innermost_split_factor). Once all
// are drawn, each tile's spec records what it may become given the others, so mutation
// keeps within the limits too. Shared memory depends on the region each copy covers, so it
// is checked after lowering (candidates.ts), where a state over the limit is rejected.

import { walk, type Expr } from '../ir/expr';
import { numElements } from '../ir/tensor';
import type { ComputeDAG } from '../ir/dag';
import { ScheduleError } from '../schedule/state';
import { MAX_UNROLL, type ThreadTag } from '../schedule/steps';
import type { Built, ParamSource, TileFits } from './params';
import { MAX_INNERMOST_FACTOR } from './factors';
import type { GpuSpace, Plan, Sketch } from './sketch';
import { StepBuilder } from './step-builder';

/**
 * TVM's GPU candidates for auto_unroll_max_step ({0, 16, 64, 512, 1024}), less those above
 * MAX_UNROLL (512, the most a loop may unroll here: steps.ts), so in effect the CPU's set.
 */
export const GPU_UNROLL_STEPS: readonly number[] = [0, 16, 64, 512, 1024].filter((v) => v <= MAX_UNROLL);

/**
 * Most float registers one thread's tile may hold (vthreads × the S3·S4 tile of every axis).
 * Not a TVM parameter: a bound that keeps the unrolled register tile compilable (a CUDA
 * thread has at most 255 registers) and PoCL's compile times sane.
 */
export const GPU_MAX_LOCAL_FLOATS = 256;

/** TVM's max_vectorize_size: Mali's innermost vectorisation stops above it. */
const MAX_VECTORIZE = 16;

/** The thread counts a fused-and-bound stage starts from are at least this (or the warp size, or all the work there is). */
const MIN_THREADS = 32;

/** Coefficients of the variables of an affine index expression (`2*yy + ry - 1`), or null when it is not affine. */
function affine(e: Expr): Map<string, number> | null {
  switch (e.k) {
    case 'const': return new Map();
    case 'var': return new Map([[e.name, 1]]);
    case 'bin': {
      if (e.op !== '+' && e.op !== '-' && e.op !== '*') return null;
      const a = affine(e.a), b = affine(e.b);
      if (!a || !b) return null;
      if (e.op === '*') {
        const c = e.b.k === 'const' ? e.b.value : e.a.k === 'const' ? e.a.value : undefined;
        if (c === undefined) return null;
        return new Map([...(e.b.k === 'const' ? a : b)].map(([k, x]) => [k, x * c]));
      }
      const out = new Map(a);
      for (const [k, x] of b) out.set(k, (out.get(k) ?? 0) + (e.op === '+' ? x : -x));
      return out;
    }
    default: return null;
  }
}

/**
 * Bytes of shared memory the copies of some inputs of a stage need when a block covers
 * `extent(axis)` iterations of each axis of the stage (its spatial block tile and one
 * outer reduce step): per dimension of each input, the span of its affine index over the
 * tile (the whole dimension where the index is not affine), as the lowering's bound
 * inference finds it. The index forms are read once; `bytes` is cheap arithmetic.
 */
export class SharedFootprint {
  private readonly inputs: { shape: readonly number[]; loads: (Map<string, number> | null)[][] }[] = [];

  constructor(body: Expr, inputs: readonly string[]) {
    for (const input of inputs) {
      let shape: readonly number[] | undefined;
      const loads: (Map<string, number> | null)[][] = [];
      walk(body, (e) => {
        if (e.k !== 'load' || e.tensor.name !== input) return;
        shape = e.tensor.shape;
        loads.push(e.indices.map(affine));
      });
      if (shape) this.inputs.push({ shape, loads });
    }
  }

  bytes(extent: (axis: string) => number): number {
    let bytes = 0;
    for (const { shape, loads } of this.inputs) {
      let elements = 1;
      shape.forEach((dim, d) => {
        let widest = 0;
        for (const load of loads) {
          const form = load[d];
          let span = 1;
          if (form) for (const [name, c] of form) span += Math.abs(c) * (extent(name) - 1);
          widest = Math.max(widest, form ? Math.min(span, dim) : dim);
        }
        elements *= widest;
      });
      bytes += 4 * elements;
    }
    return bytes;
  }
}

const pow2Floor = (n: number): number => 2 ** Math.floor(Math.log2(Math.max(1, n)));
const pow2Ceil = (n: number): number => 2 ** Math.ceil(Math.log2(Math.max(1, n)));

/** Build the steps of a GPU sketch with values from `src`. Throws ScheduleError when the values make an invalid state. */
export function buildGpuState(dag: ComputeDAG, sketch: Sketch, index: number, src: ParamSource): Built {
  if (!sketch.gpu) throw new Error(`buildGpuState: sketch ${sketch.name} is not a GPU sketch`);
  return new GpuBuilder(dag, sketch, sketch.gpu, index, src).build();
}

class GpuBuilder extends StepBuilder {
  protected readonly unrollSteps = GPU_UNROLL_STEPS;

  constructor(dag: ComputeDAG, sketch: Sketch, private readonly gpu: GpuSpace, index: number, src: ParamSource) {
    super(dag, sketch, index, src);
  }

  protected buildStage(x: string, p: Plan): void {
    if (p.k === 'gpu-tile') this.tile(x, p);
    else if (p.k === 'gpu-rfactor') this.rfactor(x, p.inner);
    else if (p.k === 'gpu-cross-thread') this.crossThread(x);
    else if (p.k === 'gpu-simple') this.simple(x);
    else if (p.k !== 'fused-consumer') throw new Error(`GPU sketch ${this.sketch.name}: CPU plan ${p.k} for ${x}`);
  }

  private bind(stage: string, iter: string, thread: ThreadTag): void {
    this.emit({ s: 'bind', stage, iter, thread });
  }

  /** Mali (TVM's InitVectorization): vectorise an innermost loop of a few iterations. */
  private maliVectorize(stage: string, iter: string, extent: number): void {
    if (this.gpu.mali && extent > 1 && extent <= MAX_VECTORIZE) this.emit({ s: 'annotate', stage, iter, ann: 'vectorize' });
  }

  /**
   * Threads per block of a fused loop of `extent` iterations: a power of two from
   * min(32 or the warp size, what the loop needs) up to what the loop needs, at most the
   * device's limit. Drawn as a two-part tile of that largest count (a thread count is a tile
   * size, as in TVM, and mutation doubles or halves it); the split need not divide `extent`.
   */
  private threadsOf(key: string, extent: number): number {
    const most = pow2Floor(Math.min(this.gpu.params.maxThreadsPerBlock, pow2Ceil(extent)));
    const least = Math.min(most, pow2Ceil(Math.max(MIN_THREADS, this.gpu.params.warpSize)));
    return this.tileOf(key, most, 2, most, false, (f) => f[1] >= least)[1];
  }

  /** Fuse the outermost `loops` of a root stage (their product `extent`), split by a thread count, bind blockIdx.x / threadIdx.x. */
  private fuseAndBind(stage: string, loops: readonly string[], extent: number): void {
    if (loops.length === 0) throw new ScheduleError(`${stage}: no spatial loop to bind to GPU threads`);
    const fused = this.fuse(stage, loops);
    const threads = this.threadsOf(`${stage}/threads`, extent);
    this.emit({ s: 'split', stage, iter: fused, lengths: [threads] });
    this.bind(stage, `${fused}.0`, 'blockIdx.x');
    this.bind(stage, `${fused}.1`, 'threadIdx.x');
  }

  // ------------------------------------------------------------ multi-level tiling

  private tile(x: string, p: Extract<Plan, { k: 'gpu-tile' }>): void {
    const lim = this.gpu.params;
    const { t, c } = this.tiledStages(x, p);
    const ts = this.state.stage(t);
    const sp = ts.axes, rd = ts.reduceAxes;
    const cs = this.state.stage(c!);
    const sn = sp.map((a) => a.name), rn = rd.map((r) => r.name), cn = cs.axes.map((a) => a.name);
    if (cn.length !== sn.length) throw new ScheduleError(`${c}: cannot follow the tiles of ${t}`);

    // Tiles within the limits, drawn one after the other: each must fit with those drawn
    // before it (the others count as 1). `drawn` ends up holding every tile, so the `fits`
    // kept in each tile's spec then checks a mutated tile against all the others.
    const drawn = new Map<string, readonly number[]>();
    const skeys = sp.map((a) => `${x}/S/${a.name}`), rkeys = rd.map((r) => `${x}/R/${r.name}`);
    const op = this.dag.stage(x).op;
    const footprint = p.shared.length > 0 && op.kind === 'compute' ? new SharedFootprint(op.body, p.shared) : undefined;
    const threadUse = (): { vthreads: number; threads: number; local: number } => {
      let vthreads = 1, threads = 1, local = 1;
      for (const k of skeys) {
        const f = drawn.get(k);
        if (f) { vthreads *= f[1]; threads *= f[2]; local *= f[1] * f[3] * f[4]; }
      }
      return { vthreads, threads, local };
    };
    // The block's tile (vthreads included, as TVM relaxes them for shared scope) and one outer reduce step.
    const blockTile = (axis: string): number => {
      const f = drawn.get(`${x}/S/${axis}`) ?? drawn.get(`${x}/R/${axis}`);
      return f ? numElements(f.slice(1)) : 1;
    };
    const fits = (): boolean => {
      const u = threadUse();
      return u.vthreads <= lim.maxVthreadExtent && u.threads <= lim.maxThreadsPerBlock && u.local <= GPU_MAX_LOCAL_FLOATS
        && (!footprint || footprint.bytes(blockTile) <= lim.maxSharedMemoryPerBlock);
    };
    const fitsFor = (key: string): TileFits => (f) => {
      const before = drawn.get(key);
      drawn.set(key, f);
      const ok = fits();
      if (before) drawn.set(key, before); else drawn.delete(key);
      return ok;
    };
    const draw = (key: string, extent: number, parts: number): readonly number[] => {
      const f = this.tileOf(key, extent, parts, MAX_INNERMOST_FACTOR, false, fitsFor(key));
      drawn.set(key, f);
      return f;
    };
    const fs = sp.map((a, i) => draw(skeys[i], a.extent, 5));
    const gs = rd.map((r, i) => draw(rkeys[i], r.extent, 3));
    const { threads } = threadUse();
    const space = numElements(sp.map((a) => a.extent));
    if (threads < Math.min(lim.warpSize, space)) {
      throw new ScheduleError(`${t}: ${threads} threads per block, fewer than the warp size ${lim.warpSize}`);
    }
    const lvl = (names: readonly string[], k: number): string[] => names.map((n) => `${n}.${k}`);
    const last = sn.length - 1;

    // The bound stage: S0 | S1 | S2 | S3·S4, each of the three outer levels fused and bound.
    cn.forEach((a, i) => {
      const f = fs[i];
      this.emit({ s: 'split', stage: c!, iter: a, lengths: [f[1], f[2], f[3] * f[4]] });
    });
    this.emit({ s: 'reorder', stage: c!, order: [0, 1, 2, 3].flatMap((k) => lvl(cn, k)) });
    const tags: ThreadTag[] = ['blockIdx.x', 'vthread', 'threadIdx.x'];
    const bound = tags.map((tag, k) => {
      const fused = this.fuse(c!, lvl(cn, k));
      this.bind(c!, fused, tag);
      return fused;
    });
    this.maliVectorize(c!, `${cn[last]}.3`, fs[last][3] * fs[last][4]);

    // The reduction, in per-thread memory at the thread loop: R0 R1 S3 R2 S4.
    this.emit({ s: 'compute_at', stage: t, target: c!, iter: bound[2] });
    sp.forEach((a, i) => this.emit({ s: 'split', stage: t, iter: a.name, lengths: [fs[i][3], fs[i][4]] }));
    rd.forEach((r, i) => this.emit({ s: 'split', stage: t, iter: r.name, lengths: [gs[i][1], gs[i][2]] }));
    this.emit({ s: 'reorder', stage: t, order: [...lvl(sn, 0), ...lvl(rn, 0), ...lvl(rn, 1), ...lvl(sn, 1), ...lvl(rn, 2), ...lvl(sn, 2)] });

    // Shared copies at the last outer reduce loop, fetched by all the block's threads.
    for (const input of p.shared) {
      if (rn.length === 0) break;
      const copy = `${input}.shared`;
      this.emit({ s: 'cache_read', stage: input, scope: 'shared', reader: t });
      this.emit({ s: 'compute_at', stage: copy, target: t, iter: `${rn[rn.length - 1]}.0` });
      const fused = this.fuse(copy, this.state.stage(copy).axes.map((a) => a.name));
      const lanes = Math.max(1, Math.floor(lim.vectorUnitBytes / 4));
      const vec = this.tileOf(`${x}/fetch/${input}`, lanes, 2, lanes)[1];
      this.emit({ s: 'split', stage: copy, iter: fused, lengths: vec > 1 ? [threads, vec] : [threads] });
      this.bind(copy, `${fused}.1`, 'threadIdx.x');
      if (vec > 1) this.emit({ s: 'annotate', stage: copy, iter: `${fused}.2`, ann: 'vectorize' });
      this.padRows(x, input, copy);
    }
    if (rn.length > 0) this.unroll(t, `${x}/unroll`);
    this.maliVectorize(t, `${sn[last]}.2`, fs[last][4]);
  }

  /**
   * On a device with warps of 32 or more (its shared memory in as many banks), a choice
   * between the copy's natural layout and rows padded by one float (storage_align of the
   * row axis, factor = warp size, offset 1): threads that read a column then hit different
   * banks. Not a TVM sketch rule (Ansor leaves storage_align to hand-written schedules);
   * here the search measures both. Devices with no warps (PoCL, Mali) have no such choice.
   */
  private padRows(x: string, input: string, copy: string): void {
    const warp = this.gpu.params.warpSize;
    const axes = this.state.stage(copy).axes;
    if (warp < 32 || axes.length < 2) return;
    if (this.choiceOf(`${x}/align/${input}`, 'align', 2) === 0) return;
    this.emit({ s: 'storage_align', stage: copy, iter: axes[axes.length - 2].name, factor: warp, offset: 1 });
  }

  // ------------------------------------------------------------ rfactor

  /**
   * Two launches: `<x>.rf` computes partial reductions over the part of the fused reduction
   * that is not the factor (its factor part a spatial axis), `x` reduces the partials.
   */
  private rfactor(x: string, inner: boolean): void {
    const s = this.state.stage(x);
    const rn = s.reduceAxes.map((r) => r.name);
    const total = numElements(s.reduceAxes.map((r) => r.extent));
    const r = this.fuse(x, rn);
    const [outerLen, innerLen] = this.tileOf(`${x}/rf`, total, 2);
    this.emit({ s: 'split', stage: x, iter: r, lengths: [innerLen] });
    const factor = inner ? `${r}.1` : `${r}.0`, rest = inner ? `${r}.0` : `${r}.1`;
    const factorLen = inner ? innerLen : outerLen;
    this.emit({ s: 'rfactor', stage: x, iter: factor });
    const rf = `${x}.rf`;
    const spatial = s.axes.map((a) => a.name);
    const space = numElements(s.axes.map((a) => a.extent));
    if (inner && this.gpu.mali && spatial.length > 0) {
      // TVM's Mali rfactor: the factor innermost, vectorised.
      this.emit({ s: 'reorder', stage: rf, order: [...spatial, rest, factor] });
      this.fuseAndBind(rf, spatial, space);
      this.maliVectorize(rf, factor, factorLen);
    } else {
      this.fuseAndBind(rf, [...spatial, factor], space * factorLen);
    }
    this.unroll(rf, `${rf}/unroll`);
    this.fuseAndBind(x, spatial, space);
    this.unroll(x, `${x}/unroll`);
  }

  // ------------------------------------------------------------ cross-thread reduction

  /**
   * TVM's cross-thread reduction (RuleCrossThreadReduction, then InitThreadBind): the
   * reduce loops fused and split by a thread count (a tile size, drawn and mutated as the
   * others) whose inner part is bound to threadIdx.x; the spatial loops fused and bound to
   * blockIdx.x.
   */
  private crossThread(x: string): void {
    const s = this.state.stage(x);
    const total = numElements(s.reduceAxes.map((r) => r.extent));
    const r = this.fuse(x, s.reduceAxes.map((a) => a.name));
    const threads = this.threadsOf(`${x}/reduce-threads`, total);
    this.emit({ s: 'split', stage: x, iter: r, lengths: [threads] });
    if (s.axes.length > 0) this.bind(x, this.fuse(x, s.axes.map((a) => a.name)), 'blockIdx.x');
    this.bind(x, `${r}.1`, 'threadIdx.x');
    this.unroll(x, `${x}/unroll`);
  }

  // ------------------------------------------------------------ no tiling

  /** Fuse all spatial loops, split by a thread count, bind; a reduction runs serially inside each thread. */
  private simple(x: string): void {
    const s = this.state.stage(x);
    this.fuseAndBind(x, s.axes.map((a) => a.name), numElements(s.axes.map((a) => a.extent)));
    if (s.reduceAxes.length > 0) this.unroll(x, `${x}/unroll`);
  }
}
