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
const { FLOAT, INT32, INT64 } = onnx.TensorProto.DataType;
const IR_VERSION = 8; // the IR version that goes with opset 17
const OPSET = 17;

// NodeProto; attribute values are ints or int lists (all these graphs use). domain: the
// operator set ('' the standard one, 'com.microsoft' onnxruntime's contrib ops).
function node(opType, input, output, attributes = {}, domain = '') {
  const attribute = Object.entries(attributes).map(([name, value]) =>
    Array.isArray(value)
      ? { name, type: onnx.AttributeProto.AttributeType.INTS, ints: value }
      : { name, type: onnx.AttributeProto.AttributeType.INT, i: value },
  );
  return { input, output, name: output[0], opType, attribute, domain };
}

// TensorProto of a Float32Array or BigInt64Array; raw_data is little-endian bytes, as on
// every machine Node runs on.
function tensor(name, dims, data) {
  const dataType = data instanceof BigInt64Array ? INT64 : data instanceof Int32Array ? INT32 : FLOAT;
  return { name, dims, dataType, rawData: new Uint8Array(data.buffer, data.byteOffset, data.byteLength) };
}

// ValueInfoProto of a float (or elemType) tensor of fixed shape.
const valueInfo = (name, dims, elemType = FLOAT) => ({
  name,
  type: { tensorType: { elemType, shape: { dim: dims.map((dimValue) => ({ dimValue })) } } },
});

// GraphProto -> the ModelProto's bytes (the empty domain is the standard ai.onnx ops).
// opsets: the operator sets it imports (the decode graphs need opset 23's Attention, or
// onnxruntime's com.microsoft GroupQueryAttention).
function model(graph, { opsets = [{ domain: '', version: OPSET }], irVersion = IR_VERSION } = {}) {
  const m = {
    irVersion,
    producerName: 'wasm-attention bench',
    graph,
    opsetImport: opsets,
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

// ---- grouped-query attention: decode over a cache, and a causal prefill ----
// The same work two ways: the standard Attention operator (opset 23; 4-D [B,H,S,D] inputs,
// past_key/past_value concatenated before the new keys, is_causal bottom-right), and
// onnxruntime's own GroupQueryAttention (com.microsoft; 3-D [B,S,H·D] queries and new keys,
// 4-D past, always causal). Only the output is a graph output: the present keys and values
// are node outputs (ORT's Attention refuses a past without them) but are not copied back to
// JS (a decoding loop would need them; the rows favour the peer).
const OPSET_23 = { opsets: [{ domain: '', version: 23 }], irVersion: 10 };
const CONTRIB = {
  opsets: [
    { domain: '', version: 17 },
    { domain: 'com.microsoft', version: 1 },
  ],
};

// q [1,Hq,1,d], k, v [1,Hkv,1,d], past_key, past_value [1,Hkv,past,d] -> y [1,Hq,1,d]
export function decodeAttentionModel({ batch, qHeads, kvHeads, d, past }) {
  return model(
    {
      name: 'decode_attention',
      node: [node('Attention', ['q', 'k', 'v', '', 'past_key', 'past_value'], ['y', 'present_key', 'present_value'])],
      input: [
        valueInfo('q', [batch, qHeads, 1, d]),
        valueInfo('k', [batch, kvHeads, 1, d]),
        valueInfo('v', [batch, kvHeads, 1, d]),
        valueInfo('past_key', [batch, kvHeads, past, d]),
        valueInfo('past_value', [batch, kvHeads, past, d]),
      ],
      output: [valueInfo('y', [batch, qHeads, 1, d])],
    },
    OPSET_23,
  );
}

// q [1,1,Hq·d], k, v [1,1,Hkv·d], past_key, past_value [1,Hkv,past,d], seqlens_k [1] (int32,
// total − 1), total_sequence_length [] (int32) -> y [1,1,Hq·d] (the bytes of [1,Hq,1,d])
export function decodeGqaModel({ batch, qHeads, kvHeads, d, past }) {
  return model(
    {
      name: 'decode_gqa',
      node: [
        node(
          'GroupQueryAttention',
          ['q', 'k', 'v', 'past_key', 'past_value', 'seqlens_k', 'total_sequence_length'],
          ['y', 'present_key', 'present_value'],
          { num_heads: qHeads, kv_num_heads: kvHeads },
          'com.microsoft',
        ),
      ],
      input: [
        valueInfo('q', [batch, 1, qHeads * d]),
        valueInfo('k', [batch, 1, kvHeads * d]),
        valueInfo('v', [batch, 1, kvHeads * d]),
        valueInfo('past_key', [batch, kvHeads, past, d]),
        valueInfo('past_value', [batch, kvHeads, past, d]),
        valueInfo('seqlens_k', [batch], INT32),
        valueInfo('total_sequence_length', [], INT32),
      ],
      output: [valueInfo('y', [batch, 1, qHeads * d])],
    },
    CONTRIB,
  );
}

// q [1,Hq,n,d], k, v [1,Hkv,n,d] -> y [1,Hq,n,d], causal
export function prefillAttentionModel({ batch, qHeads, kvHeads, d, n }) {
  return model(
    {
      name: 'prefill_attention',
      node: [node('Attention', ['q', 'k', 'v'], ['y'], { is_causal: 1 })],
      input: [
        valueInfo('q', [batch, qHeads, n, d]),
        valueInfo('k', [batch, kvHeads, n, d]),
        valueInfo('v', [batch, kvHeads, n, d]),
      ],
      output: [valueInfo('y', [batch, qHeads, n, d])],
    },
    OPSET_23,
  );
}

// q [1,n,Hq·d], k, v [1,n,Hkv·d] (3-D: GroupQueryAttention's layout) -> y [1,Hq,n,d] (a
// Reshape + Transpose back to ours, inside the timed graph). Not in the bench's rows: at
// n = 256 it took ~10× the Attention operator's time, and n = 2048 would take minutes.
export function prefillGqaModel({ batch, qHeads, kvHeads, d, n }) {
  return model(
    {
      name: 'prefill_gqa',
      node: [
        node(
          'GroupQueryAttention',
          ['q', 'k', 'v', '', '', 'seqlens_k', 'total_sequence_length'],
          ['y3', 'present_key', 'present_value'],
          { num_heads: qHeads, kv_num_heads: kvHeads },
          'com.microsoft',
        ),
        node('Reshape', ['y3', 'split_shape'], ['y_split']),
        node('Transpose', ['y_split'], ['y'], { perm: [0, 2, 1, 3] }),
      ],
      initializer: [
        shapeConst('split_shape', [batch, n, qHeads, d]),
        tensor('seqlens_k', [batch], new Int32Array(batch).fill(n - 1)),
        tensor('total_sequence_length', [], Int32Array.of(n)),
      ],
      input: [
        valueInfo('q', [batch, n, qHeads * d]),
        valueInfo('k', [batch, n, kvHeads * d]),
        valueInfo('v', [batch, n, kvHeads * d]),
      ],
      output: [valueInfo('y', [batch, qHeads, n, d])],
    },
    CONTRIB,
  );
}
