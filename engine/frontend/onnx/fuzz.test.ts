// Fuzzing the importer: every truncation of a small model, and seeded random bit flips,
// must either import or fail with a UserError (one message naming the file, no stack
// trace at the CLI). Any other exception is a crash; a hang would stall the test run.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { UserError } from '../../errors';
import { mix32 } from '../../runtime/random';
import { importOnnx } from './import';
import { OnnxModelBuilder } from './model-builder';

function smallModel(): Uint8Array {
  const w = (n: number, s: number) => Array.from({ length: n }, (_, i) => ((mix32(i + s * 1000) % 200) - 100) / 100);
  return new OnnxModelBuilder(13).input('x', ['N', 3, 8, 8])
    .float('w', [4, 3, 3, 3], w(108, 1)).float('b', [4], w(4, 2))
    .float('g', [4], w(4, 3)).float('be', [4], w(4, 4)).float('m', [4], w(4, 5)).float('v', [4], w(4, 6).map(Math.abs))
    .float('fc', [4, 2], w(8, 7)).int64('shape', [0, -1])
    .node('Conv', ['x', 'w', 'b'], ['c'], { pads: [1, 1, 1, 1], strides: [2, 2], kernel_shape: [3, 3] })
    .node('BatchNormalization', ['c', 'g', 'be', 'm', 'v'], ['bn'], { epsilon: 1e-5 })
    .node('Relu', ['bn'], ['r'])
    .node('MaxPool', ['r'], ['p'], { kernel_shape: [2, 2], strides: [2, 2] })
    .node('GlobalAveragePool', ['p'], ['gp'])
    .node('Reshape', ['gp', 'shape'], ['flat'])
    .node('MatMul', ['flat', 'fc'], ['mm'])
    .node('Softmax', ['mm'], ['y'], { axis: -1 })
    .output('y')
    .build();
}

/** Import; returns 'ok' or 'refused', and fails the test on any other exception. */
function importOrRefuse(bytes: Uint8Array, what: string): 'ok' | 'refused' {
  try {
    importOnnx(bytes, 'fuzz.onnx');
    return 'ok';
  } catch (e) {
    if (!(e instanceof UserError)) assert.unreachable(`${what}: ${(e as Error).stack ?? String(e)}`);
    assert.ok((e as Error).message.startsWith('fuzz.onnx: '), `${what}: message does not name the file: ${(e as Error).message}`);
    return 'refused';
  }
}

test('the unmodified model imports', () => {
  assert.is(importOrRefuse(smallModel(), 'original'), 'ok');
});

test('every truncation is refused with a UserError (or, at a message boundary, still imports)', () => {
  const bytes = smallModel();
  let refused = 0;
  for (let len = 0; len < bytes.length; len++) if (importOrRefuse(bytes.subarray(0, len), `truncated to ${len} bytes`) === 'refused') refused++;
  // Nearly every cut lands inside a field; the few that do not leave a smaller valid message.
  assert.ok(refused > bytes.length * 0.9, `${refused} of ${bytes.length} truncations refused`);
});

test('2000 seeded random 1-4 bit flips: imported or refused, never a crash', () => {
  const original = smallModel();
  const outcomes = { ok: 0, refused: 0 };
  for (let trial = 0; trial < 2000; trial++) {
    const bytes = Uint8Array.from(original);
    const flips = 1 + (mix32(trial * 7919) % 4);
    for (let f = 0; f < flips; f++) {
      const bit = mix32(trial * 104729 + f * 31 + 17) % (bytes.length * 8);
      bytes[bit >> 3] ^= 1 << (bit & 7);
    }
    outcomes[importOrRefuse(bytes, `trial ${trial}`)]++;
  }
  assert.ok(outcomes.refused > 0 && outcomes.ok > 0, JSON.stringify(outcomes));
});

test.run();
