// The node types of the tensor-expression IR: scalar expressions and the tensors they
// load from. They refer to each other (a Load holds a Tensor, a compute stage's body is an
// Expr), so both live here as types alone; expr.ts builds and walks expressions and
// tensor.ts declares tensors, each importing these types without importing the other.

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
 * `round_f16` and `round_bf16` give the float32 value of the nearest float16 / bfloat16
 * (half to even, NaN kept; float16 overflows to ±inf from 65520 on, bfloat16 past
 * float32's largest finite value): how a float16 or bfloat16 value, which runs as
 * float32, gets its type's precision (at ONNX's Cast and at a model's outputs).
 * `round_f8e4m3fn`, `round_f8e4m3fnuz`, `round_f8e5m2`, `round_f8e5m2fnuz` and
 * `round_f4e2m1` do the same for ONNX's 8- and 4-bit floats (ir/float8.ts: half to even,
 * saturating to the largest finite value, ±inf included; FNUZ without -0); the `_nosat`
 * forms are Cast's saturate=0 (past the range: ±inf for E5M2, NaN for the others).
 */
export type MathFn = 'exp' | 'log' | 'sqrt' | 'rsqrt' | 'tanh' | 'sigmoid' | 'fabs' | 'erf'
  | 'log1p' | 'floor' | 'ceil' | 'round' | 'sin' | 'cos' | 'tan' | 'atan' | 'pow' | 'fmod'
  | 'round_f16' | 'round_bf16' | MiniFloatFn;

/** The 8- and 4-bit float rounding intrinsics (ir/float8.ts). */
export type MiniFloatFn = 'round_f8e4m3fn' | 'round_f8e4m3fnuz' | 'round_f8e5m2' | 'round_f8e5m2fnuz' | 'round_f4e2m1'
  | 'round_f8e4m3fn_nosat' | 'round_f8e4m3fnuz_nosat' | 'round_f8e5m2_nosat' | 'round_f8e5m2fnuz_nosat';

/**
 * How a reduction combines its values. `sum`, `max`, `min` and `prod` are treated as
 * associative: schedules may split, reorder, vectorise and rfactor them (float rounding
 * aside). `sum_bf16` is ml_dtypes' bfloat16 sum (numpy's add.reduce over that type): from
 * +0 (numpy's identity), each partial sum rounded to bfloat16, in the order of the reduce axes. It is ordered:
 * its result depends on that order, so it runs as one serial accumulation and nothing may
 * reassociate it (ir/ordered.ts says which combiners are ordered; schedule/state.ts refuses
 * the steps that would reorder it).
 */
export type Combiner = 'sum' | 'max' | 'min' | 'prod' | 'sum_bf16';

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

export interface PlaceholderOp { readonly kind: 'placeholder' }

export interface ComputeOp {
  readonly kind: 'compute';
  /** One spatial axis per output dimension. */
  readonly axes: readonly IterVar[];
  /** Reduce axes (empty unless the body is a Reduce). */
  readonly reduceAxes: readonly IterVar[];
  readonly body: Expr;
  /** What kind of operator declared the stage (e.g. `conv2d_nhwc`, `broadcast`); used by schedules. */
  readonly tag: string;
}

export type Op = PlaceholderOp | ComputeOp;

export interface Tensor {
  readonly name: string;
  readonly shape: readonly number[];
  readonly dtype: DType;
  readonly op: Op;
}
