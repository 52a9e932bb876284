// The native side of tensortune as seen from TypeScript: building the tools, running them.
export { cacheRoot, compileSharedLibrary, findCompiler, nativeBinary, nativeDir, nativeIncludeDir } from './build';
export type { Compiler, NativeBinaryName } from './build';
export { checkBenchVersion, runBench } from './bench';
export type { BenchOptions, BenchResult } from './bench';
