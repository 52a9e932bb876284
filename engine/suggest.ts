// "Did you mean ...?" for a mistyped name (a network, a command, an option): the known
// names closest to it by edit distance (insertions, deletions, substitutions and swaps of
// two neighbours, ignoring case), when they are close enough to be a typo.

/** Edit distance with adjacent transpositions (optimal string alignment), case-insensitive. */
export function editDistance(a: string, b: string): number {
  const s = a.toLowerCase(), t = b.toLowerCase();
  const d: number[][] = Array.from({ length: s.length + 1 }, (_, i) => [i, ...new Array<number>(t.length).fill(0)]);
  for (let j = 1; j <= t.length; j++) d[0][j] = j;
  for (let i = 1; i <= s.length; i++) {
    for (let j = 1; j <= t.length; j++) {
      const cost = s[i - 1] === t[j - 1] ? 0 : 1;
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && s[i - 1] === t[j - 2] && s[i - 2] === t[j - 1]) d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[s.length][t.length];
}

/** The known names nearest to `name` (at most 3, all at the smallest distance), if that distance looks like a typo. */
export function closest(name: string, known: readonly string[]): string[] {
  const limit = Math.max(1, Math.floor(name.length / 3));
  let best = Infinity;
  let hits: string[] = [];
  for (const k of known) {
    const dist = editDistance(name, k);
    if (dist > limit || dist > best) continue;
    if (dist < best) { best = dist; hits = []; }
    hits.push(k);
  }
  return hits.slice(0, 3);
}

/** `did you mean mobilenet?` (or `X, Y or Z`) for a message, or '' when nothing is close. */
export function didYouMean(name: string, known: readonly string[]): string {
  const hits = closest(name, known);
  if (hits.length === 0) return '';
  const list = hits.length === 1 ? hits[0] : `${hits.slice(0, -1).join(', ')} or ${hits[hits.length - 1]}`;
  return `did you mean ${list}?`;
}
