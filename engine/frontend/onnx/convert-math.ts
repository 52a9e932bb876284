// Converters of ONNX's elementwise math and activations onto the computes of
// topi/elemwise.ts: Sqrt, Exp, Log, Erf, Floor, Ceil, Round, Sin, Cos, Tan, Atan, Neg, Abs,
// Sign, Reciprocal, Softsign, Softplus, Mish, Elu, Selu, Celu, ThresholdedRelu, Gelu, PRelu,
// Pow, Mod on floats, and the variadic Sum, Max, Min, Mean (chains of add / maximum /
// minimum, Mean then divided by the count, as TVM's ONNX frontend writes them). When every
// input is known at import time the node is folded (applyOp), so shape arithmetic through
// Neg, Abs, Max or Sqrt stays static.
//
// Add, Sub, Mul, Div, Relu, Sigmoid, Tanh, LeakyRelu, HardSigmoid, HardSwish and Clip are
// in convert-tensor.ts; Mod on integers is convert-logic.ts's, which Mod here defers to.

import { UnsupportedError, staticValue, type NodeView, type Value } from './context';
import { applyOp, LOGIC_CONVERTERS } from './convert-logic';
import type { Converter } from './convert-tensor';
import { floatTensor } from './static';
import { broadcastShape, type UnaryKind } from '../../topi/elemwise';

/** The first opset that defines each operator introduced after opset 7. */
const SINCE: Record<string, number> = { Erf: 9, Sign: 9, ThresholdedRelu: 10, Mod: 10, Round: 11, Celu: 12, Mish: 18, Gelu: 20 };

/** An error for an operator used below the opset that introduced it (the model is invalid). */
function checkOpset(n: NodeView): void {
  const since = SINCE[n.opType];
  if (since !== undefined && n.opset < since) throw new Error(`${n.opType} is defined from opset ${since}; the model is opset ${n.opset}`);
}

/** A unary operator on graph op `op`, its attrs read by `read`. */
function unary(op: string, attrs: readonly string[] = [], read: (n: NodeView) => Record<string, unknown> = () => ({})): Converter {
  return {
    attrs,
    convert(n) {
      checkOpset(n);
      return [applyOp(n, op, [n.input(0)], read(n))];
    },
  };
}

const UNARY: Record<string, UnaryKind> = {
  Sqrt: 'sqrt', Exp: 'exp', Log: 'log', Erf: 'erf', Floor: 'floor', Ceil: 'ceil', Round: 'round',
  Sin: 'sin', Cos: 'cos', Tan: 'tan', Atan: 'atan', Neg: 'negative', Abs: 'abs', Sign: 'sign',
  Reciprocal: 'reciprocal', Softsign: 'softsign', Softplus: 'softplus', Mish: 'mish',
};

const celu: Converter = unary('celu', ['alpha'], (n) => {
  const alpha = n.attr.float('alpha', 1);
  if (alpha === 0) throw new UnsupportedError('Celu alpha 0 (x / alpha divides by zero)');
  return { alpha };
});

const gelu: Converter = unary('gelu', ['approximate'], (n) => {
  const approximate = n.attr.string('approximate', 'none');
  if (approximate !== 'none' && approximate !== 'tanh') throw new UnsupportedError(`Gelu approximate '${approximate}' (ONNX defines 'none' and 'tanh')`);
  return { approximate };
});

/** PRelu: the slope broadcasts to X (unidirectionally: the result has X's shape). */
const prelu: Converter = {
  attrs: [],
  convert(n) {
    const x = n.shape(0), s = n.shape(1);
    const out = broadcastShape(x, s);
    if (out.length !== x.length || out.some((d, i) => d !== x[i])) throw new Error(`PRelu: the slope [${s.join(', ')}] does not broadcast to X [${x.join(', ')}]`);
    return [applyOp(n, 'prelu', [n.input(0), n.input(1)], {})];
  },
};

/**
 * Pow: a constant one-element exponent that does not widen X's rank becomes power_scalar
 * (x * x for 2, x * x * x for 3, sqrt for 0.5, a constant powf otherwise); any other
 * exponent broadcasts through power (powf; an integer exponent is read as float).
 */
const pow: Converter = {
  attrs: [],
  convert(n) {
    const x = n.input(0), y = n.input(1);
    if (n.dtype(0) !== 'float32') throw new UnsupportedError(`Pow of a ${n.dtype(0)} base (only float32 bases are implemented)`);
    if (n.dtype(1) === 'bool') throw new Error('Pow: the exponent is bool');
    if (y.kind === 'static' && y.t.data.length === 1 && y.t.shape.length <= n.shape(0).length && x.kind === 'node') {
      return [applyOp(n, 'power_scalar', [x], { exponent: Math.fround(y.t.data[0]) })];
    }
    return [applyOp(n, 'power', [x, y], {})];
  },
};

/**
 * Mod of floats: fmod=1 is C's fmod (the dividend's sign); fmod=0, the divisor's sign,
 * is defined on floats from opset 28 (ONNX Runtime refuses it below). Integers: convert-logic.ts.
 */
const mod: Converter = {
  attrs: ['fmod'],
  convert(n) {
    checkOpset(n);
    if (n.dtype(0) !== 'float32' && n.dtype(1) !== 'float32') return LOGIC_CONVERTERS.Mod.convert(n);
    if (n.dtype(0) !== n.dtype(1)) throw new Error(`Mod: operands of different types (${n.dtype(0)} and ${n.dtype(1)})`);
    const fmod = n.attr.int('fmod', 0);
    if (fmod !== 0 && fmod !== 1) throw new Error(`Mod: fmod is ${fmod}, must be 0 or 1`);
    if (fmod === 0 && n.opset < 28) throw new Error(`Mod: fmod=0 on floats is defined from opset 28 (the model is opset ${n.opset}; fmod must be 1)`);
    return [applyOp(n, 'fmod', [n.input(0), n.input(1)], { mode: fmod === 1 ? 'trunc' : 'floor' })];
  },
};

/**
 * Sum, Max, Min, Mean of 1..N inputs, broadcasting together (opset 8 on; opset 6's forms
 * take equal shapes): a left-to-right chain of binary ops, the last named after the node.
 */
function variadic(op: 'add' | 'maximum' | 'minimum', mean = false): Converter {
  return {
    attrs: [],
    convert(n) {
      if (n.inputs.length === 0 || n.inputs.some((name) => !name)) throw new Error(`${n.opType}: ${n.inputs.length === 0 ? 'no inputs' : 'an empty input name'}`);
      const values: Value[] = n.inputs.map((_, i) => n.input(i));
      const dtypes = new Set(n.inputs.map((_, i) => n.dtype(i)));
      if (dtypes.size > 1) throw new Error(`${n.opType}: inputs of different types (${[...dtypes].join(', ')})`);
      if (dtypes.has('bool')) throw new UnsupportedError(`${n.opType} of bool tensors`);
      if (n.opset < 8) {
        const s0 = n.shape(0);
        const other = n.inputs.findIndex((_, i) => n.shape(i).length !== s0.length || n.shape(i).some((d, k) => d !== s0[k]));
        if (other >= 0) throw new Error(`${n.opType}: input ${other} is [${n.shape(other).join(', ')}], input 0 [${s0.join(', ')}]; opset ${n.opset} takes equal shapes (broadcasting is opset 8's)`);
      }
      let acc = values[0];
      for (let i = 1; i < values.length; i++) acc = applyOp(n, op, [acc, values[i]], {}, mean || i < values.length - 1 ? `_${i}` : '');
      if (mean && values.length > 1) acc = applyOp(n, 'divide', [acc, staticValue(floatTensor([], Float32Array.of(values.length)))], {});
      return [acc];
    },
  };
}

export const MATH_CONVERTERS: Record<string, Converter> = {
  ...Object.fromEntries(Object.entries(UNARY).map(([onnx, kind]) => [onnx, unary(kind)])),
  Elu: unary('elu', ['alpha'], (n) => ({ alpha: n.attr.float('alpha', 1) })),
  Selu: unary('selu', ['alpha', 'gamma'], (n) => ({ alpha: n.attr.float('alpha', 1.67326319217681884765625), gamma: n.attr.float('gamma', 1.05070102214813232421875) })),
  Celu: celu,
  ThresholdedRelu: unary('thresholded_relu', ['alpha'], (n) => ({ alpha: n.attr.float('alpha', 1) })),
  Gelu: gelu,
  PRelu: prelu,
  Pow: pow,
  Mod: mod,
  Sum: variadic('add'),
  Max: variadic('maximum'),
  Min: variadic('minimum'),
  Mean: variadic('add', true),
};
