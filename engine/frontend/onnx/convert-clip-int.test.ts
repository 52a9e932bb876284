// Clip of an integer tensor (DeBERTa clamps its int64 relative positions): int32 bounds, the
// values equal ONNX Runtime's; a bound beyond int32 (INT64_MAX, as exporters write "no bound")
// is the type's own limit.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { DataType } from './schema';
import { OnnxModelBuilder } from './model-builder';
import { agreesTyped, randInts } from './typed-ort.fixture';

test('Clip of int64 data with int64 bounds (opset 13), and with only a min', async () => {
  const b = new OnnxModelBuilder(13).typedInput('i', DataType.INT64, [2, 6])
    .int64('lo', [-3], []).int64('hi', [4], []).int64('big', [Number.MAX_SAFE_INTEGER], [])
    .node('Clip', ['i', 'lo', 'hi'], ['y'])
    .node('Clip', ['i', 'lo', 'big'], ['z'])
    .typedOutput('y', DataType.INT64).typedOutput('z', DataType.INT64);
  const ids = randInts(12, 5, -9, 9);
  const { outputs } = await agreesTyped('clip-int', b.build(), [ids]);
  assert.instance(outputs[0], Int32Array);
  assert.equal([...outputs[0]], [...ids].map((v) => Math.min(4, Math.max(-3, v))));
  assert.equal([...outputs[1]], [...ids].map((v) => Math.max(-3, v)));
});

test.run();
