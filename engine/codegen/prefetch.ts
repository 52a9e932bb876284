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

import { freeVars, walk, type Expr, add, and, floordiv, floormod, int, lt, mul, v } from '../ir/expr';
import { numElements } from '../ir/tensor';
import { blockedShape, type BlockedLayout } from './layout';
import { forEachExpr, linear, type KernelArg, type Stmt } from './lower';

/** Longest burst of prefetches per iteration (64-byte lines): see the header. */
export const MAX_LINES_PER_ITERATION = 32;
const LINE_FLOATS = 16;

type For = Extract<Stmt, { k: 'for' }>;

/** Every index with which `body` reads buffer `buf`. */
function readIndices(body: readonly Stmt[], buf: string): Expr[] {
  const into: Expr[] = [];
  forEachExpr(body, (e) => walk(e, (x) => { if (x.k === 'load' && x.tensor.name === buf) into.push(x.indices[0]); }));
  return into;
}

/**
 * T when `index` is `panel * floordiv(f, T) + (terms free of f)`, undefined for any other
 * form (`panel * f` included: each iteration a panel of its own, nothing to share out).
 */
function panelPeriod(index: Expr, f: string, panel: number): number | undefined {
  // Atoms: loop variables, floordiv and floormod; sums and products by constants are expanded.
  const l = linear(index, (e) => !(e.k === 'bin' && (e.op === 'floordiv' || e.op === 'floormod')), true);
  if (!l) return undefined;
  const withF = [...l.terms].filter(([key, c]) => c !== 0 && freeVars(l.atoms.get(key)!).has(f));
  if (withF.length !== 1 || withF[0][1] !== panel) return undefined;
  const atom = l.atoms.get(withF[0][0])!;
  if (atom.k !== 'bin' || atom.op !== 'floordiv' || atom.a.k !== 'var' || atom.a.name !== f || atom.b.k !== 'const') return undefined;
  return atom.b.value > 1 ? atom.b.value : undefined;
}

/** The prefetch for one parallel loop and one blocked input, if the loop walks the input's panels. */
function panelPrefetch(loop: For, buf: string, panelFloats: number, panels: number): Stmt | undefined {
  const indices = readIndices(loop.body, buf);
  if (indices.length === 0) return undefined;
  const periods = new Set(indices.map((i) => panelPeriod(i, loop.v, panelFloats)));
  const [period] = periods;
  if (periods.size !== 1 || period === undefined || loop.extent % period !== 0) return undefined;
  const lines = Math.ceil(panelFloats / LINE_FLOATS);
  const per = Math.ceil(lines / period);
  if (per > MAX_LINES_PER_ITERATION) return undefined;
  const q = floordiv(v(loop.v), period), r = floormod(v(loop.v), period);
  const index = add(mul(add(q, 1), panelFloats), mul(r, per * LINE_FLOATS));
  // The last panel has no next one; a share that runs past the panel's end only asks for
  // lines of the one after it, and prefetching never faults.
  return { k: 'if', cond: and(lt(add(q, 1), panels), lt(mul(r, per), int(lines))), body: [{ k: 'prefetch', buf, index, lines: per }] };
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
    const hints = inputs.flatMap((i) => panelPrefetch(s, i.buf, i.panelFloats, i.panels) ?? []);
    return hints.length ? { ...s, body: [...hints, ...s.body] } : s;
  });
}
