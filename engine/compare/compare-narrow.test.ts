// compareWithOnnxRuntime on models whose values are not float32: float16 and float64 inputs
// are fed to ONNX Runtime in their declared types (our float32 input data rounded to
// float16, widened to float64), its float16 outputs decoded from their 16-bit patterns; a
// bfloat16 output, which onnxruntime-node cannot return, is refused in one line.
// Skipped, with skip() saying why, when onnxruntime-node cannot be loaded.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { compileNetwork } from '../app/compile';
import { float16Bits } from '../ir/half';
import { OnnxModelBuilder } from '../frontend/onnx/model-builder';
import { DataType, type TensorMessage } from '../frontend/onnx/schema';
import { randFloats } from '../frontend/onnx/typed-ort.fixture';
import { skip } from '../skip.fixture';
import { compareWithOnnxRuntime } from './compare';
import { tryLoadOnnxRuntime } from './ort';

const ort = tryLoadOnnxRuntime();
const work = mkdtempSync(path.join(tmpdir(), 'tt-compare-narrow-'));
test.after(() => rmSync(work, { recursive: true, force: true }));

/** A float16 initializer (raw_data) of the values rounded to float16. */
function f16Tensor(name: string, dims: readonly number[], values: ArrayLike<number>): TensorMessage {
  const bytes = new Uint8Array(values.length * 2), view = new DataView(bytes.buffer);
  for (let i = 0; i < values.length; i++) view.setUint16(2 * i, float16Bits(values[i]), true);
  return { name, dims: [...dims], data_type: DataType.FLOAT16, raw_data: bytes };
}

/** `bytes` written as <name>.onnx and compiled (llvm) to <name>/; the model directory. */
async function compiled(name: string, bytes: Uint8Array): Promise<string> {
  const file = path.join(work, `${name}.onnx`), outDir = path.join(work, name);
  writeFileSync(file, bytes);
  await compileNetwork({ model: file, target: 'llvm', outDir, cacheDir: path.join(work, 'cache') });
  return outDir;
}

test('compareWithOnnxRuntime: a float16 model (float16 and float64 inputs, float16 and float64 outputs) agrees with ONNX Runtime at rtol 1e-3', async () => {
  if (!ort.module) { skip('compareWithOnnxRuntime on a float16 model', ort.error); return; }
  const m = new OnnxModelBuilder(13).typedInput('v', DataType.FLOAT16, [5, 16]).typedInput('d', DataType.DOUBLE, [6])
    .tensor(f16Tensor('w', [16, 8], randFloats(128, 31, -0.5, 0.5))).tensor(f16Tensor('b', [8], randFloats(8, 32, -0.5, 0.5)))
    .node('MatMul', ['v', 'w'], ['mm']).node('Add', ['mm', 'b'], ['ma']).node('Sigmoid', ['ma'], ['y']).typedOutput('y', DataType.FLOAT16)
    .node('Tanh', ['d'], ['t']).typedOutput('t', DataType.DOUBLE);
  const report = await compareWithOnnxRuntime({ modelDir: await compiled('fp16', m.build()), threads: 1, rounds: 1, repeat: 1, number: 1 });
  assert.is(report.onnx_source, 'manifest');
  assert.equal(report.outputs.map((o) => o.name), ['y', 't']);
  for (const o of report.outputs) {
    // Sigmoid's outputs lie in (0, 1), Tanh's of [0, 1) in [0, 0.77): non-negligible values,
    // and float16 bits read as numbers (thousands) or undecoded would be far off.
    assert.ok(o.max_abs_value > 0.5 && o.max_abs_value < 1, `output ${o.name}: max |value| ${o.max_abs_value}`);
    // rtol 1e-3 of the largest value: float16's step is 2^-11 = 4.9e-4 relative; both round
    // each operator's result to float16 (sums in float32, in different orders).
    assert.ok(o.max_abs_err <= 1e-3 * o.max_abs_value, `output ${o.name}: max abs err ${o.max_abs_err} (max |value| ${o.max_abs_value})`);
  }
});

test('compareWithOnnxRuntime: a bfloat16 output is refused in one line naming it and its type', async () => {
  if (!ort.module) { skip('compareWithOnnxRuntime on a bfloat16 model', ort.error); return; }
  const m = new OnnxModelBuilder(13).input('x', [4]).node('Relu', ['x'], ['r']).output('r')
    .node('Cast', ['r'], ['y'], { to: DataType.BFLOAT16 }).typedOutput('y', DataType.BFLOAT16);
  const modelDir = await compiled('bf16', m.build());
  try {
    await compareWithOnnxRuntime({ modelDir, threads: 1, rounds: 1, repeat: 1, number: 1 });
    assert.unreachable('a bfloat16 output is refused');
  } catch (e) {
    const message = (e as Error).message;
    assert.ok(/output 'y' is BFLOAT16, which onnxruntime-node cannot return/.test(message), message);
    assert.not.ok(message.includes('\n'), 'one line');
  }
});

test.run();
