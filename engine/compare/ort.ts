// ONNX Runtime, the yardstick: onnxruntime-node is an optional dependency, loaded only
// when a comparison asks for it. Its CPU binary ships inside the npm package; only its
// install script reaches the network (for GPU files), so offline installs skip it.

import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { UserError } from '../errors';
import { float16Bits, float16Value } from '../ir/half';
import type { TensorData } from '../ir/tensor';
import { DataType, decodeModel, type ValueInfo } from '../frontend/onnx/schema';

/** The part of onnxruntime-node's API we use. */
export interface OrtTensor { readonly data: unknown; readonly dims: readonly number[] }
export interface OrtSession {
  readonly inputNames: readonly string[];
  /** Each input's element type ('float32', 'int64', 'bool', ...), where the binding tells (onnxruntime-node >= 1.21). */
  readonly inputMetadata?: readonly { readonly name: string; readonly isTensor: boolean; readonly type?: string }[];
  readonly outputNames: readonly string[];
  run(feeds: Record<string, OrtTensor>): Promise<Record<string, OrtTensor>>;
  release(): Promise<void>;
}
export interface OrtModule {
  InferenceSession: {
    create(model: string | Uint8Array, options: {
      intraOpNumThreads?: number; interOpNumThreads?: number; executionMode?: 'sequential' | 'parallel';
      graphOptimizationLevel?: 'disabled' | 'basic' | 'extended' | 'all';
    }): Promise<OrtSession>;
  };
  Tensor: new (type: string, data: Float32Array | Float64Array | Int32Array | BigInt64Array | Uint8Array | Uint16Array, dims: readonly number[]) => OrtTensor;
  env: { versions?: Record<string, string> };
}

export const ORT_INSTALL_HINT =
  'install it with `ONNXRUNTIME_NODE_INSTALL=skip npm install onnxruntime-node` (the CPU runtime ships inside the ' +
  'npm package; `skip` only stops its install script from downloading GPU files, which fails offline)';

let cached: { module?: OrtModule; error?: string } | undefined;

/** onnxruntime-node, or why it cannot be loaded. */
export function tryLoadOnnxRuntime(): { module?: OrtModule; error?: string } {
  if (!cached) {
    try {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      cached = { module: require('onnxruntime-node') as OrtModule };
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      cached = { error: code === 'MODULE_NOT_FOUND' ? 'onnxruntime-node is not installed' : `onnxruntime-node cannot be loaded (${(e as Error).message.split('\n')[0]})` };
    }
  }
  return cached;
}

/** onnxruntime-node; a UserError saying how to install it when it is missing. */
export function loadOnnxRuntime(): OrtModule {
  const r = tryLoadOnnxRuntime();
  if (!r.module) throw new UserError(`${r.error}: ${ORT_INSTALL_HINT}`);
  return r.module;
}

export interface OrtRunner {
  readonly version: string;
  /**
   * Inputs and outputs as our 4-byte tensors: float32 (for ONNX's float16, bfloat16 and
   * float64 too, which run as float32), or int32 for the integer and bool types.
   */
  run(inputs: readonly TensorData[]): Promise<TensorData[]>;
  release(): Promise<void>;
}

/** ONNX Runtime's names of float16 and float64 (which run as float32 here), by ONNX DataType. */
const ORT_FLOAT_TYPES: Partial<Record<number, string>> = { [DataType.FLOAT16]: 'float16', [DataType.DOUBLE]: 'float64' };

/**
 * The element types (ONNX DataType; 0 where unset) the model declares for its graph inputs
 * (initializers listed as inputs left out, as ONNX Runtime leaves them) and its outputs.
 */
export function declaredElementTypes(model: Uint8Array): { inputs: Map<string, number>; outputs: Map<string, number> } {
  const g = decodeModel(model).graph;
  const initializers = new Set((g?.initializer ?? []).map((t) => t.name ?? ''));
  const types = (vis: readonly ValueInfo[] | undefined): Map<string, number> => new Map((vis ?? []).filter((vi) => !initializers.has(vi.name ?? '')).map((vi) => [vi.name ?? '', vi.type?.tensor_type?.elem_type ?? 0]));
  return { inputs: types(g?.input), outputs: types(g?.output) };
}

/**
 * Our data as the ONNX type an input declares: int32 values widen to int64, 0/1 to bool;
 * float32 values become float16 (rounded half to even, as bits) or float64.
 */
function ortInput(ort: OrtModule, type: string, data: TensorData, dims: readonly number[]): OrtTensor {
  switch (type) {
    case 'float16': return new ort.Tensor('float16', Uint16Array.from(data, float16Bits), dims);
    case 'float64': return new ort.Tensor('float64', Float64Array.from(data), dims);
    case 'int64': return new ort.Tensor('int64', BigInt64Array.from(data, (x) => BigInt(Math.trunc(x))), dims);
    case 'int32': return new ort.Tensor('int32', Int32Array.from(data), dims);
    case 'bool': return new ort.Tensor('bool', Uint8Array.from(data, (x) => (x ? 1 : 0)), dims);
    default: return new ort.Tensor('float32', data instanceof Float32Array ? data : Float32Array.from(data), dims);
  }
}

/**
 * An ONNX Runtime output as our data: float types as float32 (a float16 output, which
 * onnxruntime-node gives as its 16-bit patterns, decoded), integer and bool types as int32.
 */
function fromOrt(data: unknown, elemType: number | undefined): TensorData {
  if (elemType === DataType.FLOAT16 && data instanceof Uint16Array) return Float32Array.from(data, float16Value);
  if (data instanceof Float32Array || data instanceof Int32Array) return data;
  if (data instanceof BigInt64Array || data instanceof BigUint64Array) return Int32Array.from(data, (x) => Number(BigInt.asIntN(32, x)));
  if (data instanceof Float64Array) return Float32Array.from(data);
  if (ArrayBuffer.isView(data) && data.constructor.name === 'Float16Array') return Float32Array.from(data as unknown as ArrayLike<number>);
  if (ArrayBuffer.isView(data)) return Int32Array.from(data as unknown as ArrayLike<number>);
  throw new UserError(`ONNX Runtime returned an output that is not a numeric tensor`);
}

/**
 * An ONNX Runtime CPU session on `file` with `threads` intra-op threads (one inter-op
 * thread, sequential execution, all graph optimisations). Inputs and outputs in the
 * model's order.
 */
export async function openOrtSession(model: string | Uint8Array, threads: number, inputShapes: readonly (readonly number[])[]): Promise<OrtRunner> {
  const ort = loadOnnxRuntime();
  const file = typeof model === 'string' ? model : '(model bytes)';
  // The declared types, from the file (ONNX Runtime tells input types only, and not in every version).
  let declared: ReturnType<typeof declaredElementTypes>;
  try {
    declared = declaredElementTypes(typeof model === 'string' ? readFileSync(model) : model);
  } catch (e) {
    throw new UserError(`${file}: cannot read the model's declared input and output types (${(e as Error).message.split('\n')[0]})`);
  }
  // onnxruntime-node has no bfloat16 tensors (its session refuses such a model as 'Unsupported data type: 16').
  for (const [kind, types] of [['output', declared.outputs], ['input', declared.inputs]] as const) {
    const bf16 = [...types].find(([, t]) => t === DataType.BFLOAT16)?.[0];
    if (bf16 !== undefined) {
      throw new UserError(`${file}: ${kind} '${bf16}' is BFLOAT16, which onnxruntime-node cannot ${kind === 'output' ? 'return' : 'take'}; this model cannot be compared with ONNX Runtime`);
    }
  }
  let session: OrtSession;
  try {
    session = await ort.InferenceSession.create(model, {
      intraOpNumThreads: threads, interOpNumThreads: 1, executionMode: 'sequential', graphOptimizationLevel: 'all',
    });
  } catch (e) {
    throw new UserError(`${file}: ONNX Runtime cannot load the model (${(e as Error).message.split('\n')[0]})`);
  }
  if (session.inputNames.length !== inputShapes.length) {
    throw new UserError(`${file}: ONNX Runtime sees ${session.inputNames.length} input(s), the compiled model has ${inputShapes.length}`);
  }
  return {
    version: ort.env.versions?.node ?? ort.env.versions?.common ?? 'unknown',
    async run(inputs) {
      const feeds: Record<string, OrtTensor> = {};
      session.inputNames.forEach((name, i) => {
        const type = ORT_FLOAT_TYPES[declared.inputs.get(name) ?? 0] ?? session.inputMetadata?.find((m) => m.name === name)?.type ?? (inputs[i] instanceof Float32Array ? 'float32' : 'int64');
        feeds[name] = ortInput(ort, type, inputs[i], inputShapes[i]);
      });
      const out = await session.run(feeds);
      return session.outputNames.map((name) => fromOrt(out[name].data, declared.outputs.get(name)));
    },
    release: () => session.release(),
  };
}

/** One measurement of ONNX Runtime: `number` runs of `session` back to back, in ms per run. */
export async function timeOrtRuns(session: Pick<OrtRunner, 'run'>, inputs: readonly TensorData[], number: number): Promise<number> {
  const t0 = performance.now();
  for (let j = 0; j < number; j++) await session.run(inputs);
  return (performance.now() - t0) / number;
}
