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
