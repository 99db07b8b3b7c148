// ONNX's backend node tests for the Attention operator (opsets 23-25), float16 and float32, run
// on attention(): each case's node attributes and inputs mapped onto our options, its outputs
// compared with ONNX's expected ones. The cases are in fixtures/onnx/ (README.md there says
// where they come from); helpers/onnx_proto.mjs reads them.
//   Mapped: Q, K, V (3-D with q_num_heads/kv_num_heads as heads), attn_mask (bool: a keep mask;
//   float32/float16: added), past_key/past_value (pastKey/pastValue), nonpad_kv_seqlen
//   (kvLength), is_causal, scale, softcap, left_window_size/right_window_size (window),
//   qk_matmul_output_mode (qkOutput); outputs Y, present_key, present_value, qk_matmul_output.
//   Run: all 87; none skipped. softmax_precision has no option (the softmax runs in float32):
//   the one case asking for double runs with a note (NOTES). A case with an attribute not in
//   this list would be skipped, saying which.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';

import { createAttention, tensor } from '../../../web/lib/index.js';
import { halfToFloat32 } from '../../../web/lib/half.js';
import { readModel, readTensor } from '../helpers/onnx_proto.mjs';

const FIXTURES = new URL('./fixtures/onnx/', import.meta.url);
const QK_MODES = ['scaled', 'softcapped', 'masked', 'weights']; // qk_matmul_output_mode 0-3
const OUTPUTS = ['output', 'presentKey', 'presentValue', 'qk']; // Y, present_key, present_value, qk_matmul_output

// A case's directory -> { opset, node, inputs (by the node's input names), outputs (by index) }.
function loadCase(name) {
  const dir = new URL(`${name}/`, FIXTURES);
  const { opset, nodes } = readModel(readFileSync(new URL('model.onnx', dir)));
  assert.equal(nodes.length, 1, `${name}: one node`);
  const node = nodes[0];
  const read = (kind) => {
    const list = [];
    for (let i = 0; existsSync(new URL(`test_data_set_0/${kind}_${i}.pb`, dir)); ++i)
      list.push(readTensor(readFileSync(new URL(`test_data_set_0/${kind}_${i}.pb`, dir))));
    return list;
  };
  const given = read('input');
  const inputs = {};
  node.inputs.filter((n) => n !== '').forEach((n, i) => (inputs[n] = given[i]));
  const expected = {};
  const presentOutputs = node.outputs.map((n, i) => [n, i]).filter(([n]) => n !== '');
  read('output').forEach((t, j) => (expected[OUTPUTS[presentOutputs[j][1]]] = t));
  return { opset, node, inputs, expected };
}

// An ONNX input tensor -> the package's tensor: float16 as its bits with dtype 'float16'.
function asTensor(t) {
  if (t.dtype === 'float16') return tensor(t.data, t.shape, { dtype: 'float16' });
  if (t.dtype === 'float32') return tensor(t.data, t.shape);
  throw new TypeError(`${t.name}: a ${t.dtype} tensor is not a q, k or v`);
}

// The node's attributes and inputs -> { args: [q, k, v, options] } or { skip: why }.
function toCall(node, inputs) {
  const a = node.attributes;
  const o = {};
  for (const name of Object.keys(a)) {
    if (!KNOWN_ATTRIBUTES.includes(name)) return { skip: `attribute ${name} has no option here` };
  }
  if (a.is_causal) o.causal = true;
  if (a.scale !== undefined) o.scale = a.scale;
  if (a.softcap !== undefined && a.softcap !== 0) o.softcap = a.softcap;
  if (a.q_num_heads !== undefined || a.kv_num_heads !== undefined) o.heads = { q: a.q_num_heads, kv: a.kv_num_heads };
  const left = a.left_window_size ?? -1,
    right = a.right_window_size ?? -1;
  if (left !== -1 || right !== -1) o.window = { left, right };
  // softmax_precision: the package computes in float32 (1) always; see NOTES
  if (node.outputs[3]) o.qkOutput = QK_MODES[a.qk_matmul_output_mode ?? 0];
  const mask = inputs.attn_mask;
  if (mask) {
    if (mask.dtype === 'bool') o.mask = { data: mask.data, shape: mask.shape };
    else o.mask = asTensor(mask);
  }
  if (inputs.past_key) o.pastKey = asTensor(inputs.past_key);
  if (inputs.past_value) o.pastValue = asTensor(inputs.past_value);
  if (inputs.nonpad_kv_seqlen) o.kvLength = Array.from(inputs.nonpad_kv_seqlen.data, Number);
  return { args: [asTensor(inputs.Q), asTensor(inputs.K), asTensor(inputs.V), o] };
}
const KNOWN_ATTRIBUTES = [
  'is_causal',
  'scale',
  'softcap',
  'q_num_heads',
  'kv_num_heads',
  'qk_matmul_output_mode',
  'softmax_precision',
  'left_window_size',
  'right_window_size',
];

const values = (t) => (t.dtype === 'float16' ? halfToFloat32(t.data) : t.data);

// One unit in the last place of float16 at w: 2^(e-10) for |w| in [2^e, 2^(e+1)), e >= -14;
// 2^-24 (the subnormals' spacing) below 2^-14.
const halfUlp = (w) => 2 ** (Math.max(Math.floor(Math.log2(Math.abs(w) || 2 ** -24)), -14) - 10);

// Tolerances, per element. ONNX's runner takes |got - want| <= 1e-7 + 1e-3·|want| for every
// case. float32 outputs are held tighter, 1e-6 + 1e-5·|want|: both sides compute the same
// formula in float32 over at most a few dozen terms (measured worst 4.5e-7 relative). float16
// outputs: within 2 float16 ulps. ONNX's expected values come from numpy computing in float16,
// rounding after each step (the products, the softmax, the weighted sum), ours from a float32
// computation rounded once; each is within about 1 ulp of the exact value, so they may differ by
// 2, where ONNX's rtol 1e-3 allows exactly 1 (one ulp is at most 2^-10 = 9.8e-4 relative).
// How many elements also meet ONNX's own rtol is printed (all do, today).
function compare(name, key, got, want) {
  assert.ok(got, `${name}: the result has no ${key}`);
  assert.deepEqual(got.shape, want.shape, `${name}: ${key}'s shape`);
  assert.equal(got.dtype ?? 'float32', want.dtype, `${name}: ${key}'s dtype`);
  const g = values(got),
    w = values(want);
  let worst = 0,
    worstAt = -1,
    beyondOnnx = 0;
  for (let i = 0; i < w.length; ++i) {
    if (!Number.isFinite(w[i]) || !Number.isFinite(g[i])) {
      assert.ok(Object.is(g[i], w[i]), `${name}: ${key}[${i}] is ${g[i]}, expected ${w[i]}`);
      continue;
    }
    const diff = Math.abs(g[i] - w[i]);
    const allowed = want.dtype === 'float16' ? 2 * halfUlp(w[i]) : 1e-6 + 1e-5 * Math.abs(w[i]);
    if (diff / allowed > worst) [worst, worstAt] = [diff / allowed, i];
    if (diff > 1e-7 + 1e-3 * Math.abs(w[i])) beyondOnnx += 1;
  }
  assert.ok(
    worst <= 1,
    `${name}: ${key}[${worstAt}] is ${g[worstAt]}, expected ${w[worstAt]}: ${worst.toFixed(2)} times the tolerance`,
  );
  return { worst, beyondOnnx };
}

// Cases that run although the package lacks what the node asks for, and why that is sound.
const NOTES = {
  test_attention_local_window_gqa_rank4_mask:
    'softmax_precision 11 (double) is not offered: the softmax runs in float32, within tolerance of the double reference',
};

const cases = readdirSync(FIXTURES).filter((n) => n.startsWith('test_attention'));

describe('ONNX backend node tests for Attention (fixtures/onnx)', () => {
  let attn;
  before(async () => {
    attn = await createAttention({ threads: 2 });
  });
  after(() => attn.dispose());

  test('every case in fixtures/onnx is read: 87, of them 5 in float16', () => {
    assert.equal(cases.length, 87);
    const half = cases.filter((n) => loadCase(n).inputs.Q.dtype === 'float16');
    assert.deepEqual(half, [
      'test_attention_24_qk_matmul_output_mode3_softmax_precision',
      'test_attention_4d_fp16',
      'test_attention_4d_gqa_causal_nonpad_decode_fp16',
      'test_attention_4d_gqa_with_past_and_present_fp16',
      'test_attention_local_window_ext_cache_float16_mask',
    ]);
  });

  for (const name of cases) {
    test(name, (t) => {
      const { node, inputs, expected } = loadCase(name);
      const call = toCall(node, inputs);
      if (call.skip) return t.skip(call.skip);
      if (NOTES[name]) t.diagnostic(NOTES[name]);
      const result = attn.attention(...call.args);
      for (const [key, want] of Object.entries(expected)) {
        const { worst, beyondOnnx } = compare(name, key, result[key], want);
        t.diagnostic(
          `${key} (${want.dtype}): worst ${worst.toFixed(2)} of the tolerance; ${beyondOnnx} beyond ONNX's rtol 1e-3`,
        );
      }
    });
  }
});
