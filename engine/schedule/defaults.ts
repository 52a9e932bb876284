// Default schedules: what a task gets before (or without) tuning. Heuristic but real:
//  - elementwise stages are inlined into their reader, and so is padding, except where a
//    convolution (not depthwise) reads it: there the padded input is written once at root, because
//    inlined its bounds test sits in the reduction's innermost loop and halves the speed of
//    every padded conv (resnet-18's 3x3 convs ran at 44-49% of peak inlined, 84-95% with the
//    padding at root; measured per task, see docs/tuning.md);
//  - a tiled reduction (conv, depthwise, dense, batch matmul) is computed into a small
//    register tile held inside the output's loops: the output's last axis is split into a
//    vector tile, the axis before it into a register block, the outer loops fused and
//    run in parallel; the reduction loops run outside the tile so the accumulators stay
//    in registers and the epilogue (bias, residual, relu) is fused;
//  - everything else (pooling, softmax, injective ops) gets parallel outer loops and a
//    vectorised innermost loop where it is contiguous (for a transpose, along the axis it
//    reads contiguously when its own last axis is shorter than a vector); a reduction along
//    the axis its input is contiguous in (softmax's max and sum, layer norm's moments) runs
//    that axis innermost on vector accumulators.
// GPU targets (opts.gpu) get defaults-gpu.ts's schedule instead.

import type { ComputeDAG } from '../ir/dag';
import { freeVars, walk } from '../ir/expr';
import { numElements, type Tensor } from '../ir/tensor';
import { isOrderedReduction } from '../ir/ordered';
import { defaultOptionsOf, type DefaultOptions } from './default-options';
import { defaultGpuSchedule } from './defaults-gpu';
import { isWinogradDag } from '../topi/winograd';
import { winogradDefaultSchedule } from './defaults-winograd';
import { ScheduleError, State } from './state';
import { channelTile, largestDivisorAtMost, POSITION_TILE_ROWS_16, positionTileRows } from './tile-rows';
import type { Step } from './steps';

export { defaultOptionsOf, type DefaultOptions };

/** Reductions that the multi-level tiling rule (and this default) tiles. */
/**
 * conv3d and the transposed convs (topi/conv3d.ts, topi/conv-transpose.ts): tiled as a
 * conv2d is (channels last: a vector tile of output channels by a block of columns), with
 * none of the conv2d_nhwc tiles measured for them (position tiles, wide rows).
 */
const CONV_ND_TAGS = ['conv3d_ndhwc', 'conv3d_ncdhw', 'conv2d_transpose_nhwc', 'conv2d_transpose_nchw', 'conv3d_transpose_ndhwc', 'conv3d_transpose_ncdhw'];
const TILED_TAGS = new Set(['conv2d_nhwc', 'conv2d_nchw', 'depthwise_conv2d_nhwc', 'depthwise_conv2d_nchw', 'dense', 'batch_matmul', ...CONV_ND_TAGS]);

const tagOf = (t: Tensor): string => (t.op.kind === 'compute' ? t.op.tag : '');

/**
 * Convolutions whose padded input pays to write once at root: each input element is read
 * by many output channels. Not depthwise convs: they read each element a few times, are
 * bound by memory, and ran 1.5x slower with the copy (mobilenet's, same A/B).
 */
const PAD_AT_ROOT_TAGS = new Set(['conv2d_nhwc', 'conv2d_nchw', ...CONV_ND_TAGS]);

/**
 * Whether `pad`, read by `conv`, is written at root. Not where an NHWC input has fewer
 * channels than a vector (an image's 3) and the conv does little work per element of the
 * copy: the copy's innermost loop is then the 3 channels of one pixel, and its per-pixel
 * overhead cost as much as a small conv. Inlined, the conv's bounds tests sit at every
 * tap, but the renderer versions them out of whole tiles (codegen/partition.ts), and only
 * the tiles at a border keep them. On an AVX2 box (one thread, per-kernel minimum in the
 * network):
 *  - mobilenet's first conv (3x3 stride 2, 32 channels, 70 multiply-adds per element of
 *    the padded input): 0.55 ms with the copy (0.25 of it the copy), 0.39 inlined;
 *  - resnet's (7x7 stride 2, 64 channels, 743 per element): 2.95 ms with the copy, 3.8
 *    inlined, where 49 taps of 3 channels make the border tiles' tests costly.
 */
const INLINE_PAD_MAX_WORK_PER_ELEMENT = 128;

function padAtRoot(pad: Tensor, conv: Tensor, lanes: number): boolean {
  if (!PAD_AT_ROOT_TAGS.has(tagOf(conv))) return false;
  if (tagOf(conv) !== 'conv2d_nhwc' || pad.shape.length !== 4 || pad.shape[3] >= lanes || conv.op.kind !== 'compute') return true;
  const multiplyAdds = numElements(conv.shape) * numElements(conv.op.reduceAxes.map((a) => a.extent));
  return multiplyAdds / numElements(pad.shape) > INLINE_PAD_MAX_WORK_PER_ELEMENT;
}

/** A stage with a bounds test in its body (padding: tir.if_then_else). */
function hasBranch(t: Tensor): boolean {
  if (t.op.kind !== 'compute') return false;
  let branch = false;
  walk(t.op.body, (e) => { if (e.k === 'if' || e.k === 'select') branch = true; });
  return branch;
}

/**
 * The reduction's weights (inputs indexed by the output's last, channel, axis and by no
 * other output axis) hold more elements than the inputs it slides over (indexed by a
 * spatial or batch axis of the output). A depthwise conv's input is indexed by the channel
 * too, but it is slid over: counted as weights, it sent the channel tiles of mobilenet's
 * depthwise convs outermost, so each pass over the input used one cache line of four
 * (the 112x112x64 stride-2 one ran at 3.4 GFLOP/s, 1.19 ms against ONNX Runtime's 0.36).
 */
function weightsOutweighInput(t: Tensor): boolean {
  if (t.op.kind !== 'compute') return false;
  const names = t.op.axes.map((a) => a.name);
  const channel = names[names.length - 1];
  // A transposed conv's kernel is also indexed by the output position's phase (its tap
  // index is (y + pad) mod stride + stride*t): only a load of the batch axis is slid over.
  // With the channel tiles inside, DCGAN's 4x4x1024x512 deconv (32 MB of weights over a
  // 4x4 map) reads all its weights once per row of positions (not timed on a quiet machine).
  const others = tagOf(t).includes('_transpose_') ? names.slice(0, 1) : names.slice(0, -1);
  let weights = 0, input = 0;
  const seen = new Set<string>();
  walk(t.op.body, (e) => {
    if (e.k !== 'load' || seen.has(e.tensor.name)) return;
    seen.add(e.tensor.name);
    const size = numElements(e.tensor.shape);
    const vars = new Set(e.indices.flatMap((i) => [...freeVars(i)]));
    if (others.some((a) => vars.has(a))) input += size;
    else if (vars.has(channel)) weights += size;
  });
  return weights > input;
}

/**
 * A depthwise conv's register tile (NHWC): up to 4 vectors of channels by as many output
 * columns as keep it at 8 accumulators. Each accumulator has its own input load (nothing is
 * broadcast, as in a conv), so a conv's 7x2 tile spilled on AVX2's 16 registers, and a wider
 * channel run reads whole cache lines. On an AVX2 box, one thread, warm caches,
 * mobilenet's 112x112x64 stride-2 layer: 7 columns x 16 channels 0.45 ms, 2 x 32 0.19, 1 x 64
 * 0.21, 4 x 32 0.40; its 56x56x128 stride-1 layer: 7 x 16 0.79, 2 x 32 0.36, 4 x 32 0.63.
 */
const DEPTHWISE_VECTORS = 4;
const DEPTHWISE_ACCUMULATORS = 8;

/**
 * Rows of a dense or batch-matmul register tile two vectors wide at 8 lanes (registerTile):
 * 12 accumulators, two weight vectors and the broadcast input fill 15 of AVX2's 16
 * registers. Taken also where 6 does not divide the rows: BERT-base's GEMMs at sequence 128,
 * the kernel alone, 1 thread, 2-core AVX2 EPYC, 3 interleaved rounds (median of the ratios
 * 6 rows / 4 rows; % of the peak measured in the same rounds): 128x768 by 768 0.85-0.95
 * (58-63% -> 66-67%), 128x3072 by 768 0.77 (49% -> 63%), 128x768 by 3072 with GELU 1.01
 * (59% -> 58%); q.k^T (12x128x64 by 128) 0.74 (53% -> 70%), attn.v (12x128x128 by 64) 0.64
 * (47% -> 68%). 7 rows: 0.83-1.13.
 */
const AVX2_TWO_VECTOR_ROWS = 6;

/**
 * Rows of a dense or batch-matmul register tile one vector wide at 8 lanes (columns that 16
 * does not divide: ViT's 197 keys). 14 rows fit AVX2's 16 vector registers, but each row is
 * its own input pointer and 14 of them spill the general registers inside the reduction
 * loop. ViT-S/16's attention scores (6 heads of 197x64 by 64x197), the kernel alone, 1
 * thread, 2-core AVX2 EPYC, 6 interleaved rounds (% of the peak measured in each round):
 * 14 rows 37-57% (median 48), 12 rows 45-75 (54), 10 rows 49-69 (64), 8 rows 44-69 (54);
 * 10 rows was ahead of 14 in every round.
 */
const AVX2_ONE_VECTOR_ROWS = 10;

/**
 * The register tiles of a dense or batch matmul with rows to spare (at least 56) on
 * AVX-512, in order of preference: 4 vectors of columns by 6 rows where 64 divides the
 * columns, 3 by 8 where 48 does, and 2 by 12 over columns that no vector divides (ViT's 197
 * keys; the last tile partial). Each is 24 accumulators, the weight vectors of one step and
 * the broadcast input, 29 of the 32 registers, and each weight vector loaded serves 6 to 12
 * multiply-adds. The 2-vector tiles these replace (7 or 8 rows, or 14 rows of one vector)
 * used 14 to 16 accumulators. On a 2-core AVX-512 Xeon, 1 thread, `bench/compare-builds.ts`
 * over whole networks (the kernels' summed time, new / old): ViT-S/16 0.93 (64x6 and 48x8
 * alike), BERT-base 0.90 (its dense layers 0.89; 48x8 and 64x6 within 1%). The kernel
 * alone (`bench/register-tiles.ts`, % of the peak measured in the same rounds, warm / every
 * input evicted): ViT's fc1 32x7 70/66%, 64x6 82/68%, 48x8 81/68%, 32x14 76/62%; ViT's
 * probs.V (64 columns) 68/51% -> 70/57% at 64x6; its q.k^T (197 columns) 16x14 53/36%,
 * 32x12 61/39%.
 */
const AVX512_WIDE_TILES: readonly { vec: number; rows: number; fits: (channels: number) => boolean }[] = [
  { vec: 64, rows: 6, fits: (c) => c % 64 === 0 },
  { vec: 48, rows: 8, fits: (c) => c % 48 === 0 },
  { vec: 32, rows: 12, fits: (c) => c % 16 !== 0 && c >= 64 },
];

/** The register tile of a tiled reduction: channels per tile (`vec`, the vector loop) and rows of its block axis. */
function registerTile(tag: string, channels: number, blockExtent: number | undefined, lanes: number): { vec: number; rows: number } {
  if ((tag === 'dense' || tag === 'batch_matmul') && blockExtent !== undefined) {
    // AVX-512, rows to spare: 24 accumulators (AVX512_WIDE_TILES).
    if (lanes === 16 && blockExtent >= 56) {
      const wide = AVX512_WIDE_TILES.find((w) => w.fits(channels));
      if (wide) return { vec: wide.vec, rows: wide.rows };
    }
    // Rows that divide nothing useful (ViT's 197 tokens are prime: 1 row per tile, each
    // weight vector loaded for one multiply-add) take the full block, the last one partial:
    // its guard is versioned out of the whole tiles (codegen/partition.ts).
    const divides = channelTile(channels, blockExtent, lanes);
    // Columns that no vector width divides (197 tokens): whole vectors, the last tile partial.
    const t = divides.vec * 2 < lanes && channels >= 2 * lanes ? { vec: lanes, rows: divides.rows } : divides;
    // Two vectors wide: 7 rows (14 accumulators) on AVX-512's 32 registers; 6 on AVX2's 16,
    // where 7 rows, the two weight vectors and the broadcast input need 17 and spill. ViT's
    // dense layers, kernel alone, 1 thread, AVX2 build on a shared Zen 4 box, interleaved
    // pairs (median of the ratios 6 rows / 7 rows): 197x384 by 1536 0.85 over 6 pairs,
    // 197x1536 by 384 0.83 over 4, 197x384 by 1152 0.75 over 1.
    const full = t.vec > lanes ? (lanes === 8 ? AVX2_TWO_VECTOR_ROWS : 7) : lanes === 8 ? AVX2_ONE_VECTOR_ROWS : 14;
    // Columns that 32 divides but neither 48 nor 64 (160): AVX-512's 32 registers hold 14
    // rows x 2 vectors of accumulators, so a GEMM with rows to spare takes the largest
    // divisor up to 14, not up to 7.
    if (lanes === 16 && t.vec === 2 * lanes && blockExtent >= 56) {
      const rows = largestDivisorAtMost(blockExtent, 14);
      if (rows > t.rows) return { vec: t.vec, rows };
    }
    // On AVX2 a GEMM with rows to spare takes the full 6 rows even where they do not divide
    // its rows (BERT's 128 tokens: 21 tiles of 6 and one of 2, versioned), not the largest
    // divisor (4): each weight vector then serves 6 multiply-adds instead of 4. See
    // AVX2_TWO_VECTOR_ROWS.
    if (lanes === 8 && t.vec === 2 * lanes && blockExtent >= 4 * full) return { vec: t.vec, rows: full };
    return t.rows * 2 <= full && blockExtent >= 4 * full ? { vec: t.vec, rows: full } : t;
  }
  if (tag === 'depthwise_conv2d_nhwc' && channels % lanes === 0) {
    let vectors = DEPTHWISE_VECTORS;
    while ((channels / lanes) % vectors !== 0) vectors -= 1;
    const rows = blockExtent === undefined ? 1 : largestDivisorAtMost(blockExtent, Math.max(1, Math.floor(DEPTHWISE_ACCUMULATORS / vectors)));
    return { vec: vectors * lanes, rows };
  }
  return channelTile(channels, blockExtent, lanes);
}

/** The input channels an NHWC conv reduces over (its `rc` axis; 0 when it has none). */
function inputChannels(conv: Tensor): number {
  return conv.op.kind === 'compute' ? conv.op.reduceAxes.find((a) => a.name === 'rc')?.extent ?? 0 : 0;
}

/** The width of an NHWC conv's kernel (its `rx` axis; 1 when it has none). */
function kernelWidth(conv: Tensor): number {
  return conv.op.kind === 'compute' ? conv.op.reduceAxes.find((a) => a.name === 'rx')?.extent ?? 1 : 1;
}

/** Whether an NHWC conv with output width `width` steps more than one column of its (padded) input per output column. */
function strided(conv: Tensor, width: number): boolean {
  if (conv.op.kind !== 'compute' || width < 2) return false;
  const taps = kernelWidth(conv);
  let inputWidth = 0;
  walk(conv.op.body, (e) => {
    if (e.k === 'load' && e.tensor.shape.length === 4 && e.indices.length === 4 && [...freeVars(e.indices[3])].includes('rc')) inputWidth = e.tensor.shape[2];
  });
  return inputWidth - taps + 1 > width;
}

/** The rows of the tile of positions an NHWC conv with output axes `outAxes` gets (its (h, w) fused, positionTileRows of them by 2 vectors); undefined where it keeps the columns of one row. */
function positionRowsOf(conv: Tensor, outAxes: readonly { name: string; extent: number }[], lanes: number): number | undefined {
  if (tagOf(conv) !== 'conv2d_nhwc' || outAxes.length !== 4) return undefined;
  const [, h, w, c] = outAxes;
  // At 16 lanes, a conv with fewer input channels than a vector (an image's first conv: 3)
  // or a strided one keeps the columns of one row. With the tile of positions (AVX-512 Xeon,
  // 1 thread), mobilenet's first conv took 0.68 ms instead of 0.53, and
  // resnet-50's strided 1x1 convs 10 to 30% longer.
  if (lanes === 16 && (inputChannels(conv) < lanes || strided(conv, w.extent))) return undefined;
  return positionTileRows(h.extent * w.extent, registerTile(tagOf(conv), c.extent, undefined, lanes).vec, lanes);
}

/**
 * At 16 lanes, an NHWC conv whose output positions the 14-position tile does not divide
 * (the 7x7 layers: 49) takes one row of positions by 4 vectors instead (7 x 4 is 28
 * accumulators), where the weights of 4 vectors of output channels fit in half of a 1 MB
 * L2 (WIDE_ROW_SLICE_BYTES): the channel tiles run outermost there (weightsOutweighInput),
 * so one slice of the weights serves every row from cache. 14 x 2 cut the last tile of 49
 * short and read each slice 4 times; 7 x 2 read it 7 times for half the work per load. On
 * an AVX-512 Xeon (1 thread, per-kernel profiles, interleaved): mobilenet's
 * 7x7x1024 1x1 conv 1.27-1.54 ms against 1.54-2.13, its 7x7x512 one 0.66-0.77 against
 * 0.74-1.21; resnet-50's strided 14x14x1024 1x1 0.69-0.76 against 0.82-0.85. resnet's 3x3
 * 7x7x512 convs (a 1.2 MB slice) ran 10-15% slower with it, hence the bound.
 */
const WIDE_ROW_VECTORS = 4;
const WIDE_ROW_SLICE_BYTES = 512 * 1024;

function wideRowTileOf(conv: Tensor, outAxes: readonly { name: string; extent: number }[], lanes: number): { vec: number; rows: number } | undefined {
  if (lanes !== 16 || tagOf(conv) !== 'conv2d_nhwc' || conv.op.kind !== 'compute' || outAxes.length !== 4) return undefined;
  const [, h, w, c] = outAxes;
  const vec = WIDE_ROW_VECTORS * lanes;
  if ((h.extent * w.extent) % POSITION_TILE_ROWS_16 === 0 || w.extent > 7 || c.extent % vec !== 0) return undefined;
  const sliceBytes = numElements(conv.op.reduceAxes.map((a) => a.extent)) * vec * 4;
  return sliceBytes <= WIDE_ROW_SLICE_BYTES ? { vec, rows: w.extent } : undefined;
}

/**
 * At 16 lanes, an NHWC conv that keeps the columns of one row (a strided conv, or one over
 * fewer input channels than a vector: positionRowsOf) takes 4 vectors of output channels
 * where they divide them, by up to 7 columns: 28 accumulators, each broadcast input
 * serving 4 multiply-adds instead of 2. On an AVX-512 Xeon (1 thread, the
 * kernel alone, 12 interleaved rounds, the median of each round's ratio to the 2-vector
 * tile): resnet-18's first conv (7x7 stride 2 over an image's 3 channels) 0.85, its
 * strided 3x3 convs 0.85, 0.86 and 0.97, its strided 1x1 convs 0.87 and 0.85. 14 columns
 * by 2 vectors (the same 28 accumulators) ran 0.96-1.02. The 4 vectors are WIDE_ROW_VECTORS.
 */
function rowTileOf(conv: Tensor, outAxes: readonly { name: string; extent: number }[], lanes: number): { vec: number; rows: number } | undefined {
  if (lanes !== 16 || tagOf(conv) !== 'conv2d_nhwc' || outAxes.length !== 4) return undefined;
  const [, , w, c] = outAxes;
  const vec = WIDE_ROW_VECTORS * lanes;
  return c.extent % vec === 0 ? { vec, rows: largestDivisorAtMost(w.extent, 7) } : undefined;
}

/**
 * At 16 lanes, a stride-1 NHWC conv with a kernel wider than 1x1 that tiles fused output
 * positions (positionRowsOf) over 28x28 or more takes 7 positions by 4 vectors of channels
 * where those divide them, instead of 14 by 2: the same 28 accumulators, each broadcast
 * input serving 4 multiply-adds. On an AVX-512 Xeon (1 thread, the kernel
 * alone, 12 and 10 interleaved rounds, the median of each round's ratio to 14 x 2):
 * resnet-18's 56x56x64 3x3 conv 0.82, its 28x28x128 one 0.88. Not for 1x1 convs (mobilenet's
 * 112x112x32 to 64: 1.05) nor, unmeasured, the smaller images, which keep 14 x 2, except
 * a 1x1 conv whose input positions lie a multiple of 4 KB apart (1024 channels or a multiple):
 * the 14 positions a tile reads at each step then map to one set of the L1, which has 8 or
 * 12 ways, and evict each other. On a Zen 4 box (per-kernel profiles, 6 interleaved rounds)
 * resnet-50's 14x14x1024 -> 256 convs took 0.79 of their time with 7 x 4 at 1 thread and
 * 0.78 at 2, level with ONNX Runtime's (1.46 against 1.47 ms) where 14 x 2 took 1.22x.
 */
const POSITION_TILE4_MIN_POSITIONS = 28 * 28;
/** Addresses this far apart share a set of the L1 data cache of current x86 cores: 64 sets of 64-byte lines (Zen 4: 8 ways; Zen 5 and Intel's P-cores: 12). */
const L1_ALIAS_BYTES = 4096;

function positionTile4Of(conv: Tensor, outAxes: readonly { name: string; extent: number }[], lanes: number): { vec: number; rows: number } | undefined {
  if (lanes !== 16 || tagOf(conv) !== 'conv2d_nhwc' || outAxes.length !== 4) return undefined;
  const [, h, w, c] = outAxes;
  const taps = kernelWidth(conv);
  const positions = h.extent * w.extent;
  const vec = WIDE_ROW_VECTORS * lanes;
  const aliased = taps < 2 && (inputChannels(conv) * 4) % L1_ALIAS_BYTES === 0;
  if (c.extent % vec !== 0 || positions % 7 !== 0) return undefined;
  if (!aliased && (taps < 2 || positions < POSITION_TILE4_MIN_POSITIONS)) return undefined;
  return { vec, rows: 7 };
}

/** NHWC axes with (h, w) replaced by the loop a `fuse` step makes of them (named `h@w`). */
function fusePositions(axes: readonly { name: string; extent: number }[]): { name: string; extent: number }[] {
  const [n, h, w, c] = axes;
  return [n, { name: `${h.name}@${w.name}`, extent: h.extent * w.extent }, c];
}

/**
 * The axis of an injective stage along which it reads an input contiguously, when that is
 * not its own last axis: the input's last index is that axis alone, which spans whole
 * vectors. A transpose of an NCHW image to NHWC writes 3 channels per pixel innermost and
 * reads each from another plane; by rows of pixels instead, it loads whole vectors and
 * stores them 3 apart (mobilenet's ONNX input, in a kernel harness: 0.37 ms before, 0.085
 * after, with the whole network at about 19 ms).
 */
function contiguousReadAxis(t: Tensor, lanes: number): string | undefined {
  if (t.op.kind !== 'compute' || t.op.reduceAxes.length > 0 || t.op.axes.length < 2) return undefined;
  const own = t.op.axes;
  let found: string | undefined;
  walk(t.op.body, (e) => {
    if (found !== undefined || e.k !== 'load' || e.indices.length === 0) return;
    const lastIndex = e.indices[e.indices.length - 1];
    if (lastIndex.k !== 'var') return;
    const axis = own.find((a) => a.name === lastIndex.name);
    if (axis && axis !== own[own.length - 1] && axis.extent >= 2 * lanes && axis.extent % lanes === 0) found = axis.name;
  });
  return found;
}

/**
 * The reduce axis of a reduction along which it reads an input contiguously (the input's
 * last index is that axis alone, at least a vector long), where no load it reduces over
 * ends in a spatial axis of its own: softmax's row max and sum, layer norm's mean and
 * variance (which also reads the row's mean, a load of no reduce axis), a Reduce* over the
 * last axis. Not a pool over NHWC (its loads end in the channel, a spatial axis), whose
 * vectors run over channels instead.
 */
function contiguousReduceAxis(t: Tensor, lanes: number): string | undefined {
  if (t.op.kind !== 'compute' || t.op.reduceAxes.length === 0 || t.dtype !== 'float32') return undefined;
  // An ordered reduction (ir/ordered.ts) keeps its reduce loop serial: no per-lane partial sums.
  if (isOrderedReduction(t.op.body)) return undefined;
  const own = new Set(t.op.axes.map((a) => a.name));
  const reduce = t.op.reduceAxes;
  let found: string | undefined;
  let spatialLast = false;
  walk(t.op.body, (e) => {
    if (e.k !== 'load' || e.indices.length === 0) return;
    const vars = new Set(e.indices.flatMap((i) => [...freeVars(i)]));
    if (!reduce.some((a) => vars.has(a.name))) return;
    const lastIndex = e.indices[e.indices.length - 1];
    if (lastIndex.k !== 'var') return;
    if (own.has(lastIndex.name)) spatialLast = true;
    const axis = reduce.find((a) => a.name === lastIndex.name);
    if (axis && axis.extent >= lanes) found ??= axis.name;
  });
  return spatialLast ? undefined : found;
}

/**
 * Longest innermost loop that is not a whole number of vectors and is still vectorised
 * whole (its whole vectors, then a scalar tail: a softmax row over ViT's 197 tokens), in
 * vectors: the renderer expands one statement per vector.
 */
const MAX_WHOLE_VECTORIZED = 64;

/**
 * Channel vectors per tile of a pool held in its epilogue's registers (section 3 of
 * defaultSchedule). One vector per tile repeated each tap's bounds test and address for
 * every 16 channels, and the padded border was tested inside the tile; with the tile over
 * up to 4 vectors the renderer versions it into a border-free body and a border one.
 * resnet's 3x3 stride-2 max pool over 112x112x64 (with its batch norm and ReLU), kernel
 * alone, 1 thread, 12 interleaved rounds: 0.46 ms with 1 vector, 0.27 with 4 (0.58 paired).
 */
const POOL_TILE_VECTORS = 4;

/** Fewest parallel iterations for an even share among a few cores: below it, the tile's channel loop joins the parallel loop. */
const MIN_PARALLEL_CHUNKS = 32;

/** How many leading loops of these extents make at least MIN_PARALLEL_CHUNKS iterations together (all of them if they never do). */
function parallelPrefix(extents: readonly number[]): number {
  let product = 1;
  for (let i = 0; i < extents.length; i++) {
    product *= extents[i];
    if (product >= MIN_PARALLEL_CHUNKS) return i + 1;
  }
  return extents.length;
}

function sameShape(a: { tensor: Tensor }, b: { tensor: Tensor }): boolean {
  return a.tensor.shape.length === b.tensor.shape.length && a.tensor.shape.every((d, i) => d === b.tensor.shape[i]);
}

/**
 * A stage read by several stages of its task that costs less to repeat in each reader than
 * to store: plain arithmetic on loads and constants, no math call or branch. A bias add that
 * GELU's epilogue reads twice (x * 0.5 * (1 + erf(x / sqrt 2))) is one; left at root, it
 * sat between the tiled dense and the output holding the tile, and the schedule was invalid.
 */
function cheapToRepeat(t: Tensor): boolean {
  if (t.op.kind !== 'compute' || t.op.reduceAxes.length > 0) return false;
  let cheap = true;
  walk(t.op.body, (e) => { if (e.k === 'call' || e.k === 'if' || e.k === 'select' || e.k === 'reduce') cheap = false; });
  return cheap;
}

/** Longest row a row-by-row schedule (rowStages) holds in a local buffer, in floats. */
const MAX_ROW_FLOATS = 16384;

/**
 * The stages a task computes row by row inside its output's row loop, where it is a chain
 * of row reductions and elementwise stages over the output's rows (softmax: the row max, the
 * exps, their sum; layer norm: the moments): every stage at root besides the output has the
 * output's shape or its shape without the last axis, is read only by such stages, and every
 * read of it indexes the leading axes by the reader's own. Undefined otherwise. Row by row,
 * a softmax reads its input twice and writes its output once, with the row of exps in L1;
 * stage by stage it wrote and read a whole temporary of exps, and a ViT attention's
 * 6x197x197 scores (930 KB) no longer fitted the 1 MB L2 alongside it.
 */
function rowStages(state: State, out: State['stages'][number]): string[] | undefined {
  const shape = out.tensor.shape, n = shape.length;
  if (n < 2 || out.reduceAxes.length > 0 || shape[n - 1] > MAX_ROW_FLOATS) return undefined;
  const lead = shape.slice(0, n - 1);
  const rows = state.stages.filter((s) => s !== out && s.attach.k === 'root' && s.tensor.op.kind === 'compute');
  if (rows.length === 0) return undefined;
  const names = new Set([...rows.map((s) => s.name), out.name]);
  // Row-shaped: elementwise over the rows, or one value per row (a reduction along the row).
  const rowShaped = (s: State['stages'][number]): boolean =>
    (s.reduceAxes.length === 0 && s.tensor.shape.length === n && s.tensor.shape.every((d, i) => d === shape[i]))
    || (s.tensor.shape.length === n - 1 && s.tensor.shape.every((d, i) => d === lead[i]))
    || (s.tensor.shape.length === n && s.tensor.shape[n - 1] === 1 && lead.every((d, i) => d === s.tensor.shape[i]));
  if (!rows.every((s) => rowShaped(s) && s.relations.length === 0 && state.effectiveReaders(s.name).every((r) => names.has(r)))) return undefined;
  const rowNames = new Set(rows.map((s) => s.name));
  const plainLead = (reader: Tensor): boolean => {
    if (reader.op.kind !== 'compute') return false;
    const own = reader.op.axes.slice(0, n - 1).map((a) => a.name);
    let ok = own.length === n - 1;
    walk(reader.op.body, (e) => {
      if (e.k !== 'load' || !rowNames.has(e.tensor.name)) return;
      if (!own.every((name, i) => { const x = e.indices[i]; return x?.k === 'var' && x.name === name; })) ok = false;
    });
    return ok;
  };
  return [...rows, out].every((s) => plainLead(s.tensor)) ? rows.map((s) => s.name) : undefined;
}

/**
 * The default schedule of a DAG. Where the CPU heuristics meet a shape they did not foresee
 * (a step they chose does not apply), the DAG gets the plain schedule (no steps: every stage
 * at root in its own loops), which is always valid, slow but correct, where a crash is
 * neither; `onFallback` hears why, so that compile and tune can say which kernel runs slow.
 */
export function defaultSchedule(dag: ComputeDAG, opts: DefaultOptions, onFallback?: (error: ScheduleError) => void): Step[] {
  if (opts.gpu) return defaultGpuSchedule(dag, opts.gpu);
  try {
    return isWinogradDag(dag) ? winogradDefaultSchedule(dag, opts) : cpuDefaultSchedule(dag, opts);
  } catch (e) {
    if (!(e instanceof ScheduleError)) throw e;
    new State(dag).validate();
    onFallback?.(e);
    return [];
  }
}

function cpuDefaultSchedule(dag: ComputeDAG, opts: DefaultOptions): Step[] {
  const steps: Step[] = [];
  const state = new State(dag);
  const apply = (st: Step): void => { state.apply(st); steps.push(st); };
  const minParallel = opts.minParallelElements ?? 4096;

  // 1. Inline cheap stages (no reduction, not an output, read by one stage).
  for (const s of [...state.stages]) {
    if (s.isOutput || s.reduceAxes.length > 0) continue;
    if (hasBranch(s.tensor) && state.readers(s.name).some((r) => padAtRoot(s.tensor, r.tensor, opts.vectorLanes))) continue;
    if (state.readers(s.name).length === 1 || cheapToRepeat(s.tensor)) apply({ s: 'compute_inline', stage: s.name });
  }

  // 2. Tile the main reduction into the output's loops.
  const main = state.stages.find((s) => TILED_TAGS.has(tagOf(s.tensor)));
  const outputs = state.stages.filter((s) => s.isOutput);
  if (main && outputs.length === 1) {
    // The tile is held by the output, which must then be the reduction's only reader once
    // the cheap stages are inlined. Where a stage kept at root reads it too (a sigmoid that
    // two stages of the epilogue read), the reduction is tiled on its own, at root, and the
    // epilogue's stages follow at root (step 3).
    const held = state.effectiveReaders(main.name);
    const out = held.length === 1 && held[0] === outputs[0].name ? outputs[0] : main;
    let local = main;
    if (out === main) {
      // No epilogue to hold the tile: compute into a local copy (TVM's cache_write rule).
      apply({ s: 'cache_write', stage: main.name });
      local = state.stage(`${main.name}.local`);
    }
    const lanes = opts.vectorLanes;
    // A conv on an AVX2 or AVX-512 target tiles runs of output positions (rows x columns
    // fused into one loop), not columns of one row: see POSITION_TILE_ROWS and
    // POSITION_TILE_ROWS_16 (tile-rows.ts).
    const wideRow = wideRowTileOf(main.tensor, out.axes, lanes);
    const positionRows = wideRow ? undefined : positionRowsOf(main.tensor, out.axes, lanes);
    const positions = positionRows !== undefined;
    if (positions) for (const st of [out, local]) apply({ s: 'fuse', stage: st.name, iters: st.axes.slice(1, 3).map((a) => a.name) });
    const axes = positions ? fusePositions(out.axes) : out.axes;
    const n = axes.length;
    const last = axes[n - 1], block = n >= 2 ? axes[n - 2] : undefined;
    const rowTile = wideRow || positions ? undefined : rowTileOf(main.tensor, out.axes, lanes);
    const positionTile4 = positions ? positionTile4Of(main.tensor, out.axes, lanes) : undefined;
    const tile = wideRow ?? positionTile4 ?? rowTile ?? registerTile(tagOf(main.tensor), last.extent, block?.extent, lanes);
    const vec = opts.registerTile?.vec ?? tile.vec;
    const rows = opts.registerTile?.rows ?? positionTile4?.rows ?? positionRows ?? tile.rows;
    apply({ s: 'split', stage: out.name, iter: last.name, lengths: [vec] });
    // Loop order of the tiles: by default the channel tiles run inside each block of rows,
    // which re-reads all the weights per block. Where the weights outweigh the input (the
    // late layers: 3x3x512x512 is 9.4 MB against a 7x7x512 input of 100 KB) the channel
    // tile goes outermost instead, so one slice of the weights serves every row from cache.
    const spatialOuter: string[] = axes.slice(0, Math.max(0, n - 2)).map((a) => a.name);
    if (block) {
      apply({ s: 'split', stage: out.name, iter: block.name, lengths: [rows] });
      spatialOuter.push(`${block.name}.0`);
    }
    const channelTiles = Math.ceil(last.extent / vec);
    const channelsOuter = block !== undefined && channelTiles > 1 && weightsOutweighInput(main.tensor);
    const outer = channelsOuter ? [`${last.name}.0`, ...spatialOuter] : [...spatialOuter, `${last.name}.0`];
    const order = [...outer, ...(block ? [`${block.name}.1`] : []), `${last.name}.1`];
    apply({ s: 'reorder', stage: out.name, order });
    // Parallel over the fused outer loops: all but the channel tile's loop when it is
    // innermost, unless those are too few to share evenly among cores (a 7x7 output has 7
    // rows: 4 + 3 on two cores); the register tile is computed at the last of the outer loops.
    const spread = numElements(axes.slice(0, Math.max(0, n - 2)).map((a) => a.extent)) * (block ? Math.ceil(block.extent / rows) : 1);
    const fusable = channelsOuter || (spread < MIN_PARALLEL_CHUNKS && channelTiles > 1) ? outer : outer.slice(0, -1);
    if (fusable.length >= 2) apply({ s: 'fuse', stage: out.name, iters: fusable });
    const parallelIter = fusable.length >= 2 ? fusable.join('@') : fusable[0];
    const attachIter = fusable === outer ? parallelIter : `${last.name}.0`;
    // Parallel where there is work to share: the multiply-adds, not the outputs (a classifier's
    // dense layer has 1000 outputs and 1M multiply-adds, and ran on one core of two).
    const work = numElements(out.tensor.shape) * numElements(main.reduceAxes.map((a) => a.extent));
    if (work >= minParallel) apply({ s: 'annotate', stage: out.name, iter: parallelIter || attachIter, ann: 'parallel' });
    // Unrolling around a vector loop that is not a whole number of vectors makes GCC's
    // compile time explode (50 s for one conv), so only whole vectors are unrolled.
    const wholeVectors = vec % lanes === 0;
    if (block && wholeVectors) apply({ s: 'annotate', stage: out.name, iter: `${block.name}.1`, ann: 'unroll' });
    apply({ s: 'annotate', stage: out.name, iter: `${last.name}.1`, ann: 'vectorize' });
    apply({ s: 'compute_at', stage: local.name, target: out.name, iter: attachIter });
    // Inside the tile: unit spatial loops, then the reduction, then the register block.
    const spatial = (positions ? fusePositions(local.axes) : local.axes).map((a) => a.name);
    const reduce = local.reduceAxes.map((a) => a.name);
    const tileAxes = spatial.slice(-2);
    apply({ s: 'reorder', stage: local.name, order: [...spatial.slice(0, -2), ...reduce, ...tileAxes] });
    if (tileAxes.length === 2 && wholeVectors) apply({ s: 'annotate', stage: local.name, iter: tileAxes[0], ann: 'unroll' });
    apply({ s: 'annotate', stage: local.name, iter: tileAxes[tileAxes.length - 1], ann: 'vectorize' });
  }

  // 2b. No tile: a chain of row reductions and elementwise stages (softmax, layer norm) is
  //     computed row by row inside the output's row loop (rowStages).
  const rowChain = !main && outputs.length === 1 ? rowStages(state, outputs[0]) : undefined;
  if (rowChain) {
    const out = outputs[0];
    const lead = out.axes.slice(0, -1).map((a) => a.name), last = out.axes[out.axes.length - 1];
    if (lead.length >= 2) apply({ s: 'fuse', stage: out.name, iters: lead });
    const row = lead.length >= 2 ? lead.join('@') : lead[0];
    if (numElements(out.tensor.shape) >= minParallel) apply({ s: 'annotate', stage: out.name, iter: row, ann: 'parallel' });
    const wholeVectors = (extent: number): boolean => extent <= MAX_WHOLE_VECTORIZED * opts.vectorLanes;
    if (wholeVectors(last.extent)) apply({ s: 'annotate', stage: out.name, iter: last.name, ann: 'vectorize' });
    for (const name of rowChain) {
      const st = state.stage(name);
      apply({ s: 'compute_at', stage: name, target: out.name, iter: row });
      const along = contiguousReduceAxis(st.tensor, opts.vectorLanes);
      const inner = st.reduceAxes.length > 0 ? along : st.axes.length === out.axes.length ? st.axes[st.axes.length - 1].name : undefined;
      if (inner && st.reduceAxes.length > 0) apply({ s: 'reorder', stage: name, order: [...st.axes.map((a) => a.name), ...st.reduceAxes.map((a) => a.name).filter((a) => a !== inner), inner] });
      if (inner && wholeVectors(last.extent)) apply({ s: 'annotate', stage: name, iter: inner, ann: 'vectorize' });
    }
  }

  // 3. Every other stage computed at root: parallel outer loops, vector inner loop. A
  //    reduction without a tile (pooling) read only by an elementwise output of its shape (a
  //    fused epilogue) is computed inside that output's vector tile instead: its window is
  //    reduced in a register and the epilogue applied before the store, where at root it
  //    went through memory at every step and once more through a whole temporary (resnet's
  //    max pool + batch-norm + relu: ~1 ms at root on the AVX2 box, ONNX Runtime 0.44).
  const heldBy = new Map<string, string>();
  for (const s of state.stages) {
    if (s.attach.k !== 'root' || s.relations.length > 0 || s.reduceAxes.length === 0 || TILED_TAGS.has(tagOf(s.tensor))) continue;
    const readers = state.effectiveReaders(s.name);
    const reader = readers.length === 1 ? state.stage(readers[0]) : undefined;
    if (reader?.isOutput && reader.axes.length >= 2 && reader.reduceAxes.length === 0 && reader.relations.length === 0 && sameShape(reader, s)) heldBy.set(reader.name, s.name);
  }
  const held = new Set(heldBy.values());
  for (const s of state.stages) {
    if (s.attach.k !== 'root' || s.relations.length > 0 || held.has(s.name)) continue;
    const axes = s.axes;
    if (axes.length === 0) continue;
    const last = axes[axes.length - 1];
    // An output that holds a pool (below) keeps its own loops, which the pool is computed at.
    const reordered = heldBy.has(s.name) ? undefined : contiguousReadAxis(s.tensor, opts.vectorLanes);
    const across = last.extent < opts.vectorLanes ? reordered : undefined;
    const blockedBy = last.extent >= 2 * opts.vectorLanes ? reordered : undefined;
    // Both reorderings below: axis `x` split by vectors, its lanes innermost and vectorised,
    // `middle` just outside them, the loops `lead` fused and parallel outermost.
    const vectorTiles = (x: string, lead: readonly string[], middle: string): void => {
      apply({ s: 'split', stage: s.name, iter: x, lengths: [opts.vectorLanes] });
      apply({ s: 'reorder', stage: s.name, order: [...lead, middle, `${x}.1`] });
      if (lead.length >= 2) apply({ s: 'fuse', stage: s.name, iters: [...lead] });
      if (numElements(s.tensor.shape) >= minParallel) apply({ s: 'annotate', stage: s.name, iter: lead.join('@'), ann: 'parallel' });
      apply({ s: 'annotate', stage: s.name, iter: `${x}.1`, ann: 'vectorize' });
    };
    if (blockedBy) {
      // A transpose of a long last axis (attention's keys, split from a fused qkv projection:
      // 197 tokens by 6 heads of 64 in ViT-S/16): each step of its innermost loop reads
      // another row of the input, a page apart in that case. In tiles of a vector of the
      // last axis by the whole axis the input is read along, a tile reads a vector's worth
      // of rows, each contiguously, and writes runs of a vector: every line it touches is
      // used whole while it is in L1, and its pages fit the TLB. That ViT's 1x197x1152 ->
      // 1x6x64x197 slice, in a C harness on an AVX-512 Xeon, warm: 65 us by rows, 19-20 tiled.
      const outer = axes.filter((a) => a !== last && a.name !== blockedBy).map((a) => a.name);
      vectorTiles(last.name, [...outer, `${last.name}.0`], blockedBy);
      continue;
    }
    if (across) {
      // Innermost: the axis along which it reads contiguously, by vectors; its own short
      // last axis goes outside, with the other outer loops fused and parallel.
      vectorTiles(across, axes.filter((a) => a.name !== across).map((a) => a.name), `${across}.0`);
      continue;
    }
    const row = heldBy.has(s.name) ? undefined : contiguousReduceAxis(s.tensor, opts.vectorLanes);
    if (row) {
      // A reduction along its input's contiguous axis: that axis innermost and vectorised
      // (partial results per lane, combined after it), every spatial axis outside, the
      // leading ones fused and parallel where there is work to share. With the spatial
      // last axis innermost instead (as for a pool), ViT's softmax max and sum walked the
      // 197x197 scores by columns, unvectorised: 0.2 GFLOP/s, 14% of the network's time.
      const spatial = axes.map((a) => a.name);
      const others = s.reduceAxes.map((a) => a.name).filter((a) => a !== row);
      apply({ s: 'reorder', stage: s.name, order: [...spatial, ...others, row] });
      const work = numElements(s.tensor.shape) * numElements(s.reduceAxes.map((a) => a.extent));
      if (work >= minParallel) {
        const count = parallelPrefix(axes.map((a) => a.extent));
        if (count >= 2) apply({ s: 'fuse', stage: s.name, iters: spatial.slice(0, count) });
        apply({ s: 'annotate', stage: s.name, iter: spatial.slice(0, count).join('@'), ann: 'parallel' });
      }
      apply({ s: 'annotate', stage: s.name, iter: row, ann: 'vectorize' });
      continue;
    }
    const order: string[] = [];
    const outerAxes = axes.slice(0, -1).map((a) => a.name);
    const outerExtents = axes.slice(0, -1).map((a) => a.extent);
    let inner = last.name;
    const pool = heldBy.get(s.name);
    // A held pool's tile spans up to POOL_TILE_VECTORS vectors of channels (unrolled).
    const poolVectors = pool && last.extent % opts.vectorLanes === 0 ? largestDivisorAtMost(last.extent / opts.vectorLanes, POOL_TILE_VECTORS) : 1;
    let unrolled: string | undefined;
    if (poolVectors > 1) {
      apply({ s: 'split', stage: s.name, iter: last.name, lengths: [poolVectors, opts.vectorLanes] });
      outerAxes.push(`${last.name}.0`);
      outerExtents.push(last.extent / (poolVectors * opts.vectorLanes));
      unrolled = `${last.name}.1`;
      inner = `${last.name}.2`;
    } else if (last.extent >= 2 * opts.vectorLanes && last.extent % opts.vectorLanes === 0) {
      apply({ s: 'split', stage: s.name, iter: last.name, lengths: [opts.vectorLanes] });
      outerAxes.push(`${last.name}.0`);
      outerExtents.push(last.extent / opts.vectorLanes);
      inner = `${last.name}.1`;
    }
    order.push(...outerAxes, ...s.reduceAxes.map((a) => a.name), ...(unrolled ? [unrolled] : []), inner);
    apply({ s: 'reorder', stage: s.name, order });
    // The parallel loop: the leading outer axes fused, only as many as an even share needs
    // (MIN_PARALLEL_CHUNKS). The rest stay plain loops inside it, whose indices the compiler
    // steps: fused, each vector (or pixel) paid a division and a remainder per axis.
    // resnet's data batch norm (1x224x224x3, channels 3 wide) took 0.28 to 0.43 ms at 1 thread
    // with all three fused. A held pool keeps every outer axis fused: its tile is computed at
    // that loop. A stage too small to share (minParallel) fuses nothing.
    const parallel = numElements(s.tensor.shape) >= minParallel;
    const fusedCount = pool ? outerAxes.length : parallel ? parallelPrefix(outerExtents) : 0;
    const parallelAxes = outerAxes.slice(0, fusedCount);
    if (parallelAxes.length >= 2) apply({ s: 'fuse', stage: s.name, iters: parallelAxes });
    const fused = parallelAxes.length >= 2 ? parallelAxes.join('@') : parallelAxes[0];
    if (fused && parallel) apply({ s: 'annotate', stage: s.name, iter: fused, ann: 'parallel' });
    if (unrolled) apply({ s: 'annotate', stage: s.name, iter: unrolled, ann: 'unroll' });
    const vectorized = inner !== last.name || last.extent <= 4 * opts.vectorLanes
      || (last.extent % opts.vectorLanes !== 0 && last.extent <= MAX_WHOLE_VECTORIZED * opts.vectorLanes);
    if (vectorized) apply({ s: 'annotate', stage: s.name, iter: inner, ann: 'vectorize' });
    if (pool && fused) {
      const r = state.stage(pool);
      apply({ s: 'compute_at', stage: pool, target: s.name, iter: fused });
      const spatial = r.axes.map((a) => a.name);
      const channel = spatial[spatial.length - 1];
      // Its vectors innermost, under the window: each tap's bounds test and address are
      // shared by the tile's vectors.
      if (poolVectors > 1) apply({ s: 'split', stage: pool, iter: channel, lengths: [opts.vectorLanes] });
      const tile = poolVectors > 1 ? [`${channel}.0`, `${channel}.1`] : [channel];
      apply({ s: 'reorder', stage: pool, order: [...spatial.slice(0, -1), ...r.reduceAxes.map((a) => a.name), ...tile] });
      // A small window (3x3) unrolled: its bounds tests fold per tap.
      if (numElements(r.reduceAxes.map((a) => a.extent)) <= 16) for (const a of r.reduceAxes) apply({ s: 'annotate', stage: pool, iter: a.name, ann: 'unroll' });
      if (poolVectors > 1) apply({ s: 'annotate', stage: pool, iter: tile[0], ann: 'unroll' });
      if (vectorized) apply({ s: 'annotate', stage: pool, iter: tile[tile.length - 1], ann: 'vectorize' });
    }
  }
  state.validate();
  return steps;
}
