// ONNX tensors <-> the importer's static values. A TensorProto holds its numbers in
// raw_data (little-endian), in a typed field (float_data, int64_data, ...), or in an
// external file next to the model (external_data: location, offset, length). Floating
// types become float32 values (float64 rounded to float32; float16, bfloat16 and the 8- and
// 4-bit floats' values are float32 values exactly, decoded from their bits: one byte per
// float8 value, in raw_data or one per int32_data entry; float4 e2m1 packed as int4);
// integer and bool types become integers (as JS numbers), which is what shape arithmetic
// (Shape, Gather, Concat, Reshape) needs.
// The 4- and 2-bit integers are packed, as onnx.numpy_helper packs them: two int4/uint4
// per byte (element 2k in the low nibble, 2k+1 in the high one), four int2/uint2 per byte
// (element 4k in bits 0-1, up to 4k+3 in bits 6-7), the last byte padded with zeros; the
// signed ones sign-extended. raw_data holds those bytes, int32_data one byte per entry. A
// model file is untrusted: its external data must lie inside the model's folder, as
// onnx.checker requires.

import { closeSync, fstatSync, openSync, readSync, realpathSync } from 'node:fs';
import { READ_FLAGS } from '../../regular-file';
import path from 'node:path';
import { bfloat16Value, float16Value } from '../../ir/half';
import { miniFloatValue, type MiniFloat } from '../../ir/float8';
import { numElements } from '../../ir/tensor';
import { bytesToFloat32, float32ToBytes } from '../../runtime/rawfile';
import { DataType, EXTERNAL_DATA, type TensorMessage } from './schema';

export type StaticTensor =
  | { readonly type: 'float'; readonly shape: readonly number[]; readonly data: Float32Array }
  /** Integers; `bool` marks an ONNX bool tensor (0/1). */
  | { readonly type: 'int'; readonly shape: readonly number[]; readonly data: readonly number[]; readonly bool?: boolean };

/** A problem with the model's content; the importer prefixes the file name. */
export class OnnxFormatError extends Error {}

const ELEMENT_BYTES: Record<number, number> = {
  [DataType.FLOAT]: 4, [DataType.DOUBLE]: 8, [DataType.FLOAT16]: 2, [DataType.BFLOAT16]: 2,
  [DataType.INT64]: 8, [DataType.INT32]: 4, [DataType.INT16]: 2, [DataType.INT8]: 1,
  [DataType.UINT64]: 8, [DataType.UINT32]: 4, [DataType.UINT16]: 2, [DataType.UINT8]: 1, [DataType.BOOL]: 1,
  [DataType.FLOAT8E4M3FN]: 1, [DataType.FLOAT8E4M3FNUZ]: 1, [DataType.FLOAT8E5M2]: 1, [DataType.FLOAT8E5M2FNUZ]: 1,
};
/** The 8- and 4-bit ONNX float types and their formats (ir/float8.ts); they run as float32. */
export const MINI_FLOAT_TYPES: Partial<Record<number, MiniFloat>> = {
  [DataType.FLOAT8E4M3FN]: 'f8e4m3fn', [DataType.FLOAT8E4M3FNUZ]: 'f8e4m3fnuz', [DataType.FLOAT8E5M2]: 'f8e5m2',
  [DataType.FLOAT8E5M2FNUZ]: 'f8e5m2fnuz', [DataType.FLOAT4E2M1]: 'f4e2m1',
};
/** The packed integer types: bits per element and signedness. */
const PACKED: Partial<Record<number, { bits: number; signed: boolean }>> = {
  [DataType.INT4]: { bits: 4, signed: true }, [DataType.UINT4]: { bits: 4, signed: false },
  [DataType.INT2]: { bits: 2, signed: true }, [DataType.UINT2]: { bits: 2, signed: false },
  [DataType.FLOAT4E2M1]: { bits: 4, signed: false },
};
const FLOAT_TYPES = new Set<number>([DataType.FLOAT, DataType.DOUBLE, DataType.FLOAT16, DataType.BFLOAT16, ...Object.keys(MINI_FLOAT_TYPES).map(Number)]);
const TYPE_NAMES: Record<number, string> = Object.fromEntries(Object.entries(DataType).map(([k, v]) => [v, k]));

export const dataTypeName = (t: number | undefined): string => TYPE_NAMES[t ?? 0] ?? `data type ${t ?? 0}`;
export const isSupportedDataType = (t: number | undefined): boolean => t !== undefined && (ELEMENT_BYTES[t] !== undefined || PACKED[t] !== undefined);

/** The bytes `count` elements of `dataType` take (packed types: whole bytes, the last one padded). */
function byteLength(dataType: number, count: number): number {
  const packed = PACKED[dataType];
  return packed ? Math.ceil((count * packed.bits) / 8) : count * ELEMENT_BYTES[dataType];
}

/** Element `i` of packed bytes `at(k)` (the k-th byte) of a 4- or 2-bit type, sign-extended if signed. */
function unpack(at: (k: number) => number, i: number, packed: { bits: number; signed: boolean }): number {
  const perByte = 8 / packed.bits;
  const v = (at(Math.floor(i / perByte)) >> ((i % perByte) * packed.bits)) & ((1 << packed.bits) - 1);
  return packed.signed && v >= 1 << (packed.bits - 1) ? v - (1 << packed.bits) : v;
}

/** The values of a static tensor as float32. */
export const floatData = (t: StaticTensor): Float32Array => (t.type === 'float' ? t.data : Float32Array.from(t.data));

/** Dims of a tensor, checked: non-negative integers whose product fits in memory. */
export function checkedDims(dims: readonly number[] | undefined, what: string): number[] {
  const out = [...(dims ?? [])];
  for (const d of out) {
    if (!Number.isSafeInteger(d) || d < 0) throw new OnnxFormatError(`${what}: bad dimension ${d} in [${out.join(', ')}]`);
  }
  if (numElements(out) > 2 ** 31) throw new OnnxFormatError(`${what}: shape [${out.join(', ')}] has more than 2^31 elements`);
  return out;
}

/** The number of a float16 or bfloat16 element's 16 bits, or of an 8/4-bit float's bits. */
const narrowValue = (dataType: number, h: number): number => {
  const mini = MINI_FLOAT_TYPES[dataType];
  if (mini) return miniFloatValue(mini, h);
  return dataType === DataType.FLOAT16 ? float16Value(h) : bfloat16Value(h);
};

/** Decode `count` little-endian elements of `dataType` from bytes. */
function fromBytes(bytes: Uint8Array, dataType: number, count: number): Float32Array | number[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (dataType === DataType.FLOAT) return bytesToFloat32(bytes.subarray(0, count * 4));
  if (dataType === DataType.DOUBLE || dataType === DataType.FLOAT16 || dataType === DataType.BFLOAT16) {
    const out = new Float32Array(count);
    for (let i = 0; i < count; i++) out[i] = dataType === DataType.DOUBLE ? view.getFloat64(i * 8, true) : narrowValue(dataType, view.getUint16(i * 2, true));
    return out;
  }
  const packed = PACKED[dataType];
  if (dataType === DataType.FLOAT4E2M1) return Float32Array.from({ length: count }, (_, i) => narrowValue(dataType, unpack((k) => bytes[k], i, packed!)));
  if (MINI_FLOAT_TYPES[dataType]) return Float32Array.from(bytes.subarray(0, count), (b) => narrowValue(dataType, b));
  if (packed) return Array.from({ length: count }, (_, i) => unpack((k) => bytes[k], i, packed));
  const read: Record<number, (i: number) => number> = {
    [DataType.INT64]: (i) => Number(view.getBigInt64(i * 8, true)),
    [DataType.UINT64]: (i) => Number(view.getBigUint64(i * 8, true)),
    [DataType.INT32]: (i) => view.getInt32(i * 4, true),
    [DataType.UINT32]: (i) => view.getUint32(i * 4, true),
    [DataType.INT16]: (i) => view.getInt16(i * 2, true),
    [DataType.UINT16]: (i) => view.getUint16(i * 2, true),
    [DataType.INT8]: (i) => view.getInt8(i),
    [DataType.UINT8]: (i) => view.getUint8(i),
    [DataType.BOOL]: (i) => (view.getUint8(i) ? 1 : 0),
  };
  return Array.from({ length: count }, (_, i) => read[dataType](i));
}

/**
 * The file an external tensor's `location` names, checked as onnx.checker does: a relative
 * path inside the model's folder, without `..` and not through a link that leads outside it
 * (a model must not read /etc/passwd into params.bin).
 */
function externalFile(location: string, modelDir: string, what: string): string {
  const outside = (why: string): OnnxFormatError => new OnnxFormatError(
    `${what}: external data location '${location}' ${why} (expected a relative path inside the model's folder ${modelDir}, without '..', as onnx.checker requires)`,
  );
  if (path.isAbsolute(location) || path.win32.isAbsolute(location)) throw outside('is an absolute path');
  if (location.split(/[\\/]/).includes('..')) throw outside("climbs out with '..'");
  const file = path.resolve(modelDir, location);
  let real: string;
  try {
    real = realpathSync(file);
  } catch (e) {
    throw new OnnxFormatError(`${what}: cannot open external data file ${file} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
  const inside = path.relative(realpathSync(modelDir), real);
  if (inside.split(path.sep)[0] === '..' || path.isAbsolute(inside)) throw outside(`is a link to ${real}, outside the folder`);
  return real;
}

/** The bytes of an external tensor: `location` relative to the model's directory, with optional offset/length. */
function readExternal(t: TensorMessage, modelDir: string, what: string, expected: number): Uint8Array {
  const entries = new Map((t.external_data ?? []).map((e) => [e.key ?? '', e.value ?? '']));
  const location = entries.get('location');
  if (!location) throw new OnnxFormatError(`${what}: external data without a 'location'`);
  const offset = Number(entries.get('offset') ?? '0');
  const length = entries.has('length') ? Number(entries.get('length')) : expected;
  if (!Number.isSafeInteger(offset) || offset < 0 || !Number.isSafeInteger(length) || length < 0) {
    throw new OnnxFormatError(`${what}: bad external data offset/length '${entries.get('offset')}'/'${entries.get('length')}'`);
  }
  if (length !== expected) throw new OnnxFormatError(`${what}: external data length ${length} bytes, the shape needs ${expected}`);
  const file = externalFile(location, modelDir, what);
  let fd: number;
  try {
    fd = openSync(file, READ_FLAGS); // non-blocking: a FIFO is refused by the fstat below instead of blocking the open
  } catch (e) {
    throw new OnnxFormatError(`${what}: cannot open external data file ${file} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) throw new OnnxFormatError(`${what}: external data ${file} is not a regular file`);
    const size = stat.size;
    if (offset + length > size) throw new OnnxFormatError(`${what}: external data ${file} has ${size} bytes, needs ${offset + length}`);
    const out = new Uint8Array(length);
    let done = 0;
    while (done < length) {
      const n = readSync(fd, out, done, length - done, offset + done);
      if (n <= 0) throw new OnnxFormatError(`${what}: external data ${file} ended early`);
      done += n;
    }
    return out;
  } finally {
    closeSync(fd);
  }
}

/** Decode a TensorProto (initializer or attribute) into a static value. */
export function tensorFromProto(t: TensorMessage, modelDir: string, what = `tensor '${t.name ?? ''}'`): StaticTensor {
  const dataType = t.data_type ?? 0;
  if (!isSupportedDataType(dataType)) throw new OnnxFormatError(`${what}: ${dataTypeName(dataType)} tensors are not supported`);
  const shape = checkedDims(t.dims, what);
  const count = numElements(shape);
  const bytes = byteLength(dataType, count);
  let values: Float32Array | number[];
  if (t.data_location === EXTERNAL_DATA) {
    values = fromBytes(readExternal(t, modelDir, what, bytes), dataType, count);
  } else if (t.raw_data && t.raw_data.length > 0) {
    if (t.raw_data.length !== bytes) throw new OnnxFormatError(`${what}: raw_data has ${t.raw_data.length} bytes, shape [${shape.join(', ')}] needs ${bytes}`);
    values = fromBytes(t.raw_data, dataType, count);
  } else {
    const field = typedField(t, dataType);
    const packed = PACKED[dataType];
    if (packed) {
      if (field.length !== bytes) throw new OnnxFormatError(`${what}: int32_data has ${field.length} entries, shape [${shape.join(', ')}] needs ${bytes} (${dataTypeName(dataType)} packs ${8 / packed.bits} values a byte)`);
      const data = Array.from({ length: count }, (_, i) => unpack((k) => field[k] & 0xff, i, packed));
      return dataType === DataType.FLOAT4E2M1 ? { type: 'float', shape, data: Float32Array.from(data, (b) => narrowValue(dataType, b)) } : { type: 'int', shape, data };
    }
    if (field.length !== count) throw new OnnxFormatError(`${what}: ${field.length} values for shape [${shape.join(', ')}]`);
    values = FLOAT_TYPES.has(dataType)
      ? Float32Array.from(field, (v) => (dataType === DataType.FLOAT16 || dataType === DataType.BFLOAT16 || MINI_FLOAT_TYPES[dataType] ? narrowValue(dataType, v) : v))
      : field.map((v) => (dataType === DataType.BOOL ? (v ? 1 : 0) : v));
  }
  if (values instanceof Float32Array) return { type: 'float', shape, data: values };
  return dataType === DataType.BOOL ? { type: 'int', shape, data: values, bool: true } : { type: 'int', shape, data: values };
}

/**
 * A static tensor as graph constant data: float32 as is; integers as int32 (ONNX's int64
 * ids, indices and shapes run as int32 here: a value outside int32 is refused), bools as 0/1.
 */
export function constantData(t: StaticTensor, what: string): { data: Float32Array | Int32Array; dtype: 'float32' | 'int32' | 'bool' } {
  if (t.type === 'float') return { data: t.data, dtype: 'float32' };
  const data = new Int32Array(t.data.length);
  for (let i = 0; i < t.data.length; i++) {
    const x = t.data[i];
    if (!(x >= -2147483648 && x <= 2147483647)) throw new OnnxFormatError(`${what}: integer value ${x} does not fit in int32 (integer tensors run as int32)`);
    data[i] = x;
  }
  return { data, dtype: t.bool ? 'bool' : 'int32' };
}

function typedField(t: TensorMessage, dataType: number): number[] {
  switch (dataType) {
    case DataType.FLOAT: return t.float_data ?? [];
    case DataType.DOUBLE: return t.double_data ?? [];
    case DataType.INT64: return t.int64_data ?? [];
    case DataType.UINT32: case DataType.UINT64: return t.uint64_data ?? [];
    default: return t.int32_data ?? []; // int32, int16, int8, uint16, uint8, bool, float16, bfloat16 and float8 (as bits), the packed bytes of int4/int2/float4
  }
}

/** A float32 tensor as a TensorProto with raw_data. */
export function floatTensorProto(name: string, shape: readonly number[], data: Float32Array): TensorMessage {
  // A copy: the message must not alias the graph's weights.
  return { name, dims: [...shape], data_type: DataType.FLOAT, raw_data: new Uint8Array(float32ToBytes(data)) };
}

/** An int64 tensor as a TensorProto. */
export function int64TensorProto(name: string, shape: readonly number[], data: readonly number[]): TensorMessage {
  return { name, dims: [...shape], data_type: DataType.INT64, int64_data: [...data] };
}
