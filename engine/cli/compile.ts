// `tensortune compile <network> --target T --out DIR [--records FILE]... [--strict]`: compile
// a builtin network for a CPU or OpenCL target, with the best tuned record of each task where
// the record logs have one and default schedules elsewhere.

import { reportInternal } from '../compile/internal-error';
import { cliMemoryLimit } from '../compile/memory-plan';
import { compileNetwork } from '../app/compile';
import { asUserError, UserError } from '../errors';
import { NETWORK_NAMES } from '../frontend/networks';
import { parseTarget } from '../target';
import { remoteFingerprint } from '../remote/open';
import { describeKernels, kernelCounts, taskKeys } from './counts';
import { aliased, MODEL_FLAGS, modelFlags, modelFlagsUsage, optionalInt, parseFlags, positiveNumber, type CliIo, type Command } from './command';

const USAGE = `Usage: tensortune compile <network|model.onnx> --target "llvm -mcpu=native" [--host H] --out DIR [--records FILE]... [--threads N] [--strict]
                          [--layout NHWC|NCHW] [--batch N] [--image-size N]
       (tvmc's spellings are accepted: --output/-o DIR for --out, --tuning-records FILE for --records)

Compile a builtin network or an ONNX model into DIR/model.so (kernels + entry point),
DIR/params.bin and DIR/manifest.json (docs/compiled-model.md: what they are, how an
application loads them). Kernels are compiled into an object cache keyed by their source, so
recompiling an unchanged model compiles nothing, and a changed record recompiles one kernel.
DIR is replaced as a whole, so a reader sees the old model or the new one, never a mix; it
must be compile's own folder (one holding other files is refused).

For an OpenCL target, model.so is the host library (built for --host, cross-compiled for
"llvm -mtriple=aarch64-linux-gnu") with the OpenCL source of every kernel embedded; the
OpenCL driver builds it when the model is initialised on the device. DIR/kernels.cl holds
a copy of that source for reading. For a CUDA target ("cuda -arch=sm_80"), nvcc compiles
every kernel into one cubin for that architecture here (no GPU needed), embedded in
model.so; DIR/kernels.cu and DIR/kernels.sm_80.cubin are copies for reading.

With --records, each task uses the fastest verified record measured for this target on
this kind of machine (same hardware fingerprint); tasks without one keep their default
schedule, and one summary says which and their share of the estimated latency. On CPU
targets a 3x3 stride-1 conv runs as Winograd where its Winograd record beats its direct
one, or where only Winograd has a record; without a Winograd record, by TVM's rule:
Winograd when 64 < output channels < 512 (with --strict, a conv with a direct record stays
direct). Compile lists each Winograd layer and why.

Records say how many threads timed them, and timings at different counts do not compare.
With --threads N, each task takes the best record measured at N threads, and a task with
none the best at another count (one warning names them); without it, the best at the count
of each task's newest record, with a warning when the chosen records mix counts.

Options:
  --target T          target string (default "llvm -mcpu=native"); -mcpu, -mattr, -mtriple; or
                      "opencl", "opencl -device=mali" with -max_threads_per_block=N and the other
                      hardware parameters (docs/tuning.md); or "cuda -arch=sm_XX"
  --host H            GPU targets: the host's target string (default "llvm": this machine);
                      "llvm -mtriple=aarch64-linux-gnu" cross-compiles the host library
  --out DIR           output directory (required)
  --records FILE      a tuning record log (JSON lines); repeat to read several
  --threads N         CPU targets: rank the records at N threads, the count the model will
                      run at (default: each task's newest count)
  --strict            fail, naming them, if any task has no usable record
${modelFlagsUsage('NHWC')}  --cache DIR         object cache (default $TENSORTUNE_CACHE_DIR or node_modules/.cache/tensortune)
  --runner CMD        the records to apply are those tuned on the device this runner command
                      reaches ("ssh board {command}"; repeatable, as tune's): compile asks it its
                      fingerprint, and runs nothing there
  --max-memory SIZE   refuse a model that needs more memory than SIZE to run (its inputs,
                      outputs, weights and workspace; default 4GiB), e.g. 16GiB, 512MiB
  --timeout S         time limit of each compiler call in seconds (default 120); a tuned kernel
                      that fails or runs past it falls back to its default schedule, with a warning
  -h, --help          show this help

Networks: ${NETWORK_NAMES.join(', ')}, or a model.onnx file (docs/onnx-operators.md)
`;

export const compileCommand: Command = {
  name: 'compile',
  summary: 'compile a network into a shared library, params and manifest',
  async run(argv: readonly string[], io: CliIo): Promise<number> {
    const { values, positionals } = parseFlags(argv, {
      target: { type: 'string' }, host: { type: 'string' }, out: { type: 'string' }, output: { type: 'string', short: 'o' }, ...MODEL_FLAGS,
      cache: { type: 'string' }, records: { type: 'string', multiple: true }, 'tuning-records': { type: 'string', multiple: true }, strict: { type: 'boolean' }, timeout: { type: 'string' }, threads: { type: 'string' },
      runner: { type: 'string', multiple: true }, 'max-memory': { type: 'string' }, help: { type: 'boolean', short: 'h' },
    });
    if (values.help) { io.out(USAGE); return 0; }
    if (positionals.length !== 1) throw new UserError(`expected one network name (one of: ${NETWORK_NAMES.join(', ')}) or model.onnx file`);
    const out = aliased(values, 'out', 'output');
    if (!out) throw new UserError('--out DIR is required (where model.so, params.bin and manifest.json go)');
    const target = values.target ?? 'llvm -mcpu=native';
    const parsedTarget = parseTarget(target, '--target', values.host);
    const model = modelFlags(values, positionals);
    const fingerprint = values.runner?.length ? await remoteFingerprint(values.runner, parsedTarget, '--runner', { log: (line) => io.err(`${line}\n`) }) : undefined;
    const records = [...values.records ?? [], ...values['tuning-records'] ?? []];
    const timeoutS = positiveNumber('--timeout', values.timeout);
    const threads = optionalInt('--threads', values.threads);
    const memoryLimit = cliMemoryLimit(values['max-memory']);
    const started = Date.now();
    let result: Awaited<ReturnType<typeof compileNetwork>>;
    try {
      result = await compileNetwork({
        model: positionals[0], ...model, target, host: values.host, outDir: out, fingerprint,
        cacheDir: values.cache, records: records.length ? records : undefined, threads, strict: values.strict,
        timeoutMs: timeoutS === undefined ? undefined : Math.round(timeoutS * 1000), memoryLimit,
        log: (line) => io.out(`${line}\n`), warn: (message) => io.err(`tensortune compile: warning: ${message}\n`),
      }).catch((e: unknown) => {
        // A failed write names no path (a full disk): say where compile was writing.
        if ((e as NodeJS.ErrnoException).path !== undefined) throw e;
        throw asUserError(e, `cannot write the compiled model to ${out}${values.cache ? ` or the object cache ${values.cache}` : ''}`) ?? e;
      });
    } catch (e) {
      // A bug of tensortune: one line naming the kernel it was compiling, not a stack.
      return reportInternal('compile', `compiling ${positionals[0]}`, e, io.err);
    }
    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    if (result.cuda) {
      io.out(`compiled ${result.kernels.length} CUDA kernel program(s) into one cubin (${result.cuda.launches} launches${result.cuda.spilling ? `, ${result.cuda.spilling} kernel(s) spilling registers` : ''}) in ${seconds} s\n`);
      io.out(`wrote ${result.library}, ${result.params}, ${result.manifest}, ${result.cuda.source}, ${result.cuda.cubin}\n`);
    } else if (result.opencl) {
      // The OpenCL driver builds the kernels when the model's tt_init runs, on the device.
      io.out(`rendered ${result.kernels.length} OpenCL kernel program(s), ${result.opencl.launches} launches, in ${seconds} s\n`);
      io.out(`wrote ${result.library}, ${result.params}, ${result.manifest}, ${result.opencl.source}\n`);
    } else {
      io.out(`compiled ${result.compiled} kernel(s), reused ${result.reused}, in ${seconds} s\n`);
      io.out(`the model's ${describeKernels(kernelCounts(result.kernels, taskKeys({ model: positionals[0], ...model }, target)))}\n`);
      io.out(`wrote ${result.library}, ${result.params}, ${result.manifest}\n`);
    }
    return 0;
  },
};
