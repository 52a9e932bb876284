// Lowering: a scheduled task (State) -> one kernel as a loop nest over flat buffers.
//
// Per stage: loop extents follow from the root extents through the split/fuse relations;
// root indices are rebuilt from the loop variables; a stage computed at a consumer's loop
// covers only the region that consumer reads below that loop (bound inference on affine
// index expressions, the whole tensor otherwise; or a run of positions of two fused axes,
// see FlatSpan) and lives in a local buffer there; inlined stages are substituted into
// their readers; non-dividing splits get guards (the C renderer versions split tails out
// of whole tiles, partition.ts).

import {
  add, all, div, dtypeOf, f32, floordiv, floormod, freeVars, ge, int, lt, min, mul, rewrite, substitute, v, walk, type Combiner, type DType, type Expr,
} from '../ir/expr';
import { inPlaceReach, mergedReaders } from '../ir/in-place';
import { numElements, type Tensor } from '../ir/tensor';
import { isOrderedCombiner } from '../ir/ordered';
import { printExpr } from '../ir/printer';
import { ScheduleError, type State, type StageState } from '../schedule/state';
import { MAX_UNROLL, type ThreadTag } from '../schedule/steps';
import { blockedShape, type BlockedLayout } from './layout';
import { interval, simplifyDivMod } from './index-simplify';

/** How a loop runs: on CPUs serial, parallel (a thread pool's), vectorised or unrolled; on GPUs also bound to a thread index (gpu.ts turns those into launch dimensions). */
export type LoopKind = 'serial' | 'parallel' | 'vectorize' | 'unroll' | ThreadTag;

export type Stmt =
  | { k: 'for'; v: string; extent: number; kind: LoopKind; owner: string; body: Stmt[] }
  | { k: 'store'; buf: string; index: Expr; value: Expr }
  /** A buffer local to the enclosing loop: per thread, or (`shared`) per GPU block, hoisted by the GPU renderers; float32 unless `dtype` says otherwise. */
  | { k: 'alloc'; buf: string; size: number; scope?: 'shared'; dtype?: DType }
  | { k: 'if'; cond: Expr; body: Stmt[] }
  /** GPU: every thread of the block waits here, and sees the shared memory the others wrote (emitted around shared copies). */
  | { k: 'sync' }
  /** GPU: `v` is the hardware index `tag` in `body` (gpu.ts makes these from bound loops). */
  | { k: 'thread'; v: string; tag: ThreadTag; body: Stmt[] }
  /** CPU C: ask the cache for `lines` 64-byte lines of `buf` from element `index` on (prefetch.ts makes these). */
  | { k: 'prefetch'; buf: string; index: Expr; lines: number };

/** `body` with `f` applied to every expression (indices, values, conditions), nested statements included. */
export function mapExprs(body: readonly Stmt[], f: (e: Expr) => Expr): Stmt[] {
  return body.map((s): Stmt => {
    switch (s.k) {
      case 'store': return { ...s, index: f(s.index), value: f(s.value) };
      case 'prefetch': return { ...s, index: f(s.index) };
      case 'if': return { ...s, cond: f(s.cond), body: mapExprs(s.body, f) };
      case 'for': case 'thread': return { ...s, body: mapExprs(s.body, f) };
      default: return s;
    }
  });
}

/** Calls `visit` on every expression of `body` (indices, values, conditions), nested statements included. */
export function forEachExpr(body: readonly Stmt[], visit: (e: Expr) => void): void {
  for (const s of body) {
    if (s.k === 'store') { visit(s.index); visit(s.value); }
    else if (s.k === 'if') { visit(s.cond); forEachExpr(s.body, visit); }
    else if (s.k === 'for' || s.k === 'thread') forEachExpr(s.body, visit);
  }
}

export interface KernelArg { readonly buf: string; readonly tensor: Tensor }

export interface Kernel {
  readonly name: string;
  /** DAG inputs then outputs, as the kernel's pointer arguments. */
  readonly args: readonly KernelArg[];
  /** Intermediate whole-tensor buffers, allocated once per call (float32 unless `dtype` says otherwise). */
  readonly temps: readonly { buf: string; size: number; dtype?: DType }[];
  readonly body: Stmt[];
  /** `body`, stage by stage: the statements of each stage computed at root (on GPUs, one launch each). */
  readonly parts: readonly { stage: string; body: Stmt[] }[];
  /** Inputs read through a blocked layout (layout.ts): their data must be packed to match. */
  readonly layouts: readonly BlockedLayout[];
  /**
   * The output and the inputs it may be written in place of (ir/in-place.ts; constants
   * left out), which may share memory: none, or the output's buffer and theirs.
   */
  readonly aliased: readonly string[];
}

export interface LowerOptions {
  /**
   * DAG inputs (placeholder names) that hold constants (weights): the lowering may choose
   * a blocked layout for them so that the register tile reads them contiguously.
   * Default none: every input in its own row-major layout.
   */
  packable?: ReadonlySet<string>;
}

/**
 * Softmax's normalisation, each exp divided by its row's sum, is lowered as the exp times
 * the sum's reciprocal: one division per row instead of one per element (ONNX Runtime's MLAS
 * normalises so too). Two roundings instead of one put the result within 2^-23 of the
 * quotient, relative. The stage's body keeps the division, since the DAG's structure is its
 * workload key, TVM's. ViT-S/16's 12 softmaxes over 6x197x197 scores, profiled in the
 * network at 1 thread on an AVX-512 Xeon, two builds interleaved: 1.97-2.01 ms a run dividing,
 * 1.56-1.69 multiplying.
 */
function timesReciprocal(s: StageState, body: Expr): Expr {
  const op = s.tensor.op;
  if (op.kind !== 'compute' || op.tag !== 'softmax' || body.k !== 'bin' || body.op !== '/' || dtypeOf(body) !== 'float32') return body;
  return mul(body.a, div(f32(1), body.b));
}

/** Largest buffer a stage computed inside a loop may use (floats): it lives on the stack. */
export const MAX_LOCAL_FLOATS = 1 << 16;

/** What a stage computed at a loop covers: `len` elements from `base` per axis; `strides` lay its buffer out (row-major, padded by storage_align), `size` floats. */
interface Region { base: Expr[]; len: number[]; guard: Expr | undefined; strides: number[]; size: number; flat?: FlatSpan }

/**
 * A region that covers two adjacent axes `d` and `d + 1` as a run of their row-major
 * positions (`axis_d * width + axis_d+1`), `len` of them from `base`, not as a box: what a
 * consumer reads below a split of its fused (h, w) loop, such as a 1x1 conv's register tile
 * of 6 output positions of a 14x14 image (a box would be two whole rows). The stage walks
 * the run with its own fused loop `child` of those two axes; its buffer holds the run in
 * axis `d + 1` (axis `d` has length 1). `guard`: the run may pass the image's end.
 */
interface FlatSpan { d: number; width: number; base: Expr; child: string; guard: boolean }

/**
 * Row-major strides of a buffer of lengths `len`, the stride of each axis named in `align`
 * raised to the smallest value at least the natural one with `stride % factor == offset`
 * (TVM's storage_align), and the buffer's size in elements.
 */
export function alignedStrides(
  axes: readonly string[], len: readonly number[], align: ReadonlyMap<string, { factor: number; offset: number }>,
): { strides: number[]; size: number } {
  const strides = new Array<number>(len.length);
  let stride = 1;
  for (let d = len.length - 1; d >= 0; d--) {
    const a = align.get(axes[d]);
    if (a) stride += (a.factor + a.offset - (stride % a.factor)) % a.factor;
    strides[d] = stride;
    stride *= len[d];
  }
  const size = len.reduce((acc, l, d) => acc + (l - 1) * strides[d], 0) + 1;
  return { strides, size };
}

/** The combination of two values of a reduction (the accumulator and one more value). */
function combine(combiner: Combiner, a: Expr, b: Expr): Expr {
  if (combiner === 'sum') return add(a, b);
  if (combiner === 'sum_bf16') return { k: 'call', fn: 'round_bf16', args: [add(a, b)] };
  if (combiner === 'prod') return mul(a, b);
  return { k: 'bin', op: combiner, a, b, dtype: dtypeOf(a) };
}

/** The value a reduction starts from; an int32 max/min starts from the type's extremes. */
const identityOf = (combiner: Combiner, dtype: DType = 'float32'): Expr => {
  if (dtype === 'float32') return f32(combiner === 'sum' || combiner === 'sum_bf16' ? 0 : combiner === 'prod' ? 1 : combiner === 'max' ? -Infinity : Infinity);
  return int(combiner === 'sum' || combiner === 'sum_bf16' ? 0 : combiner === 'prod' ? 1 : combiner === 'max' ? -2147483648 : 2147483647);
};
interface RootValues { readonly roots: ReadonlyMap<string, Expr>; readonly guards: readonly { cond: Expr; reduce: boolean }[] }

/** A 1-D view of a buffer, so lowered loads reuse the IR's load node with a flat index. */
function flatLoad(buf: string, index: Expr, dtype: Tensor['dtype'] = 'float32'): Expr {
  const tensor: Tensor = { name: buf, shape: [1], dtype, op: { kind: 'placeholder' } };
  return { k: 'load', tensor, indices: [index] };
}

/**
 * Words a buffer may not be called in any language we render (C, OpenCL C, CUDA): keywords,
 * type names, address-space qualifiers, and the functions and macros the generated code
 * calls. A tensor named `kernel` (a conv weight, say) becomes buffer `kernel_`.
 */
const RESERVED = new Set([
  'auto', 'break', 'case', 'char', 'const', 'continue', 'default', 'do', 'double', 'else', 'enum', 'extern', 'float', 'for',
  'goto', 'if', 'inline', 'int', 'long', 'register', 'restrict', 'return', 'short', 'signed', 'sizeof', 'static', 'struct',
  'switch', 'typedef', 'union', 'unsigned', 'void', 'volatile', 'while', 'bool', 'true', 'false', 'main',
  'kernel', 'global', 'local', 'constant', 'private', 'read_only', 'write_only', 'read_write', 'half', 'uint', 'uchar',
  'ushort', 'ulong', 'size_t', 'int32_t', 'sampler_t', 'event_t', 'image1d_t', 'image2d_t', 'image3d_t',
  'threadIdx', 'blockIdx', 'blockDim', 'gridDim', 'warpSize',
  'exp', 'log', 'sqrt', 'rsqrt', 'tanh', 'fabs', 'erf', 'fmax', 'fmin', 'select', 'barrier', 'min', 'max',
  'expf', 'logf', 'sqrtf', 'tanhf', 'fabsf', 'erff', 'INFINITY', 'NAN', 'program', 'error', 'args',
  'log1p', 'floor', 'ceil', 'round', 'rint', 'sin', 'cos', 'tan', 'atan', 'pow', 'fmod', 'isnan', 'isinf',
  'log1pf', 'floorf', 'ceilf', 'roundf', 'rintf', 'sinf', 'cosf', 'tanf', 'atanf', 'powf', 'fmodf',
]);

export const cName = (name: string): string => {
  const c = name.replace(/[^A-Za-z0-9_]/g, '_');
  return RESERVED.has(c) || /^(tt_|get_|vload|vstore|__)/.test(c) ? `${c}_` : c;
};

/** Flat index of `idx` in a buffer with these strides (axes of length 1 contribute nothing). */
function flattenStrided(idx: readonly Expr[], len: readonly number[], strides: readonly number[]): Expr {
  let out: Expr = int(0);
  for (let i = len.length - 1; i >= 0; i--) if (len[i] !== 1) out = add(mul(idx[i], strides[i]), out);
  return out;
}

function flatten(idx: readonly Expr[], shape: readonly number[]): Expr {
  let out: Expr = int(0);
  let stride = 1;
  for (let i = shape.length - 1; i >= 0; i--) {
    if (shape[i] !== 1) out = add(mul(idx[i], stride), out);
    stride *= shape[i];
  }
  return out;
}

/**
 * Affine form `c + sum(coef * atom)` where an atom is a loop variable or, when `isInner`
 * says it holds no inner loop variable, any sub-expression (e.g. floormod of a fused
 * outer loop), which is constant while the inner loops run. Null when not affine.
 */
export interface Linear { c: number; terms: Map<string, number>; atoms: Map<string, Expr> }
export function linear(e: Expr, hasInner: (e: Expr) => boolean, opaque = false): Linear | null {
  if (e.k === 'const') return e.dtype === 'int32' ? { c: e.value, terms: new Map(), atoms: new Map() } : null;
  if (e.k === 'var' || !hasInner(e)) {
    const key = e.k === 'var' ? e.name : printExpr(e);
    return { c: 0, terms: new Map([[key, 1]]), atoms: new Map([[key, e]]) };
  }
  // `opaque`: any other expression (floordiv/floormod of an inner fused loop, say) is an
  // atom too; the caller bounds it with interval() or gives up.
  const atom = (): Linear | null => {
    if (!opaque) return null;
    const key = printExpr(e);
    return { c: 0, terms: new Map([[key, 1]]), atoms: new Map([[key, e]]) };
  };
  if (e.k !== 'bin') return atom();
  const a = linear(e.a, hasInner, opaque), b = linear(e.b, hasInner, opaque);
  if (!a || !b) return atom();
  const atoms = new Map([...a.atoms, ...b.atoms]);
  if (e.op === '+' || e.op === '-') {
    const sign = e.op === '+' ? 1 : -1;
    const terms = new Map(a.terms);
    for (const [k, c] of b.terms) terms.set(k, (terms.get(k) ?? 0) + sign * c);
    return { c: a.c + sign * b.c, terms, atoms };
  }
  if (e.op === '*') {
    if (a.terms.size === 0) return { ...scale(b, a.c), atoms };
    if (b.terms.size === 0) return { ...scale(a, b.c), atoms };
  }
  return atom();
}

const isArith = (x: Expr): boolean => x.k === 'bin' && (x.op === '+' || x.op === '-' || x.op === '*');

/**
 * Folds `floordiv(x, k) * c*k + floormod(x, k) * c` into `x * c` in an affine form, until no
 * such pair is left (a fused loop split back into its axes and flattened again, as in a
 * buffer index). Returns whether it folded any.
 */
function foldDivModPairs(l: Linear): boolean {
  let folded = false;
  for (let again = true; again;) {
    again = false;
    for (const [key, c] of l.terms) {
      const atom = l.atoms.get(key)!;
      if (c === 0 || atom.k !== 'bin' || atom.op !== 'floormod' || atom.b.k !== 'const' || atom.b.value <= 0) continue;
      const k = atom.b.value;
      const divKey = printExpr(floordiv(atom.a, k));
      if (l.terms.get(divKey) !== c * k) continue;
      const x = linear(atom.a, isArith);
      if (!x) continue;
      l.terms.delete(key);
      l.terms.delete(divKey);
      l.c += c * x.c;
      for (const [n, xc] of x.terms) {
        l.terms.set(n, (l.terms.get(n) ?? 0) + c * xc);
        l.atoms.set(n, x.atoms.get(n)!);
      }
      folded = again = true;
      break;
    }
  }
  return folded;
}

function affineExpr(l: Linear): Expr {
  let out: Expr = int(0);
  for (const [name, c] of l.terms) if (c !== 0) out = add(out, mul(l.atoms.get(name)!, c));
  return add(out, l.c);
}

/** Collect like terms of an affine index (so `a*7 + x - a*7` becomes `x`, and `floordiv(p, 14)*14 + floormod(p, 14)` becomes `p`); others unchanged. */
function simplifyAffine(e: Expr): Expr {
  const l = linear(e, isArith);
  if (!l) return e;
  foldDivModPairs(l);
  return affineExpr(l);
}

/** `e` with its floordiv/floormod pairs folded (see foldDivModPairs), or `e` itself where it has none. */
function withDivModFolded(e: Expr): Expr {
  const l = linear(e, isArith);
  return l && foldDivModPairs(l) ? affineExpr(l) : e;
}

const scale = (l: Linear, k: number): Linear => ({ c: l.c * k, terms: new Map([...l.terms].map(([n, c]) => [n, c * k])), atoms: l.atoms });

/** What reads of one index cover below the attach point: `len` values from `base` (an expression of the outer loops), which ranges over [minBase, maxBase]. */
interface Span { base: Expr; len: number; minBase: number; maxBase: number }

/**
 * The span of `indices` (one per read) over the loops below the attach point (`hasInner`):
 * each must be affine in those loops, with the same outer terms; null otherwise.
 */
function readSpan(indices: readonly Expr[], hasInner: (e: Expr) => boolean, extentOf: (name: string) => number | undefined): Span | null {
  const forms = indices.map((i) => linear(i, hasInner, true));
  if (forms.some((f) => f === null)) return null;
  const split = (forms as Linear[]).map((f) => {
    let lo = f.c, span = 0;
    const outer = new Map<string, number>();
    for (const [name, c] of f.terms) {
      if (c === 0) continue;
      const atom = f.atoms.get(name)!;
      if (hasInner(atom)) {
        // A loop below the attach point (or a function of some, such as the floormod
        // of a fused loop): the region spans its whole range.
        const range = interval(atom, extentOf);
        if (!range) return null;
        lo += Math.min(c * range[0], c * range[1]); span += Math.abs(c) * (range[1] - range[0]);
      } else outer.set(name, c);
    }
    return { lo, hi: lo + span, outer };
  });
  if (split.some((x) => x === null)) return null;
  const spans = split as { lo: number; hi: number; outer: Map<string, number> }[];
  const key = (m: Map<string, number>): string => [...m].sort().map(([n, c]) => `${n}*${c}`).join('+');
  if (spans.some((x) => key(x.outer) !== key(spans[0].outer))) return null;
  const lo = Math.min(...spans.map((x) => x.lo)), hi = Math.max(...spans.map((x) => x.hi));
  let base: Expr = int(lo);
  let minBase = lo, maxBase = lo;
  const atoms = (forms[0] as Linear).atoms;
  for (const [name, c] of spans[0].outer) {
    const atom = atoms.get(name)!;
    base = add(base, mul(atom, c));
    const range = interval(atom, extentOf) ?? [-Infinity, Infinity];
    minBase += Math.min(c * range[0], c * range[1]); maxBase += Math.max(c * range[0], c * range[1]);
  }
  return { base, len: hi - lo + 1, minBase, maxBase };
}

class Lowerer {
  private readonly state: State;
  private readonly varName = new Map<string, string>();
  /** Extent of every loop variable (by C name). */
  private readonly varExtent = new Map<string, number>();
  private readonly leafExtents = new Map<string, Map<string, number>>();
  private readonly regions = new Map<string, Region>();
  /** Inputs given a blocked layout, by tensor name. */
  private readonly blocked = new Map<string, { axis: number; block: number; shape: number[] }>();
  private readonly inlined = new Map<string, Expr>();
  private readonly rootsOf = new Map<string, RootValues>();

  /** Whether any loop is bound to a GPU index (a GPU kernel: no shifted last tiles). */
  private readonly gpuBound: boolean;

  /** The inputs the output may be written in place of. */
  private readonly overwritable: readonly Tensor[];
  /** Stages (and their cache_write copies) that read them: never recomputed. */
  private readonly inPlace: ReadonlySet<string>;

  constructor(state: State, private readonly opts: LowerOptions = {}) {
    this.state = state;
    this.gpuBound = state.stages.some((x) => x.bind.size > 0);
    // Constants are never written over: a bias as long as the output does not take part.
    const reach = inPlaceReach(state.dag, state.dag.inputs.filter((t) => !opts.packable?.has(t.name)));
    this.overwritable = [...reach.keys()];
    this.inPlace = mergedReaders(reach);
  }

  lower(name: string): Kernel {
    const st = this.state;
    st.validate();
    // Consumers before producers, so a producer's region can be read off its consumer's loops.
    for (const s of [...st.stages].reverse()) {
      if (s.attach.k === 'inline') continue;
      const roots = new Map<string, number>();
      const region = s.attach.k === 'at' ? this.inferRegion(s) : undefined;
      if (region) this.regions.set(s.name, region);
      s.axes.forEach((a, i) => roots.set(a.name, region ? region.len[i] : a.extent));
      s.reduceAxes.forEach((a) => roots.set(a.name, a.extent));
      this.leafExtents.set(s.name, this.deriveExtents(s, roots));
      for (const leaf of s.leaves) this.varExtent.set(this.loopVar(s, leaf), this.leafExtents.get(s.name)!.get(leaf)!);
    }
    this.chooseLayouts();
    const args: KernelArg[] = st.dag.tensors.map((t) => ({ buf: cName(t.name), tensor: t }));
    const temps = st.stages
      .filter((s) => s.attach.k === 'root' && !s.isOutput)
      .map((s) => ({ buf: cName(s.name), size: numElements(s.tensor.shape), ...(s.tensor.dtype !== 'float32' ? { dtype: s.tensor.dtype } : {}) }));
    // Indices with their floordiv/floormod simplified over the loops' ranges (index-simplify.ts).
    const extent = (v: string): number | undefined => this.varExtent.get(v);
    const parts = st.stages.filter((s) => s.attach.k === 'root').map((s) => ({ stage: s.name, body: mapExprs(this.emitStage(s), (e) => simplifyDivMod(e, extent)) }));
    const body = parts.flatMap((p) => p.body);
    const layouts = st.dag.inputs.flatMap((t, input) => {
      const b = this.blocked.get(t.name);
      return b ? [{ input, axis: b.axis, block: b.block }] : [];
    });
    const aliased = this.overwritable.length > 0 ? args.filter((a) => a.tensor === st.dag.outputs[0] || this.overwritable.includes(a.tensor)).map((a) => a.buf) : [];
    return { name, args, temps, body, parts, layouts, aliased };
  }

  /**
   * Weight layout rewrite (TVM's layout_rewrite, in a blocked form): a packable input read
   * by exactly one reduction stage, indexed by plain axes of it, is blocked along the
   * spatial axis its register tile covers: the block is the extent that the stage's loops
   * below its last reduce loop give that axis (the tile width). Then the tile's reads of
   * the weight are contiguous and successive reduction steps read consecutive blocks.
   */
  private chooseLayouts(): void {
    const packable = this.opts.packable;
    if (!packable?.size) return;
    const readers = new Map<string, { stage: StageState; indices: readonly Expr[] }[]>();
    for (const s of this.state.stages) {
      if (s.attach.k === 'inline') continue;
      walk(this.inlinedBody(s), (x) => {
        if (x.k === 'load' && packable.has(x.tensor.name)) readers.set(x.tensor.name, [...(readers.get(x.tensor.name) ?? []), { stage: s, indices: x.indices }]);
      });
    }
    for (const t of this.state.dag.inputs) {
      const reads = readers.get(t.name);
      if (!reads || reads.length !== 1 || t.shape.length < 2) continue;
      const { stage: s, indices } = reads[0];
      if (s.body.k !== 'reduce') continue;
      const names = indices.map((i) => (i.k === 'var' ? i.name : undefined));
      if (names.some((n) => n === undefined) || new Set(names).size !== names.length) continue;
      const lastReduce = s.leaves.reduce((at, l, i) => (s.kinds.get(l) === 'R' ? i : at), -1);
      if (lastReduce < 0) continue;
      const ext = this.leafExtents.get(s.name)!;
      const root = this.rootOfLeaf(s);
      let best: { axis: number; block: number } | undefined;
      names.forEach((n, axis) => {
        if (s.kinds.get(n!) !== 'S') return;
        const block = s.leaves.slice(lastReduce + 1).filter((l) => root.get(l) === n).reduce((a, l) => a * ext.get(l)!, 1);
        if (block > 1 && block < t.shape[axis] && t.shape[axis] % block === 0 && (!best || block > best.block)) best = { axis, block };
      });
      if (best) this.blocked.set(t.name, { ...best, shape: blockedShape(t.shape, best.axis, best.block) });
    }
  }

  /** The root axis each leaf iterator derives from (undefined for fused leaves of several roots). */
  private rootOfLeaf(s: StageState): Map<string, string | undefined> {
    const root = new Map<string, string | undefined>([...s.axes, ...s.reduceAxes].map((a) => [a.name, a.name]));
    for (const r of s.relations) {
      if (r.k === 'split') r.children.forEach((c) => root.set(c, root.get(r.parent)));
      else {
        const roots = new Set(r.parents.map((p) => root.get(p)));
        root.set(r.child, roots.size === 1 ? [...roots][0] : undefined);
      }
    }
    return root;
  }

  /** floordiv and floormod of an index by a block: exact when the index is `block*q + r` with r in [0, block). */
  private divmod(e: Expr, block: number): [Expr, Expr] {
    const l = linear(e, (x) => x.k === 'bin' && (x.op === '+' || x.op === '-' || x.op === '*'));
    if (l) {
      let q: Expr = int(Math.floor(l.c / block));
      let r: Expr = int(l.c - Math.floor(l.c / block) * block);
      let lo = l.c - Math.floor(l.c / block) * block, hi = lo;
      let exact = true;
      for (const [name, c] of l.terms) {
        if (c === 0) continue;
        const atom = l.atoms.get(name)!;
        if (c % block === 0) { q = add(q, mul(atom, c / block)); continue; }
        r = add(r, mul(atom, c));
        const range = interval(atom, (n) => this.varExtent.get(n));
        if (!range) { exact = false; break; }
        lo += Math.min(c * range[0], c * range[1]); hi += Math.max(c * range[0], c * range[1]);
      }
      if (exact && lo >= 0 && hi < block) return [q, r];
    }
    return [floordiv(e, block), floormod(e, block)];
  }

  // ------------------------------------------------------------ loops and indices

  private loopVar(s: StageState, iter: string): string {
    const key = `${s.name}/${iter}`;
    let name = this.varName.get(key);
    if (!name) {
      name = `${cName(iter)}_${this.state.stages.indexOf(s)}`;
      this.varName.set(key, name);
    }
    return name;
  }

  private deriveExtents(s: StageState, roots: Map<string, number>): Map<string, number> {
    const ext = new Map(roots);
    for (const r of s.relations) {
      if (r.k === 'split') {
        const parent = ext.get(r.parent)!;
        const inner = r.lengths.reduce((a, b) => a * b, 1);
        ext.set(r.children[0], Math.ceil(parent / inner));
        r.lengths.forEach((l, i) => ext.set(r.children[i + 1], l));
      } else {
        ext.set(r.child, r.parents.reduce((a, p) => a * ext.get(p)!, 1));
      }
    }
    return ext;
  }

  /**
   * Whether the last tile of a split of `parent` (extent not a multiple of `tile`) runs
   * shifted back to start at extent - tile, whole, instead of guarded: it recomputes a few
   * elements the tile before it wrote, with the same values, and every tile stays full
   * vectors (ViT's 197 tokens: 12 tiles of 16 columns and a tail of 5 that ran scalar, a
   * third of an attention product's time). Only where recomputing is harmless and the
   * writes stay on one thread: a spatial axis at least a tile long, the tile loop a plain
   * loop of the stage (not fused, not parallel, not bound to a GPU index), and every reduce
   * loop of the stage inside it, so each tile starts its reductions afresh. Not in a stage
   * that reads the input the output may overwrite (ir/in-place.ts): recomputed there, an
   * element would read the output's value in place of the input's.
   */
  private shiftsLastTile(s: StageState, parent: string, outer: string, extent: number, tile: number): boolean {
    if (s.kinds.get(parent) !== 'S' || extent < tile) return false;
    if (this.inPlace.has(s.name) || this.inPlace.has(s.name.replace(/\.local$/, ''))) return false;
    const at = s.leaves.indexOf(outer);
    if (at < 0 || s.ann.get(outer) === 'parallel' || this.gpuBound) return false;
    return s.leaves.every((l, i) => s.kinds.get(l) !== 'R' || i > at);
  }

  /** Value of every iterator in terms of the leaf loop variables (0-based within the stage's region). */
  private iterValues(s: StageState): { values: Map<string, Expr>; guards: { cond: Expr; reduce: boolean }[] } {
    const ext = this.leafExtents.get(s.name)!;
    const values = new Map<string, Expr>(s.leaves.map((l) => [l, v(this.loopVar(s, l))]));
    const guards: { cond: Expr; reduce: boolean }[] = [];
    for (const r of [...s.relations].reverse()) {
      if (r.k === 'split') {
        const tile = r.lengths.reduce((a, b) => a * b, 1);
        const covered = ext.get(r.children[0])! * tile;
        const shifted = covered > ext.get(r.parent)! && this.shiftsLastTile(s, r.parent, r.children[0], ext.get(r.parent)!, tile);
        let val = values.get(r.children[0])!;
        if (shifted) {
          // The last tile starts at extent - tile, whole and unguarded (shiftsLastTile).
          let inner = values.get(r.children[1])!;
          for (let i = 1; i < r.lengths.length; i++) inner = add(mul(inner, r.lengths[i]), values.get(r.children[i + 1])!);
          val = add(min(mul(val, tile), ext.get(r.parent)! - tile), inner);
        } else r.lengths.forEach((l, i) => { val = add(mul(val, l), values.get(r.children[i + 1])!); });
        values.set(r.parent, val);
        if (covered > ext.get(r.parent)! && !shifted) guards.push({ cond: lt(val, ext.get(r.parent)!), reduce: s.kinds.get(r.parent) === 'R' });
      } else {
        const f = values.get(r.child)!;
        let stride = 1;
        for (let i = r.parents.length - 1; i >= 0; i--) {
          const e = ext.get(r.parents[i])!;
          const q = floordiv(f, stride);
          values.set(r.parents[i], i === 0 ? q : floormod(q, e));
          stride *= e;
        }
      }
    }
    return { values, guards };
  }

  /**
   * Root index expressions of a stage in the tensor's global coordinates. Computed once per
   * stage: they depend only on its extents and region, both set before anything asks (a
   * stage is asked by the producers attached to it and when it is emitted).
   */
  private rootValues(s: StageState): RootValues {
    let rv = this.rootsOf.get(s.name);
    if (rv) return rv;
    const { values, guards } = this.iterValues(s);
    const region = this.regions.get(s.name);
    const roots = new Map<string, Expr>();
    s.axes.forEach((a, i) => roots.set(a.name, region ? add(region.base[i], values.get(a.name)!) : values.get(a.name)!));
    const flat = region?.flat;
    if (flat) {
      // The run's position p: the two axes are its row and column.
      const p = add(flat.base, values.get(flat.child)!);
      roots.set(s.axes[flat.d].name, floordiv(p, flat.width));
      roots.set(s.axes[flat.d + 1].name, floormod(p, flat.width));
      if (flat.guard) guards.push({ cond: lt(p, s.tensor.shape[flat.d] * flat.width), reduce: false });
    }
    s.reduceAxes.forEach((a) => roots.set(a.name, values.get(a.name)!));
    if (region?.guard) guards.push({ cond: substitute(region.guard, roots), reduce: false });
    rv = { roots, guards };
    this.rootsOf.set(s.name, rv);
    return rv;
  }

  /** A stage's body with inlined stages substituted, in terms of its own axis names (the state does not change while lowering: computed once per stage). */
  private inlinedBody(s: StageState): Expr {
    let body = this.inlined.get(s.name);
    if (!body) {
      body = timesReciprocal(s, this.inlineLoads(s.body.k === 'reduce' ? s.body.source : s.body));
      this.inlined.set(s.name, body);
    }
    return body;
  }

  private inlineLoads(e: Expr): Expr {
    return rewrite(e, (x) => {
      if (x.k !== 'load') return undefined;
      const producer = this.state.stages.find((p) => p.name === x.tensor.name);
      if (!producer || producer.attach.k !== 'inline') return undefined;
      const map = new Map(producer.axes.map((a, i) => [a.name, x.indices[i]]));
      return substitute(this.inlinedBody(producer), map);
    });
  }

  // ------------------------------------------------------------ bound inference

  private inferRegion(s: StageState): Region {
    const at = s.attach as { k: 'at'; target: string; iter: string };
    const consumer = this.state.stage(at.target);
    const shape = s.tensor.shape;
    const pos = consumer.leaves.indexOf(at.iter);
    const inner = new Set(consumer.leaves.slice(pos + 1).map((l) => this.loopVar(consumer, l)));
    // Its readers: the consumer, and stages attached at the same loop (State.validate), whose
    // loops all run below it. Each is lowered before it (readers come later in the DAG).
    const readsS = (r: StageState): boolean => {
      let found = false;
      walk(this.inlinedBody(r), (x) => { if (x.k === 'load' && x.tensor.name === s.name) found = true; });
      return found;
    };
    const siblings = this.state.stages.filter((r) => r !== s && r.attach.k === 'at' && r.attach.target === at.target && r.attach.iter === at.iter && readsS(r));
    for (const r of siblings) for (const leaf of r.leaves) inner.add(this.loopVar(r, leaf));
    const reads: Expr[][] = [];
    for (const reader of [consumer, ...siblings]) {
      const { roots } = this.rootValues(reader);
      walk(this.inlinedBody(reader), (x) => {
        if (x.k === 'load' && x.tensor.name === s.name) reads.push(x.indices.map((i) => substitute(i, roots)));
      });
    }
    // A shared copy serves every thread of the block: its region spans all values of the
    // loops bound to threadIdx.* (TVM relaxes them the same way for shared scope).
    if (s.scope === 'shared') {
      for (const st of this.state.stages) {
        for (const [leaf, tag] of st.bind) if (tag.startsWith('threadIdx')) inner.add(this.loopVar(st, leaf));
      }
    }
    if (reads.length === 0) return this.regionOf(s, shape.map(() => int(0)), [...shape], []);
    const base: Expr[] = [], len: number[] = [], guards: Expr[] = [];
    const hasInner = (e: Expr): boolean => [...freeVars(e)].some((x) => inner.has(x));
    const extentOf = (name: string): number | undefined => this.varExtent.get(name);
    const spanOf = (indices: readonly Expr[]): Span | null => readSpan(indices, hasInner, extentOf);
    const flat = this.flatSpan(s, reads, spanOf);
    for (let d = 0; d < shape.length; d++) {
      if (flat && (d === flat.span.d || d === flat.span.d + 1)) {
        base.push(int(0));
        len.push(d === flat.span.d ? 1 : flat.len);
        continue;
      }
      const span = spanOf(reads.map((r) => r[d]));
      if (!span || span.len >= shape[d]) { base.push(int(0)); len.push(shape[d]); continue; }
      base.push(span.base); len.push(span.len);
      // The region may stick out of the tensor when the consumer's tiles do not divide it.
      const axis = v(s.axes[d].name);
      if (span.maxBase + span.len > shape[d]) guards.push(lt(axis, shape[d]));
      if (span.minBase < 0) guards.push(ge(axis, 0));
    }
    const region = this.regionOf(s, base, len, guards);
    return flat ? { ...region, flat: flat.span } : region;
  }

  /**
   * A run of positions over two adjacent axes (FlatSpan), where the stage walks them with a
   * fused loop of its own and every read indexes them as `floordiv(p, width)` and
   * `floormod(p, width)` of one affine `p` whose run is shorter than the two axes: the
   * register tile of a split fused (h, w) loop. Undefined otherwise (the region is a box).
   */
  private flatSpan(s: StageState, reads: readonly Expr[][], spanOf: (indices: readonly Expr[]) => Span | null): { span: FlatSpan; len: number } | undefined {
    const names = s.axes.map((a) => a.name);
    for (const r of s.relations) {
      if (r.k !== 'fuse' || r.parents.length !== 2) continue;
      const d = names.indexOf(r.parents[0]);
      if (d < 0 || names[d + 1] !== r.parents[1]) continue;
      const width = s.tensor.shape[d + 1];
      // The position p of each read: its index d is floordiv(p, width), its index d + 1 floormod(p, width).
      const positionOf = (idx: readonly Expr[]): Expr | undefined => {
        const [q, m] = [idx[d], idx[d + 1]];
        if (q.k !== 'bin' || q.op !== 'floordiv' || m.k !== 'bin' || m.op !== 'floormod') return undefined;
        if (q.b.k !== 'const' || q.b.value !== width || m.b.k !== 'const' || m.b.value !== width) return undefined;
        return printExpr(q.a) === printExpr(m.a) ? q.a : undefined;
      };
      const positions = reads.map(positionOf);
      if (positions.some((p) => p === undefined)) continue;
      const span = spanOf(positions as Expr[]);
      const total = s.tensor.shape[d] * width;
      if (!span || span.len >= total || span.minBase < 0) continue;
      return { len: span.len, span: { d, width, base: span.base, child: r.child, guard: span.maxBase + span.len > total } };
    }
    return undefined;
  }

  /** The region `len` from `base`, laid out with the stage's storage_align; refused when too large for a local buffer. */
  private regionOf(s: StageState, base: Expr[], len: number[], guards: Expr[]): Region {
    const { strides, size } = alignedStrides(s.axes.map((a) => a.name), len, s.align);
    if (size > MAX_LOCAL_FLOATS) {
      const at = s.attach as { k: 'at'; target: string; iter: string };
      throw new ScheduleError(`${s.name}: region of ${size} floats computed at ${at.target}.${at.iter} is too large for a local buffer`);
    }
    return { base, len, guard: all(guards), strides, size };
  }

  // ------------------------------------------------------------ emission

  private bufferOf(t: Tensor): { buf: string; index: (idx: readonly Expr[]) => Expr } {
    const b = this.blocked.get(t.name);
    if (b) {
      return {
        buf: cName(t.name),
        index: (idx) => {
          const [q, r] = this.divmod(idx[b.axis], b.block);
          return flatten([q, ...idx.filter((_, d) => d !== b.axis), r], b.shape);
        },
      };
    }
    const region = this.regions.get(t.name);
    if (region) {
      const flat = region.flat;
      const local = (idx: readonly Expr[], d: number): Expr => {
        if (!flat || (d !== flat.d && d !== flat.d + 1)) return simplifyAffine(add(idx[d], mul(region.base[d], -1)));
        if (d === flat.d) return int(0);
        return simplifyAffine(add(add(mul(idx[flat.d], flat.width), idx[d]), mul(flat.base, -1)));
      };
      return { buf: cName(t.name), index: (idx) => flattenStrided(idx.map((_, d) => local(idx, d)), region.len, region.strides) };
    }
    return { buf: cName(t.name), index: (idx) => withDivModFolded(flatten(idx, t.shape)) };
  }

  /** Turn tensor loads into flat buffer loads. */
  private toBuffers(e: Expr): Expr {
    return rewrite(e, (x) => {
      if (x.k !== 'load') return undefined;
      const { buf, index } = this.bufferOf(x.tensor);
      return flatLoad(buf, index(x.indices), x.tensor.dtype);
    });
  }

  private emitStage(s: StageState): Stmt[] {
    const { roots, guards } = this.rootValues(s);
    const target = this.bufferOf(s.tensor);
    const outIndex = target.index(s.axes.map((a) => roots.get(a.name)!));
    const value = (): Expr => this.toBuffers(substitute(this.inlinedBody(s), roots));
    const guarded = (body: Stmt[], reduce: boolean): Stmt[] => {
      const cond = all(guards.filter((g) => reduce || !g.reduce).map((g) => g.cond));
      return cond ? [{ k: 'if', cond, body }] : body;
    };
    const ext = this.leafExtents.get(s.name)!;
    const loop = (leaf: string, body: Stmt[]): Stmt => {
      const ann = s.ann.get(leaf);
      const extent = ext.get(leaf)!;
      if (ann === 'unroll' && extent > MAX_UNROLL) {
        throw new ScheduleError(`unroll ${s.name}.${leaf}: ${extent} iterations, more than ${MAX_UNROLL}, the most a loop may unroll`);
      }
      return { k: 'for', v: this.loopVar(s, leaf), extent, kind: s.bind.get(leaf) ?? ann ?? 'serial', owner: s.name, body };
    };
    const nest = (leaves: readonly string[], inner: Stmt[], withAttached: boolean): Stmt[] => {
      let body = inner;
      for (let i = leaves.length - 1; i >= 0; i--) {
        const attached = withAttached ? this.attachedAt(s, leaves[i]) : [];
        body = [loop(leaves[i], [...attached, ...body])];
      }
      return body;
    };
    let stmts: Stmt[];
    const region = this.regions.get(s.name);
    const shared = s.scope === 'shared';
    if (!region && s.align.size > 0) {
      throw new ScheduleError(`storage_align ${s.name}: only the buffer of a stage computed at a loop of its reader (a cache stage) can be padded; ${s.name} is computed at root`);
    }
    const alloc: Stmt[] = region
      ? [{ k: 'alloc', buf: target.buf, size: region.size, ...(shared ? { scope: 'shared' as const } : {}), ...(s.tensor.dtype !== 'float32' ? { dtype: s.tensor.dtype } : {}) }]
      : [];
    const crossLeaf = s.leaves.find((l) => s.kinds.get(l) === 'R' && s.bind.has(l));
    if (s.body.k !== 'reduce') {
      stmts = nest(s.leaves, guarded([{ k: 'store', buf: target.buf, index: outIndex, value: value() }], false), true);
    } else if (crossLeaf !== undefined) {
      const p = s.leaves.findIndex((l) => s.kinds.get(l) === 'R');
      const spatial = s.leaves.slice(0, p);
      stmts = nest(spatial, [this.crossThreadReduce(s, crossLeaf, spatial, target.buf, outIndex, value(), guards)], true);
    } else {
      const r = s.body;
      const p = s.leaves.findIndex((l) => s.kinds.get(l) === 'R');
      if (p < 0) throw new ScheduleError(`${s.name}: reduction without a reduce loop`);
      const current = flatLoad(target.buf, outIndex, s.tensor.dtype);
      const combined = combine(r.combiner, current, value());
      const identity = identityOf(r.combiner, s.tensor.dtype);
      const innerLeaves = s.leaves.slice(p);
      const init = nest(innerLeaves.filter((l) => s.kinds.get(l) === 'S'), guarded([{ k: 'store', buf: target.buf, index: outIndex, value: identity }], false), false);
      const update = nest(innerLeaves, guarded([{ k: 'store', buf: target.buf, index: outIndex, value: combined }], true), true);
      stmts = nest(s.leaves.slice(0, p), [...init, ...update], true);
    }
    this.applyAutoUnroll(s, stmts);
    // A shared copy is refilled while its readers may still read the previous fill, and read
    // by threads that did not write it: a barrier before and after (TVM's storage sync).
    if (shared) return [...alloc, { k: 'sync' }, ...stmts, { k: 'sync' }];
    return [...alloc, ...stmts];
  }

  /**
   * A reduction whose reduce loop `leaf` is bound to threadIdx.x (TVM's cross-thread
   * reduction), inside its spatial loops `spatial`: the bound loop becomes the outermost of
   * the reduction, so that each thread folds its share of the reduce iterations into a
   * register; the threads then combine their partial results in a shared buffer by a tree
   * of halving steps, a barrier after each (TVM's lowering uses warp shuffles where the
   * device has them; a shared-memory tree works on every device), and thread 0 stores the
   * result. Reassociating the reduction changes float rounding only.
   *
   * The partial results of the threads that share the other thread indices (spatial loops
   * bound to threadIdx.y/z, one reduction each) sit side by side in one buffer. Barriers are
   * never under a condition: guards apply to the loads and stores only.
   */
  private crossThreadReduce(
    s: StageState, leaf: string, spatial: readonly string[], out: string, outIndex: Expr, src: Expr,
    guards: readonly { cond: Expr; reduce: boolean }[],
  ): Stmt {
    const body = s.body as Extract<Expr, { k: 'reduce' }>;
    const where = `${s.name}: cross-thread reduction over ${leaf}`;
    if (isOrderedCombiner(body.combiner)) throw new ScheduleError(`${where}: an ordered reduction (${body.combiner}) accumulates serially in the order of its reduce axes; the threads' tree would reassociate it`);
    if (s.attach.k !== 'root') throw new ScheduleError(`${where}: the stage must be computed at root (one launch of its own)`);
    const p = s.leaves.findIndex((l) => s.kinds.get(l) === 'R');
    const inner = s.leaves.slice(p);
    const misplaced = inner.find((l) => s.kinds.get(l) !== 'R');
    if (misplaced !== undefined) throw new ScheduleError(`${where}: spatial loop ${misplaced} is inside the reduce loops (reorder the reduce loops innermost)`);
    const held = this.state.stages.find((x) => x.attach.k === 'at' && x.attach.target === s.name && inner.includes(x.attach.iter));
    if (held) throw new ScheduleError(`${where}: ${held.name} is computed at a reduce loop of it`);
    const vectorized = spatial.find((l) => s.ann.get(l) === 'vectorize');
    if (vectorized !== undefined) throw new ScheduleError(`${where}: spatial loop ${vectorized} is vectorized around the block's barriers`);
    const ext = this.leafExtents.get(s.name)!;
    const n = ext.get(leaf)!;
    const tx = v(this.loopVar(s, leaf));
    // Rows of the shared buffer: one per combination of the other thread indices.
    let row: Expr = int(0), rows = 1;
    for (const l of spatial) {
      const tag = s.bind.get(l);
      if (tag === 'threadIdx.y' || tag === 'threadIdx.z') { row = add(mul(row, ext.get(l)!), v(this.loopVar(s, l))); rows *= ext.get(l)!; }
    }
    const acc = `tt_acc_${out}`, red = `tt_red_${out}`;
    const accAt = flatLoad(acc, int(0));
    const slot = (offset: number): Expr => add(add(mul(row, n), tx), offset);
    const when = (conds: readonly Expr[], stmts: Stmt[]): Stmt[] => {
      const cond = all(conds);
      return cond ? [{ k: 'if', cond, body: stmts }] : stmts;
    };
    const others = inner.filter((l) => l !== leaf);
    let fold: Stmt[] = when(guards.map((g) => g.cond), [{ k: 'store', buf: acc, index: int(0), value: combine(body.combiner, accAt, src) }]);
    for (let i = others.length - 1; i >= 0; i--) {
      const l = others[i];
      const ann = s.ann.get(l);
      fold = [{ k: 'for', v: this.loopVar(s, l), extent: ext.get(l)!, kind: ann === 'unroll' ? 'unroll' : 'serial', owner: s.name, body: fold }];
    }
    const tree: Stmt[] = [];
    for (let w = 2 ** Math.ceil(Math.log2(n)) / 2; w >= 1; w /= 2) {
      // Thread t < w adds the value of t + w, where there is one.
      tree.push(
        ...when([lt(tx, Math.min(w, n - w))], [{ k: 'store', buf: red, index: slot(0), value: combine(body.combiner, flatLoad(red, slot(0)), flatLoad(red, slot(w))) }]),
        { k: 'sync' },
      );
    }
    const result = when([lt(tx, 1), ...guards.filter((g) => !g.reduce).map((g) => g.cond)], [{ k: 'store', buf: out, index: outIndex, value: flatLoad(red, slot(0)) }]);
    return {
      k: 'for', v: tx.name, extent: n, kind: 'threadIdx.x', owner: s.name, body: [
        { k: 'alloc', buf: acc, size: 1 },
        { k: 'store', buf: acc, index: int(0), value: identityOf(body.combiner) },
        ...fold,
        { k: 'alloc', buf: red, size: rows * n, scope: 'shared' },
        { k: 'store', buf: red, index: slot(0), value: accAt },
        { k: 'sync' },
        ...tree,
        ...result,
        // The next iteration of an enclosing serial loop refills the buffer thread 0 just read.
        { k: 'sync' },
      ],
    };
  }

  private attachedAt(s: StageState, leaf: string): Stmt[] {
    return this.state.stages
      .filter((p) => p.attach.k === 'at' && p.attach.target === s.name && p.attach.iter === leaf)
      .flatMap((p) => this.emitStage(p));
  }

  /** TVM's auto_unroll_max_step: unroll this stage's loops below the pragma whose trip count is small enough. */
  private applyAutoUnroll(s: StageState, stmts: Stmt[]): void {
    if (s.autoUnroll.size === 0) return;
    const trips = (st: Stmt): number => {
      if (st.k === 'for') return st.extent * Math.max(1, ...st.body.map(trips));
      if (st.k === 'if') return Math.max(1, ...st.body.map(trips));
      return 1;
    };
    const visit = (st: Stmt, limit: number): void => {
      if (st.k === 'if') { st.body.forEach((b) => visit(b, limit)); return; }
      if (st.k !== 'for') return;
      let lim = limit;
      if (st.owner === s.name) {
        const leaf = s.leaves.find((l) => this.loopVar(s, l) === st.v);
        if (leaf !== undefined && s.autoUnroll.has(leaf)) lim = s.autoUnroll.get(leaf)!;
        if (lim > 0 && st.kind === 'serial' && trips(st) <= lim) st.kind = 'unroll';
      }
      st.body.forEach((b) => visit(b, lim));
    };
    stmts.forEach((st) => visit(st, 0));
  }
}

export function lower(state: State, name: string, opts: LowerOptions = {}): Kernel {
  return new Lowerer(state, opts).lower(name);
}

const loweredStates = new WeakMap<State, { kernel: Kernel } | { error: unknown }>();

/**
 * `lower(state, 'kernel')`, once per State object (its error too). The search checks that
 * a state lowers and the cost model extracts features from the lowered kernel, both for
 * the same finished states (a Built's state is never changed after it is built); only
 * for such states, and not where a kernel name or options matter (codegen).
 */
export function lowerOnce(state: State): Kernel {
  let done = loweredStates.get(state);
  if (!done) {
    try {
      done = { kernel: lower(state, 'kernel') };
    } catch (error) {
      done = { error };
    }
    loweredStates.set(state, done);
  }
  if ('error' in done) throw done.error;
  return done.kernel;
}
