// Static memory plan: every intermediate (a group's output that is not a model output)
// gets an offset in one workspace; a buffer's space is reused once its last reader has
// run. First fit over the live buffers, in call order; offsets are 16-float aligned. With
// `inPlace`, a group whose kernel may write its output over one of its inputs
// (ir/in-place.ts: ResNet's residual add) and is that input's last reader gets the input's
// buffer for its output.

import { UserError } from '../errors';
import type { FusedGroup } from '../graph/fuse';
import type { Graph } from '../graph/graph';
import { batchShape } from '../graph/per-sample';
import type { ComputeDAG } from '../ir/dag';
import { inPlaceInputs } from '../ir/in-place';
import { numElements } from '../ir/tensor';
import type { Manifest } from './manifest';

export interface MemoryPlan {
  /** Workspace offset (floats) of each intermediate node. */
  offsets: Map<number, number>;
  /** Workspace size in floats. */
  size: number;
  /** Sum of all intermediates' sizes (what no reuse would need), for reports. */
  unplannedSize: number;
  /** The groups (by index) whose output took the buffer of their input: that input's node id. */
  inPlace: Map<number, number>;
}

const align = (n: number): number => Math.ceil(n / 16) * 16;

/** The node ids of the inputs of `grp` that its kernel may write its output over, in input order. */
export function inPlaceNodes(grp: FusedGroup): number[] {
  const dag = grp.dag;
  if (dag.inputs.length !== grp.inputs.length) return [];
  return inPlaceInputs(dag)
    .map((t) => grp.inputs[dag.inputs.indexOf(t)])
    // A node the group also reads as another input would be read there after it is overwritten.
    .filter((id) => grp.inputs.filter((x) => x === id).length === 1);
}

export function planMemory(g: Graph, groups: readonly FusedGroup[], opts: { inPlace?: boolean } = {}): MemoryPlan {
  const producedAt = new Map<number, number>();
  groups.forEach((grp, i) => producedAt.set(grp.output, i));
  const lastUse = new Map<number, number>();
  groups.forEach((grp, i) => grp.inputs.forEach((id) => { if (producedAt.has(id)) lastUse.set(id, i); }));
  const live: { id: number; offset: number; size: number }[] = [];
  const offsets = new Map<number, number>();
  const inPlace = new Map<number, number>();
  let size = 0, unplanned = 0;
  groups.forEach((grp, i) => {
    // Free what no later group reads (its readers all ran before group i).
    for (let j = live.length - 1; j >= 0; j--) if ((lastUse.get(live[j].id) ?? -1) < i) live.splice(j, 1);
    if (g.outputs.includes(grp.output)) return;
    const need = align(numElements(g.node(grp.output).shape));
    unplanned += need;
    // Written over an input that no later group reads: the input's buffer, now the output's.
    const over = opts.inPlace ? inPlaceNodes(grp).find((id) => lastUse.get(id) === i) : undefined;
    const held = over === undefined ? undefined : live.find((b) => b.id === over && b.size === need);
    if (held) {
      inPlace.set(i, held.id);
      held.id = grp.output;
      offsets.set(grp.output, held.offset);
      return;
    }
    live.sort((a, b) => a.offset - b.offset);
    let offset = 0;
    for (const b of live) {
      if (b.offset - offset >= need) break;
      offset = Math.max(offset, b.offset + b.size);
    }
    live.push({ id: grp.output, offset, size: need });
    offsets.set(grp.output, offset);
    size = Math.max(size, offset + need);
  });
  return { offsets, size, unplannedSize: unplanned, inPlace };
}

// The memory a compiled model needs to run: its inputs, outputs, weights and workspace, all
// in 4-byte words. A model a few bytes long can describe tensors of gigabytes (a broadcast
// of [1, N, 1] and [1, 1, N]); compile and benchmark refuse one that needs more than a limit
// before anything of that size is allocated, naming its largest tensor.

/** The default limit: 4 GiB, on every machine (a limit that followed this machine's memory
 *  would let one config compile here and fail on a smaller CI box, with the same inputs for
 *  Nx's cache). Every float32 model in the model zoo needs far less; a larger one raises it. */
export const DEFAULT_MAX_MEMORY_BYTES = 4 * 1024 ** 3;

/** One buffer the model needs, for the message: `output 'y' [1, 32768, 32768]`. */
export interface MemoryItem { what: string; bytes: number }

export interface MemoryNeed { bytes: number; largest: MemoryItem }

const UNITS: Record<string, number> = { '': 1, b: 1, k: 1e3, kb: 1e3, kib: 1024, m: 1e6, mb: 1e6, mib: 1024 ** 2, g: 1e9, gb: 1e9, gib: 1024 ** 3, t: 1e12, tb: 1e12, tib: 1024 ** 4 };

/** `8GiB`, `512 MiB`, `4GB`, `1e9` (bytes): a size in bytes; throws UserError naming `where`. */
export function parseMemorySize(text: unknown, where: string): number {
  const m = typeof text === 'string' ? /^\s*(\d+(?:\.\d+)?(?:e\d+)?)\s*([a-z]*)\s*$/i.exec(text) : null;
  const unit = m ? UNITS[m[2].toLowerCase()] : undefined;
  const bytes = m && unit !== undefined ? Math.floor(Number(m[1]) * unit) : NaN;
  if (!Number.isSafeInteger(bytes) || bytes <= 0) {
    throw new UserError(`${where}: expected a memory size such as 8GiB, 512MiB or 4GB (a number of bytes with an optional unit B, KiB, MiB, GiB, TiB, KB, MB, GB, TB), got ${JSON.stringify(text)}`);
  }
  return bytes;
}

/** `4.0 GiB`, `512.0 MiB`, `1.5 KiB`, `12 B`. */
export function formatBytes(bytes: number): string {
  const units = ['KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let v = bytes, u = -1;
  while (v >= 1024 && u < units.length - 1) { v /= 1024; u++; }
  return u < 0 ? `${bytes} B` : `${v.toFixed(1)} ${units[u]}`;
}

const WORD = 4;
const tensorItem = (kind: string, name: string, shape: readonly number[]): MemoryItem =>
  ({ what: `${kind} '${name}' [${shape.join(', ')}]`, bytes: numElements(shape) * WORD });

/** The sum of `items`; the largest of them and of `inside` (tensors within one of the items, as the workspace's). */
function need(items: readonly MemoryItem[], inside: readonly MemoryItem[] = []): MemoryNeed {
  let largest = items[0] ?? { what: 'nothing', bytes: 0 };
  for (const it of [...items, ...inside]) if (it.bytes > largest.bytes) largest = it;
  return { bytes: items.reduce((a, it) => a + it.bytes, 0), largest };
}

/**
 * What a model compiled from `g` and `groups` needs: inputs, outputs, weights and its
 * workspace (planMemory), its largest tensor named. `samples`: the model runs `g` once per
 * sample of a batch of that many, so its inputs and outputs are that many times `g`'s.
 */
export function graphMemory(g: Graph, groups: readonly FusedGroup[], samples = 1): MemoryNeed {
  const items: MemoryItem[] = [];
  let weights = 0;
  for (const n of g.nodes) {
    if (n.op === 'input') items.push(tensorItem('input', n.name, batchShape(n.shape, samples)));
    else if (n.op === 'constant') weights += numElements(n.shape) * WORD;
  }
  for (const id of g.outputs) items.push(tensorItem('output', g.node(id).name, batchShape(g.node(id).shape, samples)));
  if (weights > 0) items.push({ what: 'the weights', bytes: weights });
  // The intermediates count as the workspace they share (its planned size); each may be the largest tensor.
  const plan = planMemory(g, groups);
  if (plan.size > 0) items.push({ what: 'the workspace', bytes: plan.size * WORD });
  const outputs = new Set(g.outputs);
  const intermediates = groups.filter((grp) => !outputs.has(grp.output)).map((grp) => g.node(grp.output)).map((n) => tensorItem('intermediate', n.name, n.shape));
  return need(items, intermediates);
}

/** What the model of a manifest needs: its inputs, outputs, params and workspace. */
export function manifestMemory(m: Pick<Manifest, 'inputs' | 'outputs' | 'params_count' | 'workspace_bytes'>): MemoryNeed {
  return need([
    ...m.inputs.map((t) => tensorItem('input', t.name, t.shape)),
    ...m.outputs.map((t) => tensorItem('output', t.name, t.shape)),
    { what: 'the weights', bytes: m.params_count * WORD },
    { what: 'the workspace', bytes: m.workspace_bytes },
  ]);
}

/**
 * Refuses a model that needs more than `limit` bytes: one line starting with `where`, naming
 * its largest tensor and the total, and ending with `raise` (how to raise the limit).
 */
export function checkMemory(needed: MemoryNeed, limit: number, where: string, raise: string): void {
  if (needed.bytes <= limit) return;
  throw new UserError(`${where}: the model needs ${formatBytes(needed.bytes)} to run (${needed.largest.what} alone is ${formatBytes(needed.largest.bytes)}), ` +
    `above the limit of ${formatBytes(limit)}; ${raise}`);
}

/** A limit on the memory a model needs, and the words that say how to raise it. */
export interface MemoryLimit { bytes: number; raise: string }

/** A limit given as `text` (a size, else the default) at `where` (a flag, a config field), raised as `raise` says. */
export function memoryLimitOf(text: string | undefined, where: string, raise: string): MemoryLimit {
  return { bytes: text === undefined ? DEFAULT_MAX_MEMORY_BYTES : parseMemorySize(text, where), raise };
}

/** The CLI's limit: --max-memory SIZE, else the default. */
export const cliMemoryLimit = (flag: string | undefined): MemoryLimit =>
  memoryLimitOf(flag, '--max-memory', 'raise the limit with --max-memory SIZE (e.g. --max-memory 16GiB)');

/** Under Nx: the network's maxMemory in the config file, else the default. */
export const configMemoryLimit = (value: string | undefined, configFile: string, network: string): MemoryLimit =>
  memoryLimitOf(value, `${configFile}: networks.${network}.maxMemory`, `raise the limit with maxMemory (e.g. maxMemory: 16GiB) on networks.${network} in ${configFile}`);

/** compile: refuses a model (`where`: its file or name) whose inputs, outputs, weights and workspace exceed the limit. */
export function checkModelMemory(g: Graph, groups: readonly FusedGroup[], where: string, limit: MemoryLimit = cliMemoryLimit(undefined), samples = 1): void {
  checkMemory(graphMemory(g, groups, samples), limit.bytes, where, limit.raise);
}

/** benchmark: the same check from a compiled model's manifest (sealed, so its sizes are the compile's), before the model is loaded. */
export function checkManifestMemory(m: Manifest, manifestFile: string, limit: MemoryLimit = cliMemoryLimit(undefined)): void {
  checkMemory(manifestMemory(m), limit.bytes, manifestFile, limit.raise);
}

/**
 * tune: refuses, before anything is measured, a task whose kernel arguments (its inputs and
 * output, which the measurement worker allocates and the verifier computes again) exceed the
 * limit: one line naming the task, its largest tensor and the total.
 */
export function checkTaskMemory(tasks: readonly { desc: string; dag: ComputeDAG }[], where: string, limit: MemoryLimit = cliMemoryLimit(undefined)): void {
  tasks.forEach((t, i) => {
    const needed = need(t.dag.tensors.map((x) => tensorItem('tensor', x.name, x.shape)));
    if (needed.bytes <= limit.bytes) return;
    throw new UserError(`${where}: task ${i} (${t.desc}) needs ${formatBytes(needed.bytes)} to measure (${needed.largest.what} alone is ${formatBytes(needed.largest.bytes)}), ` +
      `above the limit of ${formatBytes(limit.bytes)}; ${limit.raise}`);
  });
}
