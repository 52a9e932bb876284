// Blocked weight layouts. A constant input of a reduction (a conv or dense weight) is
// stored so that the schedule's register tile reads it contiguously: the axis the tile
// vectorises is cut into blocks of the tile's width, the blocks go outermost and the
// block's lanes innermost. For an HWIO conv weight blocked on O by 32 that is
// [O/32, H, W, I, 32], the layout oneDNN calls a blocked format. The lowering decides the
// layout from the schedule (lower.ts); compile packs the params once with packBlocked,
// and measurement feeds random data that is read through the same layout.

/** `axis` of a tensor of `shape` cut into blocks of `block`: outer part first, then the others, then the block. */
export interface BlockedLayout {
  /** Index of the DAG input (placeholder `p<input>`) laid out this way. */
  input: number;
  axis: number;
  block: number;
}

/** The shape of `shape` in the blocked layout. */
export function blockedShape(shape: readonly number[], axis: number, block: number): number[] {
  if (shape[axis] % block !== 0) throw new Error(`blockedShape: block ${block} does not divide extent ${shape[axis]}`);
  return [shape[axis] / block, ...shape.filter((_, d) => d !== axis), block];
}

function strides(shape: readonly number[]): number[] {
  const s = new Array<number>(shape.length);
  let acc = 1;
  for (let d = shape.length - 1; d >= 0; d--) { s[d] = acc; acc *= shape[d]; }
  return s;
}

/** Visit every element: `fn(plainIndex, blockedIndex)`. */
function forEachElement(shape: readonly number[], axis: number, block: number, fn: (plain: number, blocked: number) => void): void {
  const bshape = blockedShape(shape, axis, block);
  const ps = strides(shape), bs = strides(bshape);
  const idx = new Array<number>(shape.length).fill(0);
  const total = shape.reduce((a, b) => a * b, 1);
  for (let n = 0; n < total; n++) {
    let plain = 0, blocked = 0, o = 1;
    for (let d = 0; d < shape.length; d++) {
      plain += idx[d] * ps[d];
      if (d === axis) { blocked += Math.floor(idx[d] / block) * bs[0] + (idx[d] % block) * bs[bshape.length - 1]; } else { blocked += idx[d] * bs[o++]; }
    }
    fn(plain, blocked);
    for (let d = shape.length - 1; d >= 0; d--) { if (++idx[d] < shape[d]) break; idx[d] = 0; }
  }
}

/** Row-major data of `shape` -> the blocked layout. */
export function packBlocked(data: Float32Array, shape: readonly number[], axis: number, block: number): Float32Array {
  const out = new Float32Array(data.length);
  forEachElement(shape, axis, block, (p, b) => { out[b] = data[p]; });
  return out;
}

/** The blocked layout -> row-major data of `shape`. */
export function unpackBlocked(data: Float32Array, shape: readonly number[], axis: number, block: number): Float32Array {
  const out = new Float32Array(data.length);
  forEachElement(shape, axis, block, (p, b) => { out[p] = data[b]; });
  return out;
}
