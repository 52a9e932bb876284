// The ONNX writer: one of our graphs (a builtin network with its weights) -> a .onnx
// ModelProto at opset 14, so that any network can be run by ONNX Runtime and tests can
// make ONNX models. ONNX's convs and pools are NCHW; an NHWC graph is first converted
// with convertLayout, which keeps its NHWC input and output (Transpose nodes at the
// boundary, as in models exported from TensorFlow).

import { writeFileSync } from 'node:fs';
import { isOpNode, type ConstantNode, type Graph, type OpNode } from '../../graph/graph';
import { convertLayout } from '../../graph/passes';
import { DataType, encodeModel, type AttributeMessage, type NodeMessage, type TensorMessage, type ValueInfo } from './schema';
import { floatTensorProto, int64TensorProto } from './tensor';
import { AttributeType } from './schema';

/** Opset 14: the first with HardSwish. */
export const EXPORT_OPSET = 14;
/** IR version 7 goes with opset 14 (onnx/helper.py's VERSION_TABLE, onnx 1.9). */
export const EXPORT_IR_VERSION = 7;

export interface ExportOptions {
  /** ModelProto.graph.name (default 'tensortune'). */
  name?: string;
  /** Graph output names (default 'output', or 'output0', 'output1', ...). */
  outputNames?: readonly string[];
}

const ints = (name: string, v: readonly number[]): AttributeMessage => ({ name, type: AttributeType.INTS, ints: [...v] });
const int = (name: string, v: number): AttributeMessage => ({ name, type: AttributeType.INT, i: v });
const float = (name: string, v: number): AttributeMessage => ({ name, type: AttributeType.FLOAT, f: v });

function valueInfo(name: string, shape: readonly number[]): ValueInfo {
  return { name, type: { tensor_type: { elem_type: DataType.FLOAT, shape: { dim: shape.map((d) => ({ dim_value: d })) } } } };
}

/** Serialize `graph` (with its constants as initializers) as an ONNX model. */
export function exportOnnx(graph: Graph, opts: ExportOptions = {}): Uint8Array {
  const g = graph.nodes.some((n) => isOpNode(n) && n.attrs.layout === 'NHWC') ? convertLayout(graph, 'NCHW') : graph;
  const used = new Set<string>();
  const unique = (base: string): string => {
    let name = base || 'v';
    for (let k = 1; used.has(name); k++) name = `${base}_${k}`;
    used.add(name);
    return name;
  };
  const valueName = new Map<number, string>();
  const initializers: TensorMessage[] = [];
  const nodes: NodeMessage[] = [];
  const inputs: ValueInfo[] = [];
  const outputNames = opts.outputNames ?? g.outputs.map((_, i) => (g.outputs.length === 1 ? 'output' : `output${i}`));
  if (outputNames.length !== g.outputs.length) throw new Error(`onnx writer: ${outputNames.length} output names for ${g.outputs.length} outputs`);
  for (const o of outputNames) used.add(o);

  const floatInit = (base: string, shape: readonly number[], data: Float32Array): string => {
    const name = unique(base);
    initializers.push(floatTensorProto(name, shape, data));
    return name;
  };
  const intInit = (base: string, values: readonly number[]): string => {
    const name = unique(base);
    initializers.push(int64TensorProto(name, [values.length], values));
    return name;
  };

  for (const n of g.nodes) {
    if (n.op === 'input') {
      const name = unique(n.name);
      valueName.set(n.id, name);
      inputs.push(valueInfo(name, n.shape));
      continue;
    }
    if (n.op === 'constant') {
      const c = n as ConstantNode;
      if (c.data instanceof Float32Array) valueName.set(n.id, floatInit(c.name, c.shape, c.data));
      else {
        // int32/bool constants are written as ONNX int64 (what shape and index inputs take).
        const name = unique(c.name);
        initializers.push(int64TensorProto(name, c.shape, [...c.data]));
        valueName.set(n.id, name);
      }
      continue;
    }
    const op = n as OpNode;
    const outIndex = g.outputs.indexOf(op.id);
    const out = outIndex >= 0 ? outputNames[outIndex] : unique(op.name);
    valueName.set(op.id, out);
    const ins = op.inputs.map((i) => valueName.get(i)!);
    const emit = (opType: string, inputs: string[], attribute: AttributeMessage[] = [], output = out, suffix = ''): void => {
      nodes.push({ op_type: opType, name: `${op.name}${suffix}`, input: inputs, output: [output], attribute });
    };
    const a = op.attrs;
    switch (op.op) {
      case 'conv2d': {
        const data = g.node(op.inputs[0]).shape, w = g.node(op.inputs[1]);
        const groups = (a.groups as number | undefined) ?? 1;
        let weight = ins[1];
        if (groups > 1 && groups === data[1]) {
          // Our depthwise [C, m, kh, kw] is ONNX's [C*m, 1, kh, kw]: same data.
          const [c, m, kh, kw] = w.shape;
          const shape = [c * m, 1, kh, kw];
          if (w.op === 'constant') {
            initializers.find((t) => t.name === weight)!.dims = shape;
          } else {
            weight = unique(`${op.name}_weight`);
            emit('Reshape', [ins[1], intInit(`${op.name}_weight_shape`, shape)], [], weight, '_weight');
          }
        }
        const [kh, kw] = w.shape.slice(2);
        emit('Conv', [ins[0], weight], [
          ints('kernel_shape', [kh, kw]), ints('strides', a.strides as number[]), ints('pads', a.padding as number[]),
          ints('dilations', (a.dilation as number[] | undefined) ?? [1, 1]), int('group', groups),
        ]);
        break;
      }
      case 'dense': emit('Gemm', ins, [int('transB', 1)]); break;
      case 'batch_matmul': {
        const t = unique(`${op.name}_bt`);
        emit('Transpose', [ins[1]], [ints('perm', [0, 2, 1])], t, '_bt');
        emit('MatMul', [ins[0], t]);
        break;
      }
      case 'max_pool2d': case 'avg_pool2d':
        emit(op.op === 'max_pool2d' ? 'MaxPool' : 'AveragePool', ins, [
          ints('kernel_shape', a.kernel as number[]), ints('strides', a.strides as number[]), ints('pads', a.padding as number[]),
          ...(op.op === 'avg_pool2d' ? [int('count_include_pad', a.countIncludePad ? 1 : 0)] : []),
        ]);
        break;
      case 'global_avg_pool2d': emit('GlobalAveragePool', ins); break;
      case 'global_max_pool2d': emit('GlobalMaxPool', ins); break;
      case 'softmax': emit('Softmax', ins, [int('axis', (a.axis as number | undefined) ?? -1)]); break;
      case 'batch_norm':
        if (a.axis !== 1) throw new Error(`onnx writer: batch_norm over axis ${String(a.axis)} (ONNX normalises axis 1)`);
        emit('BatchNormalization', ins, [float('epsilon', a.epsilon as number)]);
        break;
      case 'add': emit('Add', ins); break;
      case 'subtract': emit('Sub', ins); break;
      case 'multiply': emit('Mul', ins); break;
      case 'divide': emit('Div', ins); break;
      case 'maximum': emit('Max', ins); break;
      case 'minimum': emit('Min', ins); break;
      case 'relu': emit('Relu', ins); break;
      case 'sigmoid': emit('Sigmoid', ins); break;
      case 'tanh': emit('Tanh', ins); break;
      case 'leaky_relu': emit('LeakyRelu', ins, [float('alpha', a.alpha as number)]); break;
      case 'hard_sigmoid': emit('HardSigmoid', ins, [float('alpha', a.alpha as number), float('beta', a.beta as number)]); break;
      case 'hard_swish': emit('HardSwish', ins); break;
      case 'clip':
        emit('Clip', [ins[0], floatInit(`${op.name}_min`, [], Float32Array.of(a.min as number)), floatInit(`${op.name}_max`, [], Float32Array.of(a.max as number))]);
        break;
      case 'pad':
        emit('Pad', [ins[0], intInit(`${op.name}_pads`, [...(a.before as number[]), ...(a.after as number[])]),
          floatInit(`${op.name}_value`, [], Float32Array.of((a.value as number | undefined) ?? 0))]);
        break;
      case 'reshape': emit('Reshape', [ins[0], intInit(`${op.name}_shape`, a.newShape as number[])]); break;
      case 'batch_flatten': emit('Flatten', ins, [int('axis', 1)]); break;
      case 'transpose': emit('Transpose', ins, [ints('perm', a.axes as number[])]); break;
      case 'concatenate': emit('Concat', ins, [int('axis', a.axis as number)]); break;
      case 'mean':
        emit('ReduceMean', ins, [ints('axes', a.axes as number[]), int('keepdims', (a.keepdims as boolean | undefined) ?? true ? 1 : 0)]);
        break;
      default:
        throw new Error(`onnx writer: operator '${op.op}' has no ONNX form here`);
    }
  }
  return encodeModel({
    ir_version: EXPORT_IR_VERSION,
    producer_name: 'tensortune',
    opset_import: [{ domain: '', version: EXPORT_OPSET }],
    graph: {
      name: opts.name ?? 'tensortune',
      node: nodes,
      initializer: initializers,
      input: inputs,
      output: g.outputs.map((id, i) => valueInfo(outputNames[i], g.node(id).shape)),
    },
  });
}

export function writeOnnxFile(file: string, graph: Graph, opts: ExportOptions = {}): void {
  writeFileSync(file, exportOnnx(graph, opts));
}
