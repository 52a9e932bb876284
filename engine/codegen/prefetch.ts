// Software prefetch of the next weight panel (CPU C only). TVM has a prefetch schedule
// primitive that its auto-scheduler does not use on CPUs; this pass is our own. A conv or
// dense layer whose weights outweigh its input runs its channel tiles outermost
// (schedule/defaults.ts): the parallel loop's iteration f works on weight panel
// floordiv(f, T) of the blocked layout (layout.ts) and on position tile floormod(f, T), so
// T iterations in a row read one panel, from L1 after the first. The first read of each
// panel comes from L3 or memory: in a network the layer's weights were last touched a whole
// run earlier, and the hardware prefetcher does not hide it (a 14x14x512 pointwise conv
// alone, its weights flushed from the caches, two runs: 3% and 9% slower than warm without
// this pass, 2% faster and 3% slower with it).
//
// So each iteration, before its tile, asks for its share of the next panel: lines
// [r * per, (r + 1) * per) of panel q + 1, with per = ceil(lines / T). The next panel is
// in cache when its first tile starts, and each of its lines is asked for once.
//
// Measured on an AVX2 box (Zen 3, 1 thread, the kernel's fastest of 180 runs
// in the network): mobilenet's five 14x14x512 pointwise convs 1.17 -> 1.12-1.13 ms each and
// its 14x14 256 -> 512 one 0.577 -> 0.556. Its 7x7 ones, whose share is 57 and 114 lines
// per iteration, did not gain (perhaps because a burst that long holds up the tile after
// it; not measured). Hence MAX_LINES_PER_ITERATION.
//
// Where the share would be longer than that and several iterations read each panel, the
// share is instead spread through the iteration's reduction loop (`trickle`): one line
// every few steps rather than all at its start. This holds only where
// the next panel fits in the L2 beside the current one and the inputs every tile reads
// (TRICKLE_L2_BYTES); else the prefetched panel evicts what the tiles re-read. On a 2-core
// AVX-512 Xeon, 1 thread, `bench/compare-builds.ts --profile` (per-kernel medians in the
// network, with / without): BERT-base's 128x768 by 768 dense 0.90 and its 768 by 3072 with
// GELU 0.91 (panels of 64 columns, 192 KB, 140 lines per tile of 6 rows), the network 0.97
// (2 threads 1.00); mobilenet-v2's 7x7 pointwise convs 0.91-0.93, the network 0.98 summed.
// The 128x3072 by 768 dense (768 KB panels beside a 1.5 MB input) ran 2% slower with it in a
// kernel harness whose weights came from L3, hence the bound.
//
// Where the panel is read by one iteration, or the trickle does not fit, the panel is
// instead prefetched as the reduction walks it: the innermost serial loop that reads the
// panel by at least a line per iteration asks, each iteration, for the lines it will read
// STREAM_AHEAD_FLOATS further on.
// A panel that several tiles re-read but that outgrows the L1 (NEAR_L1_BYTES: ViT-S/16's
// 384-deep panels of 64 columns are 96 KB) is read from the L2 by every tile after the
// first, and the hardware does not fetch it far enough ahead: there the reduction loop also
// asks, each step, for the lines it reads NEAR_AHEAD_FLOATS further on, beside the burst or
// the trickle of the next panel. ViT's 197x384 by 1152 dense in a C harness (1 thread,
// AVX-512 Xeon, its weights rotated through 32 copies, medians of 8 interleaved rounds of
// 100 runs): 0.975 ms without, 0.915 with it 2 KB ahead, 0.918 1 KB, 0.934 8 KB. In the
// network (`bench/compare-builds.ts --profile`, 1 thread; 2): ViT's changed denses 0.936
// each (0.975-0.991), the network 0.960 (0.985);
// BERT-base's qkv and fc1 0.973-0.984 (0.942-0.951), the network 0.983 (0.982);
// mobilenet-v2's 7x7 pointwise convs 0.948-0.961, the network 0.993 (0.999); mobilenet's
// pointwise convs 0.997-1.017 (0.969-0.985), the network 0.999 (1.005); resnet-50 1.002
// (0.978). Not measured on AVX2.
//
// A panel read by one or two tiles and then left (a weight-bound layer: DCGAN's first
// transposed conv, 16 output positions per 2x2x1024 slice of 512 channels) otherwise waits
// on L3 or memory at every line: that layer's phase convs, the kernel alone with its weights
// rotated through 16 copies (so they come from L3, as in the network), 1 thread, AVX-512
// Xeon: 1.18 ms without, 0.94 / 0.89 / 0.82 / 0.82 ms with the prefetch 1, 4, 8 and 16 KB
// ahead.

import { freeVars, substitute, walk, type Expr, add, and, eq, floordiv, floormod, int, lt, mul, v } from '../ir/expr';
import { numElements } from '../ir/tensor';
import { affineIn } from './fold';
import { blockedShape, type BlockedLayout } from './layout';
import { forEachExpr, linear, type KernelArg, type Stmt } from './lower';

/** Longest burst of prefetches per iteration (64-byte lines): see the header. */
export const MAX_LINES_PER_ITERATION = 32;
/** How far ahead of its reads the reduction loop prefetches a panel too long for a burst (8 KB): see the header. */
export const STREAM_AHEAD_FLOATS = 2048;
/**
 * The L2 that the trickle assumes (see the header): the smallest of current x86 server cores
 * (Zen 4's 1 MB; Intel's are 2 MB). Two panels and the loop's other inputs must fit in it.
 */
export const TRICKLE_L2_BYTES = 1024 * 1024;
/** How far ahead the reduction loop prefetches a panel that it re-reads from the L2 (2 KB): see panelPrefetch. */
export const NEAR_AHEAD_FLOATS = 512;
/** The L1 that a re-read panel must outgrow for that prefetch: the smallest of current x86 cores (Zen 4's 32 KB; Intel's are 48 KB). */
export const NEAR_L1_BYTES = 32 * 1024;
const LINE_FLOATS = 16;

type For = Extract<Stmt, { k: 'for' }>;

/** Every index with which `body` reads buffer `buf`. */
function readIndices(body: readonly Stmt[], buf: string): Expr[] {
  const into: Expr[] = [];
  forEachExpr(body, (e) => walk(e, (x) => { if (x.k === 'load' && x.tensor.name === buf) into.push(x.indices[0]); }));
  return into;
}

/**
 * T when `index` is `panel * floordiv(f, T) + (terms free of f)`, 1 when it is
 * `panel * f + (terms free of f)` (each iteration a panel of its own), undefined for any
 * other form.
 */
function panelPeriod(index: Expr, f: string, panel: number): number | undefined {
  // Atoms: loop variables, floordiv and floormod; sums and products by constants are expanded.
  const l = linear(index, (e) => !(e.k === 'bin' && (e.op === 'floordiv' || e.op === 'floormod')), true);
  if (!l) return undefined;
  const withF = [...l.terms].filter(([key, c]) => c !== 0 && freeVars(l.atoms.get(key)!).has(f));
  if (withF.length !== 1 || withF[0][1] !== panel) return undefined;
  const atom = l.atoms.get(withF[0][0])!;
  if (atom.k === 'var' && atom.name === f) return 1;
  if (atom.k !== 'bin' || atom.op !== 'floordiv' || atom.a.k !== 'var' || atom.a.name !== f || atom.b.k !== 'const') return undefined;
  return atom.b.value >= 1 ? atom.b.value : undefined;
}

/**
 * The prefetch for one parallel loop and one blocked input, if the loop walks the input's
 * panels: `stream`, the loop's body, with its reads of the panel prefetched ahead where the
 * header says so (streamPrefetch, the trickle), and `next`, a share of the next panel for
 * the top of each iteration, where that share is short enough for a burst.
 */
function panelPrefetch(loop: For, buf: string, panelFloats: number, panels: number, otherInputFloats: number): { next?: Stmt; stream: Stmt[] } | undefined {
  const indices = readIndices(loop.body, buf);
  if (indices.length === 0) return undefined;
  const periods = new Set(indices.map((i) => panelPeriod(i, loop.v, panelFloats)));
  const [period] = periods;
  if (periods.size !== 1 || period === undefined || loop.extent % period !== 0) return undefined;
  const lines = Math.ceil(panelFloats / LINE_FLOATS);
  const per = Math.ceil(lines / period);
  // Each iteration a panel of its own: a panel short enough for a burst is left to the
  // hardware, as before this pass had a rule for it (not measured).
  if (period === 1 && per <= MAX_LINES_PER_ITERATION) return undefined;
  const q = floordiv(v(loop.v), period), r = floormod(v(loop.v), period);
  // The last panel has no next one; a share that runs past the panel's end only asks for
  // lines of the one after it, and prefetching never faults.
  const hasNext = and(lt(add(q, 1), panels), lt(mul(r, per), int(lines)));
  const share = add(mul(add(q, 1), panelFloats), mul(r, per * LINE_FLOATS));
  // A panel that several tiles re-read and that outgrows the L1 comes from the L2 at every
  // tile: its reduction loop also asks for the lines it reads NEAR_AHEAD_FLOATS on.
  const nearStream = (body: Stmt[]): Stmt[] => (period > 1 && panelFloats * 4 > NEAR_L1_BYTES ? streamPrefetch(body, buf, NEAR_AHEAD_FLOATS) ?? body : body);
  if (per > MAX_LINES_PER_ITERATION) {
    const fits = (2 * panelFloats + otherInputFloats) * 4 <= TRICKLE_L2_BYTES;
    const trickled = period > 1 && fits ? trickle(loop.body, buf, share, per, hasNext) : undefined;
    const stream = trickled ? nearStream(trickled) : streamPrefetch(loop.body, buf, STREAM_AHEAD_FLOATS);
    return stream ? { stream } : undefined;
  }
  const next: Stmt = { k: 'if', cond: hasNext, body: [{ k: 'prefetch', buf, index: share, lines: per }] };
  return { next, stream: nearStream([...loop.body]) };
}

/**
 * `body` with the `per` lines from `share` prefetched through the innermost serial loop that
 * reads `buf` (see the header): every `every` steps a line, `every` the largest power of two
 * that still leaves a step for each line, or several lines a step where the loop is shorter
 * than the share. Undefined where no serial loop reads `buf`, or one that does sits inside
 * another (a conv's taps around its channels): the share would be asked for once per outer step.
 * A loop of one step (a unit axis the lowering kept) does not repeat what it holds, so it
 * neither takes the share nor counts as an outer loop.
 */
function trickle(body: readonly Stmt[], buf: string, share: Expr, per: number, hasNext: Expr): Stmt[] | undefined {
  const at = atInnermostReads(body, buf, 1, (s) => {
    const k = v(s.v);
    if (per > s.extent) {
      const lines = Math.ceil(per / s.extent);
      const first = mul(k, lines);
      return { ...s, body: [{ k: 'if', cond: and(hasNext, lt(first, int(per))), body: [{ k: 'prefetch', buf, index: add(share, mul(first, LINE_FLOATS)), lines }] }, ...s.body] };
    }
    let every = 1;
    while (every * 2 * per <= s.extent) every *= 2;
    const line = every === 1 ? k : floordiv(k, every);
    const due = every === 1 ? lt(k, int(per)) : and(eq(floormod(k, every), 0), lt(line, int(per)));
    return { ...s, body: [{ k: 'if', cond: and(hasNext, due), body: [{ k: 'prefetch', buf, index: add(share, mul(line, LINE_FLOATS)), lines: 1 }] }, ...s.body] };
  });
  return at.placed && !at.nested ? at.body : undefined;
}

/**
 * `body` with `place` applied to each innermost serial loop of more than `minExtent` steps
 * that reads `buf` (no such loop inside it reads `buf`); where `place` declines (undefined),
 * the loop stays as it was. `placed`: whether any loop was placed; `nested`: whether one of
 * the innermost loops sits inside another serial loop of more than `minExtent` steps that
 * reads `buf`. Loops and guards that hold no placement come back as the same objects.
 */
function atInnermostReads(body: readonly Stmt[], buf: string, minExtent: number, place: (loop: For) => For | undefined): { body: Stmt[]; placed: boolean; nested: boolean } {
  let placed = false, nested = false;
  const visit = (stmts: readonly Stmt[], inReading: boolean): Stmt[] => stmts.map((s): Stmt => {
    if (s.k !== 'for' && s.k !== 'if') return s;
    const reading = s.k === 'for' && s.kind === 'serial' && s.extent > minExtent && readIndices(s.body, buf).length > 0;
    if (reading && !readsInSerialLoop(s.body, buf, minExtent)) {
      if (inReading) nested = true;
      const out = place(s);
      if (out) placed = true;
      return out ?? s;
    }
    const inner = visit(s.body, inReading || reading);
    return inner.every((x, i) => x === s.body[i]) ? s : { ...s, body: inner };
  });
  const out = visit(body, false);
  return { body: out, placed, nested };
}

/** Whether a serial loop in `body` (nested ones included) of more than `minExtent` steps reads `buf`. */
function readsInSerialLoop(body: readonly Stmt[], buf: string, minExtent = 0): boolean {
  return body.some((s) => (s.k === 'for' && s.kind === 'serial' && s.extent > minExtent && readIndices(s.body, buf).length > 0)
    || ((s.k === 'for' || s.k === 'if') && readsInSerialLoop(s.body, buf, minExtent)));
}

/** The variables of the loops in `body`, nested ones included. */
function loopVars(body: readonly Stmt[], into = new Set<string>()): Set<string> {
  for (const s of body) {
    if (s.k === 'for') { into.add(s.v); loopVars(s.body, into); }
    else if (s.k === 'if' || s.k === 'thread') loopVars(s.body, into);
  }
  return into;
}

/**
 * `body` with a prefetch at the top of each innermost serial loop that reads `buf` (no
 * serial loop inside it does), by the same stride of at least a line per iteration at every
 * read and over at least `ahead` floats in all: the lines that the iteration's first
 * read reaches `ahead` floats further on (see the header). Undefined where no loop
 * qualifies. Running past the buffer's end only asks for lines of whatever follows it:
 * prefetching never faults.
 */
function streamPrefetch(body: readonly Stmt[], buf: string, ahead: number): Stmt[] | undefined {
  const at = atInnermostReads(body, buf, 0, (s) => {
    const indices = readIndices(s.body, buf);
    // How far each read moves per step: 0 where it is not affine in the loop (a floordiv of it).
    const strides = new Set(indices.map((i) => affineIn(i, s.v) ?? 0));
    const [stride] = strides;
    // Not a loop shorter than the distance ahead, nor the loops around it: ViT's patch
    // embedding (3 channels per tap of a 16x16 patch) ran 10% slower with the prefetch in
    // its channel loop and 7% with it in the tap loop (per-kernel profiles, 1 thread).
    if (strides.size !== 1 || stride < LINE_FLOATS || s.extent * stride < ahead) return undefined;
    const zero = new Map([...loopVars(s.body)].map((name) => [name, int(0)]));
    const index = add(substitute(indices[0], zero), int(ahead));
    return { ...s, body: [{ k: 'prefetch', buf, index, lines: Math.ceil(stride / LINE_FLOATS) }, ...s.body] };
  });
  return at.placed ? at.body : undefined;
}

/** `body` with a prefetch of the next weight panel at the top of each parallel loop that walks one (see the header). */
export function prefetchNextPanels(body: readonly Stmt[], args: readonly KernelArg[], layouts: readonly BlockedLayout[]): Stmt[] {
  if (layouts.length === 0) return [...body];
  const inputs = layouts.map((l) => {
    const arg = args[l.input];
    const panels = arg.tensor.shape[l.axis] / l.block;
    return { buf: arg.buf, panels, panelFloats: numElements(blockedShape(arg.tensor.shape, l.axis, l.block)) / panels };
  });
  return body.map((s) => {
    if (s.k !== 'for' || s.kind !== 'parallel') return s;
    let loop: For = s;
    const hints: Stmt[] = [];
    for (const i of inputs) {
      // What the loop's tiles re-read beside the panels: its other arguments that it loads.
      const others = args.filter((a) => a.buf !== i.buf && readIndices(s.body, a.buf).length > 0);
      const p = panelPrefetch(loop, i.buf, i.panelFloats, i.panels, others.reduce((n, a) => n + numElements(a.tensor.shape), 0));
      if (p?.next) hints.push(p.next);
      if (p) loop = { ...loop, body: p.stream };
    }
    return hints.length ? { ...loop, body: [...hints, ...loop.body] } : loop;
  });
}
