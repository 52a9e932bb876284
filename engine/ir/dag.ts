// The compute DAG of a task: every tensor reachable from the outputs, in a deterministic
// topological order (inputs just before their first reader, as in TVM's logs), with the
// printer, the workload key and the FLOP count defined on it.

import { createHash } from 'node:crypto';
import { dtypeOf, readTensors, type Expr } from './expr';
import { printStage } from './printer';
import { numElements, type ComputeOp, type Tensor } from './tensor';

export class ComputeDAG {
  /** Every tensor, producers before consumers. */
  readonly stages: readonly Tensor[];
  /** Placeholders in first-use order. */
  readonly inputs: readonly Tensor[];
  readonly outputs: readonly Tensor[];
  // The DAG never changes: printing and hashing it is done once, on first use.
  #structureHash?: string;
  #workloadKey?: string;
  #flops?: number;

  constructor(outputs: readonly Tensor[]) {
    if (outputs.length === 0) throw new Error('ComputeDAG needs at least one output');
    const order: Tensor[] = [];
    const seen = new Set<Tensor>();
    const visit = (t: Tensor): void => {
      if (seen.has(t)) return;
      seen.add(t);
      if (t.op.kind === 'compute') for (const input of readTensors(t.op.body)) visit(input);
      order.push(t);
    };
    outputs.forEach(visit);
    const names = order.map((t) => t.name);
    const dup = names.find((n, i) => names.indexOf(n) !== i);
    if (dup) throw new Error(`ComputeDAG: two stages are named ${dup}`);
    this.stages = order;
    this.inputs = order.filter((t) => t.op.kind === 'placeholder');
    this.outputs = [...outputs];
  }

  /** Inputs then outputs: the tensors a kernel of this DAG takes as arguments. */
  get tensors(): readonly Tensor[] {
    return [...this.inputs, ...this.outputs];
  }

  get computeStages(): readonly (Tensor & { op: ComputeOp })[] {
    return this.stages.filter((t): t is Tensor & { op: ComputeOp } => t.op.kind === 'compute');
  }

  stage(name: string): Tensor {
    const t = this.stages.find((s) => s.name === name);
    if (!t) throw new Error(`no stage named ${name}`);
    return t;
  }

  /** Stages that read `t` directly. */
  consumers(t: Tensor): Tensor[] {
    return this.stages.filter((s) => s.op.kind === 'compute' && readTensors(s.op.body).includes(t));
  }

  /** The DAG in the seeds' format, one stage per line. */
  print(simple = false): string {
    return this.stages.map((t) => printStage(t, simple)).join('\n') + '\n';
  }

  /** MD5 of the structure (placeholder shapes left out), as in TVM. */
  get structureHash(): string {
    return (this.#structureHash ??= createHash('md5').update(this.print(true)).digest('hex'));
  }

  /** `["<hash>", [input shape]..., [output shape]...]`, formatted like TVM's keys. */
  get workloadKey(): string {
    if (this.#workloadKey === undefined) {
      const shapes = this.tensors.map((t) => `[${t.shape.join(', ')}]`);
      this.#workloadKey = `["${this.structureHash}", ${shapes.join(', ')}]`;
    }
    return this.#workloadKey;
  }

  /** Input shapes then output shapes, the order of the workload key. */
  get shapes(): number[][] {
    return this.tensors.map((t) => [...t.shape]);
  }

  /** Floating-point operations of one execution, counted with TVM's FlopEstimator rules. */
  get flops(): number {
    return (this.#flops ??= this.computeStages.reduce((acc, t) => acc + numElements(t.shape) * opsPerElement(t.op.body, dtypeOf(t.op.body)), 0));
  }
}

/**
 * Ops per output element. A binary op counts when either operand has the stage's data
 * type (index arithmetic in a float stage is free); loads, constants, casts are free; a
 * call costs its arguments; a select costs its condition and its dearer branch. In TVM
 * `if_then_else` is a call, so it costs its condition and both branches.
 */
function opsPerElement(e: Expr, stageType: string): number {
  const count = (x: Expr): number => {
    switch (x.k) {
      case 'const': case 'var': case 'load': return 0;
      case 'cast': return count(x.a);
      case 'not': return (dtypeOf(x.a) === stageType ? 1 : 0) + count(x.a);
      case 'bin': {
        const own = dtypeOf(x.a) === stageType || dtypeOf(x.b) === stageType ? 1 : 0;
        return own + count(x.a) + count(x.b);
      }
      case 'select': return count(x.cond) + Math.max(count(x.t), count(x.f));
      case 'if': return count(x.cond) + count(x.t) + count(x.f);
      case 'call': return x.args.reduce((a, arg) => a + count(arg), 0);
      case 'reduce': return numElements(x.axes.map((a) => a.extent)) * (1 + count(x.source));
    }
  };
  return count(e);
}
