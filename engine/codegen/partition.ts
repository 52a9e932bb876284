// Loop partitioning of split tails (the job of TVM's LoopPartition pass; this is our own,
// smaller form). A split that does not divide its axis leaves guards such as
// `w0 * 6 + i < 14` inside the tile: after unrolling, one test per register of the tile,
// in the reduction's innermost loop. On an AVX2 box a 1x1 conv with a
// 6-column tile over a 14-wide row ran at 2.5 ms guarded, against 1.5 ms for the same
// tile without guards.
//
// So a loop body that holds such guards is versioned: where every guard holds for every
// iteration of the loops inside the body (the tile is whole), the body runs without them;
// elsewhere (the tail) it runs as lowered, at its one tile index where it has only one
// (tailTile), so that its guards fold to constants too. A guard qualifies when it compares an
// expression that never decreases as an inner loop variable grows (sums, products by
// non-negative constants, floor division by a positive constant) against a bound that
// does not depend on the inner loops: its worst case over the inner loops is then at
// their last (for `<`) or first (for `>=`) iteration, a condition on the outer variables
// only. CPU C only: the GPU renderers keep their guards.
//
// The same holds for guards inside expressions: a padded conv whose padding is inlined
// (depthwise convs, pooling, a conv over an image's 3 channels) reads `cond ? load : 0` at
// every tap, with `cond` a bounds test on the tap's input row and column. Outside the
// border those tests all hold, so the whole version reads the input directly.

import { all, eq, floordiv, freeVars, int, not, readTensors, rewrite, substitute, v, walk, type Bin, type Expr } from '../ir/expr';
import { printExpr } from '../ir/printer';
import { constValue, foldExpr, mentions } from './fold';
import { forEachExpr, type Stmt } from './lower';

type For = Extract<Stmt, { k: 'for' }>;

/**
 * `e` never decreases as `x` grows (the other variables held). A `floormod(a, m)` counts
 * where `a` does, on the condition that it does not wrap inside the tile: its argument is
 * pushed to `wraps`, and the caller adds that condition (see noWrap).
 */
function nonDecreasingIn(e: Expr, x: string, wraps: Bin[]): boolean {
  if (!mentions(e, x)) return true;
  switch (e.k) {
    case 'var': return true;
    case 'bin': {
      const c = (f: Expr): number | undefined => constValue(f);
      switch (e.op) {
        case '+': case 'min': case 'max': return nonDecreasingIn(e.a, x, wraps) && nonDecreasingIn(e.b, x, wraps);
        case '-': return nonDecreasingIn(e.a, x, wraps) && !mentions(e.b, x);
        case '*': {
          const ca = c(e.a), cb = c(e.b);
          return (ca !== undefined && ca >= 0 && nonDecreasingIn(e.b, x, wraps)) || (cb !== undefined && cb >= 0 && nonDecreasingIn(e.a, x, wraps));
        }
        case 'floordiv': { const cb = c(e.b); return cb !== undefined && cb > 0 && nonDecreasingIn(e.a, x, wraps); }
        case 'floormod': {
          const cb = c(e.b);
          if (cb === undefined || cb <= 0 || !nonDecreasingIn(e.a, x, wraps)) return false;
          wraps.push(e);
          return true;
        }
        default: return false;
      }
    }
    default: return false;
  }
}

/**
 * The condition under which `floormod(a, m)` does not wrap while the inner loops run: `a`
 * never decreases in them, so it spans [a at their first iteration, a at their last], and
 * where both ends have the same quotient it is `a - m * quotient` all along, itself never
 * decreasing. A tile of 6 output positions over a 112-wide row wraps in 2 of 56 tiles.
 */
function noWrap(mod: Bin, inner: ReadonlyMap<string, number>): Expr {
  const at = (last: boolean): Expr => substitute(mod.a, new Map([...freeVars(mod.a)].filter((n) => inner.has(n)).map((n) => [n, int(last ? inner.get(n)! - 1 : 0)])));
  return foldExpr(eq(floordiv(at(false), mod.b), floordiv(at(true), mod.b)));
}

function conjuncts(e: Expr): Expr[] {
  return e.k === 'bin' && e.op === '&&' ? [...conjuncts(e.a), ...conjuncts(e.b)] : [e];
}

/** The loop variables bound inside `body`, with their extents. */
function innerLoops(body: readonly Stmt[], into = new Map<string, number>()): Map<string, number> {
  for (const s of body) {
    if (s.k === 'for') { into.set(s.v, s.extent); innerLoops(s.body, into); } else if (s.k === 'if' || s.k === 'thread') innerLoops(s.body, into);
  }
  return into;
}

/**
 * The conditions on the outer variables under which `guard` holds for every value of the
 * `inner` loop variables, or undefined where there are none (an unsupported form, or a
 * worst case that does not depend on the outer variables).
 */
function wholeTileConditions(guard: Expr, inner: ReadonlyMap<string, number>): Expr[] | undefined {
  if (guard.k !== 'bin') return undefined;
  const upper = guard.op === '<' || guard.op === '<=';
  const lower = guard.op === '>=' || guard.op === '>';
  if (!upper && !lower) return undefined;
  if (readTensors(guard).length > 0) return undefined; // a test on data (a ReLU's select), not on indices
  const vars = [...freeVars(guard.a)].filter((n) => inner.has(n));
  if ([...freeVars(guard.b)].some((n) => inner.has(n))) return undefined;
  const wraps: Bin[] = [];
  if (vars.length === 0 || !vars.every((n) => nonDecreasingIn(guard.a, n, wraps))) return undefined;
  const worst = new Map(vars.map((n) => [n, int(upper ? inner.get(n)! - 1 : 0)]));
  const cond = foldExpr({ ...guard, a: substitute(guard.a, worst) });
  if (constValue(cond) !== undefined) return undefined;
  const sides = wraps.map((m) => noWrap(m, inner));
  if (sides.some((c) => constValue(c) === 0)) return undefined; // wraps in every tile
  return [...sides.filter((c) => constValue(c) === undefined), cond];
}

/** `e` with the guard conjuncts in `whole` (printed) dropped from its selects: where none is left, the select is its true branch. */
function exprWithoutGuards(e: Expr, whole: ReadonlySet<string>): Expr {
  return rewrite(e, (x) => {
    if (x.k !== 'select' && x.k !== 'if') return undefined;
    const left = all(conjuncts(x.cond).filter((c) => !whole.has(printExpr(c))));
    return left ? { ...x, cond: left } : x.t;
  });
}

/** `body` with the guard conjuncts in `whole` (printed) dropped: they hold everywhere there. */
function withoutGuards(body: readonly Stmt[], whole: ReadonlySet<string>): Stmt[] {
  return body.flatMap((s): Stmt[] => {
    if (s.k === 'for') return [{ ...s, body: withoutGuards(s.body, whole) }];
    if (s.k === 'if') {
      const inner = withoutGuards(s.body, whole);
      const left = all(conjuncts(s.cond).filter((c) => !whole.has(printExpr(c))));
      return left ? [{ ...s, cond: left, body: inner }] : inner;
    }
    if (s.k === 'store') return [{ ...s, index: exprWithoutGuards(s.index, whole), value: exprWithoutGuards(s.value, whole) }];
    return [s];
  });
}

/** The body of `loop` in two versions (whole tiles without their guards, then the tail as lowered), or undefined where no guard qualifies. */
function versioned(loop: For): Stmt[] | undefined {
  const inner = innerLoops(loop.body);
  const whole = new Map<string, Expr>();
  const conditions = new Map<string, Expr>();
  const consider = (cond: Expr): void => {
    for (const c of conjuncts(cond)) {
      const ws = wholeTileConditions(c, inner);
      if (!ws) continue;
      whole.set(printExpr(c), c);
      for (const w of ws) conditions.set(printExpr(w), w);
    }
  };
  forEachExpr(loop.body, (e) => walk(e, (x) => { if (x.k === 'select' || x.k === 'if') consider(x.cond); }));
  const visit = (body: readonly Stmt[]): void => {
    for (const s of body) {
      if (s.k === 'for' || s.k === 'thread') visit(s.body);
      if (s.k !== 'if') continue;
      consider(s.cond);
      visit(s.body);
    }
  };
  visit(loop.body);
  if (conditions.size === 0) return undefined;
  const cond = all([...conditions.values()])!;
  const tail = tailTile(cond, loop);
  return [
    { k: 'if', cond, body: withoutGuards(loop.body, new Set(whole.keys())) },
    { k: 'if', cond: not(cond), body: localsRenamed(tail ? tightenGuardedLoops(replaced(loop.body, tail.of, int(tail.value))) : loop.body, '_tail') },
  ];
}

/**
 * `body` with the buffers it allocates renamed (`suffix` appended): the tail's copy of a
 * register tile is then a buffer of its own, so that the renderer can keep the whole
 * tiles' copy in registers even where the tail's is indexed by a loop.
 */
function localsRenamed(body: readonly Stmt[], suffix: string): Stmt[] {
  const names = new Set<string>();
  const collect = (b: readonly Stmt[]): void => {
    for (const st of b) {
      if (st.k === 'alloc') names.add(st.buf);
      if (st.k === 'for' || st.k === 'if' || st.k === 'thread') collect(st.body);
    }
  };
  collect(body);
  if (names.size === 0) return [...body];
  const name = (buf: string): string => (names.has(buf) ? `${buf}${suffix}` : buf);
  const expr = (e: Expr): Expr => rewrite(e, (x) => (x.k === 'load' && names.has(x.tensor.name) ? { ...x, tensor: { ...x.tensor, name: name(x.tensor.name) } } : undefined));
  const go = (b: readonly Stmt[]): Stmt[] => b.map((st): Stmt => {
    switch (st.k) {
      case 'alloc': return { ...st, buf: name(st.buf) };
      case 'store': return { ...st, buf: name(st.buf), index: expr(st.index), value: expr(st.value) };
      case 'if': return { ...st, cond: expr(st.cond), body: go(st.body) };
      case 'for': case 'thread': return { ...st, body: go(st.body) };
      case 'prefetch': return { ...st, buf: name(st.buf), index: expr(st.index) };
      default: return st;
    }
  });
  return go(body);
}

/** The versioned loop's extent up to which the tail's tile index is looked for. */
const MAX_TAIL_SEARCH = 4096;

/**
 * The tile index the tail runs at, where it has one value: an expression of the versioned
 * loop's variable `v` alone (`v` itself, or `floormod(v, m)`, `floordiv(v, m)` where it was
 * fused with other loops) through which alone `cond` (the whole tiles' condition) depends
 * on `v`, and which takes exactly one value where `cond` fails. A 49-position image cut into
 * tiles of 14 has its tail at tile 3; with the index a constant there, each position's guard
 * folds and the tail is rendered without them, as whole tiles are, instead of testing 14
 * guards in the innermost loop (resnet's 7x7 layers).
 */
function tailTile(cond: Expr, loop: For): { of: Expr; value: number } | undefined {
  if (loop.extent > MAX_TAIL_SEARCH) return undefined;
  const candidates: Expr[] = [v(loop.v)];
  walk(cond, (x) => {
    if (x.k !== 'bin' || (x.op !== 'floormod' && x.op !== 'floordiv')) return;
    const vars = freeVars(x);
    if (vars.size === 1 && vars.has(loop.v)) candidates.push(x);
  });
  const u = '__tail_tile';
  const at = (e: Expr, name: string, value: number): number | undefined => constValue(foldExpr(substitute(e, new Map([[name, int(value)]]))));
  for (const of of candidates) {
    const abstracted = rewrite(cond, (x) => (isIndex(x, of) ? v(u) : undefined));
    const vars = freeVars(abstracted);
    if (vars.size !== 1 || !vars.has(u)) continue;
    const values = new Set<number>();
    for (let i = 0; i < loop.extent; i++) {
      const value = at(of, loop.v, i);
      if (value === undefined) return undefined;
      values.add(value);
    }
    const failing: number[] = [];
    for (const value of values) {
      const holds = at(abstracted, u, value);
      if (holds === undefined) return undefined;
      if (holds === 0) failing.push(value);
    }
    if (failing.length === 1) return { of, value: failing[0] };
  }
  return undefined;
}

/**
 * Whether `x` is the tile index `of` (the loop variable, or floormod/floordiv of it by a
 * constant): compared by shape, not printed, since the bodies it is matched against can be
 * large (a Winograd transform's select chains).
 */
function isIndex(x: Expr, of: Expr): boolean {
  if (of.k === 'var') return x.k === 'var' && x.name === of.name;
  return of.k === 'bin' && x.k === 'bin' && x.op === of.op && isIndex(x.a, of.a) && x.b.k === 'const' && of.b.k === 'const' && x.b.value === of.b.value;
}

/** `body` with every occurrence of the tile index `of` replaced by `by`. */
function replaced(body: readonly Stmt[], of: Expr, by: Expr): Stmt[] {
  const expr = (e: Expr): Expr => rewrite(e, (x) => (isIndex(x, of) ? by : undefined));
  return body.map((s): Stmt => {
    switch (s.k) {
      case 'store': return { ...s, index: expr(s.index), value: expr(s.value) };
      case 'if': return { ...s, cond: expr(s.cond), body: replaced(s.body, of, by) };
      case 'for': case 'thread': return { ...s, body: replaced(s.body, of, by) };
      case 'prefetch': return { ...s, index: expr(s.index) };
      default: return s;
    }
  });
}

/** The loop extent up to which tightenGuardedLoops evaluates a guard at every iteration. */
const MAX_TIGHTEN_EXTENT = 64;

/**
 * The iterations of `loop` at which `guard` holds, where they are a prefix [0, n) and the
 * guard folds to a constant at each (it depends on the loop variable and constants only);
 * undefined otherwise.
 */
function holdingPrefix(guard: Expr, loop: For): number | undefined {
  if (!mentions(guard, loop.v) || [...freeVars(guard)].some((n) => n !== loop.v)) return undefined;
  let n = 0;
  for (let i = 0; i < loop.extent; i++) {
    const c = constValue(foldExpr(substitute(guard, new Map([[loop.v, int(i)]]))));
    if (c === undefined) return undefined;
    if (c !== 0) { if (n !== i) return undefined; n = i + 1; }
  }
  return n;
}

/**
 * A tail tile's loops with their guards turned into bounds. In the tail copy the tile
 * index is a constant, so a guard such as `192 + j < 197` around the whole body of loop
 * `j` (the columns of a vector tile past the end of a 197-wide row) depends on `j` alone:
 * the loop then runs to 5 without the test, instead of testing it at each of 8 lanes in
 * the reduction's innermost loop (ViT's 197x197 attention scores spent more time in their
 * one partial column tile than in the 24 whole ones). A loop whose guard never holds goes.
 */
export function tightenGuardedLoops(body: readonly Stmt[]): Stmt[] {
  return body.flatMap((s): Stmt[] => {
    if (s.k === 'if' || s.k === 'thread') return [{ ...s, body: tightenGuardedLoops(s.body) }];
    if (s.k !== 'for') return [s];
    const inner = tightenGuardedLoops(s.body);
    const only = inner.length === 1 ? inner[0] : undefined;
    if (s.kind === 'parallel' || s.extent > MAX_TIGHTEN_EXTENT || only?.k !== 'if') return [{ ...s, body: inner }];
    let extent = s.extent;
    const left: Expr[] = [];
    for (const c of conjuncts(only.cond)) {
      const n = holdingPrefix(c, s);
      if (n === undefined) left.push(c);
      else extent = Math.min(extent, n);
    }
    if (extent === 0) return [];
    const cond = all(left);
    return [{ ...s, extent, body: cond ? [{ ...only, cond }] : only.body }];
  });
}

/**
 * Versions the outermost serial or parallel loop bodies that hold split-tail guards (see
 * the top of this file). Each loop is versioned once; in its two copies the inner loops
 * are versioned for the guards that remain.
 */
export function partitionTails(body: readonly Stmt[]): Stmt[] {
  return body.map((s): Stmt => {
    if (s.k === 'for' && (s.kind === 'serial' || s.kind === 'parallel')) {
      // The copies' inner loops are versioned in turn, for the guards left in them: a tile
      // of rows x columns where neither divides (ViT's 197 x 197 scores) versions its rows
      // here and its columns one loop in.
      const two = versioned(s);
      return { ...s, body: partitionTails(two ?? s.body) };
    }
    if (s.k === 'if') return { ...s, body: partitionTails(s.body) };
    return s;
  });
}
