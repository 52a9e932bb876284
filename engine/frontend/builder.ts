// A small layer DSL over the graph IR, in the spirit of `relay.testing.layers`: each
// layer adds its parameters as named constants (TVM's names) and its operator nodes.
//
// Parameters are generated in TVM's canonical layout (OIHW, depthwise [C, 1, kh, kw],
// dense [units, in]) and permuted for NHWC (HWIO, depthwise HWOI), so both layouts of a
// network hold the same numbers. Nothing is folded or fused here: batch norm is a real
// `batch_norm` node, a bias is an `add` of a constant.

import { Graph } from '../graph/graph';
import { numElements, permute } from '../ir/tensor';
import type { Layout } from '../topi/nn';
import { fillUniform, streamSeed, xavierWeight } from './init';

export interface BuildOptions {
  readonly batch: number;
  readonly layout: Layout;
  /** Height = width of the input image. */
  readonly imageSize: number;
  readonly seed: number;
  /** Give batch norms non-trivial statistics (gamma, beta, mean, var) instead of identity ones. */
  readonly randomStats: boolean;
  /** 'zeros' skips the random draw (every constant is zero-filled), for shape-only uses. */
  readonly weights: 'random' | 'zeros';
}

export interface ConvSpec {
  readonly channels: number;
  readonly kernel: readonly [number, number];
  readonly strides?: readonly [number, number];
  /** Symmetric padding [rows, cols], as TVM's 2-tuple padding. */
  readonly padding?: readonly [number, number];
  readonly groups?: number;
  /** Weight constant name; `<name>_weight` unless given. */
  readonly weightName?: string;
}

export class NetBuilder {
  readonly graph = new Graph();
  readonly opts: BuildOptions;
  /** For flatten nodes of NHWC maps with a spatial extent: the [h, w, c] they flattened. */
  private readonly flattenedHWC = new Map<number, [number, number, number]>();

  constructor(opts: BuildOptions) {
    this.opts = opts;
  }

  get layout(): Layout { return this.opts.layout; }
  get channelAxis(): number { return this.layout === 'NHWC' ? 3 : 1; }

  /** The image input `data`, [N, H, W, C] or [N, C, H, W]. */
  input(channels = 3, name = 'data'): number {
    const { batch: n, imageSize: s } = this.opts;
    return this.graph.input(name, this.layout === 'NHWC' ? [n, s, s, channels] : [n, channels, s, s]);
  }

  shape(x: number): readonly number[] { return this.graph.node(x).shape; }
  channels(x: number): number { return this.shape(x)[this.channelAxis]; }

  private constant(name: string, shape: readonly number[], make: () => Float32Array): number {
    const data = this.opts.weights === 'zeros' ? new Float32Array(numElements(shape)) : make();
    return this.graph.constant(name, shape, data);
  }

  private uniform(name: string, n: number, lo: number, hi: number): Float32Array {
    return fillUniform(new Float32Array(n), streamSeed(this.opts.seed, name), lo, hi);
  }

  /** conv2d without bias (`layers.conv2d`). groups == channels == input channels is depthwise. */
  conv2d(x: number, name: string, spec: ConvSpec): number {
    const ci = this.channels(x), co = spec.channels, groups = spec.groups ?? 1;
    const [kh, kw] = spec.kernel;
    const depthwise = groups > 1 && groups === ci;
    if (ci % groups !== 0 || co % groups !== 0) throw new Error(`${name}: ${ci} -> ${co} channels do not split into ${groups} groups`);
    // Canonical (NCHW-side) kernel shape; depthwise is [C, multiplier, kh, kw] = OIHW with O, I swapped roles.
    const canonical = depthwise ? [ci, co / ci, kh, kw] : [co, ci / groups, kh, kw];
    const perm = depthwise ? [2, 3, 0, 1] : [2, 3, 1, 0];
    const weightName = spec.weightName ?? `${name}_weight`;
    const nhwc = this.layout === 'NHWC';
    const shape = nhwc ? perm.map((p) => canonical[p]) : canonical;
    const w = this.constant(weightName, shape, () => {
      const data = xavierWeight(this.opts.seed, weightName, canonical, depthwise || weightName.includes('depthwise'));
      return nhwc ? permute(data, canonical, perm) : data;
    });
    const [ph, pw] = spec.padding ?? [0, 0];
    return this.graph.op('conv2d', [x, w], {
      layout: this.layout,
      strides: [...(spec.strides ?? [1, 1])],
      padding: [ph, pw, ph, pw],
      dilation: [1, 1],
      groups,
    }, name);
  }

  /** `bias_add` over the channel axis, as an `add` of a constant that broadcasts ([C], or [C, 1, 1] for NCHW maps). */
  bias(x: number, name: string): number {
    const xs = this.shape(x);
    const c = xs.length === 4 ? this.channels(x) : xs[xs.length - 1];
    const shape = xs.length === 4 && this.layout === 'NCHW' ? [c, 1, 1] : [c];
    const b = this.constant(name, shape, () => new Float32Array(c));
    return this.graph.op('add', [x, b], {}, `${name}_add`);
  }

  /**
   * Inference batch norm (`layers.batch_norm_infer`) over the channel axis, with
   * constants `<name>_gamma`, `_beta`, `_moving_mean`, `_moving_var`. `scale: false`
   * (TVM ignores gamma) keeps gamma at 1 even with random statistics.
   */
  batchNorm(x: number, name: string, epsilon: number, scale = true): number {
    const c = this.channels(x);
    const random = this.opts.randomStats;
    const vec = (suffix: string, fixed: number, lo: number, hi: number, use = true): number => {
      const full = `${name}_${suffix}`;
      return this.constant(full, [c], () => (random && use ? this.uniform(full, c, lo, hi) : new Float32Array(c).fill(fixed)));
    };
    const gamma = vec('gamma', 1, 0.5, 1.5, scale);
    const beta = vec('beta', 0, -0.5, 0.5);
    const mean = vec('moving_mean', 0, -0.5, 0.5);
    const variance = vec('moving_var', 1, 0.5, 2);
    return this.graph.op('batch_norm', [x, gamma, beta, mean, variance], { axis: this.channelAxis, epsilon }, name);
  }

  relu(x: number): number { return this.graph.op('relu', [x]); }
  add(a: number, b: number): number { return this.graph.op('add', [a, b]); }

  private pool(op: string, x: number, kernel: [number, number], strides: [number, number], padding: [number, number], extra = {}): number {
    const [ph, pw] = padding;
    return this.graph.op(op, [x], { layout: this.layout, kernel, strides, padding: [ph, pw, ph, pw], ...extra });
  }

  maxPool(x: number, kernel: [number, number], strides: [number, number], padding: [number, number] = [0, 0]): number {
    return this.pool('max_pool2d', x, kernel, strides, padding);
  }

  avgPool(x: number, kernel: [number, number], strides: [number, number], padding: [number, number], countIncludePad: boolean): number {
    return this.pool('avg_pool2d', x, kernel, strides, padding, { countIncludePad });
  }

  globalAvgPool(x: number): number { return this.graph.op('global_avg_pool2d', [x], { layout: this.layout }); }

  flatten(x: number): number {
    const out = this.graph.op('batch_flatten', [x]);
    const s = this.shape(x);
    if (this.layout === 'NHWC' && s.length === 4 && s[1] * s[2] > 1) this.flattenedHWC.set(out, [s[1], s[2], s[3]]);
    return out;
  }

  /**
   * dense + bias (`layers.dense_add_bias`): weight `<name>_weight` [units, in], bias
   * [units]. After flattening an NHWC map with a spatial extent, the weight's columns are
   * permuted from NCHW's (c, h, w) order to (h, w, c), so both layouts compute the same.
   */
  dense(x: number, name: string, units: number, biasName = `${name}_bias`): number {
    const k = this.shape(x)[1];
    const weightName = `${name}_weight`;
    const hwc = this.flattenedHWC.get(x);
    const w = this.constant(weightName, [units, k], () => {
      const data = xavierWeight(this.opts.seed, weightName, [units, k]);
      if (!hwc) return data;
      const [h, wd, c] = hwc;
      return permute(data, [units, c, h, wd], [0, 2, 3, 1]);
    });
    const y = this.graph.op('dense', [x, w], {}, name);
    return this.bias(y, biasName);
  }

  concat(xs: readonly number[]): number { return this.graph.op('concatenate', xs, { axis: this.channelAxis }); }

  softmax(x: number): number { return this.graph.op('softmax', [x], { axis: -1 }); }
}
