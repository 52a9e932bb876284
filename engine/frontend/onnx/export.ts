// The ONNX writer: one of our graphs (a builtin network with its weights) -> a .onnx
// ModelProto at opset 14, so that any network can be run by ONNX Runtime and tests can
// make ONNX models. ONNX's convs and pools are NCHW; an NHWC graph is first converted
// with convertLayout, which keeps its NHWC input and output (Transpose nodes at the
// boundary, as in models exported from TensorFlow).

import { writeFileSync } from 'node:fs';
import { isOpNode, liveNodes, type ConstantNode, type Graph, type OpNode } from '../../graph/graph';
import type { DType } from '../../ir/expr';
import { permute } from '../../ir/tensor';
import type { OperandView } from '../../topi/nn';
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
  /**
   * The opset to write (default EXPORT_OPSET, 14): 13 to 17. At 17 a layer_norm is a
   * LayerNormalization node; below it is decomposed as exporters write it for older opsets
   * (ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add).
   */
  opset?: number;
}

/** The IR version of an opset (onnx/helper.py's VERSION_TABLE). */
const irVersionOf = (opset: number): number => (opset <= 14 ? 7 : 8);

/** ONNX's element type of a value of ours: int32 and bool are written as int64 (ids, masks) and BOOL. */
const elemType = (dtype: DType): number => (dtype === 'float32' ? DataType.FLOAT : dtype === 'bool' ? DataType.BOOL : DataType.INT64);


const ints = (name: string, v: readonly number[]): AttributeMessage => ({ name, type: AttributeType.INTS, ints: [...v] });
const int = (name: string, v: number): AttributeMessage => ({ name, type: AttributeType.INT, i: v });
const float = (name: string, v: number): AttributeMessage => ({ name, type: AttributeType.FLOAT, f: v });

function valueInfo(name: string, shape: readonly number[], dtype: DType = 'float32'): ValueInfo {
  return { name, type: { tensor_type: { elem_type: elemType(dtype), shape: { dim: shape.map((d) => ({ dim_value: d })) } } } };
}

/** Serialize `graph` (with its constants as initializers) as an ONNX model. */
export function exportOnnx(graph: Graph, opts: ExportOptions = {}): Uint8Array {
  const g = graph.nodes.some((n) => isOpNode(n) && (n.attrs.layout === 'NHWC' || n.attrs.layout === 'NDHWC')) ? convertLayout(graph, 'NCHW') : graph;
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

  const opset = opts.opset ?? EXPORT_OPSET;
  if (!Number.isInteger(opset) || opset < 13 || opset > 17) throw new Error(`onnx writer: opset ${opset} (13 to 17 are written)`);
  // Nodes nothing reads (a transpose folded into a batch_matmul's view) are not written.
  const live = liveNodes(g);
  const splits = splitPlans(g, live);
  // Constant weights read only by dense over rank > 2 (a MatMul in the file).
  const readers = new Map<number, OpNode[]>();
  for (const n of g.nodes) if (live.has(n.id) && isOpNode(n)) for (const i of n.inputs) readers.set(i, [...(readers.get(i) ?? []), n]);
  const matmulWeights = new Set([...readers].filter(([id, rs]) => g.node(id).op === 'constant' && !g.outputs.includes(id)
    && rs.every((r) => r.op === 'dense' && r.inputs[1] === id && r.inputs[0] !== id && r.shape.length > 2)).map(([id]) => id));
  const regions = new Map<string, string>();
  /** The region of node `id` a view reads: a Split output when the views tile it along one axis (a fused qkv), else a Slice. */
  const regionOf = (id: number, view: OperandView, at: string): string => {
    const key = `${id}|${String(view.begin)}|${String(view.box)}`;
    const known = regions.get(key);
    if (known) return known;
    const stored = g.node(id).shape, source = valueName.get(id)!;
    const plan = splits.get(id);
    if (plan) {
      const outs = plan.parts.map(([b]) => unique(`${g.node(id).name}_split${b}`));
      nodes.push({ op_type: 'Split', name: `${g.node(id).name}_split`, input: [source, intInit(`${g.node(id).name}_split_sizes`, plan.parts.map(([, e]) => e))], output: outs, attribute: [int('axis', plan.axis)] });
      plan.parts.forEach(([b, e], k) => {
        const begin = stored.map((_, j) => (j === plan.axis ? b : 0)), box = stored.map((d, j) => (j === plan.axis ? e : d));
        regions.set(`${id}|${String(begin)}|${String(box)}`, outs[k]);
      });
      return regions.get(key)!;
    }
    const begin = view.begin ?? stored.map(() => 0), box = view.box!;
    const out = unique(`${at}_slice`);
    nodes.push({ op_type: 'Slice', name: `${at}_slice`, input: [source, intInit(`${at}_starts`, begin), intInit(`${at}_ends`, begin.map((b, j) => b + box[j])), intInit(`${at}_axes`, begin.map((_, j) => j))], output: [out], attribute: [] });
    regions.set(key, out);
    return out;
  };
  for (const n of g.nodes) {
    if (n.op === 'input') {
      const name = unique(n.name);
      valueName.set(n.id, name);
      inputs.push(valueInfo(name, n.shape, n.dtype));
      continue;
    }
    if (!live.has(n.id)) continue;
    if (n.op === 'constant') {
      const c = n as ConstantNode;
      if (c.data instanceof Float32Array && matmulWeights.has(c.id)) {
        // Read only by linear layers over [..., K]: written once, as MatMul's [K, N].
        const [units, k] = c.shape;
        valueName.set(n.id, floatInit(c.name, [k, units], permute(c.data, [units, k], [1, 0])));
      } else if (c.data instanceof Float32Array) valueName.set(n.id, floatInit(c.name, c.shape, c.data));
      else {
        // int32/bool constants are written as ONNX int64 (what shape and index inputs take).
        const name = unique(c.name);
        initializers.push(int64TensorProto(name, c.shape, [...c.data]));
        valueName.set(n.id, name);
      }
      continue;
    }
    const op = n as OpNode;
    if (isUnitSlice(op) && splits.has(op.inputs[0])) {
      // One part of a Split the views and slices of the tensor share.
      valueName.set(op.id, regionOf(op.inputs[0], sliceRegion(op), op.name));
      continue;
    }
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
      case 'dense': {
        if (op.shape.length === 2) { emit('Gemm', ins, [int('transB', 1)]); break; }
        // A linear layer over [..., K], as exporters write it: MatMul by the [K, N] weight.
        let weight: string;
        if (matmulWeights.has(op.inputs[1])) weight = ins[1];
        else {
          weight = unique(`${op.name}_wt`);
          emit('Transpose', [ins[1]], [ints('perm', [1, 0])], weight, '_wt');
        }
        emit('MatMul', [ins[0], weight]);
        break;
      }
      case 'batch_matmul': {
        // Each operand as exporters write it: Reshape (the head split) and Transpose of the stored tensor.
        const operand = (i: number, view: OperandView | undefined, trans: boolean, tag: string): string => {
          let v = view?.box ? regionOf(op.inputs[i], view, `${op.name}_${tag}`) : ins[i];
          const rank = view ? view.shape.length : g.node(op.inputs[i]).shape.length;
          let perm = view ? [...view.perm] : Array.from({ length: rank }, (_, d) => d);
          if (view && view.shape.join() !== (view.box ?? g.node(op.inputs[i]).shape).join()) {
            const r = unique(`${op.name}_${tag}_split`);
            emit('Reshape', [v, intInit(`${op.name}_${tag}_shape`, view.shape)], [], r, `_${tag}_split`);
            v = r;
          }
          if (trans) perm = [...perm.slice(0, -2), perm[rank - 1], perm[rank - 2]];
          if (perm.some((p, d) => p !== d)) {
            const t = unique(`${op.name}_${tag}_t`);
            emit('Transpose', [v], [ints('perm', perm)], t, `_${tag}_t`);
            v = t;
          }
          return v;
        };
        const a = operand(0, a0(op, 'viewA'), op.attrs.transA === true, 'a');
        const b = operand(1, a0(op, 'viewB'), op.attrs.transB !== false, 'b');
        emit('MatMul', [a, b]);
        break;
      }
      case 'max_pool2d': case 'avg_pool2d': case 'max_pool3d': case 'avg_pool3d': {
        const avg = op.op.startsWith('avg');
        const dilation = a.dilation as number[] | undefined;
        const dilated = dilation !== undefined && dilation.some((d) => d !== 1);
        if (avg && dilated && opset < 19) throw new Error(`onnx writer: an average pool with dilations needs opset 19 (writing ${opset})`);
        // ceil_mode's extra end padding (kept apart under count_include_pad): ceil_mode=1, which the importer turns back into it.
        emit(avg ? 'AveragePool' : 'MaxPool', ins, [
          ints('kernel_shape', a.kernel as number[]), ints('strides', a.strides as number[]), ints('pads', a.padding as number[]),
          ...(avg ? [int('count_include_pad', a.countIncludePad ? 1 : 0)] : []),
          ...(dilated ? [ints('dilations', dilation)] : []), ...(a.ceilPadding ? [int('ceil_mode', 1)] : []),
        ]);
        break;
      }
      case 'conv3d': {
        const w = g.node(op.inputs[1]).shape;
        emit('Conv', [ins[0], ins[1]], [
          ints('kernel_shape', w.slice(2)), ints('strides', a.strides as number[]), ints('pads', a.padding as number[]),
          ints('dilations', (a.dilation as number[] | undefined) ?? [1, 1, 1]), int('group', (a.groups as number | undefined) ?? 1),
        ]);
        break;
      }
      case 'conv2d_transpose': case 'conv3d_transpose': {
        // Our channels-first kernel [Ci, Co/groups, k...] is ONNX's.
        const w = g.node(op.inputs[1]).shape;
        emit('ConvTranspose', [ins[0], ins[1]], [
          ints('kernel_shape', w.slice(2)), ints('strides', a.strides as number[]), ints('pads', a.padding as number[]),
          ints('dilations', a.dilation as number[]), ints('output_padding', a.outputPadding as number[]), int('group', (a.groups as number | undefined) ?? 1),
        ]);
        break;
      }
      case 'lp_pool2d': case 'lp_pool3d': {
        const dilation = a.dilation as number[] | undefined;
        const dilated = dilation !== undefined && dilation.some((d) => d !== 1);
        if (dilated && opset < 18) throw new Error(`onnx writer: an Lp pool with dilations needs opset 18 (writing ${opset})`);
        emit('LpPool', ins, [
          ints('kernel_shape', a.kernel as number[]), ints('strides', a.strides as number[]), ints('pads', a.padding as number[]),
          int('p', (a.p as number | undefined) ?? 2), ...(dilated ? [ints('dilations', dilation)] : []),
        ]);
        break;
      }
      case 'global_avg_pool3d': emit('GlobalAveragePool', ins); break;
      case 'global_max_pool3d': emit('GlobalMaxPool', ins); break;
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
      // The transformers' other operators, as torch.onnx writes them.
      case 'erf': emit('Erf', ins); break;
      case 'take': emit('Gather', ins, [int('axis', (a.axis as number | undefined) ?? 0)]); break;
      case 'cast': emit('Cast', ins, [int('to', elemType(op.dtype) === DataType.INT64 ? DataType.INT64 : elemType(op.dtype))]); break;
      case 'broadcast_to': emit('Expand', [ins[0], intInit(`${op.name}_shape`, a.shape as number[])]); break;
      case 'strided_slice': {
        const begin = a.begin as number[], step = a.step as number[];
        // ends one step past the last element read; a backward slice to the start ends below 0.
        const ends = begin.map((b, j) => { const e = b + op.shape[j] * step[j]; return e < 0 ? -(2 ** 31) : e; });
        emit('Slice', [ins[0], intInit(`${op.name}_starts`, begin), intInit(`${op.name}_ends`, ends), intInit(`${op.name}_axes`, begin.map((_, j) => j)), intInit(`${op.name}_steps`, step)]);
        break;
      }
      case 'layer_norm': {
        const rank = op.shape.length, axis = a.axis as number, eps = a.epsilon as number;
        if (opset >= 17) { emit('LayerNormalization', ins, [int('axis', axis), float('epsilon', eps)]); break; }
        // Before opset 17, as torch.onnx writes nn.LayerNorm: the moments by ReduceMean.
        const axes = Array.from({ length: rank }, (_, d) => d).slice(axis < 0 ? axis + rank : axis);
        const step = (opType: string, inputs: string[], tag: string, attrs: AttributeMessage[] = []): string => {
          const v = unique(`${op.name}_${tag}`);
          emit(opType, inputs, attrs, v, `_${tag}`);
          return v;
        };
        const mean = step('ReduceMean', [ins[0]], 'mean', [ints('axes', axes), int('keepdims', 1)]);
        const d = step('Sub', [ins[0], mean], 'centered');
        const sq = step('Pow', [d, floatInit(`${op.name}_two`, [], Float32Array.of(2))], 'square');
        const variance = step('ReduceMean', [sq], 'var', [ints('axes', axes), int('keepdims', 1)]);
        const std = step('Sqrt', [step('Add', [variance, floatInit(`${op.name}_eps`, [], Float32Array.of(eps))], 'var_eps')], 'std');
        const normed = step('Div', [d, std], 'normed');
        if (ins.length > 2) emit('Add', [step('Mul', [normed, ins[1]], 'scaled'), ins[2]]);
        else emit('Mul', [normed, ins[1]]);
        break;
      }
      default:
        throw new Error(`onnx writer: operator '${op.op}' has no ONNX form here`);
    }
  }
  return encodeModel({
    ir_version: opset === EXPORT_OPSET ? EXPORT_IR_VERSION : irVersionOf(opset),
    producer_name: 'tensortune',
    opset_import: [{ domain: '', version: opset }],
    graph: {
      name: opts.name ?? 'tensortune',
      node: nodes,
      initializer: initializers,
      input: inputs,
      output: g.outputs.map((id, i) => valueInfo(outputNames[i], g.node(id).shape, g.node(id).dtype)),
    },
  });
}

const a0 = (op: OpNode, key: string): OperandView | undefined => op.attrs[key] as OperandView | undefined;

/**
 * For each tensor that batch_matmul views read in regions along one axis that tile it
 * (q, k and v of a fused qkv projection), that axis and the parts [begin, extent] in order.
 */
const isUnitSlice = (n: OpNode): boolean => n.op === 'strided_slice' && (n.attrs.step as number[]).every((st) => st === 1);
const sliceRegion = (n: OpNode): OperandView => ({ begin: n.attrs.begin as number[], box: n.shape, shape: n.shape, perm: n.shape.map((_, i) => i) });

function splitPlans(g: Graph, live: ReadonlySet<number>): Map<number, { axis: number; parts: [number, number][] }> {
  const regions = new Map<number, OperandView[]>();
  for (const n of g.nodes) {
    if (!live.has(n.id) || !isOpNode(n)) continue;
    // A unit-step slice is a region too (ViT's k, copied into K^T, beside the q and v views).
    if (isUnitSlice(n)) regions.set(n.inputs[0], [...(regions.get(n.inputs[0]) ?? []), sliceRegion(n)]);
    if (n.op !== 'batch_matmul') continue;
    (['viewA', 'viewB'] as const).forEach((key, i) => {
      const v = n.attrs[key] as OperandView | undefined;
      if (v?.box) regions.set(n.inputs[i], [...(regions.get(n.inputs[i]) ?? []), v]);
    });
  }
  const plans = new Map<number, { axis: number; parts: [number, number][] }>();
  for (const [id, views] of regions) {
    const stored = g.node(id).shape;
    const axes = new Set(views.flatMap((v) => stored.flatMap((d, j) => (v.box![j] !== d ? [j] : []))));
    if (axes.size !== 1) continue;
    const [axis] = axes;
    const parts = [...new Map(views.map((v) => [(v.begin ?? [])[axis] ?? 0, v.box![axis]] as [number, number])).entries()].sort((x, y) => x[0] - y[0]);
    let at = 0;
    if (parts.every(([b, e]) => { const ok = b === at; at += e; return ok; }) && at === stored[axis]) plans.set(id, { axis, parts });
  }
  return plans;
}

export function writeOnnxFile(file: string, graph: Graph, opts: ExportOptions = {}): void {
  writeFileSync(file, exportOnnx(graph, opts));
}
