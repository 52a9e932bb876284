// The params file (format in native/include/tensortune.h): a 32-byte header
//   "TTPARAM1" | uint64 count | uint64 FNV-1a-64 of the payload | 8 zero bytes
// followed by `count` little-endian float32 values. tt_bench loads it (tt_load_params
// in native/common/tt_common.c) and hands the payload to the model's tt_init.

import { promises as fs } from 'node:fs';
import { constants } from 'node:buffer';
import { UserError } from './errors';
import { readRegularFile } from '../regular-file';
import { bytesToFloat32, float32ToBytes } from './rawfile';

const PARAMS_MAGIC = 'TTPARAM1';
export const PARAMS_HEADER_BYTES = 32;

/** FNV-1a, 64-bit, computed on two 32-bit halves (BigInt per byte would be ~50x slower). */
export function fnv1a64(bytes: Uint8Array): bigint {
  let hi = 0xcbf29ce4;
  let lo = 0x84222325;
  for (let i = 0; i < bytes.length; i++) {
    lo = (lo ^ bytes[i]!) >>> 0;
    // (hi:lo) * 0x100000001b3 = (hi:lo) * 0x1b3 + (lo << 40), mod 2^64
    const low = lo * 0x1b3; // < 2^41, exact in a double
    hi = (Math.imul(hi, 0x1b3) + Math.floor(low / 0x100000000) + (lo << 8)) >>> 0;
    lo = low >>> 0;
  }
  return (BigInt(hi) << 32n) | BigInt(lo);
}

function paramsHeader(payload: Uint8Array): Buffer {
  const header = Buffer.alloc(PARAMS_HEADER_BYTES);
  header.write(PARAMS_MAGIC, 0, 'latin1');
  header.writeBigUInt64LE(BigInt(payload.length / 4), 8);
  header.writeBigUInt64LE(fnv1a64(payload), 16);
  return header;
}

/** The whole file as one buffer. */
export function encodeParams(values: Float32Array): Buffer {
  const payload = float32ToBytes(values);
  return Buffer.concat([paramsHeader(payload), payload]);
}

/** Validates a params file's bytes and returns its values; `file` names it in errors. */
export function decodeParams(bytes: Uint8Array, file = 'params'): Float32Array {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const bad = (what: string): UserError => new UserError(`${file}: ${what}`);
  if (buf.length < PARAMS_HEADER_BYTES)
    throw bad(`shorter than the ${PARAMS_HEADER_BYTES}-byte header, not a tensortune params file`);
  if (buf.toString('latin1', 0, 8) !== PARAMS_MAGIC)
    throw bad(`bad magic, expected "${PARAMS_MAGIC}" (not a tensortune params file)`);
  const count = buf.readBigUInt64LE(8);
  const hash = buf.readBigUInt64LE(16);
  if (buf.readBigUInt64LE(24) !== 0n)
    throw bad('reserved header bytes 24..31 are not zero (written by a newer tensortune?)');
  const size = BigInt(PARAMS_HEADER_BYTES) + count * 4n;
  if (size !== BigInt(buf.length))
    throw bad(`header says ${count} values (${size} bytes in all), the file has ${buf.length} bytes`);
  const payload = buf.subarray(PARAMS_HEADER_BYTES);
  const actual = fnv1a64(payload);
  if (actual !== hash)
    throw bad(
      `payload hash mismatch (header ${hash.toString(16).padStart(16, '0')}, ` +
        `payload ${actual.toString(16).padStart(16, '0')}): the file is corrupt or truncated`,
    );
  return bytesToFloat32(payload);
}

/** Writes the file atomically (a temporary file renamed into place). */
export async function writeParams(file: string, values: Float32Array): Promise<void> {
  const payload = float32ToBytes(values);
  const tmp = `${file}.tmp-${process.pid}-${Date.now()}`;
  try {
    const handle = await fs.open(tmp, 'w');
    try {
      await handle.write(paramsHeader(payload));
      await handle.write(payload);
    } finally {
      await handle.close();
    }
    await fs.rename(tmp, file);
  } catch (e) {
    await fs.rm(tmp, { force: true });
    throw e;
  }
}

export async function readParams(file: string): Promise<Float32Array> {
  let bytes: Buffer;
  try {
    bytes = await readRegularFile(file, { what: 'the params file', maxBytes: constants.MAX_LENGTH }); // a FIFO or a device is refused, not read
  } catch (e) {
    if (e instanceof UserError) throw e;
    throw new UserError(`${file}: cannot read the params file (${(e as NodeJS.ErrnoException).code ?? String(e)})`);
  }
  return decodeParams(bytes, file);
}
