// `tensortune tasks <network> [--layout NHWC|NCHW] [--batch N] [--image-size N] [--json]`: the tuning
// tasks of a builtin network, printed as TVM's extract_tasks tutorials print them.

import { UserError } from '../errors';
import { loadModel } from '../frontend/load';
import { NETWORK_NAMES, networkSuggestion } from '../frontend/networks';
import { extractTasks, type Task } from '../graph/extract';
import { MODEL_FLAGS, modelFlags, modelFlagsUsage, parseFlags, type CliIo, type Command } from './command';

const USAGE = `Usage: tensortune tasks <network|model.onnx> [--layout NHWC|NCHW] [--batch N] [--image-size N] [--json]

List the tuning tasks of a builtin network or an ONNX model: its fused subgraphs that contain a
reduction, one per distinct workload key, with their weights (occurrences), and how many
Winograd alternatives CPU targets tune besides them (docs/tuning.md, "Terms"). These are the
tasks of CPU targets: where such a model runs its batch one sample at a time, they are one
sample's (docs/tuning.md, "Batches").

Options:
${modelFlagsUsage('NHWC')}  --json              print {"network", "layout", "batch", "tasks": [{"key", "desc",
                      "weight", "flops", "shapes"}]} instead of text
  -h, --help          show this help

Networks: ${NETWORK_NAMES.join(', ')}, or a model.onnx file (docs/onnx-operators.md)
`;

export interface TasksReport {
  network: string;
  layout: string;
  batch: number;
  tasks: { key: string; desc: string; weight: number; flops: number; shapes: number[][] }[];
}

export function tasksReport(network: string, layout: string, batch: number, tasks: readonly Task[]): TasksReport {
  return {
    network, layout, batch,
    tasks: tasks.map(({ key, desc, weight, flops, shapes }) => ({ key, desc, weight, flops, shapes })),
  };
}

/**
 * TVM's format: a header and the DAG per task, then a summary table and the totals; with
 * `alternatives` (those CPU targets tune too), their count, in the words of tune and compile.
 */
export function formatTasks(tasks: readonly Task[], alternatives = 0): string {
  const parts = tasks.map((t, i) => `========== Task ${i}  (workload key: ${t.key}) ==========\n${t.dag.print()}`);
  const rows = tasks.map((t, i) => `${String(i).padStart(4)}  ${String(t.weight).padStart(6)}  ${(t.flops / 1e6).toFixed(2).padStart(10)}  ${t.desc}`);
  const total = tasks.reduce((a, t) => a + t.weight, 0);
  return [
    ...parts,
    `Task  Weight     MFLOPs  Description`,
    ...rows,
    '',
    `${tasks.length} tasks, sum of weights ${total}` +
      (alternatives > 0 ? `; on CPU targets tune also searches ${alternatives} Winograd alternative${alternatives === 1 ? '' : 's'} of them (not listed: compile runs each in its task's place where faster; docs/tuning.md, "Terms")` : ''),
    '',
  ].join('\n');
}

export const tasksCommand: Command = {
  name: 'tasks',
  summary: 'list the tuning tasks (fused subgraphs + weights) of a network or ONNX model',
  run(argv: readonly string[], io: CliIo): number {
    const { values, positionals } = parseFlags(argv, {
      ...MODEL_FLAGS,
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    });
    if (values.help) {
      io.out(USAGE);
      return 0;
    }
    if (positionals.length !== 1) {
      throw new UserError(positionals.length === 0
        ? `missing <network> (expected one of: ${NETWORK_NAMES.join(', ')})`
        : `expected one <network>, got ${positionals.length}: ${positionals.join(' ')}`);
    }
    const network = positionals[0];
    if (!NETWORK_NAMES.includes(network) && !network.endsWith('.onnx')) {
      throw new UserError(`unknown network '${network}' (expected a model.onnx file or one of: ${NETWORK_NAMES.join(', ')})${networkSuggestion(network)}`);
    }
    const { layout, batch, imageSize, inputShapes } = modelFlags(values, [network]);
    const { graph } = loadModel({ model: network, layout, batch, imageSize, inputShapes, weights: 'zeros' });
    const tasks = extractTasks(graph, { perSample: true });
    const alternatives = extractTasks(graph, { winograd: true, perSample: true }).filter((t) => t.alternative).length;
    io.out(values.json ? `${JSON.stringify(tasksReport(network, layout, batch, tasks))}\n` : formatTasks(tasks, alternatives));
    return 0;
  },
};
