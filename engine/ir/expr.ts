// Scalar expressions of the tensor-expression IR.
//
// An expression is a plain, immutable object tagged by `k`. Index arithmetic is int32,
// tensor data is float32, comparisons are bool. Loads point at a Tensor object (see
// tensor.ts); everything else is data, so expressions can be printed, hashed, evaluated
// and lowered by simple recursive functions.

import type { Tensor } from './tensor';

export type DType = 'float32' | 'int32' | 'bool';

export type BinOp =
  | '+' | '-' | '*' | '/'
  | 'floordiv' | 'floormod' | 'truncdiv' | 'truncmod' | 'min' | 'max'
  | '==' | '!=' | '<' | '<=' | '>' | '>='
  | '&&' | '||';

/**
 * Pure math intrinsics (elementwise, float32 -> float32), named as TVM's tir intrinsics.
 * `round` rounds half to even (C's rintf, LLVM's nearbyint for TVM's tir.round); `pow`
 * and `fmod` (C's, the dividend's sign) take two arguments (mathArity).
 */
export type MathFn = 'exp' | 'log' | 'sqrt' | 'rsqrt' | 'tanh' | 'sigmoid' | 'fabs' | 'erf'
  | 'log1p' | 'floor' | 'ceil' | 'round' | 'sin' | 'cos' | 'tan' | 'atan' | 'pow' | 'fmod';

/** How many arguments a math intrinsic takes. */
export const mathArity = (fn: MathFn): 1 | 2 => (fn === 'pow' || fn === 'fmod' ? 2 : 1);

export type Combiner = 'sum' | 'max' | 'min' | 'prod';

/** A loop axis of a compute stage: a name unique within the stage and a constant extent. */
export interface IterVar { readonly name: string; readonly extent: number }

export interface Const { readonly k: 'const'; readonly value: number; readonly dtype: DType }
export interface Var { readonly k: 'var'; readonly name: string }
export interface Bin { readonly k: 'bin'; readonly op: BinOp; readonly a: Expr; readonly b: Expr; readonly dtype: DType }
export interface Not { readonly k: 'not'; readonly a: Expr }
export interface Select { readonly k: 'select'; readonly cond: Expr; readonly t: Expr; readonly f: Expr; readonly dtype: DType }
/** `tir.if_then_else`: like select, but only the taken branch may be evaluated (guards loads). */
export interface IfThenElse { readonly k: 'if'; readonly cond: Expr; readonly t: Expr; readonly f: Expr; readonly dtype: DType }
export interface Call { readonly k: 'call'; readonly fn: MathFn; readonly args: readonly Expr[] }
export interface Cast { readonly k: 'cast'; readonly dtype: DType; readonly a: Expr }
export interface Load { readonly k: 'load'; readonly tensor: Tensor; readonly indices: readonly Expr[] }
/** A reduction; only allowed as the whole body of a compute stage. */
export interface Reduce {
  readonly k: 'reduce';
  readonly combiner: Combiner;
  readonly source: Expr;
  /** The reduce axes this reduction runs over (they become the stage's reduce axes). */
  readonly axes: readonly IterVar[];
}

export type Expr = Const | Var | Bin | Not | Select | IfThenElse | Call | Cast | Load | Reduce;

export type ExprLike = Expr | number;

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
