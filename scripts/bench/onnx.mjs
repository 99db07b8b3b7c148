// ONNX messages (onnx.proto field numbers), written with the minimal protobuf encoder:
// ModelProto, GraphProto, NodeProto, AttributeProto, TensorProto, ValueInfoProto.
// Only what the benchmark's graphs need: float32 tensors, int64 shape constants, and
// int / ints / float attributes.
import { Message } from './protobuf.mjs';

export const FLOAT = 1;  // TensorProto.DataType
export const INT64 = 7;
const IR_VERSION = 8;    // the IR version that goes with opset 17
export const OPSET = 17;

// AttributeProto.AttributeType
const ATTR_FLOAT = 1, ATTR_INT = 2, ATTR_INTS = 7;

// AttributeProto: name 1, f 2, i 3, ints 8, type 20. The value's JS type picks the kind:
// an array is INTS, an integer INT, any other number FLOAT (write 1.0 as { float: 1 }).
function attribute(name, value) {
  const a = new Message().string(1, name);
  if (Array.isArray(value)) return a.packedInts(8, value).int(20, ATTR_INTS);
  if (typeof value === 'object') return a.float(2, value.float).int(20, ATTR_FLOAT);
  if (Number.isInteger(value)) return a.int(3, value).int(20, ATTR_INT);
  return a.float(2, value).int(20, ATTR_FLOAT);
}

// NodeProto: input 1, output 2, name 3, op_type 4, attribute 5.
export function node(opType, inputs, outputs, attributes = {}, name = outputs[0]) {
  const n = new Message();
  for (const i of inputs) n.string(1, i);
  for (const o of outputs) n.string(2, o);
  n.string(3, name).string(4, opType);
  for (const [k, v] of Object.entries(attributes)) n.message(5, attribute(k, v));
  return n;
}

// TensorProto: dims 1, data_type 2, name 8, raw_data 9 (little-endian bytes, as on every
// machine Node runs on).
export function tensor(name, dims, data) {
  const type = data instanceof BigInt64Array ? INT64 : FLOAT;
  return new Message()
    .packedInts(1, dims)
    .int(2, type)
    .string(8, name)
    .bytes(9, new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
}

// ValueInfoProto { name 1, type 2: TypeProto { tensor_type 1: { elem_type 1, shape 2:
// TensorShapeProto { dim 1: { dim_value 1 } } } } }
export function valueInfo(name, dims, elemType = FLOAT) {
  const shape = new Message();
  for (const d of dims) shape.message(1, new Message().int(1, d));
  const tensorType = new Message().int(1, elemType).message(2, shape);
  return new Message().string(1, name).message(2, new Message().message(1, tensorType));
}

// GraphProto: node 1, name 2, initializer 5, input 11, output 12.
export function graph({ name, nodes, initializers = [], inputs, outputs }) {
  const g = new Message();
  for (const n of nodes) g.message(1, n);
  g.string(2, name);
  for (const t of initializers) g.message(5, t);
  for (const i of inputs) g.message(11, i);
  for (const o of outputs) g.message(12, o);
  return g;
}

// ModelProto: ir_version 1, producer_name 2, graph 7, opset_import 8 (OperatorSetIdProto:
// domain 1, version 2; the empty domain is the standard ai.onnx ops).
export function model(g) {
  return new Message()
    .int(1, IR_VERSION)
    .string(2, 'wasm-attention bench')
    .message(7, g)
    .message(8, new Message().string(1, '').int(2, OPSET))
    .finish();
}
