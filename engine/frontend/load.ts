// loadModel: what the CLI and the Nx executors call to turn a user's model reference
// (a builtin network name, or a path ending in .onnx) into a graph. One place decides how
// a reference is interpreted, so `tasks`, `tune` and `compile` agree on it.

import type { Graph } from '../graph/graph';
import path from 'node:path';
import { getNetwork, type NetworkOptions } from './networks';
import { loadOnnx, type InputShape } from './onnx/import';

/** Whether a model reference names an ONNX file (rather than a builtin network). */
export const isOnnxPath = (model: string): boolean => model.toLowerCase().endsWith('.onnx');

/** A model reference and its options; for an ONNX file only `batch` and `layout` apply. */
export interface ModelSpec extends NetworkOptions {
  /** A builtin network name (see NETWORK_NAMES) or a path to a model file. */
  model: string;
  /** A model file's input shapes (--input-shapes, a network's `inputs`): they fix its symbolic dimensions. */
  inputShapes?: readonly InputShape[];
}

export interface LoadedModel {
  /** Name shown in logs: the network name, or the ONNX file's absolute path. */
  name: string;
  /** The ONNX file's absolute path (absent for a builtin network). */
  file?: string;
  graph: Graph;
  /** Graph input names, shapes and element types, in order. */
  inputs: { name: string; shape: readonly number[]; dtype?: 'float32' | 'int32' | 'bool' }[];
  /** The model's output names, in graph.outputs order (absent for a builtin network: `output`, `output0`, ...). */
  outputs?: string[];
}

export function loadModel(spec: ModelSpec): LoadedModel {
  if (isOnnxPath(spec.model)) {
    // The file carries its own weights and input shape; batch sizes a symbolic batch dimension.
    const file = path.resolve(spec.model);
    const m = loadOnnx(file, { batch: spec.batch, layout: spec.layout, inputShapes: spec.inputShapes });
    return { name: file, file, graph: m.graph, inputs: m.inputs, outputs: m.outputs };
  }
  const net = getNetwork(spec.model, {
    batch: spec.batch, layout: spec.layout, imageSize: spec.imageSize, seed: spec.seed, randomStats: spec.randomStats, weights: spec.weights,
  });
  return { name: net.name, graph: net.graph, inputs: net.inputs.map(({ name, shape, dtype }) => ({ name, shape, dtype })) };
}
