// docs/performance.md, generated from the benchmark records in bench/results/ (one JSON file
// per run of a bench script, bench/result-record.ts) and the hand-written studies in
// docs/src/performance-studies.md: the current standing per reference, machine and network,
// then every record's figures in date order. `npm run docs:performance` rewrites the page,
// and scripts/performance-page.test.ts fails while the committed page differs from it.

import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { RESULTS_DIR, readRecords, type ResultRecord, type SpeedupRow, type VsReferenceRow } from '../bench/result-record';

export const DOC_FILE = path.resolve(__dirname, '..', 'docs', 'performance.md');
export const STUDIES_FILE = path.resolve(__dirname, '..', 'docs', 'src', 'performance-studies.md');

export interface NamedRecord { file: string; record: ResultRecord }

type VsRecord = Extract<ResultRecord, { kind: 'vs-reference' }>;
type SpeedupRecord = Extract<ResultRecord, { kind: 'speedup' }>;

/**
 * Orders records by when they were measured: by day, then, within a day, a record that gives
 * no time before one that does (and those by time), then records transcribed from one commit
 * in the order its text gives them, then by file name, so that the order never depends on the
 * order the files were read in.
 */
export function byDate(a: NamedRecord, b: NamedRecord): number {
  const day = a.record.date.slice(0, 10).localeCompare(b.record.date.slice(0, 10));
  if (day !== 0) return day;
  const time = (a.record.date.slice(11) || '').localeCompare(b.record.date.slice(11) || '');
  if (time !== 0) return time;
  const [x, y] = [a.record.transcribed, b.record.transcribed];
  const order = x && y && x.commit === y.commit ? (x.order ?? 0) - (y.order ?? 0) : 0;
  return order !== 0 ? order : path.basename(a.file).localeCompare(path.basename(b.file));
}

/**
 * The standing for one reference, machine and target: for each network and kind of
 * schedules (default, tuned), the rows of the latest record that measured it, every thread
 * count from that one run.
 */
export function standing(records: readonly NamedRecord[]): { network: string; from: NamedRecord; rows: VsReferenceRow[] }[] {
  const latest = new Map<string, NamedRecord>();
  for (const r of [...records].sort(byDate)) {
    if (r.record.kind !== 'vs-reference') continue;
    for (const row of r.record.results) latest.set(`${networkLabel(row)}\n${row.schedules}`, r);
  }
  return [...latest.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([key, from]) => {
    const [network, schedules] = key.split('\n');
    return { network, from, rows: (from.record as VsRecord).results.filter((row) => networkLabel(row) === network && row.schedules === schedules) };
  });
}

/** A row's network as the page names it: with its batch where that is not 1 (a batch-16 run is its own line). */
export const networkLabel = (row: { network: string; batch?: number }): string => (row.batch !== undefined && row.batch !== 1 ? `${row.network} (batch ${row.batch})` : row.network);

/** Records grouped by a key, groups in the order of their latest record (newest first). */
function groupBy(records: readonly NamedRecord[], key: (r: ResultRecord) => string): NamedRecord[][] {
  const groups = new Map<string, NamedRecord[]>();
  for (const r of records) {
    const k = key(r.record);
    groups.set(k, [...(groups.get(k) ?? []), r]);
  }
  const newest = (g: NamedRecord[]): NamedRecord => [...g].sort(byDate)[g.length - 1];
  return [...groups.values()].sort((a, b) => byDate(newest(b), newest(a)));
}

const referenceName = (r: ResultRecord): string => r.reference?.name ?? 'none';
const link = (r: NamedRecord): string => `[${r.record.source}](../bench/results/${path.basename(r.file)})`;
const cellText = (s: string): string => s.replace(/\|/g, '\\|');
const fixed = (x: number | undefined, d = 2): string => (x === undefined ? '' : x.toFixed(d));
/** Two decimals, or three where the record gives three (0.746). */
const figure = (x: number): string => (Math.abs(x * 100 - Math.round(x * 100)) < 1e-9 ? x.toFixed(2) : x.toFixed(3));
const ratioCell = (row: VsReferenceRow | undefined): string => (!row ? '' : `${figure(row.ratio)}${row.paired ? ` (${figure(row.paired)})` : ''}`);
const msCell = (row: VsReferenceRow): string => (row.oursMs && row.referenceMs ? `${figure(row.oursMs)} / ${figure(row.referenceMs)}` : '');
const threadsLabel = (t: number | undefined): string => (t === undefined ? 'ratio' : `${t} thread${t > 1 ? 's' : ''}`);
const schedulesCell = (row: { schedules: string; tuning?: string }): string => (row.tuning ? `${row.schedules}: ${cellText(row.tuning)}` : row.schedules);

/** The peak readings of a machine's records, as "a-b GFLOP/s at 1 thread, ...". */
function peakSummary(records: readonly NamedRecord[]): string {
  const by = new Map<number, number[]>();
  for (const { record } of records) for (const p of record.machine.peak ?? []) by.set(p.threads, [...(by.get(p.threads) ?? []), p.gflops]);
  if (by.size === 0) return 'no peak recorded';
  return 'peak ' + [...by.entries()].sort(([a], [b]) => a - b).map(([t, xs]) => {
    const lo = Math.min(...xs), hi = Math.max(...xs);
    return `${lo === hi ? fixed(lo, 1) : `${fixed(lo, 1)} to ${fixed(hi, 1)}`} GFLOP/s at ${t} thread${t > 1 ? 's' : ''}`;
  }).join(', ');
}

function standingSection(records: readonly NamedRecord[]): string[] {
  const out: string[] = ['## Current standing', '',
    'Per reference engine, machine and target, the latest run of each network. Ratio = our time / the reference\'s (median over the rounds; the paired ratio, the median of each round\'s own ratio, in brackets): below 1 we are faster.', ''];
  const vsRecords = records.filter((r) => r.record.kind === 'vs-reference');
  for (const group of groupBy(vsRecords, (r) => `${r.reference?.name}\n${r.machine.id}\n${r.target}`)) {
    const { record } = group[0];
    const current = standing(group);
    const sources = [...new Set(current.map((s) => s.from))].sort(byDate);
    const gpu = record.machine.gpu ? `${record.machine.gpu}, ` : '';
    out.push(`### Against ${record.reference?.name}: ${gpu}${record.machine.cpu}, ${record.machine.cores} cores, \`${record.target}\``, '');
    const threads = [...new Set(current.flatMap((s) => s.rows.map((row) => row.threads)))].sort((a, b) => (a ?? 0) - (b ?? 0));
    out.push(`| network | schedules | ${threads.map(threadsLabel).join(' | ')} | ms, ours / reference | record |`);
    out.push(`|---|---|${threads.map(() => '---|').join('')}---|---|`);
    for (const s of current) {
      for (const variant of [...new Set(s.rows.map(schedulesCell))]) {
        const rows = s.rows.filter((row) => schedulesCell(row) === variant);
        const ms = rows.map((row) => msCell(row) && `${msCell(row)}${row.threads ? ` at ${row.threads}` : ''}`).filter(Boolean).join('; ');
        out.push(`| ${s.network} | ${variant} | ${threads.map((t) => ratioCell(rows.find((row) => row.threads === t))).join(' | ')} | ${ms} | ${link(s.from)}, ${s.from.record.date} |`);
      }
    }
    out.push('');
    for (const from of sources) {
      const r = from.record;
      out.push(`- ${link(from)}, ${r.date}, tensortune ${r.version}${r.commit ? ` (${r.commit})` : ''}: \`${r.command}\`${r.reference?.version ? `; ${r.reference.name} ${r.reference.version}` : ''}; ${peakSummary([from])}.${r.notes ? ` ${r.notes}` : ''}`);
    }
    out.push('');
  }
  const speedups = records.filter((r) => r.record.kind === 'speedup');
  if (speedups.length) {
    out.push('### N-thread speed-up', '',
      'Each engine\'s 1-thread time over its N-thread time (median over the rounds, their range in brackets), beside the machine\'s own (the peak FMA loop in the same rounds): the latest run per machine, network and schedules.', '',
      '| machine | network | schedules | threads | tensortune | reference | peak loop | date | command | record |', '|---|---|---|---|---|---|---|---|---|---|');
    const latest = new Map<string, { from: NamedRecord; row: SpeedupRow }>();
    for (const r of [...speedups].sort(byDate)) for (const row of (r.record as SpeedupRecord).results) latest.set(`${r.record.machine.id}\n${row.network}\n${row.schedules}\n${row.threads}`, { from: r, row });
    for (const { from, row } of [...latest.values()].sort((a, b) => byDate(b.from, a.from) || a.row.network.localeCompare(b.row.network))) {
      out.push(`| \`${from.record.machine.id}\` | ${row.network} | ${row.schedules} | ${row.threads} | ${speedupCell(row.ours, row.oursRange)} | ${speedupCell(row.reference, row.referenceRange)} | ${fixed(row.machine)} | ${from.record.date} | \`${cellText(from.record.command)}\` | ${link(from)} |`);
    }
    out.push('');
  }
  return out;
}

function speedupCell(x: number | undefined, range: [number, number] | undefined): string {
  return x === undefined ? '' : `${fixed(x)}${range ? ` (${fixed(range[0])}-${fixed(range[1])})` : ''}`;
}

function historySection(records: readonly NamedRecord[]): string[] {
  const out: string[] = ['## History', '', 'Every record, oldest first. Ratios compare within one run only: the machines differ, and a shared VM changes speed from one minute to the next.', ''];
  const vsRecords = records.filter((r) => r.record.kind === 'vs-reference').sort(byDate);
  const networks = [...new Set(vsRecords.flatMap((r) => (r.record as VsRecord).results.map((row) => `${referenceName(r.record)}\n${networkLabel(row)}`)))].sort();
  for (const key of networks) {
    const [reference, network] = key.split('\n');
    const rows = vsRecords.filter((r) => referenceName(r.record) === reference).flatMap((r) => {
      const mine = (r.record as VsRecord).results.filter((row) => networkLabel(row) === network);
      const variants = [...new Set(mine.map((row) => schedulesCell(row)))];
      return variants.map((v) => ({ from: r, variant: v, rows: mine.filter((row) => schedulesCell(row) === v) }));
    });
    const threads = [...new Set(rows.flatMap((r) => r.rows.map((row) => row.threads)))].sort((a, b) => (a ?? 0) - (b ?? 0));
    out.push(`### ${network} against ${reference}`, '');
    out.push(`| date | machine | schedules | ${threads.map(threadsLabel).join(' | ')} | command | record |`);
    out.push(`|---|---|---|${threads.map(() => '---|').join('')}---|---|`);
    for (const r of rows) {
      out.push(`| ${r.from.record.date} | \`${r.from.record.machine.id}\` | ${r.variant} | ${threads.map((t) => ratioCell(r.rows.find((row) => row.threads === t))).join(' | ')} | \`${cellText(r.from.record.command)}\` | ${link(r.from)} |`);
    }
    out.push('');
  }
  const speedups = records.filter((r) => r.record.kind === 'speedup').sort(byDate);
  if (speedups.length) {
    out.push('### N-thread speed-ups', '', '| date | machine | network | schedules | threads | tensortune | reference | peak loop | record |', '|---|---|---|---|---|---|---|---|---|');
    for (const r of speedups) for (const row of (r.record as SpeedupRecord).results) {
      out.push(`| ${r.record.date} | \`${r.record.machine.id}\` | ${row.network} | ${row.schedules} | ${row.threads} | ${speedupCell(row.ours, row.oursRange)} | ${speedupCell(row.reference, row.referenceRange)} | ${fixed(row.machine)} | ${link(r)} |`);
    }
    out.push('');
  }
  return out;
}

function machinesSection(records: readonly NamedRecord[]): string[] {
  const out = ['## Machines', '', '| machine | CPU | cores | GPU | peak fp32 measured around its runs | records |', '|---|---|---|---|---|---|'];
  for (const group of groupBy(records, (r) => r.machine.id)) {
    const m = group[0].record.machine;
    out.push(`| \`${m.id}\` | ${cellText(m.cpu)} | ${m.cores} | ${m.gpu ? cellText(m.gpu) : ''} | ${peakSummary(group)} | ${group.length} |`);
  }
  out.push('');
  return out;
}

/** The whole page: the standing, the history, the machines, then the studies. */
export function performanceMarkdown(records: readonly NamedRecord[], studies: string): string {
  const lines = [
    '# Performance',
    '',
    '<!-- Generated by `npm run docs:performance` (scripts/performance-page.ts) from bench/results/*.json and docs/src/performance-studies.md: edit those, not this page. -->',
    '',
    'Every figure here is a ratio measured in one run against a reference taken in the same run (ONNX Runtime on the same machine and input, PyTorch on the same GPU), by a script in `bench/`, and each comes from a record in [bench/results/](../bench/results/) that names its machine, date, version and command. Records marked *transcribed* were copied from the documentation that first published them; *measured* ones were written by the script (`--record bench/results`).',
    '',
    'To add a run: `npx tsx bench/compare-ort.ts --networks resnet-18 --records LOG --record bench/results` (also `bench/scaling.ts`, `bench/peak.ts`, `python3 bench/onnx-zoo.py`, and `bench/tune-curve.ts --network NET --records LOG`: the records of a tune after each minute against ONNX Runtime, its time to reach 1.0x), then `npm run docs:performance`. The milliseconds only say how fast that machine was that hour; compare ratios.',
    '',
    ...standingSection(records),
    ...historySection(records),
    ...machinesSection(records),
  ];
  return `${lines.join('\n').trimEnd()}\n\n${studies.trim()}\n`;
}

/** The page from the committed records and studies. */
export function currentPage(dir: string = RESULTS_DIR): string {
  return performanceMarkdown(readRecords(dir), readFileSync(STUDIES_FILE, 'utf8'));
}

if (require.main === module) {
  try {
    writeFileSync(DOC_FILE, currentPage());
    console.log(`wrote ${path.relative(process.cwd(), DOC_FILE)}`);
  } catch (e) {
    console.error((e as Error).message);
    process.exitCode = 2;
  }
}
