// ONNX Runtime, the yardstick: onnxruntime-node is an optional dependency, loaded only
// when a comparison asks for it. Its CPU binary ships inside the npm package; only its
// install script reaches the network (for GPU files), so offline installs skip it.

import { performance } from 'node:perf_hooks';
import { UserError } from '../errors';

/** The part of onnxruntime-node's API we use. */
export interface OrtTensor { readonly data: unknown; readonly dims: readonly number[] }
export interface OrtSession {
  readonly inputNames: readonly string[];
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
  Tensor: new (type: 'float32', data: Float32Array, dims: readonly number[]) => OrtTensor;
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
  run(inputs: readonly Float32Array[]): Promise<Float32Array[]>;
  release(): Promise<void>;
}

/**
 * An ONNX Runtime CPU session on `file` with `threads` intra-op threads (one inter-op
 * thread, sequential execution, all graph optimisations). Inputs and outputs in the
 * model's order.
 */
export async function openOrtSession(model: string | Uint8Array, threads: number, inputShapes: readonly (readonly number[])[]): Promise<OrtRunner> {
  const ort = loadOnnxRuntime();
  let session: OrtSession;
  try {
    session = await ort.InferenceSession.create(model, {
      intraOpNumThreads: threads, interOpNumThreads: 1, executionMode: 'sequential', graphOptimizationLevel: 'all',
    });
  } catch (e) {
    const file = typeof model === 'string' ? model : '(model bytes)';
    throw new UserError(`${file}: ONNX Runtime cannot load the model (${(e as Error).message.split('\n')[0]})`);
  }
  if (session.inputNames.length !== inputShapes.length) {
    throw new UserError(`${typeof model === 'string' ? model : '(model bytes)'}: ONNX Runtime sees ${session.inputNames.length} input(s), the compiled model has ${inputShapes.length}`);
  }
  return {
    version: ort.env.versions?.node ?? ort.env.versions?.common ?? 'unknown',
    async run(inputs) {
      const feeds: Record<string, OrtTensor> = {};
      session.inputNames.forEach((name, i) => { feeds[name] = new ort.Tensor('float32', inputs[i], inputShapes[i]); });
      const out = await session.run(feeds);
      return session.outputNames.map((name) => out[name].data as Float32Array);
    },
    release: () => session.release(),
  };
}

/** One measurement of ONNX Runtime: `number` runs of `session` back to back, in ms per run. */
export async function timeOrtRuns(session: Pick<OrtRunner, 'run'>, inputs: readonly Float32Array[], number: number): Promise<number> {
  const t0 = performance.now();
  for (let j = 0; j < number; j++) await session.run(inputs);
  return (performance.now() - t0) / number;
}
