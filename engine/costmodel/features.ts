// Program features for the learned cost model: one fixed-length vector per stored buffer
// of a lowered kernel, in the spirit of TVM's per-store features (Ansor paper, appendix B;
// apache/tvm src/auto_scheduler/feature.cc): arithmetic counts weighted by trip counts,
// the annotated loops around the store, how each buffer is touched (bytes, cache lines,
// reuse, strides), an arithmetic-intensity curve, allocation sizes and the outer loops.
// Every value goes through slog(x) = sign(x)·log2(|x|+1), as TVM does.
//
// GPU quantities come last, so that one model serves both kinds of target (they are 0 for
// CPU programs, whose vectors are otherwise unchanged): the extents of the loops around the
// store bound to blockIdx.* / threadIdx.* / vthread (TVM's blockIdx_x_len ... vthread_len),
// and of the launch the store belongs to: blocks, threads per block, shared bytes, floats
// of per-thread buffers, and whether the store fills a shared buffer.
//
// The analysis works on the flat indices lower.ts produces. An index is treated as affine
// in the loop variables; floordiv/floormod of fused loops get an average slope (the slope
// of the dividend divided by the divisor, resp. the dividend's), which is what a
// feature needs, not an exact answer.

import { children, dtypeOf, walk, type Expr } from '../ir/expr';
import { printExpr } from '../ir/printer';
import { numElements } from '../ir/tensor';
import { lowerOnce, type Kernel, type LoopKind, type Stmt } from '../codegen/lower';
import type { State } from '../schedule/state';
import { THREAD_TAGS, type ThreadTag } from '../schedule/steps';

const ELEM_BYTES = 4; // float32 and int32
const CACHE_LINE = 64; // bytes, as TVM's CPU hardware params
/** Buffers described per store (TVM: max_n_bufs = 5). */
export const MAX_BUFFERS = 5;
const CURVE_POINTS = 10;

const slog = (x: number): number => (x >= 0 ? Math.log2(x + 1) : -Math.log2(1 - x));

// ---------------------------------------------------------------- feature layout

const COMPUTE_NAMES = [
  'float_addsub', 'float_mul', 'float_div', 'float_minmax', 'float_cmp', 'float_math',
  'int_addsub', 'int_mul', 'int_divmod', 'int_minmax', 'int_cmp', 'bool_op', 'select', 'loads',
] as const;
const LOOP_KINDS: readonly Exclude<LoopKind, 'serial'>[] = ['vectorize', 'unroll', 'parallel'];
/** Per annotation kind: count, product of extents, extent nearest the store, position one-hot. */
const LOOP_NAMES = ['num', 'prod', 'len', 'pos_innermost', 'pos_outermost', 'pos_middle', 'pos_none'];
const BUFFER_NAMES = [
  'read', 'write', 'read_write', 'bytes', 'unique_bytes', 'lines', 'unique_lines',
  'reuse_loop', 'reuse_serial', 'reuse_none', 'reuse_dis_iter', 'reuse_dis_bytes', 'reuse_ct',
  'bytes_d_reuse', 'unique_bytes_d_reuse', 'lines_d_reuse', 'unique_lines_d_reuse',
  'stride', 'inner_stride',
];
const TAIL_NAMES = [
  'alloc_size', 'alloc_prod', 'alloc_outer_prod', 'alloc_inner_prod',
  'outer_prod', 'num_loops', 'auto_unroll_max_step', 'guard_depth', 'is_reduction_update', 'num_stores',
];
/** Per thread tag (THREAD_TAGS order): the product of the extents of the loops around the store bound to it. */
const BOUND_NAMES = THREAD_TAGS.map((t) => `${t.replace('.', '_')}_len`);
/** Of the launch (the stage computed at root) the store belongs to; 0 on CPUs. */
const LAUNCH_NAMES = ['gpu_blocks', 'gpu_threads_per_block', 'gpu_shared_bytes', 'gpu_local_floats_per_thread', 'store_in_shared'];

/** Names of the feature vector's entries, in order. */
export const FEATURE_NAMES: readonly string[] = [
  ...COMPUTE_NAMES,
  ...LOOP_KINDS.flatMap((k) => LOOP_NAMES.map((n) => `${k}_${n}`)),
  ...Array.from({ length: MAX_BUFFERS }, (_, b) => BUFFER_NAMES.map((n) => `B${b}.${n}`)).flat(),
  ...Array.from({ length: CURVE_POINTS }, (_, i) => `arith_intensity_${i}`),
  ...TAIL_NAMES,
  ...BOUND_NAMES,
  ...LAUNCH_NAMES,
];
export const NUM_FEATURES = FEATURE_NAMES.length;

/**
 * The version of the feature vectors: raised whenever an entry's meaning or the layout
 * changes. Feature rows saved with the cost model's data carry it, and data of another
 * version is refused (model.ts warmStartFromData): its rows no longer describe the programs.
 */
export const FEATURE_VERSION = 1;

/** Index of a named feature (for tests and debugging). */
export function featureIndex(name: string): number {
  const i = FEATURE_NAMES.indexOf(name);
  if (i < 0) throw new Error(`no feature named ${name}`);
  return i;
}

// ---------------------------------------------------------------- index analysis

interface Loop { v: string; extent: number; kind: LoopKind; owner: string; node: Stmt & { k: 'for' } }

/**
 * Slopes of an integer index in every variable it uses (a used variable is present even
 * with slope 0). floordiv by a constant divides the slope, floormod keeps it: the average
 * slope, which is what the features need.
 */
type Form = Map<string, number>;
function affineForm(e: Expr): Form {
  switch (e.k) {
    case 'var': return new Map([[e.name, 1]]);
    case 'const': return new Map();
    case 'bin': {
      const a = affineForm(e.a), b = affineForm(e.b);
      switch (e.op) {
        case '-': return merge(a, b, -1);
        case '*': {
          if (e.b.k === 'const') return scaled(a, e.b.value);
          if (e.a.k === 'const') return scaled(b, e.a.value);
          return merge(a, b, 1);
        }
        case 'floordiv': return e.b.k === 'const' && e.b.value !== 0 ? scaled(a, 1 / e.b.value) : scaled(a, 0);
        case 'floormod': return a;
        default: return merge(a, b, 1);
      }
    }
    case 'select': case 'if': {
      const t = affineForm(e.t), f = affineForm(e.f), out = new Map(t);
      for (const [k, x] of f) out.set(k, Math.max(Math.abs(x), Math.abs(out.get(k) ?? 0)));
      for (const k of affineForm(e.cond).keys()) if (!out.has(k)) out.set(k, 0);
      return out;
    }
    case 'cast': case 'not': return affineForm(e.a);
    case 'call': return e.args.reduce((m, x) => merge(m, affineForm(x), 1), new Map<string, number>());
    case 'load': return e.indices.reduce((m, x) => merge(m, scaled(affineForm(x), 0), 1), new Map<string, number>());
    case 'reduce': return affineForm(e.source);
  }
}
function merge(a: Form, b: Form, sign: number): Form {
  const out = new Map(a);
  for (const [k, x] of b) out.set(k, (out.get(k) ?? 0) + sign * x);
  return out;
}
function scaled(a: Form, c: number): Form {
  const out = new Map<string, number>();
  for (const [k, x] of a) out.set(k, x * c);
  return out;
}
const slopeIn = (f: Form, v: string): number => Math.abs(f.get(v) ?? 0);

/** Arithmetic counts of one evaluation of an expression (loads counted, not their index math). */
function countOps(e: Expr, out: Float64Array): void {
  const at = (name: (typeof COMPUTE_NAMES)[number]): number => COMPUTE_NAMES.indexOf(name);
  const visit = (x: Expr): void => {
    switch (x.k) {
      case 'const': case 'var': return;
      case 'load': out[at('loads')]++; x.indices.forEach(visit); return;
      case 'cast': visit(x.a); return;
      case 'not': out[at('bool_op')]++; visit(x.a); return;
      case 'select': case 'if': out[at('select')]++; visit(x.cond); visit(x.t); visit(x.f); return;
      case 'call': out[at('float_math')]++; x.args.forEach(visit); return;
      case 'reduce': visit(x.source); return;
      case 'bin': {
        visit(x.a); visit(x.b);
        const isFloat = x.dtype === 'float32' || (x.dtype === 'bool' && dtypeOf(x.a) === 'float32');
        const kind = x.op === '+' || x.op === '-' ? 'addsub'
          : x.op === '*' ? 'mul'
            : x.op === '/' || x.op === 'floordiv' || x.op === 'floormod' ? 'div'
              : x.op === 'min' || x.op === 'max' ? 'minmax'
                : x.op === '&&' || x.op === '||' ? 'bool' : 'cmp';
        if (kind === 'bool') out[at('bool_op')]++;
        else if (isFloat) out[at(`float_${kind}` as (typeof COMPUTE_NAMES)[number])]++;
        else out[at(kind === 'div' ? 'int_divmod' : `int_${kind}` as (typeof COMPUTE_NAMES)[number])]++;
      }
    }
  };
  visit(e);
}

const FLOAT_OPS = ['float_addsub', 'float_mul', 'float_div', 'float_minmax', 'float_cmp', 'float_math'].map((n) => COMPUTE_NAMES.indexOf(n as (typeof COMPUTE_NAMES)[number]));

// ---------------------------------------------------------------- one buffer access

interface Access { buf: string; forms: Form[]; keys: string[]; read: boolean; write: boolean }

interface BufferRow { lines: number; bytes: number; values: number[] }

/** Elements of `buf` touched by its accesses while the loops `inner` (innermost last) run once. */
function footprint(acc: Access, inner: readonly Loop[], size: number): number {
  // Union of the accesses' ranges: per access, the span of its index over the loops, capped
  // by the product of the extents of the loops it uses (and by the buffer's size).
  let best = 0;
  for (const idx of acc.forms) {
    let span = 1, prod = 1;
    for (const l of inner) {
      if (!idx.has(l.v)) continue;
      prod *= l.extent;
      span += slopeIn(idx, l.v) * (l.extent - 1);
    }
    best = Math.max(best, Math.min(prod, Math.ceil(span)));
  }
  return Math.min(best, size);
}

function describeBuffer(acc: Access, allLoops: readonly Loop[], size: number, serialTouches: (l: Loop, buf: string) => number): BufferRow {
  const loops = allLoops.filter((l) => l.extent > 1); // a loop of one iteration moves nothing
  const n = loops.length;
  const outer = loops.reduce((a, l) => a * l.extent, 1);
  const accesses = acc.forms.length;
  const bytes = outer * ELEM_BYTES * accesses;
  const unique = footprint(acc, loops, size);
  const uniqueBytes = unique * ELEM_BYTES;
  // Stride: slope in the innermost loop that the index uses; innerStride: slope in the innermost loop.
  let stride = 0, innerStride = 0;
  for (let i = n - 1; i >= 0; i--) {
    const s = Math.max(...acc.forms.map((idx) => slopeIn(idx, loops[i].v)));
    if (i === n - 1) innerStride = s;
    if (s > 0) { stride = s; break; }
  }
  // Cache lines: accesses, less the innermost loops that do not move the index, times the
  // share of a line one step of the moving loop advances.
  let invariantInner = 1;
  for (let i = n - 1; i >= 0 && acc.forms.every((idx) => !idx.has(loops[i].v)); i--) invariantInner *= loops[i].extent;
  const lineShare = Math.min(1, (stride * ELEM_BYTES) / CACHE_LINE);
  const lines = (outer / invariantInner) * accesses * (stride > 0 ? lineShare : 1);
  const minSlope = Math.min(...loops.flatMap((l) => acc.forms.map((idx) => slopeIn(idx, l.v))).filter((s) => s > 0), Infinity);
  const uniqueLines = unique * (Number.isFinite(minSlope) ? Math.min(1, (minSlope * ELEM_BYTES) / CACHE_LINE) : 1);
  // Reuse: the innermost loop that does not move the index reuses the data `extent` times;
  // otherwise a loop whose body touches the buffer in several statements reuses it serially.
  let reuseType = 2, reuseCount = 0, reuseIter = 0, reuseBytes = 0;
  for (let i = n - 1; i >= 0; i--) {
    const l = loops[i];
    const inner = loops.slice(i + 1);
    if (acc.forms.every((idx) => !idx.has(l.v))) {
      reuseType = 0; reuseCount = l.extent;
      reuseIter = inner.reduce((a, x) => a * x.extent, 1);
      reuseBytes = footprint(acc, inner, size) * ELEM_BYTES;
      break;
    }
    const touches = serialTouches(l, acc.buf);
    if (touches > 1) {
      reuseType = 1; reuseCount = touches;
      reuseIter = inner.reduce((a, x) => a * x.extent, 1);
      reuseBytes = footprint(acc, inner, size) * ELEM_BYTES;
      break;
    }
  }
  const per = (x: number): number => (reuseType === 2 ? 2 * x : x / reuseCount);
  const values = [
    acc.read && !acc.write ? 1 : 0, acc.write && !acc.read ? 1 : 0, acc.read && acc.write ? 1 : 0,
    bytes, uniqueBytes, lines, uniqueLines,
    reuseType === 0 ? 1 : 0, reuseType === 1 ? 1 : 0, reuseType === 2 ? 1 : 0,
    reuseIter, reuseBytes, reuseCount,
    per(bytes), per(uniqueBytes), per(lines), per(uniqueLines),
    stride, innerStride,
  ];
  return { lines, bytes, values };
}

// ---------------------------------------------------------------- GPU launches

/** What a stage computed at root runs as on a GPU: its bound extents and buffers (all 0 on CPUs). */
interface LaunchInfo {
  readonly gpu: boolean;
  readonly blocks: number;
  readonly threads: number;
  readonly sharedBytes: number;
  readonly localFloats: number;
  readonly shared: ReadonlySet<string>;
}

const NO_LAUNCH: LaunchInfo = { gpu: false, blocks: 0, threads: 0, sharedBytes: 0, localFloats: 0, shared: new Set() };

const isThreadTag = (k: LoopKind): k is ThreadTag => (THREAD_TAGS as readonly string[]).includes(k);

/** The launch of one root stage's statements (as codegen/gpu.ts makes it); NO_LAUNCH when no loop is bound. */
function launchInfo(body: readonly Stmt[]): LaunchInfo {
  const extent = new Map<ThreadTag, number>();
  const shared = new Map<string, number>();
  let localFloats = 0;
  const visit = (s: Stmt): void => {
    if (s.k === 'for') {
      if (isThreadTag(s.kind)) extent.set(s.kind, Math.max(extent.get(s.kind) ?? 1, s.extent));
      s.body.forEach(visit);
    } else if (s.k === 'if' || s.k === 'thread') {
      s.body.forEach(visit);
    } else if (s.k === 'alloc') {
      if (s.scope === 'shared') shared.set(s.buf, s.size);
      else localFloats += s.size;
    }
  };
  body.forEach(visit);
  if (![...extent.keys()].some((t) => t.startsWith('blockIdx') || t.startsWith('threadIdx'))) return NO_LAUNCH;
  const product = (prefix: string): number => [...extent].reduce((a, [t, x]) => (t.startsWith(prefix) ? a * x : a), 1);
  return {
    gpu: true,
    blocks: product('blockIdx'),
    threads: product('threadIdx'),
    sharedBytes: [...shared.values()].reduce((a, n) => a + n * ELEM_BYTES, 0),
    localFloats,
    shared: new Set(shared.keys()),
  };
}

// ---------------------------------------------------------------- the kernel walk

export interface FeatureOptions {
  /** auto_unroll_max_step of each stage (by stage name, the `owner` of its loops). */
  autoUnroll?: ReadonlyMap<string, number>;
}

/** One feature row per stored buffer of `kernel` (slog-scaled), in first-store order. */
export function kernelFeatures(kernel: Kernel, opts: FeatureOptions = {}): Float32Array[] {
  const sizes = new Map<string, number>();
  for (const a of kernel.args) sizes.set(a.buf, numElements(a.tensor.shape));
  for (const t of kernel.temps) sizes.set(t.buf, t.size);
  const allocs = new Map<string, { size: number; outer: number }>();
  for (const t of kernel.temps) allocs.set(t.buf, { size: t.size, outer: 1 });

  // Which buffers each loop's body touches, and in how many store statements.
  const touches = new Map<Stmt, Map<string, number>>();
  const collect = (s: Stmt): Map<string, number> => {
    const m = new Map<string, number>();
    if (s.k === 'store') {
      m.set(s.buf, 1);
      const seen = new Set<string>([s.buf]);
      walk(s.value, (x) => { if (x.k === 'load' && !seen.has(x.tensor.name)) { seen.add(x.tensor.name); m.set(x.tensor.name, 1); } });
      return m;
    }
    if (s.k === 'for' || s.k === 'if') {
      for (const c of s.body) for (const [b, n] of collect(c)) m.set(b, (m.get(b) ?? 0) + n);
    }
    if (s.k === 'for') touches.set(s, m);
    return m;
  };
  kernel.body.forEach(collect);
  const serialTouches = (l: Loop, buf: string): number => touches.get(l.node)?.get(buf) ?? 0;

  const rows = new Map<string, { row: Float64Array; outer: number; stores: number }>();
  const loops: Loop[] = [];
  let guards = 0;
  const visit = (s: Stmt): void => {
    switch (s.k) {
      case 'alloc':
        sizes.set(s.buf, s.size);
        allocs.set(s.buf, { size: s.size, outer: loops.reduce((a, l) => a * l.extent, 1) });
        return;
      case 'if':
        guards++;
        s.body.forEach(visit);
        guards--;
        return;
      case 'for':
        loops.push({ v: s.v, extent: s.extent, kind: s.kind, owner: s.owner, node: s });
        s.body.forEach(visit);
        loops.pop();
        return;
      case 'store': {
        const row = storeRow(s, loops, guards, sizes, allocs, serialTouches, opts, launch);
        const outer = loops.reduce((a, l) => a * l.extent, 1);
        const prev = rows.get(s.buf);
        if (!prev) { rows.set(s.buf, { row, outer, stores: 1 }); return; }
        // Several stores to one buffer (a reduction's init and update): add the work, keep
        // the description of the store that runs most often.
        const keep = outer >= prev.outer ? row : prev.row;
        const other = keep === row ? prev.row : row;
        for (let i = 0; i < COMPUTE_NAMES.length; i++) keep[i] += other[i];
        rows.set(s.buf, { row: keep, outer: Math.max(outer, prev.outer), stores: prev.stores + 1 });
      }
    }
  };
  let launch: LaunchInfo = NO_LAUNCH;
  for (const part of kernel.parts) {
    launch = launchInfo(part.body);
    part.body.forEach(visit);
  }
  const numStores = FEATURE_NAMES.indexOf('num_stores');
  return [...rows.values()].map(({ row, stores }) => {
    row[numStores] = stores;
    return Float32Array.from(row, slog);
  });
}

function storeRow(
  s: Stmt & { k: 'store' },
  loops: readonly Loop[],
  guards: number,
  sizes: ReadonlyMap<string, number>,
  allocs: ReadonlyMap<string, { size: number; outer: number }>,
  serialTouches: (l: Loop, buf: string) => number,
  opts: FeatureOptions,
  launch: LaunchInfo,
): Float64Array {
  const row = new Float64Array(NUM_FEATURES);
  const outer = loops.reduce((a, l) => a * l.extent, 1);
  let o = 0;

  // 1. Arithmetic, times the trip count.
  const ops = new Float64Array(COMPUTE_NAMES.length);
  countOps(s.value, ops);
  for (let i = 0; i < ops.length; i++) row[o++] = ops[i] * outer;

  // 2. Annotated loops.
  for (const kind of LOOP_KINDS) {
    const idx = loops.map((l, i) => (l.kind === kind ? i : -1)).filter((i) => i >= 0);
    const prod = idx.reduce((a, i) => a * loops[i].extent, 1);
    const nearest = idx.length ? loops[idx[idx.length - 1]].extent : 0;
    const pos = idx.length === 0 ? 3 : idx.includes(loops.length - 1) ? 0 : idx.includes(0) ? 1 : 2;
    row[o++] = idx.length; row[o++] = idx.length ? prod : 0; row[o++] = nearest;
    for (let p = 0; p < 4; p++) row[o++] = pos === p ? 1 : 0;
  }

  // 3. Buffers, most cache lines first.
  const accesses = new Map<string, Access>();
  const touch = (buf: string, index: Expr, read: boolean, write: boolean): void => {
    const a = accesses.get(buf);
    const key = printExpr(index);
    if (!a) { accesses.set(buf, { buf, forms: [affineForm(index)], keys: [key], read, write }); return; }
    if (!a.keys.includes(key)) { a.keys.push(key); a.forms.push(affineForm(index)); }
    a.read ||= read; a.write ||= write;
  };
  touch(s.buf, s.index, false, true);
  const collectLoads = (e: Expr): void => {
    if (e.k === 'load') touch(e.tensor.name, e.indices[0], true, false);
    else children(e).forEach(collectLoads);
  };
  collectLoads(s.value);
  const buffers = [...accesses.values()].map((a) => describeBuffer(a, loops, sizes.get(a.buf) ?? Infinity, serialTouches));
  buffers.sort((a, b) => b.lines - a.lines || b.bytes - a.bytes);
  for (let b = 0; b < MAX_BUFFERS; b++) {
    const values = buffers[b]?.values;
    for (let i = 0; i < BUFFER_NAMES.length; i++) row[o++] = values ? values[i] : 0;
  }

  // 4. Arithmetic intensity: float ops over bytes touched, from the store outwards, sampled
  // at ten evenly spaced op counts (piecewise linear in between).
  const floatOps = FLOAT_OPS.reduce((a, i) => a + ops[i], 0);
  const levelOps: number[] = [], levelIntensity: number[] = [];
  let trips = 1;
  for (let i = loops.length; i >= 0; i--) {
    const inner = loops.slice(i);
    if (i < loops.length) trips *= loops[i].extent;
    let bytes = 0;
    for (const a of accesses.values()) bytes += footprint(a, inner, sizes.get(a.buf) ?? Infinity) * ELEM_BYTES;
    levelOps.push(floatOps * trips);
    levelIntensity.push(bytes > 0 ? (floatOps * trips) / bytes : 0);
  }
  const maxOps = levelOps[levelOps.length - 1];
  for (let p = 0; p < CURVE_POINTS; p++) {
    const target = (maxOps * (p + 1)) / CURVE_POINTS;
    let value = 0;
    if (maxOps > 0) {
      let k = levelOps.findIndex((x) => x >= target);
      if (k < 0) k = levelOps.length - 1;
      if (k === 0) value = levelIntensity[0] * (target / levelOps[0]);
      else {
        const [x0, x1] = [levelOps[k - 1], levelOps[k]], [y0, y1] = [levelIntensity[k - 1], levelIntensity[k]];
        value = x1 === x0 ? y1 : y0 + ((y1 - y0) * (target - x0)) / (x1 - x0);
      }
    }
    row[o++] = value;
  }

  // 5. Allocation of the stored buffer, outer loops, unroll pragma, guards.
  const alloc = allocs.get(s.buf);
  row[o++] = alloc ? alloc.size * ELEM_BYTES : 0;
  row[o++] = alloc ? alloc.size * ELEM_BYTES * alloc.outer : 0;
  row[o++] = alloc ? alloc.outer : 0;
  row[o++] = alloc ? outer / alloc.outer : 0;
  row[o++] = outer;
  row[o++] = loops.length;
  const owner = loops.length ? loops[loops.length - 1].owner : undefined;
  row[o++] = owner ? opts.autoUnroll?.get(owner) ?? 0 : 0;
  row[o++] = guards;
  row[o++] = accesses.get(s.buf)!.read ? 1 : 0;
  row[o++] = 1; // num_stores, filled in by the caller

  // 6. GPU: loops around the store bound to thread indices, and the launch.
  for (const tag of THREAD_TAGS) row[o++] = loops.reduce((a, l) => (l.kind === tag ? a * l.extent : a), launch.gpu ? 1 : 0);
  row[o++] = launch.blocks;
  row[o++] = launch.threads;
  row[o++] = launch.sharedBytes;
  row[o++] = launch.localFloats;
  row[o++] = launch.shared.has(s.buf) ? 1 : 0;
  return row;
}

/** Features of a scheduled state: lowered, then one row per stored buffer. Throws ScheduleError for an invalid state. */
export function stateFeatures(state: State): Float32Array[] {
  const autoUnroll = new Map<string, number>();
  for (const s of state.stages) if (s.autoUnroll.size) autoUnroll.set(s.name, Math.max(...s.autoUnroll.values()));
  return kernelFeatures(lowerOnce(state), { autoUnroll });
}
