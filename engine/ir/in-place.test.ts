// Which input a kernel's output may be written over: only one read elementwise at the
// output's own indices, all the way to the output.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { binary, relu } from '../topi/elemwise';
import { conv2dNHWC, dense } from '../topi/nn';
import { reduce } from '../topi/reduce';
import { transpose } from '../topi/transform';
import { ComputeDAG } from './dag';
import { inPlaceInputs as inputsIn, inPlaceReach, mergedReaders } from './in-place';
import { placeholder, type Tensor } from './tensor';

// The analysis of the DAG computing `out`, asked about `inputs`.
const inPlaceInputs = (inputs: Tensor[], out: Tensor): Tensor[] => inputsIn(new ComputeDAG([out]), inputs);
const inPlaceReaders = (inputs: Tensor[], out: Tensor): Set<string> => mergedReaders(inPlaceReach(new ComputeDAG([out]), inputs));
const inPlaceInput = (inputs: Tensor[], out: Tensor): Tensor | undefined => inPlaceInputs(inputs, out)[0];

test('conv + residual add + relu: the residual, read by the add and the relu', () => {
  const data = placeholder('p0', [1, 8, 8, 4]), w = placeholder('p1', [1, 1, 4, 16]), res = placeholder('p2', [1, 8, 8, 16]);
  const conv = conv2dNHWC(data, w, { strides: [1, 1], padding: [0, 0, 0, 0], dilation: [1, 1] });
  const out = relu(binary('add', conv, res));
  assert.is(inPlaceInput([data, w, res], out), res);
  const readers = inPlaceReaders([data, w, res], out);
  assert.ok(readers.has(out.name), 'the output reads it');
  assert.not.ok(readers.has(conv.name), 'the conv does not');
});

test('a broadcast operand (bias) is not written over; the full-shaped one is', () => {
  const a = placeholder('p0', [6, 16]), bias = placeholder('p1', [1, 16]), x = placeholder('p2', [6, 16]);
  const out = binary('add', binary('multiply', a, bias), x);
  assert.equal(inPlaceInputs([a, bias, x], out), [a, x], 'both full-shaped operands, in input order');
  assert.is(inPlaceInput([bias, x], out), x);
  assert.is(inPlaceInput([bias], binary('add', bias, placeholder('q', [6, 16]))), undefined);
});

test('an input read at another index, or into a reduction, is not written over', () => {
  const x = placeholder('p0', [8, 8]), y = placeholder('p1', [8, 8]);
  assert.is(inPlaceInput([x], binary('add', transpose(x, [1, 0]), y)), undefined, 'transposed read');
  const xy = binary('add', x, y);
  assert.is(inPlaceInput([x, y], binary('subtract', xy, reduce(xy, 'sum', [1], true))), undefined, 'also read by a row sum (layer norm)');
  const w = placeholder('p2', [8, 8]);
  assert.is(inPlaceInput([x, w], dense(x, w)), undefined, 'a GEMM operand');
  assert.equal([...inPlaceReaders([x, w], dense(x, w))], []);
});

test('an input of another dtype or shape than the output is not written over', () => {
  const x = placeholder('p0', [4, 4], 'int32'), y = placeholder('p1', [4, 4], 'int32');
  const eq = binary('add', x, y);
  assert.is(inPlaceInput([x, y], eq), x, 'int32 into int32');
  const z = placeholder('p2', [16]);
  assert.is(inPlaceInput([z], relu(z)), z);
  assert.is(inPlaceInput([placeholder('p3', [2, 8])], relu(placeholder('p4', [16]))), undefined, 'not read at all');
});

test.run();
