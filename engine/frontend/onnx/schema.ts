// The subset of the ONNX protobuf schema (onnx/onnx.proto, package `onnx`) that the
// importer and the writer use, as a protobufjs JSON descriptor: the messages keep the
// official field numbers, so files written by PyTorch, TensorFlow or onnx itself decode
// here, and what we write decodes there. Fields we do not list (sparse initializers,
// training info, functions, ...) are skipped by the decoder.
//
// As in onnx.proto (proto2 syntax), TensorProto's numeric data fields are packed and
// AttributeProto's lists are not; the decoder accepts both encodings either way.

import * as protobuf from 'protobufjs';

const packed = { packed: true };

const DESCRIPTOR: protobuf.INamespace = {
  nested: {
    onnx: {
      nested: {
        ModelProto: {
          fields: {
            ir_version: { type: 'int64', id: 1 },
            producer_name: { type: 'string', id: 2 },
            producer_version: { type: 'string', id: 3 },
            domain: { type: 'string', id: 4 },
            model_version: { type: 'int64', id: 5 },
            doc_string: { type: 'string', id: 6 },
            graph: { type: 'GraphProto', id: 7 },
            opset_import: { rule: 'repeated', type: 'OperatorSetIdProto', id: 8 },
            metadata_props: { rule: 'repeated', type: 'StringStringEntryProto', id: 14 },
          },
        },
        OperatorSetIdProto: {
          fields: {
            domain: { type: 'string', id: 1 },
            version: { type: 'int64', id: 2 },
          },
        },
        StringStringEntryProto: {
          fields: {
            key: { type: 'string', id: 1 },
            value: { type: 'string', id: 2 },
          },
        },
        GraphProto: {
          fields: {
            node: { rule: 'repeated', type: 'NodeProto', id: 1 },
            name: { type: 'string', id: 2 },
            initializer: { rule: 'repeated', type: 'TensorProto', id: 5 },
            doc_string: { type: 'string', id: 10 },
            input: { rule: 'repeated', type: 'ValueInfoProto', id: 11 },
            output: { rule: 'repeated', type: 'ValueInfoProto', id: 12 },
            value_info: { rule: 'repeated', type: 'ValueInfoProto', id: 13 },
          },
        },
        NodeProto: {
          fields: {
            input: { rule: 'repeated', type: 'string', id: 1 },
            output: { rule: 'repeated', type: 'string', id: 2 },
            name: { type: 'string', id: 3 },
            op_type: { type: 'string', id: 4 },
            attribute: { rule: 'repeated', type: 'AttributeProto', id: 5 },
            doc_string: { type: 'string', id: 6 },
            domain: { type: 'string', id: 7 },
          },
        },
        AttributeProto: {
          fields: {
            name: { type: 'string', id: 1 },
            f: { type: 'float', id: 2 },
            i: { type: 'int64', id: 3 },
            s: { type: 'bytes', id: 4 },
            t: { type: 'TensorProto', id: 5 },
            g: { type: 'GraphProto', id: 6 },
            floats: { rule: 'repeated', type: 'float', id: 7, options: { packed: false } },
            ints: { rule: 'repeated', type: 'int64', id: 8, options: { packed: false } },
            strings: { rule: 'repeated', type: 'bytes', id: 9 },
            tensors: { rule: 'repeated', type: 'TensorProto', id: 10 },
            graphs: { rule: 'repeated', type: 'GraphProto', id: 11 },
            doc_string: { type: 'string', id: 13 },
            type: { type: 'int32', id: 20 },
            ref_attr_name: { type: 'string', id: 21 },
          },
        },
        ValueInfoProto: {
          fields: {
            name: { type: 'string', id: 1 },
            type: { type: 'TypeProto', id: 2 },
            doc_string: { type: 'string', id: 3 },
          },
        },
        TypeProto: {
          fields: {
            tensor_type: { type: 'TypeProtoTensor', id: 1 },
            denotation: { type: 'string', id: 6 },
          },
        },
        // TypeProto.Tensor in onnx.proto (a nested message; the name is local to this descriptor).
        TypeProtoTensor: {
          fields: {
            elem_type: { type: 'int32', id: 1 },
            shape: { type: 'TensorShapeProto', id: 2 },
          },
        },
        TensorShapeProto: {
          fields: {
            dim: { rule: 'repeated', type: 'Dimension', id: 1 },
          },
          nested: {
            Dimension: {
              fields: {
                dim_value: { type: 'int64', id: 1 },
                dim_param: { type: 'string', id: 2 },
                denotation: { type: 'string', id: 3 },
              },
            },
          },
        },
        TensorProto: {
          fields: {
            dims: { rule: 'repeated', type: 'int64', id: 1, options: packed },
            data_type: { type: 'int32', id: 2 },
            float_data: { rule: 'repeated', type: 'float', id: 4, options: packed },
            int32_data: { rule: 'repeated', type: 'int32', id: 5, options: packed },
            string_data: { rule: 'repeated', type: 'bytes', id: 6 },
            int64_data: { rule: 'repeated', type: 'int64', id: 7, options: packed },
            name: { type: 'string', id: 8 },
            raw_data: { type: 'bytes', id: 9 },
            double_data: { rule: 'repeated', type: 'double', id: 10, options: packed },
            uint64_data: { rule: 'repeated', type: 'uint64', id: 11, options: packed },
            doc_string: { type: 'string', id: 12 },
            external_data: { rule: 'repeated', type: 'StringStringEntryProto', id: 13 },
            data_location: { type: 'int32', id: 14 },
          },
        },
      },
    },
  },
};

/** TensorProto.DataType values (onnx.proto). */
export const DataType = {
  FLOAT: 1, UINT8: 2, INT8: 3, UINT16: 4, INT16: 5, INT32: 6, INT64: 7, STRING: 8, BOOL: 9,
  FLOAT16: 10, DOUBLE: 11, UINT32: 12, UINT64: 13, BFLOAT16: 16,
  FLOAT8E4M3FN: 17, FLOAT8E4M3FNUZ: 18, FLOAT8E5M2: 19, FLOAT8E5M2FNUZ: 20, UINT4: 21, INT4: 22, FLOAT4E2M1: 23,
  UINT2: 25, INT2: 26,
} as const;

/** AttributeProto.AttributeType values (onnx.proto). */
export const AttributeType = {
  FLOAT: 1, INT: 2, STRING: 3, TENSOR: 4, GRAPH: 5, FLOATS: 6, INTS: 7, STRINGS: 8, TENSORS: 9, GRAPHS: 10,
} as const;

/** TensorProto.DataLocation.EXTERNAL */
export const EXTERNAL_DATA = 1;

// Plain-object views of the decoded messages (protobufjs toObject with longs as numbers);
// every field may be absent.
export interface StringStringEntry { key?: string; value?: string }
export interface OperatorSetId { domain?: string; version?: number }
export interface Dimension { dim_value?: number; dim_param?: string }
export interface ValueInfo { name?: string; type?: { tensor_type?: { elem_type?: number; shape?: { dim?: Dimension[] } } } }
export interface TensorMessage {
  dims?: number[]; data_type?: number; float_data?: number[]; int32_data?: number[]; int64_data?: number[];
  double_data?: number[]; uint64_data?: number[]; string_data?: Uint8Array[]; name?: string; raw_data?: Uint8Array;
  external_data?: StringStringEntry[]; data_location?: number;
}
export interface AttributeMessage {
  name?: string; type?: number; f?: number; i?: number; s?: Uint8Array; t?: TensorMessage; g?: unknown;
  floats?: number[]; ints?: number[]; strings?: Uint8Array[]; tensors?: TensorMessage[]; graphs?: unknown[]; ref_attr_name?: string;
}
export interface NodeMessage { input?: string[]; output?: string[]; name?: string; op_type?: string; domain?: string; attribute?: AttributeMessage[] }
export interface GraphMessage { node?: NodeMessage[]; name?: string; initializer?: TensorMessage[]; input?: ValueInfo[]; output?: ValueInfo[]; value_info?: ValueInfo[] }
export interface ModelMessage {
  ir_version?: number; producer_name?: string; producer_version?: string; domain?: string; model_version?: number;
  doc_string?: string; graph?: GraphMessage; opset_import?: OperatorSetId[]; metadata_props?: StringStringEntry[];
}

let root: protobuf.Root | undefined;

/** The onnx.ModelProto type (built once). */
export function modelType(): protobuf.Type {
  root ??= protobuf.Root.fromJSON(DESCRIPTOR);
  return root.lookupType('onnx.ModelProto');
}

/** Decode a serialized ModelProto into plain objects; throws protobufjs' errors on malformed input. */
export function decodeModel(bytes: Uint8Array): ModelMessage {
  const type = modelType();
  const message = type.decode(bytes);
  return type.toObject(message, { longs: Number, arrays: true, defaults: false }) as ModelMessage;
}

/** Serialize a ModelProto given as plain objects. */
export function encodeModel(model: ModelMessage): Uint8Array {
  const type = modelType();
  const invalid = type.verify(model);
  if (invalid) throw new Error(`onnx writer: invalid ModelProto: ${invalid}`);
  return type.encode(type.fromObject(model as Record<string, unknown>)).finish();
}
