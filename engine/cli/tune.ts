// `tensortune tune <network|model.onnx> --target T --records FILE [budgets] [search] [measurement]`:
// tune a network's tasks and append every measurement to the record log. Re-running with
// the same log resumes. Ctrl-C stops after the batch being measured (the log is intact)
// and exits 130; a second Ctrl-C quits at once (the log still parses: each line is one
// write under a lock, so at most the batch in flight is lost).

import path from 'node:path';
import { reportInternal } from '../compile/internal-error';
import { UserError } from '../errors';
import { loadModel, type ModelSpec } from '../frontend/load';
import { NETWORK_NAMES } from '../frontend/networks';
import type { Task } from '../graph/extract';
import { outputWidth, PROGRESS_EVERY_S, ProgressReporter } from '../search/progress';
import { DEFAULT_WARMUP_TRIALS } from '../search/task-scheduler';
import { cliMemoryLimit } from '../compile/memory-plan';
import { CONFIRM_TOP, DEFAULT_BATCH_SIZE, NOTHING_TO_TUNE, nothingToTuneLine, POLICY_NAMES, tuneNetwork, tuneTasks } from '../app/tune';
import { tuningTasks } from '../graph/extract';
import type { MeasureOptions } from '../search/types';
import { openRemoteDevices, type OpenedDevices } from '../remote/open';
import { isGpu, parseTarget } from '../target';
import { aliased, MODEL_FLAGS, modelFlags, modelFlagsUsage, oneOf, optionalInt, optionalNonNegativeInt, parseFlags, positiveNumber, type CliIo, type Command } from './command';

const USAGE = `Usage: tensortune tune <network|model.onnx> --target "llvm -mcpu=native" --records FILE [options]
       (tvmc's spellings are accepted: --output/-o FILE for --records, --tuning-records FILE for --read-records)

Search schedules for every task of a builtin network or an ONNX model (TVM's
auto-scheduler: sketches, annotation, evolutionary search with a learned cost model,
verified measurements) and append one JSON line per measured candidate to the record log.
Running it again with the same log continues where it stopped: spent tasks are skipped,
measured schedules are not measured again, and the cost model starts from the log. Each
round prints the run's progress and an ETA. Ctrl-C stops after the batch in flight (exit
code 130); the log stays intact.

What and where:
  --target T            the target string to tune for (default "llvm -mcpu=native": this
                        machine's CPU): -mcpu=<cpu> (e.g. znver4), -mattr=+avx2,+fma; or "opencl",
                        "opencl -device=mali" (this machine's OpenCL device: 'tensortune
                        fingerprint --target opencl' names it); or "cuda -arch=sm_80" (this
                        machine's NVIDIA GPU); measured here, so the machine must be able to
                        run what it names
  --host H              GPU targets: the host's target string (default "llvm"). Tune
                        measures here whatever it is (a cross host is for compile)
  --runner CMD          measure on a device through this command template, which must
                        contain {command}: "ssh board {command}", "qemu-aarch64 -L <sysroot>
                        {command}" (repeatable: a pool of devices of one kind measuring in
                        parallel). The worker is built with the target's -mtriple compiler and
                        installed through the runner; records are keyed by the device's
                        fingerprint. Under an emulator, timings are not performance figures
  --records FILE        the record log (JSON lines) every measurement is appended to and the
                        run resumes from (required); 'compile --records FILE' reads it.
                        Records apply to their target string and this kind of machine only

Budgets (any combination; the first reached stops; resumed trials count):
  --trials N            total trials over all tasks (default 800 per task when no budget is given)
  --trials-per-task N   at most N trials per task
  --time-limit S        stop starting new rounds after S seconds
  --early-stopping N    stop a task after N trials without a better latency

Search:
  --policy P            evolutionary (default, cost-model guided), ga (genetic, no model), random or grid
  --measures-per-round N  candidates measured per round (default ${DEFAULT_BATCH_SIZE}); TVM's num_measures_per_round,
                        formerly --batch-size (not to be confused with --batch, the model's batch)
  --warmup-trials N     candidates in each task's first round (default ${DEFAULT_WARMUP_TRIALS}, or the
                        whole round when rounds are smaller; TVM: a whole round); the
                        rounds after it go to the tasks that weigh most in the network
  --seed S              seed of the search and of the measured inputs (default 0)
  --confirm N           at the end of a run, time each task's N fastest schedules (and its
                        default) together twice more, in both orders (default ${CONFIRM_TOP}; 0: none).
                        Compile picks among the schedules so confirmed, by those timings,
                        so a lucky measurement or a slow phase of the machine does not
                        decide
  --network-pass        after the confirmation pass of a whole network, compile the network
                        once per confirmed schedule of its tasks (and the defaults) and
                        profile each, so compile ranks each task's schedules by their time
                        where they run, inside the network (CPU targets measured here; about
                        a minute for mobilenet, plus the compiles). Off by default
  --read-records FILE   another log to resume from without writing to it (repeatable)
  --workload KEY        tune only this task (repeatable): its workload key as 'tensortune tasks
                        --json' prints it, or the hash that starts it (when no other task's key
                        starts with it); the task scheduler shares the budget among these
                        tasks only (as the Nx tune--<k> shards run)

Measurement (as TVM's LocalRunner):
  --threads N           threads of the measured kernels (default 1)
  --number N            runs per repeat (default 1)
  --repeat N            timed repeats (default 3)
  --min-repeat-ms MS    grow --number until one repeat lasts this long (default 10)
  --timeout S           per candidate: build and run limit in seconds (default 10)
  --flush, --no-flush   evict the task's weights from the caches before each run, as a
                        layer of a network reads them cold, or not (TVM's
                        enable_cpu_cache_flush; default: on for CPU targets, where it makes
                        the estimated total track the network's time); a task without
                        weights (attention's products, softmax, pooling) always runs warm
  --build-jobs N        parallel compiler processes (default: number of cores)
  --max-memory SIZE     refuse, before measuring, a task whose tensors need more memory
                        than SIZE (default 4GiB; e.g. 16GiB)

Model (compile, tasks and distill take the same flags; give them the values you tuned with):
${modelFlagsUsage('NHWC', 24)}
Output:
  --json                one JSON line per event (start, skip, round, done) instead of text
  --verbose             print progress on CI too (by default CI gets only the final table)
  -h, --help            show this help

Networks: ${NETWORK_NAMES.join(', ')}, or a model.onnx file (docs/onnx-operators.md)
The table printed per pass and its Weight and Estimated total latency: docs/tuning.md
`;

/**
 * The tasks of a model that `--workload` names: each by its workload key, or by the hash
 * that starts the key. A name that matches no task, or several, is refused in one line.
 */
export function selectWorkloads(model: ModelSpec, target: string, names: readonly string[]): { name: string; tasks: Task[] } {
  const loaded = loadModel(model);
  const tasks = tuningTasks(loaded.graph, target);
  const hashOf = (key: string): string => (/^\["([0-9a-f]+)"/.exec(key) ?? [])[1] ?? key;
  const picked = new Set<Task>();
  for (const name of names) {
    const hits = tasks.filter((t) => t.key === name || hashOf(t.key) === name);
    if (hits.length !== 1) {
      throw new UserError(`--workload ${name}: ${hits.length === 0 ? 'no task' : `${hits.length} tasks`} of ${model.model} ha${hits.length === 0 ? 's' : 've'} this workload key or hash ` +
        `(${tasks.length} tasks; \`tensortune tasks ${model.model} --json\` lists their keys, with the same model flags, all but the Winograd alternatives CPU targets add)`);
    }
    picked.add(hits[0]);
  }
  return { name: loaded.name, tasks: tasks.filter((t) => picked.has(t)) };
}

/**
 * The store log to name instead when `file` is a tune output of an Nx workspace's record
 * store (`<store>/nx/<network>/<target>.<budget>[.shard-<k>].jsonl`, plugin/resolve.ts):
 * `nx tune` writes such a file whole and an Nx cache restore replaces it, so what the CLI
 * appended there would be lost. Undefined for any other path.
 */
export function nxTuneOutputLog(file: string): string | undefined {
  const parts = path.resolve(file).split(path.sep);
  const [name, network, nx] = [parts.at(-1)!, parts.at(-2), parts.at(-3)];
  if (nx !== 'nx' || !network || !/^[^.]+\.[^.]+(\.shard-[^.]+)?\.jsonl$/.test(name)) return undefined;
  return path.join(parts.slice(0, -3).join(path.sep) || path.sep, `${network}.${name.split('.')[0]}.jsonl`);
}

/** A path as a message shows it: relative to the working directory when inside it. */
function shownPath(p: string): string {
  const rel = path.relative(process.cwd(), p);
  return rel === '' || rel.startsWith('..') || path.isAbsolute(rel) ? p : rel;
}

export const tuneCommand: Command = {
  name: 'tune',
  summary: 'search schedules for a network\'s tasks and append them to a record log',
  async run(argv: readonly string[], io: CliIo): Promise<number> {
    const { values, positionals } = parseFlags(argv, {
      target: { type: 'string' }, host: { type: 'string' }, records: { type: 'string' }, runner: { type: 'string', multiple: true }, 'read-records': { type: 'string', multiple: true },
      trials: { type: 'string' }, 'trials-per-task': { type: 'string' }, 'time-limit': { type: 'string' },
      'early-stopping': { type: 'string' }, 'warmup-trials': { type: 'string' }, confirm: { type: 'string' }, policy: { type: 'string' }, 'measures-per-round': { type: 'string' }, 'batch-size': { type: 'string' },
      seed: { type: 'string' }, output: { type: 'string', short: 'o' }, 'tuning-records': { type: 'string', multiple: true },
      threads: { type: 'string' }, number: { type: 'string' }, repeat: { type: 'string' }, 'min-repeat-ms': { type: 'string' },
      timeout: { type: 'string' }, flush: { type: 'boolean' }, 'no-flush': { type: 'boolean' }, 'build-jobs': { type: 'string' }, 'max-memory': { type: 'string' },
      'network-pass': { type: 'boolean' }, workload: { type: 'string', multiple: true },
      ...MODEL_FLAGS, json: { type: 'boolean' }, verbose: { type: 'boolean' }, help: { type: 'boolean', short: 'h' },
    });
    if (values.help) { io.out(USAGE); return 0; }
    if (positionals.length !== 1) {
      throw new UserError(`expected one <network> or model file, got ${positionals.length} (networks: ${NETWORK_NAMES.join(', ')})`);
    }
    const records = aliased(values, 'records', 'output');
    if (!records) throw new UserError('--records FILE is required (the JSON-lines log measurements are appended to)');
    const storeLog = nxTuneOutputLog(records);
    if (storeLog) {
      throw new UserError(`--records ${records}: this is an Nx tune output, which only its \`nx tune\` target writes (whole; a cache restore replaces it and drops what was appended): ` +
        `append to the store log ${shownPath(storeLog)} instead, or read it with --read-records`);
    }
    const readRecords = [...values['read-records'] ?? [], ...values['tuning-records'] ?? []];
    const model = { model: positionals[0], ...modelFlags(values, positionals) };
    const target = values.target ?? 'llvm -mcpu=native';
    const parsedTarget = parseTarget(target, '--target', values.host);
    const measure: Partial<MeasureOptions> = {};
    const threads = optionalInt('--threads', values.threads);
    if (threads !== undefined) measure.threads = threads;
    const number = optionalInt('--number', values.number);
    if (number !== undefined) measure.number = number;
    const repeat = optionalInt('--repeat', values.repeat);
    if (repeat !== undefined) measure.repeat = repeat;
    const minRepeatMs = optionalNonNegativeInt('--min-repeat-ms', values['min-repeat-ms']);
    if (minRepeatMs !== undefined) measure.minRepeatMs = minRepeatMs;
    const timeoutS = positiveNumber('--timeout', values.timeout);
    if (timeoutS !== undefined) measure.timeoutMs = Math.round(timeoutS * 1000);
    const buildJobs = optionalInt('--build-jobs', values['build-jobs']);
    if (buildJobs !== undefined) measure.buildJobs = buildJobs;
    if (values.flush && values['no-flush']) throw new UserError('--flush and --no-flush: give one of them');
    if (values.flush) measure.flush = true;
    if (values['no-flush']) measure.flush = false;

    const budget = {
      trials: optionalInt('--trials', values.trials),
      trialsPerTask: optionalInt('--trials-per-task', values['trials-per-task']),
      timeLimitS: positiveNumber('--time-limit', values['time-limit']),
    };
    const json = values.json === true;
    const quiet = !json && values.verbose !== true && Boolean(process.env.CI) && !process.stdout.isTTY;
    const width = outputWidth(process.stdout);
    const reporter = new ProgressReporter({
      out: io.out, err: io.err, json, quiet, bar: !json && process.stderr.isTTY === true, budget, width,
    });

    const controller = new AbortController();
    let interrupts = 0;
    const onSigint = (): void => {
      interrupts += 1;
      if (interrupts > 1) process.exit(130);
      io.err('\ntensortune tune: stopping after the batch being measured (Ctrl-C again to quit now)\n');
      controller.abort();
    };
    const memoryLimit = cliMemoryLimit(values['max-memory']);
    const workloads = values.workload ?? [];
    if (values['network-pass']) {
      // It compiles and profiles the whole network here: not for one task, another device or a GPU.
      const refuse = workloads.length > 0 ? '--workload (it times the whole network)' : values.runner?.length ? '--runner (it profiles the network on this machine)'
        : isGpu(parsedTarget) ? `a GPU target ("${parsedTarget.text}"; it profiles CPU kernels)` : undefined;
      if (refuse) throw new UserError(`--network-pass cannot be combined with ${refuse}`);
      if (optionalNonNegativeInt('--confirm', values.confirm) === 0) throw new UserError('--network-pass times the schedules the confirmation pass ranks: it cannot be combined with --confirm 0');
    }
    const selected = workloads.length > 0 ? selectWorkloads(model, target, workloads) : undefined;
    process.on('SIGINT', onSigint);
    let device: OpenedDevices | undefined;
    try {
      if (values.runner?.length) {
        device = await openRemoteDevices(values.runner, parsedTarget, '--runner', { log: (line) => io.err(`${line}\n`) });
        io.err(`measuring on ${device.infos.length} device(s) through --runner: ${device.infos.map((i) => i.machine).join(', ')}; fingerprint ${device.fingerprint}\n`);
      }
      const tune = selected ? (o: Parameters<typeof tuneNetwork>[0]) => tuneTasks(selected.name, selected.tasks, o) : tuneNetwork;
      const result = await tune({
        device,
        model, target, host: values.host, records, readRecords: readRecords.length ? readRecords : undefined,
        ...budget,
        earlyStopping: optionalInt('--early-stopping', values['early-stopping']),
        batchSize: optionalInt(values['batch-size'] === undefined ? '--measures-per-round' : '--batch-size', aliased(values, 'measures-per-round', 'batch-size')),
        warmupTrials: optionalInt('--warmup-trials', values['warmup-trials']),
        policy: oneOf('--policy', values.policy, POLICY_NAMES, 'evolutionary'),
        seed: optionalNonNegativeInt('--seed', values.seed),
        confirm: optionalNonNegativeInt('--confirm', values.confirm),
        networkPass: values['network-pass'] === true ? true : undefined,
        measure, memoryLimit, log: reporter.log, onEvent: reporter.onEvent, signal: controller.signal,
        // Without a terminal there is no bar: a progress line at a steady pace instead.
        progressEveryS: process.stdout.isTTY ? undefined : PROGRESS_EVERY_S, width,
      }).catch((e: unknown) => reportInternal('tune', `tuning ${positionals[0]}`, e, io.err));
      // A bug of tensortune: said in one line naming the task (reportInternal), exit code 70.
      if (typeof result === 'number') return result;
      if (result.reason === NOTHING_TO_TUNE) {
        // One line, said by the tune's log unless that is silent (CI); no empty table or summary.
        if (!json && !reporter.log) io.out(`${nothingToTuneLine(selected?.name ?? loadModel(model).name)}\n`);
        return 0;
      }
      reporter.finish(result);
      return result.reason === 'aborted' ? 130 : 0;
    } finally {
      await device?.close();
      process.off('SIGINT', onSigint);
    }
  },
};
