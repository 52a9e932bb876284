// The importer's constantInputs (TVM's freeze_params): a graph input bound to a value is read
// as an initializer of that value would be (the same graph, the same results, ONNX Runtime's
// on the initializer model), and is no longer an input of the model; a value that does not
// fit its input's declared type or shape, or names no input, is refused in one line.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { runGraph } from '../../graph/run';
import { importOnnx } from './import';
import { OnnxModelBuilder } from './model-builder';
import { agreesWithOrt, importError, rand } from './ort-agree.fixture';
import { DataType } from './schema';
import type { StaticTensor } from './tensor';

const ints = (data: number[], shape = [data.length]): StaticTensor => ({ type: 'int', shape, data });

/** Reshape(x, shape) then Tile(., repeats): with `shape` and `repeats` graph inputs, or initializers. */
function model(asInputs: boolean): Uint8Array {
  const b = new OnnxModelBuilder(13).input('x', [2, 3]).output('y');
  if (asInputs) b.typedInput('shape', DataType.INT64, [2]).typedInput('repeats', DataType.INT64, ['r']);
  else b.int64('shape', [3, 2]).int64('repeats', [2, 1]);
  return b.node('Reshape', ['x', 'shape'], ['t']).node('Tile', ['t', 'repeats'], ['y']).build();
}

test('a graph input bound to a constant is read as that initializer: the same graph and results, no longer an input', async () => {
  assert.match(importError(model(true)), /Reshape 't': unsupported: shape must be a constant/);
  const frozen = importOnnx(model(true), 'm.onnx', { constantInputs: new Map([['shape', ints([3, 2])], ['repeats', ints([2, 1])]]) });
  assert.equal(frozen.inputs, [{ name: 'x', shape: [2, 3], dtype: 'float32' }]);
  const init = await agreesWithOrt('reshape and tile of initializers', model(false));
  assert.equal(frozen.graph.nodes.map((n) => [n.op, n.shape]), init.graph.nodes.map((n) => [n.op, n.shape]));
  const x = rand(6, 3);
  assert.equal(runGraph(frozen.graph, new Map([['x', x]])), runGraph(init.graph, new Map([['x', x]])));
  assert.equal(frozen.graph.node(frozen.graph.outputs[0]).shape, [6, 2]);
  // Positional input shapes still count every graph input, bound or not.
  const positional = importOnnx(model(true), 'm.onnx', {
    inputShapes: [{ shape: [2, 3] }, { shape: [2] }, { shape: [2] }], constantInputs: new Map([['shape', ints([3, 2])], ['repeats', ints([1, 1])]]),
  });
  assert.equal(positional.graph.node(positional.graph.outputs[0]).shape, [3, 2]);
});

test('a constant that does not fit its input, or names none, is refused; every input bound leaves no model input', () => {
  const fails = (constants: [string, StaticTensor][], bytes = model(true)): string => {
    try {
      importOnnx(bytes, 'm.onnx', { constantInputs: new Map(constants) });
    } catch (e) {
      return (e as Error).message;
    }
    return assert.unreachable('the model imported') as never;
  };
  const repeats: [string, StaticTensor] = ['repeats', ints([1, 1])];
  assert.is(fails([['shape', ints([3, 2, 1])], repeats]), "m.onnx: the constant bound to graph input 'shape' has shape [3] (3 values); the input is [2]");
  assert.is(fails([['shape', ints([3, 2], [1, 2])], repeats]), "m.onnx: the constant bound to graph input 'shape' has shape [1, 2] (2 values); the input is [2]");
  assert.is(fails([['shape', { type: 'float', shape: [2], data: Float32Array.from([3, 2]) }], repeats]), "m.onnx: graph input 'shape' is INT64; the constant bound to it holds floats");
  assert.is(fails([['x', ints([1, 2, 3, 4, 5, 6], [2, 3])]]), "m.onnx: graph input 'x' is FLOAT; the constant bound to it holds integers");
  assert.is(fails([['shapes', ints([3, 2])]]), "m.onnx: a constant is given for input 'shapes', which the graph does not have (its inputs: x, shape, repeats)");
  const range = new OnnxModelBuilder(13).typedInput('n', DataType.INT64, []).typedOutput('y', DataType.INT64)
    .int64('zero', [0], []).int64('one', [1], []).node('Range', ['zero', 'n', 'one'], ['y']).build();
  assert.is(fails([['n', ints([4], [])]], range), 'm.onnx: the graph has no (non-initializer) inputs left (every one is bound to a constant)');
});

test.run();
