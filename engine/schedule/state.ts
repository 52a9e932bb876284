// The loop state of a task: one entry per compute stage, holding its root axes, the
// split/fuse relations that derive its loops, the current loop order, annotations and
// where it is computed. Steps (steps.ts) edit it; lowering (codegen/lower.ts) reads it.

import { add, floordiv, floormod, load, mul, readTensors, rewrite, substitute, v, type Expr, type IterVar } from '../ir/expr';
import type { ComputeDAG } from '../ir/dag';
import { isOrderedReduction } from '../ir/ordered';
import type { Tensor } from '../ir/tensor';
import { MAX_UNROLL, type Annotation, type CacheScope, type Step, type ThreadTag } from './steps';

/** Why a step that would reassociate an ordered reduction (ir/ordered.ts) is refused. */
const ORDERED_WHY = 'an ordered reduction (sum_bf16) accumulates serially in the order of its reduce axes';

/** A schedule that cannot be applied to this DAG (bad names, nested parallel, ...). */
export class ScheduleError extends Error {
  override name = 'ScheduleError';
}

export type Relation =
  | { k: 'split'; parent: string; children: string[]; lengths: number[] }
  | { k: 'fuse'; parents: string[]; child: string };

export type Attach = { k: 'root' } | { k: 'inline' } | { k: 'at'; target: string; iter: string };

export interface StageState {
  readonly name: string;
  /** The tensor this stage writes (for a cache stage, a new tensor named `<x>.local`). */
  tensor: Tensor;
  /** Current body: the compute's body, or a copy from the cache stage after cache_write. */
  body: Expr;
  readonly axes: readonly IterVar[];
  reduceAxes: readonly IterVar[];
  relations: Relation[];
  /** Current loop order (leaf iterators). */
  leaves: string[];
  /** 'S' spatial or 'R' reduce, for every iterator ever created in this stage. */
  kinds: Map<string, 'S' | 'R'>;
  ann: Map<string, Annotation>;
  /** GPU thread bindings of leaf iterators. */
  bind: Map<string, ThreadTag>;
  autoUnroll: Map<string, number>;
  attach: Attach;
  /** storage_align of root axes: the buffer stride of axis `iter` padded to `stride % factor == offset`. */
  align: Map<string, { factor: number; offset: number }>;
  /** Memory of a cache_read copy: per block (`shared`) or per thread (`local`); absent for every other stage. */
  scope?: CacheScope;
  /** Written by the kernel's caller (a DAG output). */
  readonly isOutput: boolean;
}

/**
 * A stage writing `tensor` (named after it), computed at root with nothing scheduled yet:
 * its loops are its axes, then its reduce axes.
 */
function freshStage(
  tensor: Tensor, body: Expr, axes: readonly IterVar[], reduceAxes: readonly IterVar[], isOutput = false, scope?: CacheScope,
): StageState {
  return {
    name: tensor.name, tensor, body, axes, reduceAxes, relations: [],
    leaves: [...axes, ...reduceAxes].map((a) => a.name),
    kinds: new Map([...axes.map((a) => [a.name, 'S'] as const), ...reduceAxes.map((a) => [a.name, 'R'] as const)]),
    ann: new Map(), bind: new Map(), autoUnroll: new Map(), align: new Map(), attach: { k: 'root' }, isOutput,
    ...(scope ? { scope } : {}),
  };
}

export class State {
  readonly dag: ComputeDAG;
  readonly stages: StageState[];
  readonly steps: Step[] = [];

  constructor(dag: ComputeDAG) {
    this.dag = dag;
    this.stages = dag.computeStages.map((t) => freshStage(t, t.op.body, t.op.axes, t.op.reduceAxes, dag.outputs.includes(t)));
  }

  /** Replay a list of steps on a fresh state of `dag`. Throws ScheduleError if any step is invalid. */
  static replay(dag: ComputeDAG, steps: readonly Step[]): State {
    const s = new State(dag);
    for (const st of steps) s.apply(st);
    s.validate();
    return s;
  }

  stage(name: string): StageState {
    const s = this.stages.find((x) => x.name === name);
    if (!s) throw new ScheduleError(`no stage '${name}' (stages: ${this.stages.map((x) => x.name).join(', ')})`);
    return s;
  }

  /** Stages whose (current) body reads `name`. */
  readers(name: string): StageState[] {
    return this.stages.filter((s) => readTensors(s.body).some((t) => t.name === name));
  }

  apply(st: Step): void {
    if (st.s === 'cache_read') {
      this.cacheRead(st.stage, st.scope, st.reader);
      this.steps.push(st);
      return;
    }
    const s = this.stage(st.stage);
    switch (st.s) {
      case 'split': {
        const at = this.leafIndex(s, st.iter);
        this.notBound(s, st.iter, 'split');
        if (st.lengths.length === 0 || st.lengths.some((l) => !Number.isInteger(l) || l < 1)) {
          throw new ScheduleError(`split ${s.name}.${st.iter}: lengths must be positive integers, got [${st.lengths.join(', ')}]`);
        }
        const base = st.iter;
        const children = Array.from({ length: st.lengths.length + 1 }, (_, i) => `${base}.${i}`);
        for (const c of children) {
          if (s.kinds.has(c)) throw new ScheduleError(`split ${s.name}.${base}: iterator ${c} exists already`);
          s.kinds.set(c, s.kinds.get(base)!);
        }
        s.relations.push({ k: 'split', parent: base, children, lengths: [...st.lengths] });
        s.leaves.splice(at, 1, ...children);
        this.moveAnnotations(s, base, children[0]);
        break;
      }
      case 'fuse': {
        if (st.iters.length < 2) throw new ScheduleError(`fuse ${s.name}: needs at least two iterators`);
        const idx = st.iters.map((it) => this.leafIndex(s, it));
        for (const it of st.iters) this.notBound(s, it, 'fuse');
        if (idx.some((x, i) => i > 0 && x !== idx[i - 1] + 1)) throw new ScheduleError(`fuse ${s.name}: iterators ${st.iters.join(', ')} are not consecutive`);
        const kinds = new Set(st.iters.map((it) => s.kinds.get(it)));
        if (kinds.size > 1) throw new ScheduleError(`fuse ${s.name}: cannot fuse spatial with reduce iterators`);
        const child = st.iters.join('@');
        s.kinds.set(child, [...kinds][0]!);
        s.relations.push({ k: 'fuse', parents: [...st.iters], child });
        s.leaves.splice(idx[0], st.iters.length, child);
        this.keepsReduceOrder(s, `fuse ${s.name}`);
        break;
      }
      case 'reorder': {
        const same = st.order.length === s.leaves.length && [...st.order].sort().join() === [...s.leaves].sort().join();
        if (!same) throw new ScheduleError(`reorder ${s.name}: order must name each of ${s.leaves.join(', ')} once`);
        s.leaves = [...st.order];
        this.keepsReduceOrder(s, `reorder ${s.name}`);
        break;
      }
      case 'compute_at': {
        const target = this.stage(st.target);
        this.leafIndex(target, st.iter);
        if (target === s) throw new ScheduleError(`compute_at ${s.name}: a stage cannot be computed at itself`);
        s.attach = { k: 'at', target: st.target, iter: st.iter };
        break;
      }
      case 'compute_inline': {
        if (s.reduceAxes.length > 0) throw new ScheduleError(`compute_inline ${s.name}: a reduction cannot be inlined`);
        if (s.isOutput) throw new ScheduleError(`compute_inline ${s.name}: an output cannot be inlined`);
        s.attach = { k: 'inline' };
        break;
      }
      case 'compute_root':
        s.attach = { k: 'root' };
        break;
      case 'cache_write': {
        if (s.relations.length > 0) throw new ScheduleError(`cache_write ${s.name}: must come before the stage is split or fused`);
        const localName = `${s.name}.local`;
        if (this.stages.some((x) => x.name === localName)) throw new ScheduleError(`cache_write ${s.name}: ${localName} exists already`);
        const localTensor: Tensor = { ...s.tensor, name: localName };
        // The loops as they are (a reorder may have come first).
        const local: StageState = { ...freshStage(localTensor, s.body, s.axes, s.reduceAxes), leaves: [...s.leaves], kinds: new Map(s.kinds) };
        s.body = load(localTensor, s.axes.map((a) => v(a.name)));
        s.reduceAxes = [];
        s.leaves = s.axes.map((a) => a.name);
        for (const k of [...s.kinds.keys()]) if (s.kinds.get(k) === 'R') s.kinds.delete(k);
        this.stages.splice(this.stages.indexOf(s), 0, local);
        break;
      }
      case 'rfactor':
        this.rfactor(s, st.iter);
        break;
      case 'annotate': {
        this.leafIndex(s, st.iter);
        this.notBound(s, st.iter, st.ann);
        // A vectorised reduce loop keeps one partial result per lane, combined after the loop
        // (the C renderer, for a float sum, max or min into one element; any other runs serially).
        if (st.ann === 'parallel' && s.kinds.get(st.iter) === 'R') {
          throw new ScheduleError(`${st.ann} ${s.name}.${st.iter}: a reduce loop can only be unrolled or vectorized`);
        }
        if (st.ann === 'vectorize' && s.kinds.get(st.iter) === 'R' && isOrderedReduction(s.body)) {
          throw new ScheduleError(`vectorize ${s.name}.${st.iter}: ${ORDERED_WHY} (a vector loop keeps one partial result per lane)`);
        }
        s.ann.set(st.iter, st.ann);
        break;
      }
      case 'pragma': {
        this.leafIndex(s, st.iter);
        if (!Number.isInteger(st.value) || st.value < 0) throw new ScheduleError(`pragma ${s.name}.${st.iter}: value must be a non-negative integer`);
        if (st.value > MAX_UNROLL) throw new ScheduleError(`pragma ${s.name}.${st.iter}: auto_unroll_max_step ${st.value} is more than ${MAX_UNROLL}, the most a loop may unroll`);
        s.autoUnroll.set(st.iter, st.value);
        break;
      }
      case 'bind': {
        this.leafIndex(s, st.iter);
        if (s.kinds.get(st.iter) === 'R') {
          // A cross-thread reduction (TVM binds the inner part of the fused reduction to
          // threadIdx.x; lower.ts combines the threads' partial results in shared memory).
          if (isOrderedReduction(s.body)) throw new ScheduleError(`bind ${s.name}.${st.iter}: ${ORDERED_WHY} (threads would combine partial results)`);
          if (st.thread !== 'threadIdx.x') throw new ScheduleError(`bind ${s.name}.${st.iter}: a reduce loop can be bound to threadIdx.x only (a cross-thread reduction), not ${st.thread}`);
          const other = [...s.bind.keys()].find((it) => it !== st.iter && s.kinds.get(it) === 'R');
          if (other !== undefined) throw new ScheduleError(`bind ${s.name}.${st.iter}: reduce loop ${other} is bound already (fuse the reduce loops first)`);
        }
        if (s.ann.has(st.iter)) throw new ScheduleError(`bind ${s.name}.${st.iter}: the loop is annotated ${s.ann.get(st.iter)!}`);
        if ([...s.bind].some(([it, tag]) => tag === st.thread && it !== st.iter)) {
          throw new ScheduleError(`bind ${s.name}.${st.iter}: ${st.thread} is bound to another loop of ${s.name} already (fuse the loops first)`);
        }
        s.bind.set(st.iter, st.thread);
        break;
      }
      case 'storage_align': {
        const where = `storage_align ${s.name}.${st.iter}`;
        if (!s.axes.some((a) => a.name === st.iter)) {
          throw new ScheduleError(`${where}: not a root axis of the stage (axes: ${s.axes.map((a) => a.name).join(', ')})`);
        }
        if (!Number.isInteger(st.factor) || st.factor < 1 || !Number.isInteger(st.offset) || st.offset < 0 || st.offset >= st.factor) {
          throw new ScheduleError(`${where}: expected an integer factor >= 1 and an offset from 0 to factor - 1, got factor ${st.factor}, offset ${st.offset}`);
        }
        s.align.set(st.iter, { factor: st.factor, offset: st.offset });
        break;
      }
      default: {
        const bad: never = st;
        throw new ScheduleError(`unknown step ${JSON.stringify(bad)}`);
      }
    }
    this.steps.push(st);
  }

  /** Checks that need the whole schedule: attach targets alive, single readers, no nested parallel. */
  validate(): void {
    for (const s of this.stages) {
      if (s.attach.k === 'at') {
        const target = this.stage(s.attach.target);
        if (!target.leaves.includes(s.attach.iter)) {
          throw new ScheduleError(`compute_at ${s.name}: ${target.name} no longer has loop ${s.attach.iter}`);
        }
        if (target.attach.k === 'inline') throw new ScheduleError(`compute_at ${s.name}: target ${target.name} is inlined`);
        // The stage's region is read off its readers' loops below the attach point, so every
        // reader must run there: the target itself, or a sibling attached at the same loop
        // (softmax's row max, read by the row's exp, both inside the output's row loop).
        const readers = this.effectiveReaders(s.name);
        const iter = s.attach.iter;
        const below = (r: string): boolean => {
          const at = this.stage(r).attach;
          return r === target.name || (at.k === 'at' && at.target === target.name && at.iter === iter);
        };
        if (readers.length === 0 || !readers.every(below)) {
          throw new ScheduleError(`compute_at ${s.name}: only its readers can hold it, all of them at ${target.name}.${iter} (read by ${readers.join(', ') || 'nobody'})`);
        }
      }
      const parallel = s.leaves.filter((l) => s.ann.get(l) === 'parallel');
      if (parallel.length > 1) throw new ScheduleError(`${s.name}: more than one parallel loop`);
      if (parallel.length === 1 && this.hasParallelAbove(s)) {
        throw new ScheduleError(`${s.name}: nested parallel loops`);
      }
    }
  }

  /** Non-inlined stages that read `name`, looking through inlined readers. */
  effectiveReaders(name: string): string[] {
    const out = new Set<string>();
    for (const r of this.readers(name)) {
      if (r.attach.k === 'inline') this.effectiveReaders(r.name).forEach((x) => out.add(x));
      else out.add(r.name);
    }
    return [...out];
  }

  private hasParallelAbove(s: StageState): boolean {
    let at = s.attach;
    while (at.k === 'at') {
      const target = this.stage(at.target);
      const pos = target.leaves.indexOf(at.iter);
      if (target.leaves.slice(0, pos + 1).some((l) => target.ann.get(l) === 'parallel')) return true;
      at = target.attach;
    }
    return false;
  }

  /**
   * TVM's rfactor, expressed as a new compute stage so that lowering needs nothing new:
   * `<X>.rf(spatial..., f) = reduce over the other reduce loops` and `X = reduce over f of .rf`.
   * Only the reduce loops of X may have been split or fused, and those splits must divide.
   */
  private rfactor(s: StageState, iter: string): void {
    const where = `rfactor ${s.name}.${iter}`;
    this.leafIndex(s, iter);
    const body = s.body;
    if (body.k !== 'reduce') throw new ScheduleError(`${where}: the stage is not a reduction`);
    if (s.kinds.get(iter) !== 'R') throw new ScheduleError(`${where}: not a reduce loop`);
    if (isOrderedReduction(body)) throw new ScheduleError(`${where}: ${ORDERED_WHY} (rfactor combines partial results)`);
    const rfName = `${s.name}.rf`;
    if (this.stages.some((x) => x.name === rfName)) throw new ScheduleError(`${where}: ${rfName} exists already`);
    const spatial = s.axes.map((a) => a.name);
    if (s.relations.some((r) => (r.k === 'split' ? s.kinds.get(r.parent) : s.kinds.get(r.child)) === 'S')
      || s.leaves.filter((l) => s.kinds.get(l) === 'S').join() !== spatial.join()) {
      throw new ScheduleError(`${where}: must come before the spatial loops are split, fused or reordered`);
    }
    // Extents of every reduce iterator, then the original reduce axes in terms of the leaves.
    const ext = new Map(s.reduceAxes.map((a) => [a.name, a.extent]));
    for (const r of s.relations) {
      if (r.k === 'split') {
        const inner = r.lengths.reduce((a, b) => a * b, 1);
        const parent = ext.get(r.parent)!;
        if (parent % inner !== 0) throw new ScheduleError(`${where}: split of ${r.parent} (${parent}) by ${inner} does not divide`);
        ext.set(r.children[0], parent / inner);
        r.lengths.forEach((l, i) => ext.set(r.children[i + 1], l));
      } else {
        ext.set(r.child, r.parents.reduce((a, p) => a * ext.get(p)!, 1));
      }
    }
    const reduceLeaves = s.leaves.filter((l) => s.kinds.get(l) === 'R');
    const values = new Map<string, Expr>(reduceLeaves.map((l) => [l, v(l)]));
    for (const r of [...s.relations].reverse()) {
      if (r.k === 'split') {
        let val = values.get(r.children[0])!;
        r.lengths.forEach((l, i) => { val = add(mul(val, l), values.get(r.children[i + 1])!); });
        values.set(r.parent, val);
      } else {
        const f = values.get(r.child)!;
        let stride = 1;
        for (let i = r.parents.length - 1; i >= 0; i--) {
          const q = floordiv(f, stride);
          values.set(r.parents[i], i === 0 ? q : floormod(q, ext.get(r.parents[i])!));
          stride *= ext.get(r.parents[i])!;
        }
      }
    }
    const roots = new Map(s.reduceAxes.map((a) => [a.name, values.get(a.name)!]));
    const factorAxis: IterVar = { name: iter, extent: ext.get(iter)! };
    const rest: IterVar[] = reduceLeaves.filter((l) => l !== iter).map((l) => ({ name: l, extent: ext.get(l)! }));
    const rfBody: Expr = { k: 'reduce', combiner: body.combiner, source: substitute(body.source, roots), axes: rest };
    const rfAxes = [...s.axes, factorAxis];
    const rfTensor: Tensor = {
      name: rfName, shape: rfAxes.map((a) => a.extent), dtype: s.tensor.dtype,
      op: { kind: 'compute', axes: rfAxes, reduceAxes: rest, body: rfBody, tag: `${s.tensor.op.kind === 'compute' ? s.tensor.op.tag : 'reduce'}.rf` },
    };
    const rf = freshStage(rfTensor, rfBody, rfAxes, rest);
    s.body = { k: 'reduce', combiner: body.combiner, source: load(rfTensor, rfAxes.map((a) => v(a.name))), axes: [factorAxis] };
    s.reduceAxes = [factorAxis];
    s.relations = [];
    s.leaves = [...spatial, iter];
    s.kinds = new Map([...spatial.map((a) => [a, 'S'] as const), [iter, 'R'] as const]);
    for (const m of [s.ann, s.bind, s.autoUnroll]) for (const k of [...m.keys()]) if (!s.leaves.includes(k)) m.delete(k);
    this.stages.splice(this.stages.indexOf(s), 0, rf);
  }

  /**
   * TVM's cache_read: `reader` reads `name` through a copy `<name>.<scope>`, a new stage
   * whose axes span the whole tensor (compute_at then shrinks it to the region the reader
   * needs below that loop). `name` may be an input or a compute stage.
   */
  private cacheRead(name: string, scope: CacheScope, readerName: string): void {
    const where = `cache_read ${name} (${scope}) for ${readerName}`;
    const source = this.stages.find((x) => x.name === name)?.tensor ?? this.dag.inputs.find((t) => t.name === name);
    if (!source) throw new ScheduleError(`${where}: no tensor '${name}'`);
    const reader = this.stage(readerName);
    if (!readTensors(reader.body).some((t) => t === source || t.name === name)) throw new ScheduleError(`${where}: ${readerName} does not read ${name}`);
    const copyName = `${name}.${scope}`;
    if (this.stages.some((x) => x.name === copyName)) throw new ScheduleError(`${where}: ${copyName} exists already`);
    const axes: IterVar[] = source.shape.map((extent, i) => ({ name: `ax${i}`, extent }));
    const body = load(source, axes.map((a) => v(a.name)));
    const tensor: Tensor = { name: copyName, shape: source.shape, dtype: source.dtype, op: { kind: 'compute', axes, reduceAxes: [], body, tag: 'cache_read' } };
    const copy = freshStage(tensor, body, axes, [], false, scope);
    reader.body = rewrite(reader.body, (x) => (x.k === 'load' && x.tensor.name === name ? load(tensor, x.indices) : undefined));
    this.stages.splice(this.stages.indexOf(reader), 0, copy);
  }

  /**
   * An ordered reduction's reduce loops nest in the order of its reduce axes: expanding each
   * split in place and each fuse of neighbours in that order gives its reduce loops, outermost
   * first. Splitting k into k.0 outside k.1 keeps the order; k.1 outside k.0 does not.
   */
  private keepsReduceOrder(s: StageState, where: string): void {
    if (!isOrderedReduction(s.body)) return;
    const order = s.reduceAxes.map((a) => a.name);
    for (const r of s.relations) {
      if (r.k === 'split') {
        const at = order.indexOf(r.parent);
        if (at >= 0) order.splice(at, 1, ...r.children);
      } else if (s.kinds.get(r.child) === 'R') {
        const at = order.indexOf(r.parents[0]);
        if (at < 0 || order.slice(at, at + r.parents.length).join() !== r.parents.join()) {
          throw new ScheduleError(`${where}: ${ORDERED_WHY} (fused ${r.parents.join(', ')} out of axis order)`);
        }
        order.splice(at, r.parents.length, r.child);
      }
    }
    const loops = s.leaves.filter((l) => s.kinds.get(l) === 'R');
    if (loops.join() !== order.join()) {
      throw new ScheduleError(`${where}: ${ORDERED_WHY} (reduce loops ${loops.join(', ')}; the axis order is ${order.join(', ')})`);
    }
  }

  private notBound(s: StageState, iter: string, what: string): void {
    if (s.bind.has(iter)) throw new ScheduleError(`${what} ${s.name}.${iter}: the loop is bound to ${s.bind.get(iter)!}`);
  }

  private leafIndex(s: StageState, iter: string): number {
    const i = s.leaves.indexOf(iter);
    if (i < 0) throw new ScheduleError(`${s.name} has no loop '${iter}' (loops: ${s.leaves.join(', ')})`);
    return i;
  }

  private moveAnnotations(s: StageState, from: string, to: string): void {
    const a = s.ann.get(from);
    if (a) { s.ann.delete(from); s.ann.set(to, a); }
  }
}
