// What each head of the trained model does for one prediction: knock heads out (zero or mean
// ablation) and see the next-word guesses change; split the logit difference between two words
// into each part of the residual stream (TransformerLens' decompose_resid and logit_attrs).
// Plain JS on the residual stream the library computed (runModelGen's hs and concats).
//
// Letters: n tokens, d = d_model, h heads of d_v columns, V output classes. Layer L's output is
// concat (n, h·d_v) · W_O (h·d_v, d): head k's part of it is
//   o_k (n,d) = concat[:, k·d_v : (k+1)·d_v] · W_O[k·d_v : (k+1)·d_v, :]
// The residual stream after the last layer is H = X + Σ_L Σ_k o_{L,k} (X = E + P, the tokens and
// their positions); the feed-forward block adds its output, F = H + ff(H), and the logits are a
// linear map of F: logit_c = F · u_c + bout[c] with u_c = W_out · W[c] (d). So
//   logit_c − logit_r = X·u + Σ_{L,k} o_{L,k}·u + ff(H)·u + (bout[c] − bout[r]),  u = u_c − u_r
// exactly: each term is one part's direct effect. A part's term says what it writes along u, not
// what would happen without it (the knock-out says that: a layer-1 head also changes what
// layer 2 and the feed-forward block compute).
//
//   ablatedWeights(w, heads, knocked, means = null) -> { w, add }: W_O's rows of each head in
//     `knocked` (head indices) set to 0, so the layer adds nothing of those heads' outputs (zero
//     ablation: o_k = 0 at every token); with means (h·d_v, a layer's headMeans), add (d) =
//     Σ_{k knocked} means[k·d_v : (k+1)·d_v] · W_O,k, which the layer adds at every token instead
//     (mean ablation: o_k = its mean over held-out text, the manifest's heldOut.headMeans);
//     add is null for zero ablation. The other weights are shared.
//   headOutput(concat, wo, k, dV, i) -> o_k row i (d), in double
//   readout(p, words, c, d) -> u_c (d) = W_out · W[c], in double
//   residualParts({ hs, concats, wos, heads, dV, ff, at }) -> [{ part, layer, head, v (d) }]:
//     the parts of F at token `at`, in double, in the model's order: 'embedding' (X), 'head' (one
//     per layer and head), 'feed-forward' (ff (d): F − H at `at`); their sum is F up to the
//     float32 rounding of the library's layers
//   logitParts(parts, uc, ur, bias) -> [{ part, layer, head, logit, diff }]: each part's
//     direct effect on logit_c (v·u_c) and on logit_c − logit_r (v·(u_c − u_r)), then
//     { part: 'bias', logit: bias.c, diff: bias.c − bias.r }; the logits sum to logit_c and the
//     diffs to logit_c − logit_r
export function ablatedWeights(w, heads, knocked, means = null) {
  if (!knocked.length) return { w, add: null };
  const [rows, d] = w.wo.shape;
  const dV = rows / heads;
  const wo = Float32Array.from(w.wo.data);
  let add = null;
  if (means) {
    add = new Float32Array(d);
    for (const k of knocked)
      for (let r = k * dV; r < (k + 1) * dV; ++r) for (let j = 0; j < d; ++j) add[j] += means[r] * w.wo.data[r * d + j];
  }
  for (const k of knocked) wo.fill(0, k * dV * d, (k + 1) * dV * d);
  return { w: { ...w, wo: { data: wo, shape: [rows, d] } }, add };
}

export function headOutput(concat, wo, k, dV, i) {
  const [rows, d] = wo.shape;
  const cols = concat.shape[1];
  if (rows !== cols) throw new Error(`knockout: W_O has ${rows} rows but concat has ${cols} columns`);
  const out = new Float64Array(d);
  for (let r = 0; r < dV; ++r) {
    const z = concat.data[i * cols + k * dV + r];
    const wr = (k * dV + r) * d;
    for (let j = 0; j < d; ++j) out[j] += z * wo.data[wr + j];
  }
  return out;
}

const dot = (a, b, n, ao = 0, bo = 0) => {
  let s = 0;
  for (let j = 0; j < n; ++j) s += a[ao + j] * b[bo + j];
  return s;
};

export function readout(p, words, c, d) {
  // u_i = Σ_j wout[i][j]·W[c][j]
  const u = new Float64Array(d);
  for (let i = 0; i < d; ++i) u[i] = dot(p.wout, words, d, i * d, c * d);
  return u;
}

export function residualParts({ hs, concats, wos, heads, dV, ff, at }) {
  const d = wos[0].shape[1];
  const parts = [
    { part: 'embedding', layer: null, head: null, v: Float64Array.from(hs[0].data.subarray(at * d, (at + 1) * d)) },
  ];
  concats.forEach((concat, L) => {
    for (let k = 0; k < heads; ++k)
      parts.push({ part: 'head', layer: L, head: k, v: headOutput(concat, wos[L], k, dV, at) });
  });
  parts.push({ part: 'feed-forward', layer: null, head: null, v: Float64Array.from(ff) });
  return parts;
}

export function logitParts(parts, uc, ur, bias) {
  const d = uc.length;
  const out = parts.map(({ part, layer, head, v }) => {
    const logit = dot(v, uc, d);
    return { part, layer, head, logit, diff: logit - dot(v, ur, d) };
  });
  out.push({ part: 'bias', layer: null, head: null, logit: bias.c, diff: bias.c - bias.r });
  return out;
}
