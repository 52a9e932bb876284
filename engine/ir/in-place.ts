// Which input of a kernel its output may overwrite in place. ResNet's residual add (conv +
// shortcut) reads the shortcut once per output element, at that element's own index: the
// output can take the shortcut's buffer when nothing reads the shortcut afterwards. The
// model then writes each cache line it has just read instead of a fresh one, which a CPU
// must first fetch (write-allocate): a third less memory traffic on layers whose tensors
// do not fit in the caches. (ONNX Runtime's FusedConv with a fused Sum input hints its
// allocation planner the same way: onnxruntime/contrib_ops/cpu/fused_conv.cc.)
//
// It is safe for any schedule when every element of the input reaches only the output
// element of the same index: the input is read at the output's own indices by stages of
// the output's shape that are elementwise (no reduction) and read each other the same way,
// up to the output. An element is then read only while that one output element is
// computed, so writing it never changes a value still to be read, whatever the loop order,
// tiling, inlining or threads, as long as no element is computed again after it is written
// (codegen/lower.ts does not shift a last tile back over such stages, codegen/c.ts does not
// run a vector tail over lanes already stored there).

import type { ComputeDAG } from './dag';
import { walk, type Expr } from './expr';
import type { Tensor } from './tensor';

const sameShape = (a: readonly number[], b: readonly number[]): boolean => a.length === b.length && a.every((e, i) => e === b[i]);

/** Whether every load of `t` in `body` reads it at `axes`, in order (the identity index). */
function readsAtOwnIndex(body: Expr, t: Tensor, axes: readonly string[]): boolean {
  let ok = true;
  walk(body, (e) => {
    if (e.k !== 'load' || e.tensor !== t) return;
    if (e.indices.length !== axes.length || e.indices.some((ix, a) => ix.k !== 'var' || ix.name !== axes[a])) ok = false;
  });
  return ok;
}

/** The names of the stages `input` reaches when the DAG's output may take its buffer (see above), else undefined. */
function readersIfInPlace(dag: ComputeDAG, input: Tensor, output: Tensor): Set<string> | undefined {
  if (input.op.kind !== 'placeholder' || input.dtype !== output.dtype || !sameShape(input.shape, output.shape)) return undefined;
  // Walk forward from the input through its readers: each one elementwise, of the output's
  // shape, reading what came before it at its own index.
  const reached = new Set<Tensor>();
  const todo = [input];
  while (todo.length > 0) {
    const t = todo.pop()!;
    for (const s of dag.consumers(t)) {
      if (s.op.kind !== 'compute' || s.op.reduceAxes.length > 0 || !sameShape(s.shape, output.shape)) return undefined;
      if (!readsAtOwnIndex(s.op.body, t, s.op.axes.map((a) => a.name))) return undefined;
      if (!reached.has(s)) { reached.add(s); todo.push(s); }
    }
  }
  return reached.has(output) ? new Set([...reached].map((t) => t.name)) : undefined;
}

/**
 * For each of `inputs` (default: the DAG's) whose buffer the DAG's single output may take
 * (see above), in their order, the names of the stages that read it, directly or through
 * others, the output included. A schedule must not compute an element of these again
 * after the output's element is written: it would read the output's value where the
 * input's was. Empty for a DAG of several outputs.
 */
export function inPlaceReach(dag: ComputeDAG, inputs: readonly Tensor[] = dag.inputs): Map<Tensor, Set<string>> {
  const reach = new Map<Tensor, Set<string>>();
  if (dag.outputs.length !== 1) return reach;
  for (const input of inputs) {
    const readers = readersIfInPlace(dag, input, dag.outputs[0]);
    if (readers) reach.set(input, readers);
  }
  return reach;
}

/** The inputs among `inputs` whose buffer the DAG's output may take, in their order; none is an empty list. */
export const inPlaceInputs = (dag: ComputeDAG, inputs: readonly Tensor[] = dag.inputs): Tensor[] => [...inPlaceReach(dag, inputs).keys()];

/** The names of the stages of a reach (inPlaceReach) that read any of its inputs, merged. */
export const mergedReaders = (reach: ReadonlyMap<Tensor, ReadonlySet<string>>): Set<string> =>
  new Set([...reach.values()].flatMap((r) => [...r]));
