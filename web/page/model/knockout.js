// What each head of the trained model does for one prediction: knock heads out and see the
// next-word guesses change; split the predicted word's logit into each head's direct part.
// Plain JS on the residual stream the library computed (runModelGen's hs and concats).
//
// Letters: n tokens, d = d_model, h heads of d_v columns, V output classes, m the feed-forward
// width. Layer L's output is concat (n, h·d_v) · W_O (h·d_v, d): head k's part of it is
//   o_k (n,d) = concat[:, k·d_v : (k+1)·d_v] · W_O[k·d_v : (k+1)·d_v, :]
// and the residual stream H = X + Σ_L Σ_k o_{L,k} (X = E + P, the words and their positions).
//
//   knockedOutWeights(w, heads, knocked) -> { wq, wk, wv, wo } with W_O's rows of each head in
//     `knocked` (head indices) set to 0: the layer then adds nothing of those heads' outputs to
//     the residual stream (zero-ablation: their o_k = 0 at every token); the other weights shared
//   headOutput(concat, wo, k, dV, i) -> o_k row i (d), in double
//   logitDirection(p, words, f, c, d, V) -> v (d): ∂logit_c/∂H at the token whose feed-forward
//     input is f (d), the ReLU gates held as they are there:
//       g = W_out · W[c] (d);  gate_j = [f·w1 + b1]_j > 0;  v = g + w1 · (gate ⊙ (w2 · g))
//     (v = g without a feed-forward block)
//   attribution({ p, words, hs, concats, wos, heads, dV, at, c }) ->
//     { heads: [{ layer, head, logit }], input, bias, logit, total }
//     the logit of class c after token `at`, split into parts that sum to it: each head's
//     o_k[at]·v, the input's X[at]·v (word vector and position), and bias (the output bias and
//     the feed-forward block's biases through the open gates); total = their sum, logit = the
//     model's own logit (the same up to float rounding)
import { feedForward } from './lm.js';

export function knockedOutWeights(w, heads, knocked) {
  if (!knocked.length) return w;
  const [rows, d] = w.wo.shape;
  const dV = rows / heads;
  const wo = Float32Array.from(w.wo.data);
  for (const k of knocked) wo.fill(0, k * dV * d, (k + 1) * dV * d);
  return { ...w, wo: { data: wo, shape: [rows, d] } };
}

export function headOutput(concat, wo, k, dV, i) {
  const [rows, d] = wo.shape;
  const cols = concat.shape[1];
  const out = new Float64Array(d);
  for (let r = 0; r < dV; ++r) {
    const z = concat.data[i * cols + k * dV + r];
    const wr = (k * dV + r) * d;
    for (let j = 0; j < d; ++j) out[j] += z * wo.data[wr + j];
  }
  if (rows !== cols) throw new Error(`knockout: W_O has ${rows} rows but concat has ${cols} columns`);
  return out;
}

const dot = (a, b, n, ao = 0, bo = 0) => {
  let s = 0;
  for (let j = 0; j < n; ++j) s += a[ao + j] * b[bo + j];
  return s;
};

export function logitDirection(p, words, f, c, d) {
  // g = W_out · W[c]: g_i = Σ_j wout[i][j]·W[c][j]
  const g = new Float64Array(d);
  for (let i = 0; i < d; ++i) g[i] = dot(p.wout, words, d, i * d, c * d);
  if (!p.w1) return { v: g, g, gates: null };
  const m = p.b1.length;
  const { a } = feedForward(p, f, 1, d);
  // w2 · g (m): r_j = Σ_i w2[j][i]·g_i, kept where the gate is open
  const r = new Float64Array(m);
  for (let j = 0; j < m; ++j) r[j] = a[j] > 0 ? dot(p.w2, g, d, j * d) : 0;
  const v = Float64Array.from(g);
  for (let i = 0; i < d; ++i) v[i] += dot(p.w1, r, m, i * m);
  return { v, g, gates: a };
}

export function attribution({ p, words, hs, concats, wos, heads, dV, at, c }) {
  const d = wos[0].shape[1];
  const H = hs[hs.length - 1].data.subarray(at * d, (at + 1) * d);
  const { v, g, gates } = logitDirection(p, words, H, c, d);
  const parts = [];
  concats.forEach((concat, L) => {
    for (let k = 0; k < heads; ++k)
      parts.push({ layer: L, head: k, logit: dot(headOutput(concat, wos[L], k, dV, at), v, d) });
  });
  const input = dot(hs[0].data, v, d, at * d);
  // the biases: bout[c], b2·g, and b1 through the open gates: Σ_j [gate_j] b1_j (w2 · g)_j
  let bias = p.bout[c];
  if (p.w1) {
    const m = p.b1.length;
    bias += dot(p.b2, g, d);
    for (let j = 0; j < m; ++j) if (gates[j] > 0) bias += p.b1[j] * dot(p.w2, g, d, j * d);
  }
  // the model's own logit, for the check that the parts add up
  const f = p.w1 ? feedForward(p, H, 1, d).f : H;
  let logit = p.bout[c];
  for (let i = 0; i < d; ++i) logit += f[i] * g[i];
  const total = parts.reduce((s, x) => s + x.logit, input + bias);
  return { heads: parts, input, bias, logit, total };
}
