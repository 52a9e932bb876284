// loadModel: what the CLI and the Nx executors call to turn a user's model reference
// (a builtin network name, later an ONNX file) into a graph. One place decides how a
// reference is interpreted, so `tasks`, `tune` and `compile` agree on it.

import type { Graph } from '../graph/graph';
import type { Layout } from '../topi/nn';
import { getNetwork } from './networks';

export interface ModelSpec {
  /** A builtin network name (see NETWORK_NAMES) or a path to a model file. */
  model: string;
  batch?: number;
  layout?: Layout;
  /** Builtin networks only: height = width of the input image (see NetworkOptions.imageSize). */
  imageSize?: number;
  /** Builtin networks only: weight seed and batch-norm statistics (see NetworkOptions). */
  seed?: number;
  randomStats?: boolean;
  weights?: 'random' | 'zeros';
}

export interface LoadedModel {
  /** Name recorded in manifests and logs. */
  name: string;
  graph: Graph;
  /** Graph input names and shapes, in order. */
  inputs: { name: string; shape: readonly number[] }[];
}

export function loadModel(spec: ModelSpec): LoadedModel {
  const net = getNetwork(spec.model, {
    batch: spec.batch, layout: spec.layout, imageSize: spec.imageSize, seed: spec.seed, randomStats: spec.randomStats, weights: spec.weights,
  });
  return { name: net.name, graph: net.graph, inputs: [{ name: net.inputName, shape: net.inputShape }] };
}
