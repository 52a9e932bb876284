// The CPU register tile that the default schedules share: the direct conv's and other
// tiled reductions' (defaults.ts) and Winograd's batched product's (defaults-winograd.ts).

/**
 * Output positions per register tile of a conv on a target with 8-lane vectors (AVX2: 16
 * vector registers): 6 positions x 2 vectors is 12 accumulators, 2 weight vectors and a
 * broadcast input. The columns-of-one-row tile (7 x 2 for the 7-multiple widths of
 * mobilenet and ResNet) needs 17 registers, so GCC read one weight vector from memory in
 * every other FMA. No width is a multiple of 6, so the tile runs over the row-major
 * positions of the image; the last tile is cut short (its guards are versioned out of the
 * whole tiles, codegen/partition.ts). Each position reads its own input window, whose row
 * and column the renderer computes once per tile (codegen/c.ts, hoist). On an AVX2 box,
 * 1 thread: mobilenet's 14x14x512 1x1 conv 1.13-1.47 ms against 1.31-1.65 for 7 x 2;
 * most of resnet-18's 3x3 and strided convs 8 to 30% faster, its 7x7x512 3x3 ones unchanged
 * (docs/tuning.md).
 */
export const POSITION_TILE_ROWS = 6;

/**
 * The same on a target with 16-lane vectors (AVX-512's 32 registers): 14 positions x 2
 * vectors is 28 accumulators, 2 weight vectors and a broadcast input. The columns of one
 * row (at most 7 there, channelTile) are 14 accumulators, and each weight vector loaded
 * from L2 served half as many FMAs. On a 2-core AVX-512 Xeon, 1 thread:
 * mobilenet's 14x14x512 1x1 conv ran at 75% of peak instead of 65%, the network 14.1-15.0
 * ms instead of 15.2-15.8; resnet-50 2% faster, resnet-18 unchanged within noise (with the
 * exceptions defaults.ts makes: strided convs, and convs over fewer channels than a vector).
 */
export const POSITION_TILE_ROWS_16 = 14;

/**
 * The rows of the tile of positions where a register tile of `vec` channels is two vectors
 * of 8 lanes (POSITION_TILE_ROWS: AVX2's 16 registers, where 7 rows spill) or of 16
 * (POSITION_TILE_ROWS_16) and `positions` exceeds them; undefined otherwise (the caller
 * keeps its own rows).
 */
export function positionTileRows(positions: number, vec: number, lanes: number): number | undefined {
  const rows = lanes === 8 ? POSITION_TILE_ROWS : lanes === 16 ? POSITION_TILE_ROWS_16 : undefined;
  return rows !== undefined && vec === 2 * lanes && positions > rows ? rows : undefined;
}

/**
 * The register tile of a reduction whose vector loop runs over `channels`: two vectors of
 * channels where they divide them, else the largest divisor up to one vector (`vec`); and
 * the rows of its block axis of `blockExtent` (1 without one), up to 7 at two vectors and 14
 * at one, so that the accumulators stay within 16 registers. A depthwise conv has its own
 * (defaults.ts).
 */
export function channelTile(channels: number, blockExtent: number | undefined, lanes: number): { vec: number; rows: number } {
  const vec = channels % (2 * lanes) === 0 ? 2 * lanes : largestDivisorAtMost(channels, lanes);
  return { vec, rows: blockExtent === undefined ? 1 : largestDivisorAtMost(blockExtent, vec > lanes ? 7 : 14) };
}

export function largestDivisorAtMost(n: number, limit: number): number {
  for (let d = Math.min(n, limit); d >= 1; d--) if (n % d === 0) return d;
  return 1;
}
