// Scalar expressions of the tensor-expression IR.
//
// An expression is a plain, immutable object tagged by `k`. Index arithmetic is int32,
// tensor data is float32, comparisons are bool. Loads point at a Tensor object (see
// tensor.ts; the node types of both are in nodes.ts); everything else is data, so
// expressions can be printed, hashed, evaluated and lowered by simple recursive functions.

import type { BinOp, Call, Cast, Const, DType, Expr, ExprLike, IterVar, Load, MathFn, Reduce, Tensor, Var } from './nodes';

export type { DType, BinOp, MathFn, Combiner, IterVar, Const, Var, Bin, Not, Select, IfThenElse, Call, Cast, Load, Reduce, Expr, ExprLike } from './nodes';

/** How many arguments a math intrinsic takes. */
export const mathArity = (fn: MathFn): 1 | 2 => (fn === 'pow' || fn === 'fmod' ? 2 : 1);

export function dtypeOf(e: Expr): DType {
  switch (e.k) {
    case 'const': case 'bin': case 'select': case 'if': case 'cast': return e.dtype;
    case 'var': return 'int32';
    case 'not': return 'bool';
    case 'call': return 'float32';
    case 'load': return e.tensor.dtype;
    case 'reduce': return dtypeOf(e.source);
  }
}

// ---------------------------------------------------------------- constructors

export const int = (value: number): Const => {
  if (!Number.isInteger(value)) throw new Error(`int(${value}): not an integer`);
  return { k: 'const', value, dtype: 'int32' };
};
export const f32 = (value: number): Const => ({ k: 'const', value: Math.fround(value), dtype: 'float32' });
export const bool = (value: boolean): Const => ({ k: 'const', value: value ? 1 : 0, dtype: 'bool' });
export const v = (name: string): Var => ({ k: 'var', name });

function lift(x: ExprLike): Expr {
  return typeof x === 'number' ? int(x) : x;
}

/** Make a float32 operand pair from a mix of float expressions and integer literals. */
function unify(a: Expr, b: Expr): [Expr, Expr] {
  const da = dtypeOf(a), db = dtypeOf(b);
  if (da === db) return [a, b];
  if (da === 'float32' && b.k === 'const') return [a, f32(b.value)];
  if (db === 'float32' && a.k === 'const') return [f32(a.value), b];
  throw new Error(`dtype mismatch: ${da} vs ${db}`);
}

const isConst = (e: Expr, value: number): boolean => e.k === 'const' && e.value === value;

function arith(op: BinOp, x: ExprLike, y: ExprLike): Expr {
  const [a, b] = unify(lift(x), lift(y));
  const dtype = dtypeOf(a);
  // Fold the identities that index arithmetic produces all the time (stride 1, offset 0),
  // so printed DAGs read `yy + ry` rather than `yy*1 + ry*1`.
  if (dtype === 'int32') {
    if (a.k === 'const' && b.k === 'const') return int(foldInt(op, a.value, b.value));
    if (op === '+' && isConst(b, 0)) return a;
    if (op === '+' && isConst(a, 0)) return b;
    if (op === '-' && isConst(b, 0)) return a;
    if (op === '*' && isConst(b, 1)) return a;
    if (op === '*' && isConst(a, 1)) return b;
    if ((op === 'floordiv') && isConst(b, 1)) return a;
    if (op === 'floormod' && isConst(b, 1)) return int(0);
  }
  return { k: 'bin', op, a, b, dtype };
}

function foldInt(op: BinOp, a: number, b: number): number {
  switch (op) {
    case '+': return a + b;
    case '-': return a - b;
    case '*': return a * b;
    case 'floordiv': return Math.floor(a / b);
    case 'floormod': return a - Math.floor(a / b) * b;
    case 'min': return Math.min(a, b);
    case 'max': return Math.max(a, b);
    default: throw new Error(`cannot fold int ${op}`);
  }
}

function compare(op: BinOp, x: ExprLike, y: ExprLike): Expr {
  const [a, b] = unify(lift(x), lift(y));
  return { k: 'bin', op, a, b, dtype: 'bool' };
}

export const add = (a: ExprLike, b: ExprLike) => arith('+', a, b);
export const sub = (a: ExprLike, b: ExprLike) => arith('-', a, b);
export const mul = (a: ExprLike, b: ExprLike) => arith('*', a, b);
/** Float division. Integer division is `floordiv`. */
export const div = (a: ExprLike, b: ExprLike): Expr => {
  const [x, y] = unify(lift(a), lift(b));
  if (dtypeOf(x) !== 'float32') throw new Error('div() is float division; use floordiv() for integers');
  return { k: 'bin', op: '/', a: x, b: y, dtype: 'float32' };
};
export const floordiv = (a: ExprLike, b: ExprLike) => arith('floordiv', a, b);
/**
 * Integer division rounding toward zero and its remainder (C's `/` and `%`, ONNX's Div and
 * Mod with fmod on integers). Data, not indices: a zero divisor gives 0 rather than a trap.
 */
export const truncdiv = (a: ExprLike, b: ExprLike): Expr => ({ k: 'bin', op: 'truncdiv', a: lift(a), b: lift(b), dtype: 'int32' });
export const truncmod = (a: ExprLike, b: ExprLike): Expr => ({ k: 'bin', op: 'truncmod', a: lift(a), b: lift(b), dtype: 'int32' });
export const floormod = (a: ExprLike, b: ExprLike) => arith('floormod', a, b);
export const min = (a: ExprLike, b: ExprLike) => arith('min', a, b);
export const max = (a: ExprLike, b: ExprLike) => arith('max', a, b);
export const eq = (a: ExprLike, b: ExprLike) => compare('==', a, b);
export const ne = (a: ExprLike, b: ExprLike) => compare('!=', a, b);
export const lt = (a: ExprLike, b: ExprLike) => compare('<', a, b);
export const gt = (a: ExprLike, b: ExprLike) => compare('>', a, b);
export const ge = (a: ExprLike, b: ExprLike) => compare('>=', a, b);
export const and = (a: Expr, b: Expr): Expr => ({ k: 'bin', op: '&&', a, b, dtype: 'bool' });
export const or = (a: Expr, b: Expr): Expr => ({ k: 'bin', op: '||', a, b, dtype: 'bool' });
export const not = (a: Expr): Expr => ({ k: 'not', a });

export const reduceAxis = (name: string, extent: number): IterVar => ({ name, extent });
export const sum = (source: Expr, axes: readonly IterVar[]): Reduce => ({ k: 'reduce', combiner: 'sum', source, axes });
export const maxReduce = (source: Expr, axes: readonly IterVar[]): Reduce => ({ k: 'reduce', combiner: 'max', source, axes });
export const minReduce = (source: Expr, axes: readonly IterVar[]): Reduce => ({ k: 'reduce', combiner: 'min', source, axes });
export const prodReduce = (source: Expr, axes: readonly IterVar[]): Reduce => ({ k: 'reduce', combiner: 'prod', source, axes });

/** Conjunction of a list of conditions; `undefined` when the list is empty. */
export function all(conds: readonly Expr[]): Expr | undefined {
  return conds.length === 0 ? undefined : conds.reduce((acc, c) => and(acc, c));
}

export const select = (cond: Expr, t: ExprLike, f: ExprLike): Expr => {
  const [a, b] = unify(lift(t), lift(f));
  return { k: 'select', cond, t: a, f: b, dtype: dtypeOf(a) };
};
export const ifThenElse = (cond: Expr, t: ExprLike, f: ExprLike): Expr => {
  const [a, b] = unify(lift(t), lift(f));
  return { k: 'if', cond, t: a, f: b, dtype: dtypeOf(a) };
};
export const call = (fn: MathFn, ...args: Expr[]): Call => {
  if (args.length !== mathArity(fn)) throw new Error(`${fn}: ${args.length} arguments, expected ${mathArity(fn)}`);
  return { k: 'call', fn, args };
};
export const cast = (dtype: DType, a: ExprLike): Cast => ({ k: 'cast', dtype, a: lift(a) });
export const load = (tensor: Tensor, indices: readonly ExprLike[]): Load => {
  if (indices.length !== tensor.shape.length) {
    throw new Error(`${tensor.name}: ${indices.length} indices for a ${tensor.shape.length}-d tensor`);
  }
  return { k: 'load', tensor, indices: indices.map(lift) };
};

// ---------------------------------------------------------------- traversal

/** Immediate sub-expressions, in evaluation order. */
export function children(e: Expr): readonly Expr[] {
  switch (e.k) {
    case 'const': case 'var': return [];
    case 'bin': return [e.a, e.b];
    case 'not': case 'cast': return [e.a];
    case 'select': case 'if': return [e.cond, e.t, e.f];
    case 'call': return e.args;
    case 'load': return e.indices;
    case 'reduce': return [e.source];
  }
}

/** Visit every node, parents before children. */
export function walk(e: Expr, visit: (e: Expr) => void): void {
  visit(e);
  for (const c of children(e)) walk(c, visit);
}

/** Every distinct tensor read by an expression, in first-read order. */
export function readTensors(e: Expr): Tensor[] {
  const out: Tensor[] = [];
  walk(e, (x) => {
    if (x.k === 'load' && !out.includes(x.tensor)) out.push(x.tensor);
  });
  return out;
}

/** Names of the variables an expression uses. */
export function freeVars(e: Expr): Set<string> {
  const out = new Set<string>();
  walk(e, (x) => { if (x.k === 'var') out.add(x.name); });
  return out;
}

/**
 * Rebuild an expression bottom-up; `f` may replace any node (return undefined to keep it).
 * `f` must depend on the node alone: a subtree that occurs several times (expressions are
 * immutable and may share nodes, as a Winograd transform shares each tile element among
 * its 36 sums) is rewritten once and its result shared.
 */
export function rewrite(e: Expr, f: (e: Expr) => Expr | undefined): Expr {
  const done = new Map<Expr, Expr>();
  const go = (x: Expr): Expr => {
    let out = done.get(x);
    if (out === undefined) {
      const rebuilt = mapChildren(x, go);
      out = f(rebuilt) ?? rebuilt;
      done.set(x, out);
    }
    return out;
  };
  return go(e);
}

function mapChildren(e: Expr, g: (e: Expr) => Expr): Expr {
  switch (e.k) {
    case 'const': case 'var': return e;
    case 'bin': return { ...e, a: g(e.a), b: g(e.b) };
    case 'not': return { ...e, a: g(e.a) };
    case 'cast': return { ...e, a: g(e.a) };
    case 'select': return { ...e, cond: g(e.cond), t: g(e.t), f: g(e.f) };
    case 'if': return { ...e, cond: g(e.cond), t: g(e.t), f: g(e.f) };
    case 'call': return { ...e, args: e.args.map(g) };
    case 'load': return { ...e, indices: e.indices.map(g) };
    case 'reduce': return { ...e, source: g(e.source) };
  }
}

/** Substitute variables by name. */
export function substitute(e: Expr, vars: ReadonlyMap<string, Expr>): Expr {
  return rewrite(e, (x) => (x.k === 'var' ? vars.get(x.name) : undefined));
}
