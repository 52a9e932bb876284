// `tensortune benchmark DIR`: time a compiled model with the native runner and print the
// seeds' execution time summary (mean / median / max / min / std, in µs under 1 ms, else
// ms), the thread count and load, and a warning for each reason not to trust the figures
// (timing-trust.ts). With --json the JSON object is all of stdout, the text goes to stderr.

import path from 'node:path';
import { UserError } from '../errors';
import { compareWithOnnxRuntime, formatCompareReport } from '../compare/compare';
import { manifestFiles, readManifest, recordsThreadsWarning, type Manifest } from '../compile/manifest';
import { checkManifestMemory, cliMemoryLimit } from '../compile/memory-plan';
import { checkModelRunsHere } from '../compile/model-gpu';
import { BENCH_DEFAULTS, benchSetupLine, runBench } from '../native/bench';
import { remoteSetupLine, runRemoteBench } from '../remote/bench';
import { formatKernelProfile, kernelProfile } from '../compile/profile';
import { measurePeakGflops } from '../native/peak';
import { inputFiles } from '../runtime/rawfile';
import { formatSummary } from '../units';
import { isGpu, parseTarget } from '../target';
import { checkCompiledDir } from './compiled-dirs';
import { nonNegativeInt, oneOf, optionalInt, parseFlags, positiveInt, type CliIo, type Command } from './command';

const USAGE = `Usage: tensortune benchmark DIR [--repeat N] [--number N] [--min-repeat-ms MS] [--threads N] [--seed S]
                            [--input NAME=FILE ...] [--save-outputs DIR] [--json]
       tensortune benchmark DIR --compare onnxruntime [--onnx FILE] [--threads N] [--rounds N]
                            [--repeat N] [--number N] [--seed S] [--json]

Run a compiled model on seeded random input or raw float32 files and print the execution
time summary, the threads and the load average. DIR is the folder compile wrote (model.so,
params.bin, manifest.json): the --out of 'tensortune compile', or for 'nx compile <network>'
<outDir>/<network>/<target>, e.g. dist/tensortune/mobilenet/cpu (not the project folder
models/mobilenet). A 'warning:' line on stderr says why the figures may not be trusted: a
standard deviation of 10% of the mean or more, outlying measurements, or other processes
using the cores the model needs.

An OpenCL model runs on this machine's OpenCL device (TT_OPENCL_PLATFORM and
TT_OPENCL_DEVICE select one: an index or part of its name); its time per run includes
copying the inputs to the device and the outputs back, and --threads does not apply to it.
A CUDA model runs on this machine's NVIDIA GPU (TT_CUDA_DEVICE: an index), likewise
copying inputs and outputs; without the NVIDIA driver it stops with one line saying so.
A model whose host library was built for another architecture (--host "llvm -mtriple=...")
is refused: copy its folder to such a machine.

Options:
  --repeat N           timed measurements (default ${BENCH_DEFAULTS.repeat})
  --number N           runs per measurement (default: 5, grown until a measurement lasts
                       --min-repeat-ms)
  --min-repeat-ms MS   shortest measurement in ms (default ${BENCH_DEFAULTS.minRepeatMs})
  --threads N          threads of the model (default: all cores)
  --seed S             seed of the random input (default 0)
  --input NAME=FILE    raw float32 data for input NAME instead of random values (repeatable)
  --save-outputs DIR   write each output to DIR/<name>.bin after the timed runs
  --profile            then time each kernel call (CPU models) and print every kernel's ms per
                       run, share of the run, GFLOP/s and % of the machine's peak (measured
                       at the same thread count), slowest first, like TVM's debug executor
  --runner CMD         run the model on a device through this command template (it must
                       contain {command}: "ssh board {command}", "qemu-aarch64 -L <sysroot>
                       {command}"); model.so and params.bin travel through it, and a worker built
                       for the model's target is installed on first use. Random input only (no
                       --input, --save-outputs, --compare). Under an emulator the timings are
                       not performance figures
  --max-memory SIZE    refuse, before it is loaded, a model that needs more memory than SIZE
                       (its inputs, outputs, weights and workspace; default 4GiB), e.g. 16GiB
  --json               print one JSON object alone on stdout (the summary goes to stderr): mean_ms,
                       median_ms, max_ms, min_ms, std_ms, threads, cores, load_before, load_after,
                       warnings, ... (always in ms; the text shows times under 1 ms in µs)
  -h, --help           show this help

--compare onnxruntime runs ONNX Runtime (onnxruntime-node; install it with
ONNXRUNTIME_NODE_INSTALL=skip npm install onnxruntime-node) on the same weights, the
same seeded input and the same thread count, in interleaved rounds (A B A B ...), and
prints both median latencies, their ratio, the median of each round's ratio (steadier on a
shared machine whose speed changes from minute to minute), the max absolute and relative
error of every output and whether the top-1 class agrees. The ONNX file is --onnx FILE, else the file
DIR was compiled from (the model file its manifest names), else, for a builtin network, an export of
it with the weights 'compile' gives it. Its options and their defaults:
  --onnx FILE          the ONNX model to run in ONNX Runtime (default: see above)
  --threads N          threads of both engines (default 1)
  --rounds N           interleaved rounds (default 5)
  --repeat N           measurements per engine and round (default 3)
  --number N           runs per measurement (default: what --min-repeat-ms needs)
  --min-repeat-ms MS   shortest measurement in ms, to pick --number (default ${BENCH_DEFAULTS.minRepeatMs})
  --seed S             seed of the shared random input (default 0)
  --json               print the report as one JSON object alone on stdout (the text goes to
                       stderr): \`... --compare onnxruntime --json > <target>.onnxruntime.json\`
                       is the file the Nx benchmark report shows
`;

/** The manifest of the compiled model in `dir`, which must be one and run on this machine. */
function runnableManifest(dir: string, command: string, maxMemory: string | undefined): Manifest {
  checkCompiledDir(dir);
  const manifest = readManifest(path.resolve(dir));
  checkModelRunsHere(manifest, command, path.join(dir, 'manifest.json'));
  checkManifestMemory(manifest, path.join(dir, 'manifest.json'), cliMemoryLimit(maxMemory)); // before the runner allocates anything
  return manifest;
}

/** How to rank a model's records for the thread count it ran at (recordsThreadsWarning's advice). */
const compileAt = (threads: number): string => `\`tensortune compile --threads ${threads}\` ranks them for ${threads}`;

export const benchmarkCommand: Command = {
  name: 'benchmark',
  summary: 'time a compiled model (mean / median / max / min / std)',
  async run(argv: readonly string[], io: CliIo): Promise<number> {
    const { values, positionals } = parseFlags(argv, {
      repeat: { type: 'string' }, number: { type: 'string' }, 'min-repeat-ms': { type: 'string' },
      threads: { type: 'string' }, seed: { type: 'string' }, input: { type: 'string', multiple: true },
      'save-outputs': { type: 'string' }, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' },
      compare: { type: 'string' }, onnx: { type: 'string' }, rounds: { type: 'string' }, runner: { type: 'string', multiple: true },
      profile: { type: 'boolean' }, 'max-memory': { type: 'string' },
    });
    if (values.help) { io.out(USAGE); return 0; }
    // With --json, stdout carries the JSON object alone (for jq, python3 -m json.tool, a file); the text goes to stderr.
    const text = (line: string): void => (values.json ? io.err(line) : io.out(line));
    if (positionals.length !== 1) throw new UserError('expected one directory made by tensortune compile');
    if (values.profile && (values.runner?.length || values.compare !== undefined)) {
      throw new UserError('--profile times the kernels of a local run: drop --runner and --compare');
    }
    if (values.runner?.length) {
      const given = ['compare', 'input', 'save-outputs', 'onnx', 'rounds'].filter((k) => values[k as keyof typeof values] !== undefined);
      if (given.length) throw new UserError(`--runner runs the model on a device with random input: drop ${given.map((k) => `--${k}`).join(', ')}`);
      checkCompiledDir(positionals[0]);
      const dir = path.resolve(positionals[0]);
      const manifest = readManifest(dir);
      checkManifestMemory(manifest, path.join(positionals[0], 'manifest.json'), cliMemoryLimit(values['max-memory']));
      const files = manifestFiles(dir, manifest);
      const result = await runRemoteBench({
        runners: values.runner, where: '--runner', target: parseTarget(manifest.target, `${path.join(positionals[0], 'manifest.json')} target`),
        model: files.library, params: files.params,
        repeat: positiveInt('--repeat', values.repeat, BENCH_DEFAULTS.repeat), number: optionalInt('--number', values.number),
        minRepeatMs: nonNegativeInt('--min-repeat-ms', values['min-repeat-ms'], BENCH_DEFAULTS.minRepeatMs),
        threads: optionalInt('--threads', values.threads), seed: nonNegativeInt('--seed', values.seed, 0),
        log: (line) => io.err(`${line}\n`),
      });
      text(`${formatSummary(result)}\n${remoteSetupLine(result)}\n`);
      for (const w of result.warnings) io.err(`tensortune benchmark: warning: ${w}\n`);
      if (values.json) {
        const { summary: _summary, ...rest } = result;
        io.out(`${JSON.stringify(rest)}\n`);
      }
      return 0;
    }
    if (values.compare !== undefined) {
      oneOf('--compare', values.compare, ['onnxruntime'] as const, 'onnxruntime');
      if (values.input || values['save-outputs']) throw new UserError('--compare uses its own seeded input; drop --input and --save-outputs');
      const compared = runnableManifest(positionals[0], 'benchmark --compare', values['max-memory']);
      const threads = positiveInt('--threads', values.threads, 1);
      const report = await compareWithOnnxRuntime({
        modelDir: positionals[0], onnx: values.onnx, threads,
        rounds: positiveInt('--rounds', values.rounds, 5), repeat: positiveInt('--repeat', values.repeat, 3),
        number: optionalInt('--number', values.number),
        minRepeatMs: nonNegativeInt('--min-repeat-ms', values['min-repeat-ms'], BENCH_DEFAULTS.minRepeatMs),
        seed: nonNegativeInt('--seed', values.seed, 0), log: (line) => io.err(`${line}\n`),
      });
      text(`${formatCompareReport(report)}\n`);
      for (const w of recordsThreadsWarning(compared, threads, compileAt(threads))) io.err(`tensortune benchmark: warning: ${w}\n`);
      if (values.json) io.out(`${JSON.stringify(report)}\n`);
      return 0;
    }
    if (values.onnx !== undefined || values.rounds !== undefined) throw new UserError('--onnx and --rounds go with --compare onnxruntime');
    const manifest = runnableManifest(positionals[0], 'benchmark', values['max-memory']);
    if (values.profile && isGpu(parseTarget(manifest.target, `${path.join(positionals[0], 'manifest.json')} target`))) {
      throw new UserError(`--profile: per-kernel profiles are for CPU models; ${positionals[0]} was compiled for "${manifest.target}"`);
    }
    const files = manifestFiles(path.resolve(positionals[0]), manifest);
    const inputs = inputFiles(values.input ?? []);
    const result = await runBench({
      model: files.library, params: files.params,
      repeat: positiveInt('--repeat', values.repeat, BENCH_DEFAULTS.repeat), number: optionalInt('--number', values.number),
      minRepeatMs: nonNegativeInt('--min-repeat-ms', values['min-repeat-ms'], BENCH_DEFAULTS.minRepeatMs),
      threads: optionalInt('--threads', values.threads),
      seed: nonNegativeInt('--seed', values.seed, 0), inputs,
      saveOutputs: values['save-outputs'] ? path.resolve(values['save-outputs']) : undefined,
      profile: values.profile,
    });
    result.warnings.push(...recordsThreadsWarning(manifest, result.threads, compileAt(result.threads)));
    text(`${formatSummary(result)}\n${benchSetupLine(result)}\n`);
    for (const w of result.warnings) io.err(`tensortune benchmark: warning: ${w}\n`);
    if (result.profile) {
      const peak = await measurePeakGflops(result.threads, parseTarget(manifest.target));
      text(`${formatKernelProfile(kernelProfile(result.profile, manifest, peak, path.join(positionals[0], 'manifest.json')), peak, result.threads).join('\n')}\n`);
    }
    if (values.json) {
      const { summary: _summary, ...rest } = result;
      io.out(`${JSON.stringify(rest)}\n`);
    }
    return 0;
  },
};
