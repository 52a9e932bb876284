// LSTM/GRU (unrolled) and the quantization converters compiled with the default schedules
// and run natively (tt_bench on files of our inputs), against the reference evaluator on the
// same inputs: integer outputs exactly, float ones within 1e-5 (relative to 1 + |x|).

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import { OnnxModelBuilder } from './model-builder';
import { DataType, type TensorMessage } from './schema';
import { compiledAgrees } from './native-agree.fixture';
import { randFloats, randInts } from './typed-ort.fixture';

const work = mkdtempSync(path.join(tmpdir(), 'tt-rnn-quantize-native-'));
test.after(() => rmSync(work, { recursive: true, force: true }));


const typed = (name: string, type: number, dims: number[], values: readonly number[]): TensorMessage => ({ name, dims, data_type: type, int32_data: [...values] });

test('compiled: a bidirectional LSTM with peepholes and a GRU (linear_before_reset) over 5 steps', async () => {
  const [s, b, i, h] = [5, 2, 6, 8];
  const m = new OnnxModelBuilder(14).input('x', [s, b, i]).input('h0', [2, b, h])
    .float('w', [2, 4 * h, i], randFloats(2 * 4 * h * i, 1, -0.5, 0.5)).float('r', [2, 4 * h, h], randFloats(2 * 4 * h * h, 2, -0.5, 0.5))
    .float('bias', [2, 8 * h], randFloats(16 * h, 3, -0.3, 0.3)).float('p', [2, 3 * h], randFloats(6 * h, 4, -0.3, 0.3))
    .float('wg', [1, 3 * h, i], randFloats(3 * h * i, 5, -0.5, 0.5)).float('rg', [1, 3 * h, h], randFloats(3 * h * h, 6, -0.5, 0.5))
    .float('bg', [1, 6 * h], randFloats(6 * h, 7, -0.3, 0.3))
    .node('LSTM', ['x', 'w', 'r', 'bias', '', 'h0', '', 'p'], ['y', 'yh', 'yc'], { hidden_size: h, direction: 'bidirectional' })
    .node('GRU', ['x', 'wg', 'rg', 'bg'], ['yg'], { hidden_size: h, linear_before_reset: 1 })
    .output('y').output('yh').output('yc').output('yg');
  await compiledAgrees(work, 'lstm_gru', m.build(), [randFloats(s * b * i, 8, -1, 1), randFloats(2 * b * h, 9, -1, 1)]);
});

test('compiled: QuantizeLinear (per tensor, per axis; ties), DequantizeLinear of a uint8 input, QLinearMatMul', async () => {
  const m = new OnnxModelBuilder(13).input('x', [4, 6]).typedInput('q', DataType.UINT8, [4, 6])
    .float('s', [], [0.1]).tensor(typed('z', DataType.INT8, [], [-4]))
    .float('s6', [6], [0.1, 0.2, 0.05, 0.01, 0.3, 0.02]).tensor(typed('z6', DataType.UINT8, [6], [0, 128, 3, 250, 17, 100]))
    .node('QuantizeLinear', ['x', 's', 'z'], ['y1']).typedOutput('y1', DataType.INT8)
    .node('QuantizeLinear', ['x', 's6', 'z6'], ['y2'], { axis: 1 }).typedOutput('y2', DataType.UINT8)
    .node('DequantizeLinear', ['q', 's6', 'z6'], ['d'], { axis: 1 }).output('d')
    .tensor(typed('b', DataType.UINT8, [6, 3], Array.from(randInts(18, 10, 0, 255)))).float('bs', [], [0.02]).tensor(typed('bz', DataType.UINT8, [], [120]))
    .float('ys', [], [0.3]).tensor(typed('yz', DataType.UINT8, [], [90])).float('qs', [], [0.05]).tensor(typed('qz', DataType.UINT8, [], [128]))
    .node('QLinearMatMul', ['q', 'qs', 'qz', 'b', 'bs', 'bz', 'ys', 'yz'], ['mm']).typedOutput('mm', DataType.UINT8);
  await compiledAgrees(work, 'quantize', m.build(), [randFloats(24, 11, -20, 20, 0.05), randInts(24, 12, 0, 255)]);
});

test('compiled: a quantize_dynamic-style conv (DynamicQuantizeLinear -> ConvInteger -> Cast -> Mul) and MatMulInteger', async () => {
  const m = new OnnxModelBuilder(13).input('x', [1, 3, 12, 12])
    .tensor(typed('w', DataType.INT8, [8, 3, 3, 3], Array.from(randInts(216, 20, -127, 127)))).tensor(typed('wz', DataType.INT8, [], [0])).float('ws', [], [0.004])
    .tensor(typed('w2', DataType.INT8, [8, 10], Array.from(randInts(80, 21, -127, 127)))).tensor(typed('w2z', DataType.INT8, [], [2])).float('w2s', [], [0.01])
    .node('DynamicQuantizeLinear', ['x'], ['xq', 'xs', 'xz'])
    .node('ConvInteger', ['xq', 'w', 'xz', 'wz'], ['acc'], { pads: [1, 1, 1, 1], strides: [2, 2] })
    .node('Cast', ['acc'], ['accf'], { to: DataType.FLOAT }).node('Mul', ['xs', 'ws'], ['scale']).node('Mul', ['accf', 'scale'], ['conv'])
    .int64('shape', [8, 36], [2]).node('Reshape', ['conv', 'shape'], ['c2']).node('Transpose', ['c2'], ['ct'], { perm: [1, 0] })
    .node('DynamicQuantizeLinear', ['ct'], ['hq', 'hs', 'hz'])
    .node('MatMulInteger', ['hq', 'w2', 'hz', 'w2z'], ['acc2'])
    .node('Cast', ['acc2'], ['acc2f'], { to: DataType.FLOAT }).node('Mul', ['hs', 'w2s'], ['scale2']).node('Mul', ['acc2f', 'scale2'], ['y'])
    .output('y').output('xs').typedOutput('xz', DataType.UINT8);
  await compiledAgrees(work, 'quantize_dynamic', m.build(), [randFloats(432, 22, -1, 1)]);
});

test.run();
