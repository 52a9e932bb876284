// A compact gradient-boosted regression tree model (histogram based, depth limited, with
// shrinkage, L2-regularised leaves and per-sample subsampling), written for the cost model.
//
// Why not a library: npm has no well-kept pure-JS GBDT that fits. `ml-xgboost` is an old
// Emscripten build of XGBoost without custom objectives; `ml-cart` grows single CART trees
// (exact splits, no gradients or weights); `decision-tree` is a small new package without
// custom objectives either. The cost model needs exactly one non-standard thing, TVM's
// "pack-sum" objective (a program's score is the sum of its per-store rows' outputs), and
// a few hundred lines give that with predictable speed and no native dependency.
//
// Objective: a sample s owns rows r ∈ s (one row for plain regression) and has a label y_s
// and a weight w_s; its prediction is P_s = Σ_{r∈s} f(r); the loss is Σ_s w_s (P_s − y_s)².
// Each row gets the gradient w_s (P_s − y_s) and hessian w_s, as TVM's pack-sum objective
// does (apache/tvm python/tvm/auto_scheduler/cost_model/xgb_model.py); the trees are then
// grown XGBoost-style: split gain G_L²/(H_L+λ) + G_R²/(H_R+λ) − G²/(H+λ) − γ, leaf −G/(H+λ).

export interface GBDTParams {
  /** Boosting rounds (trees). */
  rounds: number;
  maxDepth: number;
  /** Shrinkage (XGBoost's eta). */
  learningRate: number;
  /** L2 regularisation of leaf values. */
  lambda: number;
  /** Minimum gain of a split. */
  gamma: number;
  /** Minimum hessian sum in a child. */
  minChildWeight: number;
  /** Share of samples (with all their rows) used per tree. */
  subsample: number;
  /** Share of features considered per tree. */
  colsample: number;
  /** Histogram bins per feature (≤ 256). */
  maxBins: number;
  seed: number;
  /** Stop early after this many rounds without a better training loss (0: never). */
  earlyStopping: number;
  /** Stop adding trees once training took this long (ms); Infinity for none. */
  timeBudgetMs: number;
}

export const DEFAULT_GBDT_PARAMS: GBDTParams = {
  rounds: 120, maxDepth: 6, learningRate: 0.2, lambda: 1, gamma: 1e-4, minChildWeight: 1e-3,
  subsample: 0.8, colsample: 0.8, maxBins: 64, seed: 43, earlyStopping: 20, timeBudgetMs: Infinity,
};

/** Training data: feature rows grouped into samples. */
export interface PackedData {
  rows: readonly Float32Array[];
  /** For each sample, the indices of its rows. */
  samples: readonly (readonly number[])[];
  labels: ArrayLike<number>;
  /** Per sample; all 1 when omitted. */
  weights?: ArrayLike<number>;
}

/** A small deterministic generator (mulberry32). */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Tree {
  /** -1 for a leaf. */
  feature: Int32Array;
  threshold: Float32Array;
  left: Int32Array;
  right: Int32Array;
  value: Float32Array;
}

export interface TrainInfo {
  trees: number;
  /** Weighted RMSE of the training samples after each tree. */
  loss: number[];
  ms: number;
}

export class GBDT {
  private constructor(private readonly trees: Tree[], readonly numFeatures: number, readonly info: TrainInfo) {}

  /** Output of one row (the sum over trees). */
  predictRow(x: ArrayLike<number>): number {
    let out = 0;
    for (const t of this.trees) {
      let n = 0;
      while (t.feature[n] >= 0) n = x[t.feature[n]] <= t.threshold[n] ? t.left[n] : t.right[n];
      out += t.value[n];
    }
    return out;
  }

  /** A sample's prediction: the sum of its rows' outputs. */
  predictSample(rows: readonly ArrayLike<number>[]): number {
    let s = 0;
    for (const r of rows) s += this.predictRow(r);
    return s;
  }

  get numTrees(): number {
    return this.trees.length;
  }

  static train(data: PackedData, params: Partial<GBDTParams> = {}): GBDT {
    const p = { ...DEFAULT_GBDT_PARAMS, ...params };
    if (p.maxBins < 2 || p.maxBins > 256) throw new RangeError(`gbdt: maxBins must be in [2, 256], got ${p.maxBins}`);
    const start = performance.now();
    const nRows = data.rows.length;
    const nSamples = data.samples.length;
    const nF = nRows ? data.rows[0].length : 0;
    const random = rng(p.seed);
    const { bins, edges } = binRows(data.rows, nF, p.maxBins);
    // Constant columns (unused buffer slots, absent annotations) can never split.
    const informative = Array.from({ length: nF }, (_, f) => f).filter((f) => edges[f].length >= 2);

    const rowSample = new Int32Array(nRows);
    data.samples.forEach((rows, s) => rows.forEach((r) => (rowSample[r] = s)));
    const weight = (s: number): number => (data.weights ? data.weights[s] : 1);
    const rowPred = new Float64Array(nRows);
    const samplePred = new Float64Array(nSamples);
    const grad = new Float64Array(nRows), hess = new Float64Array(nRows);
    const trees: GrowingTree[] = [];
    const loss: number[] = [];
    let best = Infinity, sinceBest = 0;
    const wSum = Array.from({ length: nSamples }, (_, s) => weight(s)).reduce((a, b) => a + b, 0) || 1;

    for (let round = 0; round < p.rounds && nRows > 0; round++) {
      // Gradients of the pack-sum loss at the current predictions.
      for (let r = 0; r < nRows; r++) {
        const s = rowSample[r];
        const w = weight(s);
        grad[r] = w * (samplePred[s] - data.labels[s]);
        hess[r] = w;
      }
      const chosen: number[] = [];
      for (let s = 0; s < nSamples; s++) if (p.subsample >= 1 || random() < p.subsample) chosen.push(s);
      const rows = Int32Array.from(chosen.flatMap((s) => data.samples[s]));
      const features = informative.filter(() => p.colsample >= 1 || random() < p.colsample);
      if (rows.length === 0 || features.length === 0) continue;
      const tree = growTree(rows, features, bins, edges, nRows, grad, hess, p);
      trees.push(tree);
      // Update predictions of every row (binned traversal matches the raw thresholds).
      samplePred.fill(0);
      for (let r = 0; r < nRows; r++) {
        let n = 0;
        while (tree.feature[n] >= 0) n = bins[tree.feature[n] * nRows + r] <= tree.bin[n] ? tree.left[n] : tree.right[n];
        rowPred[r] += tree.value[n];
        samplePred[rowSample[r]] += rowPred[r];
      }
      let l = 0;
      for (let s = 0; s < nSamples; s++) l += weight(s) * (samplePred[s] - data.labels[s]) ** 2;
      const rmse = Math.sqrt(l / wSum);
      loss.push(rmse);
      if (rmse < best - 1e-9) { best = rmse; sinceBest = 0; } else if (p.earlyStopping > 0 && ++sinceBest >= p.earlyStopping) break;
      if (performance.now() - start > p.timeBudgetMs) break;
    }
    return new GBDT(trees.map(stripBins), nF, { trees: trees.length, loss, ms: performance.now() - start });
  }
}

// ---------------------------------------------------------------- binning

/**
 * Feature-major bin codes and, per feature, the upper edge of each bin: a value v falls in
 * the first bin b with v <= edges[b]. Edges are distinct values of the column taken at
 * (roughly) even quantiles, so heavy repeats (one-hots, zeros) cost no bins.
 */
function binRows(rows: readonly Float32Array[], nF: number, maxBins: number): { bins: Uint8Array; edges: Float32Array[] } {
  const n = rows.length;
  const bins = new Uint8Array(nF * n);
  const edges: Float32Array[] = [];
  const col = new Float32Array(n);
  for (let f = 0; f < nF; f++) {
    for (let r = 0; r < n; r++) col[r] = rows[r][f];
    const sorted = Float32Array.from(col).sort();
    const distinct: number[] = [];
    for (let i = 0; i < n; i++) if (i === 0 || sorted[i] !== sorted[i - 1]) distinct.push(sorted[i]);
    let e: number[];
    if (distinct.length <= maxBins) e = distinct;
    else {
      const set = new Set<number>();
      for (let b = 1; b <= maxBins; b++) set.add(sorted[Math.min(n - 1, Math.floor((b * n) / maxBins) - 1)]);
      set.add(sorted[n - 1]);
      e = [...set].sort((a, b) => a - b).slice(-maxBins);
      e[e.length - 1] = sorted[n - 1];
    }
    const fe = Float32Array.from(e);
    edges.push(fe);
    for (let r = 0; r < n; r++) {
      // Binary search for the first edge >= value.
      let lo = 0, hi = fe.length - 1;
      const x = col[r];
      while (lo < hi) { const mid = (lo + hi) >> 1; if (fe[mid] >= x) hi = mid; else lo = mid + 1; }
      bins[f * n + r] = lo;
    }
  }
  return { bins, edges };
}

// ---------------------------------------------------------------- tree growing

interface GrowingTree extends Tree { bin: Int32Array }

function stripBins(t: Tree): Tree {
  return { feature: t.feature, threshold: t.threshold, left: t.left, right: t.right, value: t.value };
}

function growTree(
  rows: Int32Array, features: number[], bins: Uint8Array, edges: Float32Array[], nRows: number,
  grad: Float64Array, hess: Float64Array, p: GBDTParams,
): GrowingTree {
  const feature: number[] = [], threshold: number[] = [], bin: number[] = [], left: number[] = [], right: number[] = [], value: number[] = [];
  // Histograms hold only this tree's features, each with as many bins as it has edges:
  // [g, h] pairs at offset[i] + 2·bin for the i-th feature.
  const offset = new Int32Array(features.length + 1);
  features.forEach((f, i) => (offset[i + 1] = offset[i] + 2 * edges[f].length));
  const histSize = offset[features.length];
  const histOf = (idx: Int32Array): Float64Array => {
    const h = new Float64Array(histSize);
    for (let i = 0; i < features.length; i++) {
      const base = offset[i], off = features[i] * nRows;
      for (let j = 0; j < idx.length; j++) {
        const r = idx[j];
        const k = base + 2 * bins[off + r];
        h[k] += grad[r]; h[k + 1] += hess[r];
      }
    }
    return h;
  };
  const leafValue = (G: number, H: number): number => (-G / (H + p.lambda)) * p.learningRate;

  /** Grows the subtree of rows `idx`; `hist` is their histogram (null at the last level, which only makes leaves). */
  const grow = (idx: Int32Array, hist: Float64Array | null, depth: number): number => {
    const node = feature.length;
    feature.push(-1); threshold.push(0); bin.push(0); left.push(-1); right.push(-1); value.push(0);
    let G = 0, H = 0;
    for (let i = 0; i < idx.length; i++) { G += grad[idx[i]]; H += hess[idx[i]]; }
    value[node] = leafValue(G, H);
    if (!hist || depth >= p.maxDepth || idx.length < 2) return node;
    const parentScore = (G * G) / (H + p.lambda);
    let bestGain = p.gamma, bestF = -1, bestB = -1;
    for (let i = 0; i < features.length; i++) {
      const f = features[i], nb = edges[f].length, base = offset[i];
      let GL = 0, HL = 0;
      for (let b = 0; b < nb - 1; b++) {
        GL += hist[base + b * 2]; HL += hist[base + b * 2 + 1];
        const GR = G - GL, HR = H - HL;
        if (HL < p.minChildWeight || HR < p.minChildWeight) continue;
        const gain = (GL * GL) / (HL + p.lambda) + (GR * GR) / (HR + p.lambda) - parentScore;
        if (gain > bestGain) { bestGain = gain; bestF = f; bestB = b; }
      }
    }
    if (bestF < 0) return node;
    const off = bestF * nRows;
    let nLeft = 0;
    for (let i = 0; i < idx.length; i++) if (bins[off + idx[i]] <= bestB) nLeft++;
    if (nLeft === 0 || nLeft === idx.length) return node;
    const li = new Int32Array(nLeft), ri = new Int32Array(idx.length - nLeft);
    let a = 0, c = 0;
    for (let i = 0; i < idx.length; i++) { const r = idx[i]; if (bins[off + r] <= bestB) li[a++] = r; else ri[c++] = r; }
    feature[node] = bestF; bin[node] = bestB; threshold[node] = edges[bestF][bestB];
    let lh: Float64Array | null = null, rh: Float64Array | null = null;
    if (depth + 1 < p.maxDepth) {
      // Histogram of the smaller child; the other one is the parent's minus it (in place).
      const smallIsLeft = li.length <= ri.length;
      const small = histOf(smallIsLeft ? li : ri);
      for (let k = 0; k < histSize; k++) hist[k] -= small[k];
      [lh, rh] = smallIsLeft ? [small, hist] : [hist, small];
    }
    const l = grow(li, lh, depth + 1);
    const r = grow(ri, rh, depth + 1);
    left[node] = l; right[node] = r;
    return node;
  };
  grow(rows, histOf(rows), 0);
  return {
    feature: Int32Array.from(feature), threshold: Float32Array.from(threshold), bin: Int32Array.from(bin),
    left: Int32Array.from(left), right: Int32Array.from(right), value: Float32Array.from(value),
  };
}
