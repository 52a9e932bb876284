// Tile sizes: the ordered factorisations of a loop extent, as TVM's SplitFactorizationMemo
// enumerates them (each factor divides what remains; the innermost factor is bounded by
// max_innermost_split_factor = 64 on CPU).

export const MAX_INNERMOST_FACTOR = 64;

const divisorMemo = new Map<number, number[]>();

export function divisors(n: number): number[] {
  let out = divisorMemo.get(n);
  if (!out) {
    const small: number[] = [], large: number[] = [];
    for (let d = 1; d * d <= n; d++) {
      if (n % d !== 0) continue;
      small.push(d);
      if (d * d !== n) large.unshift(n / d);
    }
    out = [...small, ...large];
    divisorMemo.set(n, out);
  }
  return out;
}

/**
 * Padded tilings. An extent with few divisors (ViT's 197 tokens: 1 and 197) has no tile
 * between a single row and all of them, so a search over its factorisations alone cannot
 * find the register tiles of 6 or 8 rows that the default schedule takes with a partial
 * last tile. For such an extent the spatial tiles also come from the factorisations of the
 * next multiples of 2, 4, 8 and 16 that pad it by at most an eighth: the split then leaves
 * a partial last tile, guarded, and the C renderer versions the guards out of the whole
 * tiles (codegen/partition.ts). From 32 up, so that a 7x7 map keeps its exact tiles.
 */
const PADDED_MAX_DIVISORS = 4;
const PADDED_MIN_EXTENT = 32;
const PAD_MULTIPLES = [2, 4, 8, 16];
const PAD_MAX_RATIO = 1.125;

/** The padded extents whose factorisations also tile `extent` (none for an extent with enough divisors). */
export function paddedExtents(extent: number): number[] {
  if (extent < PADDED_MIN_EXTENT || divisors(extent).length > PADDED_MAX_DIVISORS) return [];
  const out = PAD_MULTIPLES.map((m) => Math.ceil(extent / m) * m).filter((e) => e > extent && e <= extent * PAD_MAX_RATIO);
  return [...new Set(out)];
}

/** Whether `product`, the product of a tile's factors, tiles `extent`: it is the extent, or (`padded`) one of its padded extents. */
export const tilesExtent = (product: number, extent: number, padded: boolean): boolean =>
  product === extent || (padded && paddedExtents(extent).includes(product));

const factorMemo = new Map<string, readonly (readonly number[])[]>();

/**
 * Every list of `parts` positive integers whose product is `extent` and whose last
 * (innermost) entry is at most `maxInner`, outermost first.
 */
export function factorizations(extent: number, parts: number, maxInner = MAX_INNERMOST_FACTOR): readonly (readonly number[])[] {
  const key = `${extent}/${parts}/${maxInner}`;
  let out = factorMemo.get(key);
  if (!out) {
    const list: number[][] = [];
    const rec = (rest: number, left: number, acc: number[]): void => {
      if (left === 1) {
        if (rest <= maxInner) list.push([...acc, rest]);
        return;
      }
      for (const d of divisors(rest)) rec(rest / d, left - 1, [...acc, d]);
    };
    rec(extent, parts, []);
    out = list;
    factorMemo.set(key, out);
  }
  return out;
}

const paddedMemo = new Map<string, readonly (readonly number[])[]>();

/**
 * The factorizations of `extent`, and with `padded` those of its padded extents
 * (paddedExtents) whose inner factors no exact one has: the splits emit the
 * inner factors only, so two lists with the same inner factors are the same tile.
 */
export function tilings(extent: number, parts: number, maxInner: number, padded: boolean): readonly (readonly number[])[] {
  const exact = factorizations(extent, parts, maxInner);
  const pads = padded ? paddedExtents(extent) : [];
  if (pads.length === 0) return exact;
  const key = `${extent}/${parts}/${maxInner}`;
  let out = paddedMemo.get(key);
  if (!out) {
    const seen = new Set(exact.map((f) => f.slice(1).join('x')));
    const extra = pads.flatMap((e) => factorizations(e, parts, maxInner)).filter((f) => {
      const inner = f.slice(1).join('x');
      if (seen.has(inner)) return false;
      seen.add(inner);
      return true;
    });
    out = [...exact, ...extra];
    paddedMemo.set(key, out);
  }
  return out;
}
