import { promises as fs } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { UserError } from './errors';
import { decodeParams, encodeParams, fnv1a64, PARAMS_HEADER_BYTES, readParams, writeParams } from './params';

function fnvReference(bytes: Uint8Array): bigint {
  let h = 0xcbf29ce484222325n;
  for (const b of bytes) h = ((h ^ BigInt(b)) * 0x100000001b3n) & 0xffffffffffffffffn;
  return h;
}

function throwsUserError(fn: () => unknown, pattern: RegExp): void {
  try {
    fn();
  } catch (e) {
    assert.instance(e, UserError);
    assert.match((e as Error).message, pattern);
    return;
  }
  assert.unreachable('expected a UserError');
}

test('fnv1a64 matches the published vectors and a BigInt reference', () => {
  assert.is(fnv1a64(new Uint8Array()), 0xcbf29ce484222325n);
  assert.is(fnv1a64(Buffer.from('a')), 0xaf63dc4c8601ec8cn);
  assert.is(fnv1a64(Buffer.from('foobar')), 0x85944171f73967e8n);
  const bytes = Uint8Array.from({ length: 4096 }, (_, i) => (i * 131 + (i >> 3)) & 255);
  assert.is(fnv1a64(bytes), fnvReference(bytes));
});

test('encode / decode round trip, header layout', () => {
  const values = Float32Array.from([1.5, -2, 0, 3.25e-8, Number.MAX_VALUE, -0]);
  const buf = encodeParams(values);
  assert.is(buf.length, PARAMS_HEADER_BYTES + values.length * 4);
  assert.is(buf.toString('latin1', 0, 8), 'TTPARAM1');
  assert.is(buf.readBigUInt64LE(8), 6n);
  assert.is(buf.readBigUInt64LE(16), fnvReference(buf.subarray(32)));
  assert.is(buf.readBigUInt64LE(24), 0n);
  assert.is(buf.readFloatLE(32), 1.5);
  assert.equal(Array.from(decodeParams(buf)), Array.from(values));
  assert.is(decodeParams(encodeParams(new Float32Array())).length, 0);
});

test('decode rejects bad files with a message naming the file', () => {
  const good = encodeParams(Float32Array.from([1, 2, 3]));
  throwsUserError(() => decodeParams(good.subarray(0, 10), 'w.bin'), /^w\.bin: shorter than the 32-byte header/);
  const magic = Buffer.from(good);
  magic.write('NOTPARAM', 0, 'latin1');
  throwsUserError(() => decodeParams(magic, 'w.bin'), /^w\.bin: bad magic, expected "TTPARAM1"/);
  throwsUserError(() => decodeParams(good.subarray(0, good.length - 4), 'w.bin'), /header says 3 values \(44 bytes in all\), the file has 40 bytes/);
  const flipped = Buffer.from(good);
  flipped[40] ^= 1;
  throwsUserError(() => decodeParams(flipped, 'w.bin'), /payload hash mismatch/);
  const reserved = Buffer.from(good);
  reserved[30] = 1;
  throwsUserError(() => decodeParams(reserved, 'w.bin'), /reserved header bytes/);
});

test('writeParams / readParams', async () => {
  const dir = await fs.mkdtemp(path.join(tmpdir(), 'tt-params-'));
  try {
    const file = path.join(dir, 'model.params');
    const values = Float32Array.from({ length: 1000 }, (_, i) => Math.sin(i));
    await writeParams(file, values);
    assert.equal(Array.from(await readParams(file)), Array.from(values));
    assert.equal(await fs.readdir(dir), ['model.params']);
    try {
      await readParams(path.join(dir, 'missing.params'));
      assert.unreachable();
    } catch (e) {
      assert.instance(e, UserError);
      assert.match((e as Error).message, /missing\.params: cannot read the params file \(ENOENT\)/);
    }
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
});

test.run();
