// The engine's public API: what the CLI, the Nx executors and library users call.
// Nothing here (or below) imports Nx.

export { loadModel, type ModelSpec, type LoadedModel } from './frontend/load';
export { tuneNetwork, type TuneResult, type TuneTiming } from './app/tune';
export type { TuneNetworkOptions, TuneNetworkResult, TuneEvent, PolicyName, MeasureOptions } from './search/types';
export { compileNetwork, type CompileNetworkOptions } from './app/compile';
export { runBench, type BenchOptions, type BenchResult } from './native/bench';
export { parseTarget, hardwareFingerprint, isGpu, withHardwareParams, type Target, type GpuParams } from './target';
export { registerTargetKind, kindOf, targetKinds } from './targets/registry';
export type { TargetKind } from './targets/kind';
export { extractTasks, tuningTasks, type Task } from './graph/extract';
export { UserError } from './errors';
export { ENGINE_VERSION } from './version';
