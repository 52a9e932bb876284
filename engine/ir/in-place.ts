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

import { readTensors, walk, type Expr } from './expr';
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

/** The stages of `stages` that load `t` directly. */
const readersOf = (stages: readonly Tensor[], t: Tensor): Tensor[] =>
  stages.filter((s) => {
    if (s.op.kind !== 'compute') return false;
    let reads = false;
    walk(s.op.body, (e) => { if (e.k === 'load' && e.tensor === t) reads = true; });
    return reads;
  });

/** Every tensor `output` is computed from, itself included. */
function stagesOf(output: Tensor): Tensor[] {
  const seen = new Set<Tensor>();
  const visit = (t: Tensor): void => {
    if (seen.has(t)) return;
    seen.add(t);
    if (t.op.kind === 'compute') readTensors(t.op.body).forEach(visit);
  };
  visit(output);
  return [...seen];
}

/** The tensors `input` reaches (itself included) when `output` may take its buffer (see above), else undefined. */
function reachIfInPlace(stages: readonly Tensor[], input: Tensor, output: Tensor): Set<Tensor> | undefined {
  if (input.op.kind !== 'placeholder' || input.dtype !== output.dtype || !sameShape(input.shape, output.shape)) return undefined;
  // Walk forward from the input through its readers: each one elementwise, of the output's
  // shape, reading what came before it at its own index.
  const reached = new Set<Tensor>([input]);
  const todo = [input];
  while (todo.length > 0) {
    const t = todo.pop()!;
    for (const s of readersOf(stages, t)) {
      if (s.op.kind !== 'compute' || s.op.reduceAxes.length > 0 || !sameShape(s.shape, output.shape)) return undefined;
      if (!readsAtOwnIndex(s.op.body, t, s.op.axes.map((a) => a.name))) return undefined;
      if (!reached.has(s)) { reached.add(s); todo.push(s); }
    }
  }
  return reached.has(output) ? reached : undefined;
}

/** The inputs among `inputs` whose buffer `output` may take (see above), in their order; none is an empty list. */
export function inPlaceInputs(inputs: readonly Tensor[], output: Tensor): Tensor[] {
  const stages = stagesOf(output);
  return inputs.filter((input) => reachIfInPlace(stages, input, output) !== undefined);
}

/**
 * The names of the stages that read, directly or through others, one of `inputs` that
 * `output` may be written in place of (inPlaceInputs), the output included; empty when there is none. A
 * schedule must not compute an element of these again after the output's element is
 * written: it would read the output's value where the input's was.
 */
export function inPlaceReaders(inputs: readonly Tensor[], output: Tensor): Set<string> {
  const stages = stagesOf(output);
  const names = new Set<string>();
  for (const input of inputs) {
    for (const t of reachIfInPlace(stages, input, output) ?? []) if (t !== input) names.add(t.name);
  }
  return names;
}
