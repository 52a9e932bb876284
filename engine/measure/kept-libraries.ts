// Which candidate libraries a measurer keeps once it has timed them. Each task's fastest
// verified candidates stay (KEEP_FASTEST_LIBRARIES); every other library is removed as soon
// as it is timed. Tune's confirmation pass times each task's fastest schedules again (the
// CONFIRM_TOP best by mean and by rank, and the default, in two orders), and the builder
// reuses a library it built while the library is still there (Builder.build's memo), so the
// pass runs kept libraries instead of lowering and compiling those schedules twice more.
// When every library was removed once timed, the pass compiled each of them again: resnet-18
// at 64x64, 2 trials per task, spent 77 of its tune's 141 s there.

import type { ComputeDAG } from '../ir/dag';
import type { MeasureOutcome } from '../records/outcome';
import type { BuiltCandidate } from './builder';

/** Libraries kept per task: a library is tens of kilobytes, so a tune's work folder holds at most this many per task. */
export const KEEP_FASTEST_LIBRARIES = 8;

export class KeptLibraries {
  /** Per task, its fastest verified candidates' libraries, fastest first. */
  private readonly kept = new WeakMap<ComputeDAG, { lib: string; ms: number }[]>();
  /** How many tasks keep each library (a library is named by its source's hash). */
  private readonly keptBy = new Map<string, number>();

  constructor(private readonly perTask = KEEP_FASTEST_LIBRARIES) {}

  /** Whether some task keeps this library. */
  holds(lib: string): boolean {
    return this.keptBy.has(lib);
  }

  /**
   * Takes a timed batch of one task: its verified candidates join the task's kept libraries.
   * Returns the libraries to remove now: the batch's that are not kept, and those that
   * dropped out of the task's fastest.
   */
  afterBatch(dag: ComputeDAG, built: readonly BuiltCandidate[], outcomes: readonly MeasureOutcome[]): string[] {
    const before = this.kept.get(dag) ?? [];
    const list = before.map((k) => ({ ...k }));
    built.forEach((b, i) => {
      const o = outcomes[i];
      if (!('lib' in b) || o === undefined || o.error !== null || o.costs_ms.length === 0) return;
      const ms = o.costs_ms.reduce((a, c) => a + c, 0) / o.costs_ms.length;
      const same = list.find((k) => k.lib === b.lib);
      if (same) same.ms = Math.min(same.ms, ms);
      else list.push({ lib: b.lib, ms });
    });
    const after = list.sort((a, b) => a.ms - b.ms).slice(0, this.perTask);
    this.kept.set(dag, after);
    const was = new Set(before.map((k) => k.lib));
    const now = new Set(after.map((k) => k.lib));
    for (const lib of now) if (!was.has(lib)) this.keptBy.set(lib, (this.keptBy.get(lib) ?? 0) + 1);
    for (const lib of was) {
      if (now.has(lib)) continue;
      const n = (this.keptBy.get(lib) ?? 1) - 1;
      if (n > 0) this.keptBy.set(lib, n);
      else this.keptBy.delete(lib);
    }
    const candidates = new Set([...built.flatMap((b) => ('lib' in b ? [b.lib] : [])), ...was]);
    return [...candidates].filter((lib) => !this.holds(lib));
  }
}
