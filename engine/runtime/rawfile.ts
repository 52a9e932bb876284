// Raw tensor files: float32 values, little-endian, nothing else (the form of
// tt_bench --input / --save-outputs and of tt_measure's buffers).

import { promises as fs } from 'node:fs';
import { endianness } from 'node:os';
import path from 'node:path';
import { UserError } from './errors';
import { checkRegularFile } from '../regular-file';

const littleEndian = endianness() === 'LE';

export function float32ToBytes(values: Float32Array): Buffer {
  if (littleEndian) return Buffer.from(values.buffer, values.byteOffset, values.byteLength);
  const out = Buffer.alloc(values.length * 4);
  values.forEach((v, i) => out.writeFloatLE(v, i * 4));
  return out;
}

/** Copies `bytes` (a multiple of 4) into a fresh, aligned Float32Array. */
export function bytesToFloat32(bytes: Uint8Array): Float32Array {
  const out = new Float32Array(bytes.length / 4);
  if (littleEndian) new Uint8Array(out.buffer).set(bytes.subarray(0, out.length * 4));
  else {
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    for (let i = 0; i < out.length; i++) out[i] = view.getFloat32(i * 4, true);
  }
  return out;
}

export async function writeFloat32File(file: string, values: Float32Array): Promise<void> {
  await fs.writeFile(file, float32ToBytes(values));
}

/** Reads a raw float32 file; with `expected`, a file of another length is a UserError. */
export async function readFloat32File(file: string, expected?: number): Promise<Float32Array> {
  const bytes = await fs.readFile(file);
  if (bytes.length % 4 !== 0 || (expected !== undefined && bytes.length !== expected * 4)) {
    const want = expected === undefined ? 'a multiple of 4 bytes' : `${expected * 4} bytes (${expected} float32 values)`;
    throw new UserError(`${file}: expected ${want}, the file has ${bytes.length} bytes`);
  }
  return bytesToFloat32(bytes);
}

/** `--input NAME=FILE` values (benchmark's raw input files) -> input name -> absolute file,
 *  relative paths from `root`. Each must be a regular file: the native runner that reads it
 *  would block on a FIFO. */
export function inputFiles(specs: readonly string[], root = process.cwd()): Record<string, string> {
  return Object.fromEntries(specs.map((spec) => {
    const m = /^([^=]+)=(.+)$/.exec(spec);
    if (!m) throw new UserError(`bad --input '${spec}' (expected NAME=FILE)`);
    const file = path.resolve(root, m[2]);
    checkRegularFile(file, `--input ${m[1]}`);
    return [m[1], file];
  }));
}
