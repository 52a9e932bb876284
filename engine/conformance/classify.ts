// The conformance suite's pure parts: which case values the runner can feed and compare,
// the raw numpy bytes read as the compiled model's 4-byte words, an output compared with its
// expected value at the case's tolerances, a UserError turned into one line, and the tallies
// (per operator, per refusal reason), the summary line and the check against the baseline.
// A case the importer refused for a non-constant input and that imports with its integer
// inputs bound to their test values (`frozen`) keeps that mark everywhere: its label reads
// `passed (frozen: shape)`, the summary line and the per-operator table count it apart, and
// the baseline lists it apart from the plain passes.

import type { DType } from '../ir/expr';
import { bfloat16Value, float16Value } from '../ir/half';
import { miniFloatValue, type MiniFloat } from '../ir/float8';
import type { CaseValue, ConformanceCase } from './cases';

/** How a case ends: exactly one of these. */
export type Outcome = 'passed' | 'refused' | 'wrong' | 'crash' | 'hang';
export const OUTCOMES: readonly Outcome[] = ['passed', 'refused', 'wrong', 'crash', 'hang'];

export interface CaseResult {
  name: string;
  operator: string;
  outcome: Outcome;
  /** One line: the refusal's reason, the mismatch (with its max error), the crash or the time limit. */
  reason?: string;
  /** refused by the importer: each node it cannot import, as `<Op>: <why>` (the reason joins them), for grouping. */
  issues?: string[];
  /** wrong: the largest absolute error over the outputs (NaN where a value is NaN on one side only). */
  max_abs_error?: number;
  /**
   * The graph inputs (int64/int32 only) bound to the case's values at import (TVM's
   * freeze_params), because the importer refused the case with them as inputs ("... must be
   * a constant"): the outcome is that of the model with those inputs frozen, never a plain one.
   */
  frozen?: string[];
}

/** The outcome as shown: `passed`, or `passed (frozen: scales, sizes)` for a case run with inputs frozen. */
export const outcomeLabel = (r: Pick<CaseResult, 'outcome' | 'frozen'>): string => (r.frozen?.length ? `${r.outcome} (frozen: ${r.frozen.join(', ')})` : r.outcome);

/**
 * numpy dtypes whose values run as int32 (ONNX int64 is carried as int32), with their byte
 * widths; ml_dtypes' int4, uint4, int2 and uint2 are written one int8/uint8 byte per value.
 */
const INT_BYTES: Record<string, number> = {
  int8: 1, int16: 2, int32: 4, int64: 8, uint8: 1, uint16: 2, uint32: 4, uint64: 8, int4: 1, uint4: 1, int2: 1, uint2: 1,
};

/**
 * numpy dtypes whose values run as float32 (float16, bfloat16 and the 8/4-bit floats
 * exactly, float64 rounded to float32), with their byte widths; ml_dtypes' float8 and
 * float4 values are written as one byte of bits each.
 */
const FLOAT_BYTES: Record<string, number> = {
  float32: 4, float64: 8, float16: 2, bfloat16: 2, float8_e4m3fn: 1, float8_e4m3fnuz: 1, float8_e5m2: 1, float8_e5m2fnuz: 1, float4_e2m1fn: 1,
};

/** ml_dtypes' names of the 8/4-bit floats. */
const MINI: Record<string, MiniFloat> = {
  float8_e4m3fn: 'f8e4m3fn', float8_e4m3fnuz: 'f8e4m3fnuz', float8_e5m2: 'f8e5m2', float8_e5m2fnuz: 'f8e5m2fnuz', float4_e2m1fn: 'f4e2m1',
};

/** The class of a case's dtype the compiled model's dtype must match: floats (as float32), integers (as int32), bool. */
export function dtypeClass(dtype: string | undefined): DType | undefined {
  if (dtype === 'bool') return dtype;
  if (dtype !== undefined && dtype in FLOAT_BYTES) return 'float32';
  return dtype !== undefined && dtype in INT_BYTES ? 'int32' : undefined;
}

const SUPPORTED = 'supported tensor types are float32, float16, bfloat16, float64, float8 and float4 (as float32), the integer types (as int32) and bool';

function valueRefusal(v: CaseValue, role: 'input' | 'output'): string | undefined {
  const what = `${role} '${v.name}'`;
  if (v.kind !== 'tensor') return `${what} is ${v.kind === 'optional' ? 'an optional (None)' : `a ${v.kind}`}: only tensors are supported`;
  if (v.dtype === 'object' || v.dtype?.startsWith('str')) return `${what} holds strings: ${SUPPORTED}`;
  if (!dtypeClass(v.dtype)) return `${what} is ${v.dtype}: ${SUPPORTED}`;
  if (v.file === undefined || v.shape === undefined) return `${what} has no data`;
  return undefined;
}

/** Why the runner cannot feed or compare the case's values (one line), or undefined. */
export function caseRefusal(c: ConformanceCase): string | undefined {
  if (c.data_sets.length !== 1) return `${c.data_sets.length} data sets (the runner compiles a case for one)`;
  const other = c.graph_inputs.find((i) => i.type !== 'tensor') ?? c.graph_outputs.find((o) => o.type !== 'tensor');
  if (other) return `graph ${c.graph_inputs.includes(other) ? 'input' : 'output'} '${other.name}' is a ${other.type}: only tensors are supported`;
  const [{ inputs, outputs }] = c.data_sets;
  for (const v of inputs) { const why = valueRefusal(v, 'input'); if (why) return why; }
  for (const v of outputs) { const why = valueRefusal(v, 'output'); if (why) return why; }
  if (inputs.length !== c.graph_inputs.length) return `the case gives ${inputs.length} value(s) for the graph's ${c.graph_inputs.length} input(s)`;
  if (outputs.length !== c.graph_outputs.length) return `the case gives ${outputs.length} expected value(s) for the graph's ${c.graph_outputs.length} output(s)`;
  return undefined;
}

/**
 * A value's numbers, decoded from its raw little-endian bytes: float32, float16 and bfloat16
 * (16-bit patterns), the 8/4-bit floats (a byte of bits each) as float32, exactly; float64 and the integers as JS numbers (integers
 * exact up to 2^53); bool as 0/1.
 */
export function decodeValue(bytes: Uint8Array, dtype: string): Float64Array | Float32Array {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const floatWidth = FLOAT_BYTES[dtype];
  if (floatWidth) {
    if (bytes.length % floatWidth) throw new Error(`decodeValue: ${bytes.length} bytes is not a whole number of ${dtype} values`);
    const count = bytes.length / floatWidth;
    const out = dtype === 'float64' ? new Float64Array(count) : new Float32Array(count);
    for (let i = 0; i < count; i++) {
      const at = i * floatWidth;
      out[i] = dtype === 'float32' ? view.getFloat32(at, true) : dtype === 'float64' ? view.getFloat64(at, true)
        : MINI[dtype] ? miniFloatValue(MINI[dtype], bytes[at])
          : dtype === 'float16' ? float16Value(view.getUint16(at, true)) : bfloat16Value(view.getUint16(at, true));
    }
    return out;
  }
  const width = dtype === 'bool' ? 1 : INT_BYTES[dtype];
  if (!width) throw new Error(`decodeValue: dtype ${dtype} is not decoded`);
  if (bytes.length % width) throw new Error(`decodeValue: ${bytes.length} bytes is not a whole number of ${dtype} values`);
  const out = new Float64Array(bytes.length / width);
  const signed = dtype.startsWith('int');
  for (let i = 0; i < out.length; i++) {
    const at = i * width;
    switch (width) {
      case 1: out[i] = dtype === 'bool' ? (bytes[at] ? 1 : 0) : signed ? view.getInt8(at) : view.getUint8(at); break;
      case 2: out[i] = signed ? view.getInt16(at, true) : view.getUint16(at, true); break;
      case 4: out[i] = signed ? view.getInt32(at, true) : view.getUint32(at, true); break;
      default: out[i] = Number(signed ? view.getBigInt64(at, true) : view.getBigUint64(at, true));
    }
  }
  return out;
}

const INT32_MIN = -(2 ** 31), INT32_MAX = 2 ** 31 - 1;

/** The first value outside int32's range, if any (ONNX int64 is carried as int32). */
export function outsideInt32(values: ArrayLike<number>): number | undefined {
  for (let i = 0; i < values.length; i++) if (values[i] < INT32_MIN || values[i] > INT32_MAX) return values[i];
  return undefined;
}

/**
 * A case value as the 4-byte words of the compiled model's `dtype`, or why it cannot be fed
 * (one line). float16 and bfloat16 values are float32 values exactly; float64 ones are
 * rounded to float32, the precision float64 runs in.
 */
export function modelWords(v: CaseValue, bytes: Uint8Array, dtype: DType): Float32Array | Int32Array | string {
  const cls = dtypeClass(v.dtype);
  if (cls !== dtype) return `input '${v.name}' is ${v.dtype}, the compiled model takes ${dtype}`;
  const values = decodeValue(bytes, v.dtype!);
  if (dtype === 'float32') return values instanceof Float32Array ? values : Float32Array.from(values);
  const big = outsideInt32(values);
  if (big !== undefined) return `input '${v.name}' (${v.dtype}) holds ${big}, outside the int32 range int64 values are carried in`;
  return Int32Array.from(values);
}

const showShape = (s: readonly number[]): string => `[${s.join(', ')}]`;

function unravel(i: number, shape: readonly number[]): number[] {
  const at = new Array<number>(shape.length);
  for (let d = shape.length - 1; d >= 0; d--) { at[d] = i % shape[d]; i = Math.floor(i / shape[d]); }
  return at;
}

/** The bits of the NaN tt_bench fills outputs with (C's NAN: 0x7fc00000). */
const NAN_WORD = 0x7fc00000;

export interface OutputCheck {
  ok: boolean;
  /** When not ok: one line naming the output, how many values are off, the max error and where. */
  why?: string;
  max_abs_error?: number;
}

/**
 * Compares one output with its expected value as numpy.testing.assert_allclose does (what
 * onnx's backend test runner calls): |actual - expected| <= atol + rtol * |expected|, NaN
 * equal to NaN, an infinity only equal to itself; integers and bools exactly (never looser).
 * `actual` holds the compiled model's words of `dtype`, `shape` its shape. An expected
 * float16, bfloat16 or float64 value is compared as its number (float64's unrounded) with
 * the float32 the model computed, at the case's own tolerances.
 */
export function compareOutput(
  expected: CaseValue, expectedBytes: Uint8Array, actual: Float32Array | Int32Array, dtype: DType, shape: readonly number[], rtol: number, atol: number,
): OutputCheck {
  const what = `output '${expected.name}'`;
  const cls = dtypeClass(expected.dtype);
  if (cls !== dtype) return { ok: false, why: `${what} is ${dtype}, expected ${expected.dtype}` };
  const want = expected.shape!;
  if (want.length !== shape.length || want.some((d, i) => d !== shape[i])) return { ok: false, why: `${what} has shape ${showShape(shape)}, expected ${showShape(want)}` };
  const e = decodeValue(expectedBytes, expected.dtype!);
  if (e.length !== actual.length) return { ok: false, why: `${what} has ${actual.length} values, expected ${e.length}` };
  const exact = dtype !== 'float32';
  let bad = 0, worst = -1, maxErr = 0;
  for (let i = 0; i < e.length; i++) {
    const x = e[i], y = actual[i];
    let ok: boolean, err: number;
    if (Number.isNaN(x) || Number.isNaN(y)) { ok = Number.isNaN(x) && Number.isNaN(y); err = ok ? 0 : NaN; }
    else if (!Number.isFinite(x) || !Number.isFinite(y)) { ok = x === y; err = ok ? 0 : Infinity; }
    else { err = Math.abs(y - x); ok = exact ? err === 0 : err <= atol + rtol * Math.abs(x); }
    if (ok) continue;
    bad++;
    if (worst < 0 || !(err <= maxErr)) { worst = i; maxErr = err; }
  }
  if (bad === 0) return { ok: true };
  // tt_bench fills every output with NaN before the run: an output still all NaN words was never written.
  const words = new Int32Array(actual.buffer, actual.byteOffset, actual.length);
  if (bad === e.length && words.every((w) => w === NAN_WORD)) {
    return { ok: false, max_abs_error: NaN, why: `${what} was never written (all ${e.length} value(s) still hold tt_bench's NaN fill)` };
  }
  const at = shape.length ? showShape(unravel(worst, shape)) : '[]';
  const tol = exact ? 'exact' : `rtol ${rtol}, atol ${atol}`;
  return {
    ok: false, max_abs_error: maxErr,
    why: `${what}: ${bad} of ${e.length} value(s) off, max abs error ${maxErr.toPrecision(3)} at ${at} (expected ${e[worst]}, got ${actual[worst]}; ${tol})`,
  };
}

const MAX_REASON = 300;
const cut = (text: string): string => (text.length > MAX_REASON ? `${text.slice(0, MAX_REASON - 3)}...` : text);

/**
 * A UserError's message as one line (`reason`): the model file's path dropped; the
 * importer's list of nodes it cannot import as `<Op>: <why>` (node names dropped, repeats
 * once: `issues`), joined by '; '.
 */
export function refusalOf(message: string, file?: string): { reason: string; issues?: string[] } {
  const text = file ? message.split(`${file}: `).join('') : message;
  const lines = text.split('\n');
  const items = lines.filter((l) => /^\s+- /.test(l)).map((l) => l.replace(/^\s+- /, '').replace(/^(\S+) '[^']*': /, '$1: ').trim());
  if (/cannot import \d+ node\(s\)/.test(lines[0]) && items.length) {
    const issues = [...new Set(items)].map(cut);
    return { reason: cut(issues.join('; ')), issues };
  }
  return { reason: cut(lines.find((l) => l.trim())?.trim() ?? '') };
}

/** A reason as its group: the names of tensors left out, so one limit counts once. */
export const reasonGroup = (reason: string): string =>
  reason.replace(/\b(graph input|graph output|input|output|initializer) '[^']*'/g, "$1 '…'");

/** `passed` counts every pass; `frozen`, those of them run with integer inputs frozen. */
export interface OperatorRow { operator: string; cases: number; passed: number; frozen: number; refused: number; wrong: number; crash: number; hang: number }

export interface Tally {
  total: number;
  counts: Record<Outcome, number>;
  /** Of counts.passed, the cases that passed with integer inputs frozen. */
  frozenPassed: number;
  operators: OperatorRow[];
  /** Refusal reasons (grouped; a case the importer refused counts once under each of its issues), most frequent first. */
  reasons: { reason: string; count: number }[];
  /** Per operator: its most frequent refusal reason. */
  topReason: Record<string, { reason: string; count: number }>;
}

export function tally(results: readonly CaseResult[]): Tally {
  const counts = Object.fromEntries(OUTCOMES.map((o) => [o, 0])) as Record<Outcome, number>;
  const rows = new Map<string, OperatorRow>();
  const reasons = new Map<string, number>();
  const perOp = new Map<string, Map<string, number>>();
  let frozenPassed = 0;
  for (const r of results) {
    counts[r.outcome]++;
    let row = rows.get(r.operator);
    if (!row) rows.set(r.operator, (row = { operator: r.operator, cases: 0, passed: 0, frozen: 0, refused: 0, wrong: 0, crash: 0, hang: 0 }));
    row.cases++;
    row[r.outcome]++;
    if (r.outcome === 'passed' && r.frozen?.length) { row.frozen++; frozenPassed++; }
    if (r.outcome !== 'refused') continue;
    const m = perOp.get(r.operator) ?? new Map<string, number>();
    perOp.set(r.operator, m);
    for (const g of new Set((r.issues ?? [r.reason ?? '(no reason)']).map(reasonGroup))) {
      reasons.set(g, (reasons.get(g) ?? 0) + 1);
      m.set(g, (m.get(g) ?? 0) + 1);
    }
  }
  const ranked = (m: Map<string, number>): { reason: string; count: number }[] =>
    [...m].map(([reason, count]) => ({ reason, count })).sort((a, b) => b.count - a.count || a.reason.localeCompare(b.reason));
  const topReason = Object.fromEntries([...perOp].map(([op, m]) => [op, ranked(m)[0]]));
  return {
    total: results.length, counts, frozenPassed,
    operators: [...rows.values()].sort((a, b) => a.operator.localeCompare(b.operator)), reasons: ranked(reasons), topReason,
  };
}

/** `conformance: P/N passed (x%; F of them with integer inputs frozen), R refused, W wrong, C crashed, H hung`. */
export function summaryLine(t: Pick<Tally, 'total' | 'counts' | 'frozenPassed'>): string {
  const c = t.counts;
  const pct = t.total ? ((100 * c.passed) / t.total).toFixed(1) : '0.0';
  return `conformance: ${c.passed}/${t.total} passed (${pct}%; ${t.frozenPassed} of them with integer inputs frozen), ${c.refused} refused, ${c.wrong} wrong, ${c.crash} crashed, ${c.hang} hung`;
}

/** The per-operator table (Markdown; `frozen`: the passes among `passed` with integer inputs frozen), then the top refusal reasons. */
export function report(t: Tally, topReasons = 25): string[] {
  const cols = ['operator', 'cases', 'passed', 'frozen', 'refused', 'wrong', 'crash', 'hang'] as const;
  const cells = t.operators.map((r) => cols.map((c) => String(r[c])));
  const widths = cols.map((c, i) => Math.max(c.length, ...cells.map((row) => row[i].length)));
  const line = (row: readonly string[]): string => `| ${row.map((s, i) => (i === 0 ? s.padEnd(widths[i]) : s.padStart(widths[i]))).join(' | ')} |`;
  const out = [line(cols), `|${widths.map((w, i) => (i === 0 ? '-'.repeat(w + 2) : `${'-'.repeat(w + 1)}:`)).join('|')}|`, ...cells.map(line)];
  out.push('', '`passed` counts the `frozen` cases: they pass only with their int64/int32 inputs bound to the test values at import (the importer needs them constant).');
  out.push('', `refusal reasons (top ${Math.min(topReasons, t.reasons.length)} of ${t.reasons.length}; a case refused for several nodes counts under each):`);
  for (const { reason, count } of t.reasons.slice(0, topReasons)) out.push(`  ${String(count).padStart(5)}  ${reason}`);
  return out;
}

export interface Baseline {
  onnx_version: string;
  cases: number;
  passed: number;
  pass_rate: number;
  /** Of `passed` (every pass), those with integer inputs frozen. */
  passed_frozen?: number;
  /** Cases known to come out wrong, crash or hang today: their outcome (with the inputs frozen, if any) and reason. The aim is none. */
  known_bad: Record<string, string>;
  /** Every case that passed as it is. */
  passing: string[];
  /** Every case that passed only with integer inputs frozen, with those inputs. */
  passing_frozen?: Record<string, string[]>;
}

const isBad = (r: CaseResult): boolean => r.outcome === 'wrong' || r.outcome === 'crash' || r.outcome === 'hang';
const plainPass = (r: CaseResult): boolean => r.outcome === 'passed' && !r.frozen?.length;

export function makeBaseline(results: readonly CaseResult[], onnxVersion: string): Baseline {
  const byName = (a: CaseResult, b: CaseResult): number => a.name.localeCompare(b.name);
  const passing = results.filter(plainPass).map((r) => r.name).sort();
  const frozen = results.filter((r) => r.outcome === 'passed' && r.frozen?.length).sort(byName);
  const bad = results.filter(isBad).sort(byName);
  const passed = passing.length + frozen.length;
  return {
    onnx_version: onnxVersion, cases: results.length, passed, passed_frozen: frozen.length,
    pass_rate: results.length ? Number((passed / results.length).toFixed(4)) : 0,
    known_bad: Object.fromEntries(bad.map((r) => [r.name, `${outcomeLabel(r)}: ${r.reason ?? ''}`])),
    passing,
    passing_frozen: Object.fromEntries(frozen.map((r) => [r.name, r.frozen!])),
  };
}

export interface BaselineCheck {
  /** Cases that passed in the baseline and do not now (a plain pass now passing only frozen counts). */
  regressions: CaseResult[];
  /** Wrong, crashed or hung cases the baseline does not list as known. */
  unexpected: CaseResult[];
  /** Plain passes the baseline does not list as plain passes (update it to keep them). */
  newPasses: string[];
  /** Passes with inputs frozen the baseline does not list as passing at all. */
  newFrozenPasses: string[];
  /** Known-bad cases that are no longer wrong, crashed or hung. */
  fixed: string[];
  ok: boolean;
}

export function checkBaseline(results: readonly CaseResult[], b: Baseline): BaselineCheck {
  const was = new Set(b.passing);
  const wasFrozen = new Set(Object.keys(b.passing_frozen ?? {}));
  const regressions = results.filter((r) => (was.has(r.name) && !plainPass(r)) || (wasFrozen.has(r.name) && r.outcome !== 'passed'));
  const unexpected = results.filter((r) => isBad(r) && !(r.name in b.known_bad));
  const newPasses = results.filter((r) => plainPass(r) && !was.has(r.name)).map((r) => r.name);
  const newFrozenPasses = results.filter((r) => r.outcome === 'passed' && !plainPass(r) && !was.has(r.name) && !wasFrozen.has(r.name)).map((r) => r.name);
  const byName = new Map(results.map((r) => [r.name, r]));
  const fixed = Object.keys(b.known_bad).filter((n) => { const o = byName.get(n)?.outcome; return o === 'passed' || o === 'refused'; });
  return { regressions, unexpected, newPasses, newFrozenPasses, fixed, ok: regressions.length === 0 && unexpected.length === 0 };
}
