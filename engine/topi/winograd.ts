// Winograd convolution for 3x3 stride-1 convs, NHWC (TVM's `conv2d_winograd_nhwc`, with the
// weight transform done ahead of time as in `conv2d_winograd_nhwc_without_weight_transform`).
//
// F(m x m, 3 x 3) computes an m x m output tile from an alpha x alpha input tile
// (alpha = m + 2) as  Y = A^T [ (G g G^T) ⊙ (B^T d B) ] A  (Lavin & Gray 2016, "Fast
// Algorithms for Convolutional Neural Networks"). With U = G g G^T pre-computed per (c, k)
// on the params, the conv is four stages:
//
//   data_pack[eps, nu, p, c]  = Σ_{a, b} d_p[a, b, c] · B[a, eps] · B[b, nu]    input tiles transformed
//   bgemm[eps, nu, p, k]      = Σ_c data_pack[eps, nu, p, c] · U[eps, nu, c, k]  alpha² GEMMs over channels
//   inverse[vh, vw, p, k]     = Σ_{a, b} bgemm[a, b, p, k] · A[a, vh] · A[b, vw]  output tiles
//   conv2d_winograd[n, h, w, k] = inverse[h mod m, w mod m, tile of (n, h, w), k]
//
// p runs over the N · ⌈OH/m⌉ · ⌈OW/m⌉ tiles; the input is padded on the bottom/right so that
// the last tiles read zeros where the output does not divide by m, and the last stage reads
// only the valid part of each tile. TVM writes the two transforms as reductions over
// (a, b) with the matrices as nested selects (`const_matrix`), so that only a schedule that
// unrolls all four small axes sees literals, and zero entries still cost a multiply-add.
// Here each transform is one expression of its two output indices (transform2d): nested
// selects over (eps, nu) whose branches hold only the non-zero terms, so unrolling the two
// output axes is enough, and bgemm is the task's only reduction.

import { add, and, eq, f32, floordiv, floormod, load, mul, reduceAxis, select, sub, sum, type Expr } from '../ir/expr';
import type { ComputeDAG } from '../ir/dag';
import { compute, type Tensor } from '../ir/tensor';
import { pad } from './transform';

export type WinogradTile = 2 | 4;

/** The transform matrices of F(m, 3), stored as written in Lavin & Gray 2016 (B^T, G, A^T). */
export interface WinogradMatrices {
  m: WinogradTile;
  alpha: number;
  /** alpha x alpha */
  BT: number[][];
  /** alpha x 3 */
  G: number[][];
  /** m x alpha */
  AT: number[][];
}

const F2: WinogradMatrices = {
  m: 2, alpha: 4,
  BT: [[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]],
  G: [[1, 0, 0], [1 / 2, 1 / 2, 1 / 2], [1 / 2, -1 / 2, 1 / 2], [0, 0, 1]],
  AT: [[1, 1, 1, 0], [0, 1, -1, -1]],
};

const F4: WinogradMatrices = {
  m: 4, alpha: 6,
  BT: [
    [4, 0, -5, 0, 1, 0],
    [0, -4, -4, 1, 1, 0],
    [0, 4, -4, -1, 1, 0],
    [0, -2, -1, 2, 1, 0],
    [0, 2, -1, -2, 1, 0],
    [0, 4, 0, -5, 0, 1],
  ],
  G: [
    [1 / 4, 0, 0],
    [-1 / 6, -1 / 6, -1 / 6],
    [-1 / 6, 1 / 6, -1 / 6],
    [1 / 24, 1 / 12, 1 / 6],
    [1 / 24, -1 / 12, 1 / 6],
    [0, 0, 1],
  ],
  AT: [
    [1, 1, 1, 1, 1, 0],
    [0, 1, -1, 2, -2, 0],
    [0, 1, 1, 4, 4, 0],
    [0, 1, -1, 8, -8, 1],
  ],
};

export function winogradMatrices(m: number): WinogradMatrices {
  if (m === 2) return F2;
  if (m === 4) return F4;
  throw new Error(`winograd: tile size ${m} is not supported (2 or 4)`);
}

/**
 * The (i, j) element of the 2-D transform  Σ_{a, b} M[a][i] · M[b][j] · x(a, b)  of an
 * alpha x alpha tile, as one expression of the index expressions i and j: nested selects
 * over (i, j) whose branches are the explicit sums of the non-zero terms, each term with its
 * coefficient M[a][i] · M[b][j] folded into one literal (1 and -1 need no multiply). A
 * schedule that unrolls i and j keeps just that sum; one that does not still computes
 * the right value.
 */
function transform2d(M: readonly (readonly number[])[], i: Expr, j: Expr, element: (a: number, b: number) => Expr): Expr {
  const rows = M.length, cols = M[0].length;
  // One node per tile element, shared by every sum that reads it (rewrite visits it once).
  const elements = new Map<number, Expr>();
  const x = (a: number, b: number): Expr => {
    let e = elements.get(a * rows + b);
    if (!e) { e = element(a, b); elements.set(a * rows + b, e); }
    return e;
  };
  const branch = (ii: number, jj: number): Expr => {
    let e: Expr | undefined;
    for (let a = 0; a < rows; a++) {
      for (let b = 0; b < rows; b++) {
        const c = M[a][ii] * M[b][jj];
        if (c === 0) continue;
        const mag = Math.abs(c);
        const term = mag === 1 ? x(a, b) : mul(x(a, b), f32(mag));
        e = e === undefined ? (c < 0 ? mul(term, f32(-1)) : term) : c < 0 ? sub(e, term) : add(e, term);
      }
    }
    return e ?? f32(0);
  };
  let out: Expr | undefined;
  for (let ii = cols - 1; ii >= 0; ii--) {
    for (let jj = cols - 1; jj >= 0; jj--) {
      const b = branch(ii, jj);
      out = out === undefined ? b : select(and(eq(i, ii), eq(j, jj)), b, out);
    }
  }
  return out!;
}

/** The transpose of a small matrix. */
const transpose = (mat: readonly (readonly number[])[]): number[][] => mat[0].map((_, j) => mat.map((row) => row[j]));

export interface WinogradConvParams {
  /** [top, left, bottom, right] */
  padding: [number, number, number, number];
  tileSize: WinogradTile;
}

/** Output size and tile counts of a 3x3 stride-1 conv with this padding. */
export function winogradGeometry(h: number, w: number, padding: readonly number[], m: number): { oh: number; ow: number; nH: number; nW: number } {
  const [pt, pl, pb, pr] = padding;
  const oh = h + pt + pb - 2, ow = w + pl + pr - 2;
  if (oh < 1 || ow < 1) throw new Error(`conv2d_winograd_nhwc: a 3x3 window does not fit an input of ${h}x${w} with padding ${padding.join(', ')}`);
  return { oh, ow, nH: Math.ceil(oh / m), nW: Math.ceil(ow / m) };
}

/**
 * 3x3 stride-1 conv2d, data NHWC, pre-transformed kernel [alpha, alpha, CI, CO]
 * (winogradWeightTransform of an HWIO kernel), output NHWC.
 */
export function conv2dWinogradNHWC(data: Tensor, kernelPack: Tensor, p: WinogradConvParams): Tensor {
  const { m, alpha, BT, AT } = winogradMatrices(p.tileSize);
  const [n, h, w, ci] = data.shape;
  const [ka, kb, kci, co] = kernelPack.shape;
  if (ka !== alpha || kb !== alpha) {
    throw new Error(`conv2d_winograd_nhwc: F(${m}x${m}, 3x3) needs a transformed kernel of ${alpha}x${alpha}xCIxCO, got [${kernelPack.shape.join(', ')}]`);
  }
  if (kci !== ci) throw new Error(`conv2d_winograd_nhwc: kernel has ${kci} input channels, data has ${ci}`);
  const [pt, pl, pb, pr] = p.padding;
  const { oh, ow, nH, nW } = winogradGeometry(h, w, p.padding, m);
  const P = n * nH * nW;
  // Pad so that every tile's alpha x alpha window lies inside: nH * m + 2 rows.
  const extraH = nH * m - oh, extraW = nW * m - ow;
  const padded = pad(data, [0, pt, pl, 0], [0, pb + extraH, pr + extraW, 0], 'data_pad');
  const B = transpose(BT), A = transpose(AT);

  const inputTile = compute('input_tile', [alpha, alpha, P, ci], ['eps', 'nu', 'p', 'ci'], (eps, nu, pp, c) =>
    load(padded, [floordiv(pp, nH * nW), add(mul(floormod(floordiv(pp, nW), nH), m), eps), add(mul(floormod(pp, nW), m), nu), c]));
  const dataPack = compute('data_pack', [alpha, alpha, P, ci], ['eps', 'nu', 'p', 'ci'], (eps, nu, pp, c) =>
    transform2d(B, eps, nu, (a, b) => load(inputTile, [a, b, pp, c])), 'winograd_data_pack');
  const rc = reduceAxis('rc', ci);
  const vrc = { k: 'var', name: 'rc' } as const;
  const bgemm = compute('bgemm', [alpha, alpha, P, co], ['eps', 'nu', 'p', 'co'], (eps, nu, pp, k) =>
    sum(mul(load(dataPack, [eps, nu, pp, vrc]), load(kernelPack, [eps, nu, vrc, k])), [rc]), 'winograd_bgemm');
  const inverse = compute('inverse', [m, m, P, co], ['vh', 'vw', 'p', 'co'], (vh, vw, pp, k) =>
    transform2d(A, vh, vw, (a, b) => load(bgemm, [a, b, pp, k])), 'winograd_inverse');
  return compute('conv2d_winograd', [n, oh, ow, co], ['n', 'h', 'w', 'co'], (nn, hh, ww, k) =>
    load(inverse, [floormod(hh, m), floormod(ww, m), add(add(mul(nn, nH * nW), mul(floordiv(hh, m), nW)), floordiv(ww, m)), k]),
  'conv2d_winograd_nhwc');
}

const STAGE_TAGS = ['winograd_data_pack', 'winograd_bgemm', 'winograd_inverse'];

/**
 * The stages whose first two axes index the transform matrices: a loop nest that unrolls
 * those two axes sees constants and keeps only the non-zero terms of each output; one that
 * does not evaluates the whole chain of selects for every element (TVM marks such stages
 * with `auto_scheduler_simplify_const_tensor_indices`).
 */
export const CONST_INDEXED_TAGS: ReadonlySet<string> = new Set(['winograd_data_pack', 'winograd_inverse']);

/** Whether `dag` is a Winograd conv task (it has the stages conv2dWinogradNHWC declares). */
export function isWinogradDag(dag: ComputeDAG): boolean {
  const tags = new Set(dag.computeStages.map((t) => t.op.tag));
  return STAGE_TAGS.every((t) => tags.has(t));
}

/**
 * The weight transform U = G g G^T of an HWIO kernel [3, 3, CI, CO] into [alpha, alpha, CI, CO],
 * computed in float64 and rounded once to float32. Done once at compile time on the params;
 * also the reference the tests check the DAG with.
 */
export function winogradWeightTransform(kernel: Float32Array, shape: readonly number[], m: WinogradTile): Float32Array {
  const [kh, kw, ci, co] = shape;
  if (shape.length !== 4 || kh !== 3 || kw !== 3) throw new Error(`winograd weight transform: needs an HWIO kernel [3, 3, CI, CO], got [${shape.join(', ')}]`);
  if (kernel.length !== 9 * ci * co) throw new Error(`winograd weight transform: ${kernel.length} values for shape [${shape.join(', ')}]`);
  const { alpha, G } = winogradMatrices(m);
  const out = new Float32Array(alpha * alpha * ci * co);
  const cc = ci * co;
  const tmp = new Float64Array(alpha * 3); // (G g)[e][j]
  for (let q = 0; q < cc; q++) {
    for (let e = 0; e < alpha; e++) {
      for (let j = 0; j < 3; j++) {
        let s = 0;
        for (let i = 0; i < 3; i++) s += G[e][i] * kernel[(i * 3 + j) * cc + q];
        tmp[e * 3 + j] = s;
      }
    }
    for (let e = 0; e < alpha; e++) {
      for (let nu = 0; nu < alpha; nu++) {
        let s = 0;
        for (let j = 0; j < 3; j++) s += tmp[e * 3 + j] * G[nu][j];
        out[(e * alpha + nu) * cc + q] = s;
      }
    }
  }
  return out;
}
