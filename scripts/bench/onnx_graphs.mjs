// The ONNX models onnxruntime-web runs, built from standard opset-17 ops (MatMul, Transpose,
// Mul, Add, Softmax, Reshape) with the encoder in onnx.mjs. Weights, the scale and the
// causal mask are initializers (constants of the model); q, k, v or x are the inputs.
// Each builder has variants (where the scale goes), as tfjs has; ORT's graph optimizer may
// fuse MatMul+Transpose+Mul into one FusedMatMul either way, and the bench keeps the faster.
import { causalMask } from './inputs.mjs';
import { graph, model, node, tensor, valueInfo } from './onnx.mjs';

const scalar = (name, value) => tensor(name, [], Float32Array.of(value));
const shapeConst = (name, dims) => tensor(name, [dims.length], BigInt64Array.from(dims.map(BigInt)));

export function matmulModel({ m, k, n }) {
  return model(graph({
    name: 'matmul',
    nodes: [node('MatMul', ['a', 'b'], ['y'])],
    inputs: [valueInfo('a', [m, k]), valueInfo('b', [k, n])],
    outputs: [valueInfo('y', [m, n])],
  }));
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
  const initializers = [scalar('scale', 1 / Math.sqrt(d))];
  if (causal) initializers.push(tensor('mask', [n, n], causalMask(n)));
  return model(graph({
    name: 'attention',
    nodes: [node('Transpose', ['k'], ['kT'], { perm: [1, 0] }), ...attentionNodes('q', 'kT', 'v', 'y', scaleAt, causal)],
    initializers,
    inputs: ['q', 'k', 'v'].map((name) => valueInfo(name, [n, d])),
    outputs: [valueInfo('y', [n, d])],
  }));
}

// x [n,dModel] -> y [n,dModel]; heads by Reshape [n,h,dk] + Transpose to [h,n,dk] (k to
// [h,dk,n]), a batched MatMul over the heads, and back.
export function mhaModel({ n, dModel, heads, causal }, weights, scaleAt) {
  const dk = dModel / heads;
  const initializers = [
    scalar('scale', 1 / Math.sqrt(dk)),
    shapeConst('split_shape', [n, heads, dk]),
    shapeConst('merge_shape', [n, dModel]),
    ...['wq', 'wk', 'wv', 'wo'].map((name) => tensor(name, [dModel, dModel], weights[name])),
  ];
  if (causal) initializers.push(tensor('mask', [n, n], causalMask(n)));
  const nodes = [];
  for (const [p, perm] of [['q', [1, 0, 2]], ['k', [1, 2, 0]], ['v', [1, 0, 2]]]) {
    nodes.push(node('MatMul', ['x', `w${p}`], [`${p}_proj`]));
    nodes.push(node('Reshape', [`${p}_proj`, 'split_shape'], [`${p}_split`]));
    nodes.push(node('Transpose', [`${p}_split`], [`${p}_heads`], { perm }));
  }
  nodes.push(...attentionNodes('q_heads', 'k_heads', 'v_heads', 'o_heads', scaleAt, causal));
  nodes.push(node('Transpose', ['o_heads'], ['o_tokens'], { perm: [1, 0, 2] }));
  nodes.push(node('Reshape', ['o_tokens', 'merge_shape'], ['concat']));
  nodes.push(node('MatMul', ['concat', 'wo'], ['y']));
  return model(graph({
    name: 'multi_head_attention',
    nodes,
    initializers,
    inputs: [valueInfo('x', [n, dModel])],
    outputs: [valueInfo('y', [n, dModel])],
  }));
}
