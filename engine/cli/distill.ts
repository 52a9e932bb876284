// `tensortune distill IN... [--out OUT] [--network NAME|model.onnx]...`: keep the best
// verified record per (workload key, target, hardware fingerprint, thread count) of one or more logs, as
// TVM's `measure_record --mode distill`, passing over records whose steps no longer apply.

import path from 'node:path';
import { UserError } from '../errors';
import { isOnnxPath, loadModel } from '../frontend/load';
import { NETWORK_NAMES } from '../frontend/networks';
import { extractTasks } from '../graph/extract';
import type { ComputeDAG } from '../ir/dag';
import { distillFiles, type DistillResult } from '../records/distill';
import { aliased, MODEL_FLAGS, modelFlags, modelFlagsUsage, parseFlags, type CliIo, type Command } from './command';

const USAGE = `Usage: tensortune distill IN.jsonl... [--out OUT.jsonl] [--network NAME|model.onnx]...

Keep only the fastest verified record of each task (workload key, target, hardware
fingerprint, and the thread count a CPU record was timed at) of the record logs IN..., and write them to OUT (default: IN with the
extension replaced by .best.jsonl). Records already in OUT take part, so distilling
new logs into an existing file keeps the best of all. OUT may be a log that tune is
appending to: every log is read under its lock, and nothing appended is lost.

A record is kept only if its steps still apply: they must be well-formed, and, for the
tasks of the networks named with --network, replay and lower on the task (as compile
checks them). A faster record that does not apply is passed over for the next one, with
one warning. Records of tasks not in a named network are only checked for well-formed
steps; the summary says how many. Broken lines are skipped with one warning per file.

Options:
  --out FILE          the distilled log (tvmc's --output/-o is accepted)
  --network N         a builtin network or model.onnx whose tasks the records are replayed
                      on (repeatable), built with the flags below as it was tuned
${modelFlagsUsage('NHWC')}  -h, --help          show this help

Networks: ${NETWORK_NAMES.join(', ')}
`;

/** `runs/mobilenet.jsonl` -> `runs/mobilenet.best.jsonl`. */
export function defaultDistillOutput(input: string): string {
  const ext = path.extname(input);
  return path.join(path.dirname(input), `${path.basename(input, ext)}.best${ext || '.jsonl'}`);
}

/** What the summary line says about replaying the kept records. */
function replayNote(result: DistillResult, networks: readonly string[]): string {
  if (result.kept === 0) return '';
  if (networks.length === 0) return '; steps checked, not replayed (name the network with --network to replay them on its tasks)';
  const names = networks.join(', ');
  if (result.notReplayed === 0) return `; all replayed on their task of ${names}`;
  return `; ${result.kept - result.notReplayed} replayed on their task of ${names}; ${result.notReplayed} of tasks not in ${networks.length > 1 ? 'them' : 'it'}: steps checked, not replayed`;
}

export const distillCommand: Command = {
  name: 'distill',
  summary: 'keep the best record per task of record logs',
  async run(argv: readonly string[], io: CliIo): Promise<number> {
    const { values, positionals } = parseFlags(argv, {
      out: { type: 'string' }, output: { type: 'string', short: 'o' }, network: { type: 'string', multiple: true }, ...MODEL_FLAGS,
      help: { type: 'boolean', short: 'h' },
    });
    if (values.help) { io.out(USAGE); return 0; }
    if (positionals.length === 0) throw new UserError('expected at least one record log to distill (tensortune distill IN.jsonl --out OUT.jsonl)');
    const networks = values.network ?? [];
    for (const n of networks) {
      if (!NETWORK_NAMES.includes(n) && !isOnnxPath(n)) {
        throw new UserError(`unknown --network '${n}' (expected a model.onnx file or one of: ${NETWORK_NAMES.join(', ')})`);
      }
    }
    const { layout, batch, imageSize, inputShapes } = modelFlags(values, networks);
    // Loaded before any lock is taken: tasks are extracted as tune extracts them (the weights do not change a key).
    const dags = new Map<string, ComputeDAG>();
    for (const model of networks) {
      for (const task of extractTasks(loadModel({ model, layout, batch, imageSize, inputShapes, weights: 'zeros' }).graph)) dags.set(task.key, task.dag);
    }
    const out = aliased(values, 'out', 'output') ?? defaultDistillOutput(positionals[0]);
    const result = await distillFiles(positionals, out, { dags: networks.length > 0 ? dags : undefined, warn: (m) => io.err(`tensortune distill: warning: ${m}\n`) });
    io.out(`kept ${result.kept} of ${result.read} record(s) (best per task, target, machine and thread count) in ${result.out}${replayNote(result, networks)}\n`);
    return 0;
  },
};
