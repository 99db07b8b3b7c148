// The ONNX models onnxruntime-web runs, built from standard opset-17 ops (MatMul, Transpose,
// Mul, Add, Softmax, Reshape). Weights, the scale and the causal mask are initializers
// (constants of the model); q, k, v or x are the inputs. Each builder has variants (where the
// scale goes), as tfjs has; ORT's graph optimizer may fuse MatMul+Transpose+Mul into one
// FusedMatMul either way, and the bench keeps the faster.
//
// The messages (ModelProto, GraphProto, NodeProto, ...) are plain objects with onnx.proto's
// field names; onnx-proto (protobufjs code generated from ONNX 1.10's onnx.proto) checks and
// encodes them in model(). The opset is just a number in the model: that schema has every
// field these graphs use.
import onnxProto from 'onnx-proto';
import { causalMask } from './inputs.mjs';

const { onnx } = onnxProto;
const { FLOAT, INT64 } = onnx.TensorProto.DataType;
const IR_VERSION = 8; // the IR version that goes with opset 17
const OPSET = 17;

// NodeProto; attribute values are ints or int lists (all these graphs use).
function node(opType, input, output, attributes = {}) {
  const attribute = Object.entries(attributes).map(([name, value]) =>
    Array.isArray(value)
      ? { name, type: onnx.AttributeProto.AttributeType.INTS, ints: value }
      : { name, type: onnx.AttributeProto.AttributeType.INT, i: value },
  );
  return { input, output, name: output[0], opType, attribute };
}

// TensorProto of a Float32Array or BigInt64Array; raw_data is little-endian bytes, as on
// every machine Node runs on.
function tensor(name, dims, data) {
  const dataType = data instanceof BigInt64Array ? INT64 : FLOAT;
  return { name, dims, dataType, rawData: new Uint8Array(data.buffer, data.byteOffset, data.byteLength) };
}

// ValueInfoProto of a float tensor of fixed shape.
const valueInfo = (name, dims) => ({
  name,
  type: { tensorType: { elemType: FLOAT, shape: { dim: dims.map((dimValue) => ({ dimValue })) } } },
});

// GraphProto -> the ModelProto's bytes (the empty domain is the standard ai.onnx ops).
function model(graph) {
  const m = {
    irVersion: IR_VERSION,
    producerName: 'wasm-attention bench',
    graph,
    opsetImport: [{ domain: '', version: OPSET }],
  };
  const error = onnx.ModelProto.verify(m);
  if (error) throw new Error(`onnx: ${error}`);
  return onnx.ModelProto.encode(m).finish();
}

const scalar = (name, value) => tensor(name, [], Float32Array.of(value));
const shapeConst = (name, dims) => tensor(name, [dims.length], BigInt64Array.from(dims.map(BigInt)));

export function matmulModel({ m, k, n }) {
  return model({
    name: 'matmul',
    node: [node('MatMul', ['a', 'b'], ['y'])],
    input: [valueInfo('a', [m, k]), valueInfo('b', [k, n])],
    output: [valueInfo('y', [m, n])],
  });
}

export const SCALE_PLACES = {
  scores: 'MatMul(q, Transpose(k))·scale',
  q: 'MatMul(q·scale, Transpose(k))',
};

// Nodes for softmax(q·kᵀ·scale [+ mask])·v, where q, v are [.., n, d] and kT is [.., d, n]
// already; -> nodes producing `out`.
function attentionNodes(q, kT, v, out, scaleAt, causal) {
  const nodes = [];
  let qs = q;
  if (scaleAt === 'q') {
    nodes.push(node('Mul', [q, 'scale'], [`${q}_scaled`]));
    qs = `${q}_scaled`;
  }
  nodes.push(node('MatMul', [qs, kT], ['scores']));
  let s = 'scores';
  if (scaleAt === 'scores') {
    nodes.push(node('Mul', [s, 'scale'], ['scaled']));
    s = 'scaled';
  }
  if (causal) {
    nodes.push(node('Add', [s, 'mask'], ['masked']));
    s = 'masked';
  }
  nodes.push(node('Softmax', [s], ['weights'], { axis: -1 }));
  nodes.push(node('MatMul', ['weights', v], [out]));
  return nodes;
}

// q, k, v [n,d] -> y [n,d]
export function attentionModel({ n, d, causal }, scaleAt) {
  const initializer = [scalar('scale', 1 / Math.sqrt(d))];
  if (causal) initializer.push(tensor('mask', [n, n], causalMask(n)));
  return model({
    name: 'attention',
    node: [node('Transpose', ['k'], ['kT'], { perm: [1, 0] }), ...attentionNodes('q', 'kT', 'v', 'y', scaleAt, causal)],
    initializer,
    input: ['q', 'k', 'v'].map((name) => valueInfo(name, [n, d])),
    output: [valueInfo('y', [n, d])],
  });
}

// x [n,dModel] -> y [n,dModel]; heads by Reshape [n,h,dk] + Transpose to [h,n,dk] (k to
// [h,dk,n]), a batched MatMul over the heads, and back.
export function mhaModel({ n, dModel, heads, causal }, weights, scaleAt) {
  const dk = dModel / heads;
  const initializer = [
    scalar('scale', 1 / Math.sqrt(dk)),
    shapeConst('split_shape', [n, heads, dk]),
    shapeConst('merge_shape', [n, dModel]),
    ...['wq', 'wk', 'wv', 'wo'].map((name) => tensor(name, [dModel, dModel], weights[name])),
  ];
  if (causal) initializer.push(tensor('mask', [n, n], causalMask(n)));
  const nodes = [];
  for (const [p, perm] of [
    ['q', [1, 0, 2]],
    ['k', [1, 2, 0]],
    ['v', [1, 0, 2]],
  ]) {
    nodes.push(node('MatMul', ['x', `w${p}`], [`${p}_proj`]));
    nodes.push(node('Reshape', [`${p}_proj`, 'split_shape'], [`${p}_split`]));
    nodes.push(node('Transpose', [`${p}_split`], [`${p}_heads`], { perm }));
  }
  nodes.push(...attentionNodes('q_heads', 'k_heads', 'v_heads', 'o_heads', scaleAt, causal));
  nodes.push(node('Transpose', ['o_heads'], ['o_tokens'], { perm: [1, 0, 2] }));
  nodes.push(node('Reshape', ['o_tokens', 'merge_shape'], ['concat']));
  nodes.push(node('MatMul', ['concat', 'wo'], ['y']));
  return model({
    name: 'multi_head_attention',
    node: nodes,
    initializer,
    input: [valueInfo('x', [n, dModel])],
    output: [valueInfo('y', [n, dModel])],
  });
}
