// Converters of ONNX's Reduce* operators (topi/reduce.ts computes them). The reduced axes
// are an attribute up to opset 12 for ReduceSum and up to opset 17 for the others, an
// optional input from then on (which must be known at import time); no axes, or an empty
// list, means every axis unless noop_with_empty_axes=1 (from those same opsets), where
// the reduction runs over no axis at all: each element alone, the elementwise part of the
// operator (x for ReduceSum, x*x for ReduceSumSquare, |x| for ReduceL1/L2, log x for
// ReduceLogSum), as the ONNX reference and ONNX Runtime compute it.

import { FLOAT_ONLY_KINDS, type ReduceKind } from '../../topi/reduce';
import { UnsupportedError, type NodeView } from './context';
import { axesOf, reshapeValue, type Converter } from './convert-tensor';
import { normAxis } from './static';

/** Kinds whose reduction over no axis is the input itself. */
const IDENTITY_WHEN_EMPTY: ReadonlySet<ReduceKind> = new Set(['sum', 'mean', 'max', 'min', 'prod', 'log_sum_exp']);

/** The reduced axes of a Reduce* node (in range, sorted); an empty list for noop_with_empty_axes. */
function reducedAxes(n: NodeView, inputFrom: number): number[] {
  const rank = n.shape(0).length;
  const axes = axesOf(n, inputFrom);
  if (!axes || axes.length === 0) {
    if (n.opset >= inputFrom && n.attr.int('noop_with_empty_axes', 0) === 1) return [];
    return Array.from({ length: rank }, (_, i) => i);
  }
  return [...new Set(axes.map((a) => normAxis(a, rank, `${n.opType} axis`)))].sort((a, b) => a - b);
}

function reduceConverter(kind: ReduceKind, inputFrom: number): Converter {
  return {
    attrs: ['axes', 'keepdims', 'noop_with_empty_axes'],
    convert(n) {
      const dtype = n.dtype(0);
      if (dtype === 'bool' && kind !== 'max' && kind !== 'min') throw new UnsupportedError(`${n.opType} of bool data`);
      if (dtype !== 'float32' && FLOAT_ONLY_KINDS.has(kind)) throw new UnsupportedError(`${n.opType} of ${dtype} data (float only)`);
      const shape = n.shape(0);
      const keepdims = n.attr.int('keepdims', 1) === 1;
      const axes = reducedAxes(n, inputFrom);
      if (axes.length === 0 && IDENTITY_WHEN_EMPTY.has(kind)) return [n.input(0)];
      if (kind === 'mean') {
        if (shape.length === 4 && axes.length === 2 && axes[0] === 2 && axes[1] === 3) {
          // The mean over H and W of an NCHW map is a global average pool.
          const y = n.op('global_avg_pool2d', [n.node(0)], { layout: 'NCHW' }, keepdims ? '' : '_pool');
          return [keepdims ? y : reshapeValue(n, y, shape.slice(0, 2))];
        }
        return [n.op('mean', [n.node(0)], { axes, keepdims })];
      }
      return [n.op(`reduce_${kind}`, [n.node(0)], { axes, keepdims })];
    },
  };
}

export const REDUCE_CONVERTERS: Record<string, Converter> = {
  ReduceSum: reduceConverter('sum', 13),
  ReduceMean: reduceConverter('mean', 18),
  ReduceMax: reduceConverter('max', 18),
  ReduceMin: reduceConverter('min', 18),
  ReduceProd: reduceConverter('prod', 18),
  ReduceSumSquare: reduceConverter('sum_square', 18),
  ReduceL1: reduceConverter('l1', 18),
  ReduceL2: reduceConverter('l2', 18),
  ReduceLogSum: reduceConverter('log_sum', 18),
  ReduceLogSumExp: reduceConverter('log_sum_exp', 18),
};
