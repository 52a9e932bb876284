// The tuning figures of one network from files: its tasks (the ones tune searches, Winograd
// alternatives included on CPU targets, so the workload keys match the records) and every
// record in the given record files or store folders, for one target string and machine
// fingerprint (and one thread count: the one given, else that of the newest record).

import { loadModel, type ModelSpec } from '../frontend/load';
import type { RecordMatch } from '../records/best';
import { readRecordFiles } from '../records/log';
import { recordFilesOf } from '../records/store';
import { tuningTasks } from '../graph/extract';
import { reportMatch, tuningFigures, type TuningFigures } from './tuning-data';

export interface NetworkFiguresOptions {
  /** The name the report shows. */
  network: string;
  spec: ModelSpec;
  /** Record logs, or folders whose `*.jsonl` are logs (a store); missing paths are skipped. */
  records: readonly string[];
  /** Target, machine, and the thread count where the report is of one (tuning-data.ts). */
  match: RecordMatch;
  /** Where warnings go: one per file with broken lines, and one when the records' thread counts differ and none was given (reportMatch). */
  warn?: (message: string) => void;
}

export async function networkTuningFigures(o: NetworkFiguresOptions): Promise<TuningFigures> {
  // Weights do not change the tasks' workload keys; zeros spare making random ones.
  const { graph } = loadModel({ ...o.spec, weights: 'zeros' });
  const tasks = tuningTasks(graph, o.match.target);
  const entries = await readRecordFiles(await recordFilesOf(o.records), { warn: o.warn });
  const { match, warning } = reportMatch(entries, tasks, o.match);
  if (warning !== undefined) o.warn?.(warning);
  return tuningFigures({ network: o.network, tasks, entries, match });
}
