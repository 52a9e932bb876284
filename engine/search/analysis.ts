// Static facts about the stages of a compute DAG that decide which sketch rules apply
// (TVM's AccessAnalyzer, reference §1.2): strictly inlineable, needs multi-level tiling,
// element-wise matched consumer, and the spatial / reduce work of a reduction.

import type { ComputeDAG } from '../ir/dag';
import { freeVars, walk, type Expr } from '../ir/expr';
import { isOrderedReduction } from '../ir/ordered';
import { numElements, type ComputeOp, type Tensor } from '../ir/tensor';

type ComputeTensor = Tensor & { op: ComputeOp };

/** Every read of `body`: producer name -> list of index tuples. */
function reads(body: Expr): Map<string, Expr[][]> {
  const out = new Map<string, Expr[][]>();
  walk(body, (e) => {
    if (e.k !== 'load') return;
    const list = out.get(e.tensor.name) ?? [];
    list.push([...e.indices]);
    out.set(e.tensor.name, list);
  });
  return out;
}

/** The axis an index uses when it is `axis`, `axis + c` or `axis - c`; null for a constant; undefined otherwise. */
function simpleAxis(e: Expr, axes: ReadonlySet<string>): string | null | undefined {
  if (e.k === 'const') return null;
  if (e.k === 'var') return axes.has(e.name) ? e.name : undefined;
  if (e.k === 'bin' && (e.op === '+' || e.op === '-') && e.b.k === 'const' && e.a.k === 'var' && axes.has(e.a.name)) return e.a.name;
  if (e.k === 'bin' && e.op === '+' && e.a.k === 'const' && e.b.k === 'var' && axes.has(e.b.name)) return e.b.name;
  return undefined;
}

export class StageAnalysis {
  readonly dag: ComputeDAG;
  private readonly byName = new Map<string, ComputeTensor>();

  constructor(dag: ComputeDAG) {
    this.dag = dag;
    for (const t of dag.computeStages) this.byName.set(t.name, t);
  }

  tensor(name: string): ComputeTensor {
    const t = this.byName.get(name);
    if (!t) throw new Error(`no compute stage ${name}`);
    return t;
  }

  isOutput(name: string): boolean {
    return this.dag.outputs.some((t) => t.name === name);
  }

  hasReduce(name: string): boolean {
    return this.tensor(name).op.reduceAxes.length > 0;
  }

  /**
   * An ordered reduction (ir/ordered.ts, e.g. a bfloat16 sum): one serial accumulation in
   * axis order, so no rule may rfactor it, reduce it across threads or tile its reduce axes.
   */
  hasOrderedReduce(name: string): boolean {
    return isOrderedReduction(this.tensor(name).op.body);
  }

  /** Compute stages reading `name` (a compute stage or an input) directly. */
  consumers(name: string): string[] {
    return this.dag.consumers(this.dag.stage(name)).map((t) => t.name);
  }

  /** Tensors (compute stages or inputs) the body of `name` reads directly, in first-read order. */
  producers(name: string): string[] {
    return [...reads(this.tensor(name).op.body).keys()];
  }

  /** The stages that read `name`, looking through the readers that `inlined` says are inlined (TVM's GetConsumers). */
  effectiveConsumers(name: string, inlined: (stage: string) => boolean): string[] {
    const out = new Set<string>();
    for (const c of this.consumers(name)) {
      if (inlined(c)) this.effectiveConsumers(c, inlined).forEach((x) => out.add(x));
      else out.add(c);
    }
    return [...out];
  }

  /**
   * Every index of every read is one of the stage's own spatial axes (plus or minus a
   * constant) or a constant, the axes appear in order without repeats, and the body has
   * no exp call and no branch. Such stages are always inlined on CPU.
   */
  isStrictlyInlineable(name: string): boolean {
    const t = this.tensor(name);
    const axes = new Set(t.op.axes.map((a) => a.name));
    let bad = false;
    walk(t.op.body, (e) => {
      if (e.k === 'select' || e.k === 'if' || (e.k === 'call' && e.fn === 'exp') || e.k === 'reduce') bad = true;
    });
    if (bad) return false;
    for (const list of reads(t.op.body).values()) {
      for (const idx of list) {
        const used = idx.map((i) => simpleAxis(i, axes));
        if (used.some((u) => u === undefined)) return false;
        const named = used.filter((u): u is string => typeof u === 'string');
        const order = named.map((n) => t.op.axes.findIndex((a) => a.name === n));
        if (order.some((o, i) => i > 0 && o <= order[i - 1])) return false;
      }
    }
    return true;
  }

  /**
   * Data reuse: inputs that some output axis (extent > 1) does not index. Two such inputs,
   * or one and a reduction, call for multi-level tiling (matmul, conv, depthwise, dense).
   */
  needsMultiLevelTiling(name: string): boolean {
    const t = this.tensor(name);
    // A tiling nests the tiles of each reduce axis between the others' (k0 l0 ... k1 l1): out
    // of axis order for an ordered reduction of several reduce axes.
    if (t.op.reduceAxes.length > 1 && this.hasOrderedReduce(name)) return false;
    let reuse = 0;
    for (const list of reads(t.op.body).values()) {
      const used = new Set<string>();
      for (const idx of list) for (const i of idx) freeVars(i).forEach((x) => used.add(x));
      if (t.op.axes.some((a) => a.extent > 1 && !used.has(a.name))) reuse++;
    }
    return reuse >= 2 || (reuse >= 1 && t.op.reduceAxes.length > 0);
  }

  spaceLength(name: string): number {
    return numElements(this.tensor(name).shape);
  }

  reduceLength(name: string): number {
    return numElements(this.tensor(name).op.reduceAxes.map((a) => a.extent));
  }

  /** TVM's NeedsRfactor on CPU: little spatial work next to the reduction. */
  needsRfactor(name: string, numCores: number): boolean {
    if (!this.hasReduce(name) || this.hasOrderedReduce(name)) return false;
    const space = this.spaceLength(name), reduce = this.reduceLength(name);
    if (this.needsMultiLevelTiling(name)) return space <= reduce && space <= 16 * numCores;
    return reduce > numCores;
  }

  /** `consumer` reads `producer` exactly at its own axes, in order (same shape, no reduction). */
  private readsElementwise(consumer: string, producer: string): boolean {
    const c = this.tensor(consumer);
    const p = this.dag.stage(producer);
    if (c.op.reduceAxes.length > 0 || c.shape.join() !== p.shape.join()) return false;
    const list = reads(c.op.body).get(producer) ?? [];
    return list.length > 0 && list.every((idx) => idx.every((i, d) => i.k === 'var' && i.name === c.op.axes[d].name));
  }

  /**
   * The single consumer that `name` can be fused into (computed at its tile), looking
   * through consumers that `inlined` says are inlined: an element-wise chain of stages of
   * the same shape. Undefined when there is none.
   */
  fusibleConsumer(name: string, inlined: (stage: string) => boolean): string | undefined {
    let current = name;
    for (;;) {
      const cs = this.consumers(current);
      if (cs.length !== 1) return undefined;
      const c = cs[0];
      if (!this.readsElementwise(c, current)) return undefined;
      if (!inlined(c)) return c;
      current = c;
    }
  }
}
