// The float64 attention reference of the JS tests and of the bench's cross-check, written from
// the math (it never calls the package); the same spec as tests/cpp/reference.cpp. Plus a seeded
// generator for test inputs and comparison helpers. Results are Float64Arrays.
//
// One head (headScores, headOutput, headBackward) and one rotation (rotaryRef) carry every entry:
//   attentionRef, attentionBackwardRef  q [nQ,dK], k [nK,dK], v [nK,dV] with causal, keep, bias,
//                                       softcap, scale, sinks
//   onnxAttentionRef, onnxAttentionBackwardRef  the ONNX Attention operator (opsets 23-25)
//   mhaRef, mhaBackwardRef                    a multi-head layer: projections around the operator
//   matmulRef                                 a plain product
//
// The ONNX operator, letters B batch, Hq query heads, Hkv kv heads, n = nPast + nNew keys:
//   4-D q [B,Hq,nQ,dK], k [B,Hkv,nNew,dK], v [B,Hkv,nNew,dV] -> y [B,Hq,nQ,dV]
//   3-D q [B,nQ,Hq·dK], k [B,nNew,Hkv·dK], v [B,nNew,Hkv·dV] -> y [B,nQ,Hq·dV]
//   pastKey [B,Hkv,nPast,dK], pastValue [B,Hkv,nPast,dV] -> presentKey/presentValue (n rows)
//   qk[mode] [B,Hq,nQ,n] for mode 0 scaled, 1 softcapped, 2 masked, 3 weights
// Query head h reads kv head floor(h / (Hq / Hkv)). Score of query i, key j: scale·q_i·k_j,
// then softcap·tanh(s / softcap) when softcap > 0, then + bias, where bias = mask (boolean keep
// or additive, right-aligned broadcast from rank 1..4, padded with masked columns when short)
// + causal (j <= i + offset) + window ((i + offset) - j <= left, j - (i + offset) <= right; -1
// unbounded) + padding (j < kvLength[b]); offset = nPast with a past, kvLength[b] - nQ with
// kvLength, else 0. weights = row softmax; a row whose keys are all masked gets zero weights and
// a zero output row (never NaN); a NaN or +Infinity softmax input makes its row NaN.
// sinks [Hq] (onnxruntime GroupQueryAttention's head_sink, not in ONNX Attention): head h's
// sinks[h] joins each of its rows' softmax denominators with no value, after the masks:
// p_j = exp(x_j - m) / (Σ_l exp(x_l - m) + exp(sink - m)), m = max(max_l x_l, sink); -Infinity
// is no sink; a row whose keys are all masked is still a zero row.
// Rotary: pairs (t, t + dims/2) (or (2t, 2t+1) interleaved) of q row i and new key j turn by
// position·base^(-2t/dims), positions offset + nPast + row.
import { seededRandom } from '../../web/lib/index.js';

// mulberry32 -> uniform floats in [0, 1); same seed, same sequence. The package's own seeded
// generator (it only makes test inputs here; none of the math under test), given seed >>> 0:
// tests derive seeds by arithmetic (negative, fractional, past 2^32), which it refuses.
export const rng = (seed) => seededRandom(seed >>> 0);

// A Float32Array of n uniform values in [lo, hi) from next (an rng()).
export function uniform(next, n, lo = -1, hi = 1) {
  const out = new Float32Array(n);
  for (let i = 0; i < n; ++i) out[i] = lo + (hi - lo) * next();
  return out;
}

// A random tensor { data: Float32Array, shape } with values in [lo, hi).
export function randomTensor(next, shape, lo = -1, hi = 1) {
  return {
    data: uniform(
      next,
      shape.reduce((a, b) => a * b, 1),
      lo,
      hi,
    ),
    shape: [...shape],
  };
}

const dataOf = (t) => (t && !ArrayBuffer.isView(t) && !Array.isArray(t) ? t.data : t);

// ---- One head: the core of every entry ----

// q [nQ,dK], k [nK,dK] -> every stage of the scores, each [nQ,nK]: scores q·kᵀ, scaled, capped,
// masked (the softmax input: capped + bias, -Infinity where hidden), weights.
// keyBias(i, j) -> { hidden, add }: hidden keys get -Infinity whatever their score, the others
// add `add` to their capped score. sink: a logit in each row's denominator (-Infinity: none);
// sinkWeights [nQ] its weight in each row.
function headScores(q, k, nQ, nK, dK, scale, softcap, keyBias, sink = -Infinity) {
  const n = nQ * nK;
  const scores = new Float64Array(n),
    scaled = new Float64Array(n),
    capped = new Float64Array(n),
    masked = new Float64Array(n),
    weights = new Float64Array(n),
    sinkWeights = new Float64Array(nQ);
  for (let i = 0; i < nQ; ++i) {
    let max = -Infinity,
      bad = false;
    for (let j = 0; j < nK; ++j) {
      const e = i * nK + j;
      let dot = 0;
      for (let t = 0; t < dK; ++t) dot += q[i * dK + t] * k[j * dK + t];
      scores[e] = dot;
      scaled[e] = dot * scale;
      capped[e] = softcap > 0 ? softcap * Math.tanh(scaled[e] / softcap) : scaled[e];
      const { hidden, add } = keyBias(i, j);
      masked[e] = hidden ? -Infinity : capped[e] + add;
      bad ||= Number.isNaN(masked[e]) || masked[e] === Infinity;
      max = Math.max(max, masked[e]);
    }
    if (bad) {
      weights.fill(NaN, i * nK, (i + 1) * nK);
      sinkWeights[i] = NaN;
      continue;
    }
    max = Math.max(max, sink);
    if (max === -Infinity) continue; // every key hidden, no sink: zero weights
    let sum = (sinkWeights[i] = Math.exp(sink - max));
    for (let j = 0; j < nK; ++j) sum += weights[i * nK + j] = Math.exp(masked[i * nK + j] - max);
    for (let j = 0; j < nK; ++j) weights[i * nK + j] /= sum;
    sinkWeights[i] /= sum;
  }
  return { scores, scaled, capped, masked, weights, sinkWeights };
}

// weights [nQ,nK], v [nK,dV] -> output [nQ,dV]
function headOutput(weights, v, nQ, nK, dV) {
  const output = new Float64Array(nQ * dV);
  for (let i = 0; i < nQ; ++i)
    for (let j = 0; j < nK; ++j) {
      const w = weights[i * nK + j];
      if (w === 0) continue;
      for (let c = 0; c < dV; ++c) output[i * dV + c] += w * v[j * dV + c];
    }
  return output;
}

// The backward of headScores + headOutput: dOut [nQ,dV] -> { dq [nQ,dK], dk [nK,dK], dv [nK,dV],
// dsink }, the forward's passes in reverse.
function headBackward(q, k, v, dOut, nQ, nK, dK, dV, scale, softcap, keyBias, sink = -Infinity) {
  const { scaled, weights: p, sinkWeights } = headScores(q, k, nQ, nK, dK, scale, softcap, keyBias, sink);
  const dq = new Float64Array(nQ * dK),
    dk = new Float64Array(nK * dK),
    dv = new Float64Array(nK * dV);
  let dsink = 0;
  for (let i = 0; i < nQ; ++i) {
    // out_i = Σ_j p_ij v_j -> dv_j += p_ij dOut_i, dp_ij = dOut_i·v_j
    const dp = new Float64Array(nK);
    for (let j = 0; j < nK; ++j)
      for (let c = 0; c < dV; ++c) {
        dv[j * dV + c] += p[i * nK + j] * dOut[i * dV + c];
        dp[j] += dOut[i * dV + c] * v[j * dV + c];
      }
    // p = softmax(x) -> dx_j = p_j (dp_j - Σ_l p_l dp_l); the bias adds no gradient
    let pdp = 0;
    for (let j = 0; j < nK; ++j) pdp += p[i * nK + j] * dp[j];
    // with a sink, ∂p_j/∂sink = -p_j·p_sink -> dsink -= p_sink Σ_j p_j dp_j (the sink has no value)
    dsink -= sinkWeights[i] * pdp;
    for (let j = 0; j < nK; ++j) {
      let ds = p[i * nK + j] * (dp[j] - pdp);
      // capped = c·tanh(scaled / c) -> d scaled = dx·(1 - tanh²(scaled / c))
      if (softcap > 0) ds *= 1 - Math.tanh(scaled[i * nK + j] / softcap) ** 2;
      // scaled = scale·q_i·k_j -> dq_i += scale·ds·k_j, dk_j += scale·ds·q_i
      for (let t = 0; t < dK; ++t) {
        dq[i * dK + t] += scale * ds * k[j * dK + t];
        dk[j * dK + t] += scale * ds * q[i * dK + t];
      }
    }
  }
  return { dq, dk, dv, dsink };
}

// Rotates x (rows,d), block after block of `rows` rows, in place: row r at position(r).
export function rotaryRef(x, rows, d, position, { base = 10000, dims = 0, interleaved = false, inverse = false } = {}) {
  const D = dims || d;
  if (D % 2 !== 0 || D > d) throw new Error(`rotaryRef: dims ${D} must be even and at most the head size ${d}`);
  const half = D / 2;
  for (let o = 0; o < x.length; o += rows * d)
    for (let r = 0; r < rows; ++r)
      for (let t = 0; t < half; ++t) {
        const angle = position(r) * Math.pow(base, (-2 * t) / D);
        const c = Math.cos(angle),
          s = inverse ? -Math.sin(angle) : Math.sin(angle);
        const ia = o + r * d + (interleaved ? 2 * t : t),
          ib = o + r * d + (interleaved ? 2 * t + 1 : t + half);
        const xa = x[ia],
          xb = x[ib];
        x[ia] = xa * c - xb * s;
        x[ib] = xa * s + xb * c;
      }
}

// ---- 2-D attention ----

// q [nQ,dK], k [nK,dK], v [nK,dV] (tensors) -> { output [nQ,dV], scores, scaled, capped, masked,
// weights [nQ,nK] }. options: causal (top-left: query i sees keys j <= i, also for nQ != nK),
// keep (nQ·nK, 0 = masked), bias (nQ·nK, added after scaling), softcap, scale (default
// 1/sqrt(dK)). keep and bias may be tensors or bare arrays.
export function attentionRef(q, k, v, options = {}) {
  const { nQ, nK, dK, dV, scale, softcap, keyBias, sink } = attention2d(q, k, v, options);
  const s = headScores(q.data, k.data, nQ, nK, dK, scale, softcap, keyBias, sink);
  return { output: headOutput(s.weights, v.data, nQ, nK, dV), ...s };
}

// Gradients of sum(dOut ⊙ attentionRef(q, k, v, options).output): { dq, dk, dv }, and dsinks
// [1] with options.sinks.
export function attentionBackwardRef(q, k, v, dOut, options = {}) {
  const { nQ, nK, dK, dV, scale, softcap, keyBias, sink } = attention2d(q, k, v, options);
  const { dsink, ...g } = headBackward(
    q.data,
    k.data,
    v.data,
    dataOf(dOut),
    nQ,
    nK,
    dK,
    dV,
    scale,
    softcap,
    keyBias,
    sink,
  );
  return options.sinks === undefined ? g : { ...g, dsinks: Float64Array.of(dsink) };
}

function attention2d(q, k, v, { causal = false, keep, bias, softcap = 0, scale, sinks } = {}) {
  const [nQ, dK] = q.shape;
  const [nK, dV] = v.shape;
  if (k.shape[0] !== nK || k.shape[1] !== dK) throw new Error('attentionRef: shapes do not fit');
  const keepData = dataOf(keep),
    biasData = dataOf(bias);
  const keyBias = (i, j) => ({
    hidden: (causal && j > i) || (keepData !== undefined && keepData[i * nK + j] === 0),
    add: biasData ? biasData[i * nK + j] : 0,
  });
  const sink = sinks === undefined ? -Infinity : dataOf(sinks)[0];
  return { nQ, nK, dK, dV, scale: scale ?? 1 / Math.sqrt(dK), softcap, keyBias, sink };
}

// ---- The ONNX Attention operator ----

const at = (threeD, heads, rows, d) => (b, h, r, t) =>
  threeD ? ((b * rows + r) * heads + h) * d + t : ((b * heads + h) * rows + r) * d + t;

// x in layout `from` -> Float64Array in layout `to` (each 3-D when true, else 4-D)
function relayout(x, from, to, batch, heads, rows, d) {
  const src = at(from, heads, rows, d),
    dst = at(to, heads, rows, d);
  const out = new Float64Array(batch * heads * rows * d);
  for (let b = 0; b < batch; ++b)
    for (let h = 0; h < heads; ++h)
      for (let r = 0; r < rows; ++r) for (let t = 0; t < d; ++t) out[dst(b, h, r, t)] = x[src(b, h, r, t)];
  return out;
}
// x in either layout -> 4-D, and a 4-D x -> either layout (threeD: 3-D); shape batch, heads, rows, d
export const to4d = (x, threeD, ...shape) => relayout(x, threeD, false, ...shape);
export const from4d = (x, threeD, ...shape) => relayout(x, false, threeD, ...shape);

// The (b, head) block bh = b·heads + head of x [B,heads,rows,d]: [rows,d]
const block = (x, bh, rows, d) => x.subarray(bh * rows * d, (bh + 1) * rows * d);

// a: { batch, qHeads, kvHeads, nQ, nPast, nNew, dK, dV, threeD, q, k, v, pastKey, pastValue,
//      mask: { dims, boolean, values }, causal, scale, softcap, left, right, kvLength,
//      rotary: { offset, base, dims, interleaved }, sinks [Hq] }
// -> { y, presentKey, presentValue (rotated, 4-D), query (q rotated, 4-D), qk: [mode0..mode3],
//      scores (q·kᵀ before the scale) } (Float64Arrays)
export function onnxAttentionRef(a) {
  const p = prepare(a);
  const { batch, qHeads, kvHeads, nQ, dK, dV } = a;
  const group = qHeads / kvHeads;
  const rows = batch * qHeads * nQ * p.n;
  const qk = [0, 1, 2, 3].map(() => new Float64Array(rows));
  const scores = new Float64Array(rows);
  const y = new Float64Array(batch * qHeads * nQ * dV);
  for (let b = 0; b < batch; ++b)
    for (let h = 0; h < qHeads; ++h) {
      const bh = b * qHeads + h,
        bg = b * kvHeads + Math.floor(h / group);
      const s = headScores(
        block(p.q, bh, nQ, dK),
        block(p.k, bg, p.n, dK),
        nQ,
        p.n,
        dK,
        p.scale,
        p.softcap,
        (i, j) => keyBias(a, b, h, i, j),
        sinkOf(a, h),
      );
      [s.scaled, s.capped, s.masked, s.weights].forEach((stage, mode) => qk[mode].set(stage, bh * nQ * p.n));
      scores.set(s.scores, bh * nQ * p.n);
      y.set(headOutput(s.weights, block(p.v, bg, p.n, dV), nQ, p.n, dV), bh * nQ * dV);
    }
  return {
    y: from4d(y, a.threeD, batch, qHeads, nQ, dV),
    presentKey: p.k,
    presentValue: p.v,
    query: p.q,
    qk,
    scores,
  };
}

// Gradients of sum(dy ⊙ y) with respect to q, k, v (the new rows), shaped as the inputs: a kv
// head's summed over its query heads, dq and dk turned back through the rotary; with a.sinks,
// dsinks [Hq] summed over the batch.
export function onnxAttentionBackwardRef(a, dyIn) {
  const p = prepare(a);
  const { batch, qHeads, kvHeads, nQ, nPast = 0, nNew, dK, dV } = a;
  const group = qHeads / kvHeads;
  const dy = to4d(dyIn, a.threeD, batch, qHeads, nQ, dV);
  const dq = new Float64Array(p.q.length),
    dk = new Float64Array(p.k.length),
    dv = new Float64Array(p.v.length),
    dsinks = new Float64Array(qHeads);
  for (let b = 0; b < batch; ++b)
    for (let h = 0; h < qHeads; ++h) {
      const bh = b * qHeads + h,
        bg = b * kvHeads + Math.floor(h / group);
      const g = headBackward(
        block(p.q, bh, nQ, dK),
        block(p.k, bg, p.n, dK),
        block(p.v, bg, p.n, dV),
        block(dy, bh, nQ, dV),
        nQ,
        p.n,
        dK,
        dV,
        p.scale,
        p.softcap,
        (i, j) => keyBias(a, b, h, i, j),
        sinkOf(a, h),
      );
      dsinks[h] += g.dsink;
      dq.set(g.dq, bh * nQ * dK);
      const dkHead = block(dk, bg, p.n, dK),
        dvHead = block(dv, bg, p.n, dV);
      g.dk.forEach((x, e) => (dkHead[e] += x));
      g.dv.forEach((x, e) => (dvHead[e] += x));
    }
  const newRows = (x, d) => {
    const out = new Float64Array(batch * kvHeads * nNew * d);
    for (let bg = 0; bg < batch * kvHeads; ++bg)
      out.set(x.subarray((bg * p.n + nPast) * d, (bg + 1) * p.n * d), bg * nNew * d);
    return out;
  };
  const dkNew = newRows(dk, dK),
    dvNew = newRows(dv, dV);
  if (a.rotary) {
    const position = (r) => (a.rotary.offset ?? 0) + nPast + r;
    rotaryRef(dq, nQ, dK, position, { ...a.rotary, inverse: true });
    rotaryRef(dkNew, nNew, dK, position, { ...a.rotary, inverse: true });
  }
  const g = {
    dq: from4d(dq, a.threeD, batch, qHeads, nQ, dK),
    dk: from4d(dkNew, a.threeD, batch, kvHeads, nNew, dK),
    dv: from4d(dvNew, a.threeD, batch, kvHeads, nNew, dV),
  };
  if (a.sinks !== undefined) g.dsinks = dsinks;
  return g;
}

// Query head h's sink, -Infinity for none.
const sinkOf = (a, h) => (a.sinks === undefined ? -Infinity : Number(dataOf(a.sinks)[h]));

// The operands in 4-D, q and the new keys rotated, the keys and values after the past's.
function prepare(a) {
  const { batch, qHeads, kvHeads, nQ, nPast = 0, nNew, dK, dV, threeD = false } = a;
  if (qHeads % kvHeads !== 0) throw new Error('onnxAttentionRef: qHeads must be a multiple of kvHeads');
  const n = nPast + nNew;
  const q = to4d(a.q, threeD, batch, qHeads, nQ, dK);
  const kNew = to4d(a.k, threeD, batch, kvHeads, nNew, dK);
  const vNew = to4d(a.v, threeD, batch, kvHeads, nNew, dV);
  if (a.rotary) {
    const position = (r) => (a.rotary.offset ?? 0) + nPast + r;
    rotaryRef(q, nQ, dK, position, a.rotary);
    rotaryRef(kNew, nNew, dK, position, a.rotary);
  }
  const concat = (past, fresh, d) => {
    const out = new Float64Array(batch * kvHeads * n * d);
    for (let bg = 0; bg < batch * kvHeads; ++bg) {
      if (nPast) out.set(past.subarray(bg * nPast * d, (bg + 1) * nPast * d), bg * n * d);
      out.set(fresh.subarray(bg * nNew * d, (bg + 1) * nNew * d), (bg * n + nPast) * d);
    }
    return out;
  };
  const past = (x) => (x ? Float64Array.from(x) : new Float64Array(0));
  return {
    n,
    scale: a.scale ?? 1 / Math.sqrt(dK),
    softcap: a.softcap ?? 0,
    q,
    k: concat(past(a.pastKey), kNew, dK),
    v: concat(past(a.pastValue), vNew, dV),
  };
}

// What the masks do to query i, key j of batch b, query head h: the structural masks (causal,
// window, padding) and a boolean mask's false hide the key; an additive mask adds its value.
function keyBias(a, b, h, i, j) {
  const offset = a.pastKey ? (a.nPast ?? 0) : a.kvLength ? a.kvLength[b] - a.nQ : 0;
  const frontier = i + offset;
  const { left = -1, right = -1 } = a;
  const hidden =
    (a.causal && j > frontier) ||
    (left >= 0 && frontier - j > left) ||
    (right >= 0 && j - frontier > right) ||
    (a.kvLength && j >= a.kvLength[b]);
  if (hidden || !a.mask) return { hidden, add: 0 };
  const { dims, values, boolean = false } = a.mask;
  if (j >= dims[dims.length - 1]) return { hidden: true, add: 0 }; // padded column
  const full = [b, h, i, j];
  let index = 0;
  dims.forEach((size, axis) => {
    index = index * size + (size === 1 ? 0 : full[4 - dims.length + axis]);
  });
  const m = Number(values[index]);
  return boolean ? { hidden: !m, add: 0 } : { hidden: false, add: m };
}

// ---- A multi-head attention layer ----

// x (rows,inner)·w (inner,cols) + bias (cols, optional), float64
function project(x, rows, inner, w, bias, cols) {
  const out = new Float64Array(rows * cols);
  for (let r = 0; r < rows; ++r)
    for (let c = 0; c < cols; ++c) {
      let acc = bias ? bias[c] : 0;
      for (let t = 0; t < inner; ++t) acc += x[r * inner + t] * w[t * cols + c];
      out[r * cols + c] = acc;
    }
  return out;
}

// aᵀ (m,k)ᵀ·b (k,n) -> (m,n) for a (k,m)
function projectTn(a, b, k, m, n) {
  const out = new Float64Array(m * n);
  for (let p = 0; p < k; ++p)
    for (let i = 0; i < m; ++i) for (let j = 0; j < n; ++j) out[i * n + j] += a[p * m + i] * b[p * n + j];
  return out;
}

// a (m,k)·bᵀ for b (n,k) -> (m,n)
function projectNt(a, b, m, k, n) {
  const out = new Float64Array(m * n);
  for (let i = 0; i < m; ++i)
    for (let j = 0; j < n; ++j) {
      let acc = 0;
      for (let t = 0; t < k; ++t) acc += a[i * k + t] * b[j * k + t];
      out[i * n + j] = acc;
    }
  return out;
}

// a [m,k]·b [k,n] -> [m,n]
export const matmulRef = (a, b, m, k, n) => project(a, m, k, b, undefined, n);

const columnSums = (m, rows, cols) => {
  const out = new Float64Array(cols);
  for (let r = 0; r < rows; ++r) for (let c = 0; c < cols; ++c) out[c] += m[r * cols + c];
  return out;
};

// The layer's shapes and options filled in, its weights and inputs as arrays, and its
// attention as the operator in the 3-D layout (the projections' rows are [B,S,H·D]).
function layer(x, weights, options) {
  const { batch = 1, nQ, dModel, heads, context, keep, bias } = options;
  const xd = dataOf(x);
  const ctx = context === undefined ? xd : dataOf(context);
  const nK = options.nK ?? (context === undefined ? nQ : ctx.length / (batch * dModel));
  const kvHeads = options.kvHeads ?? heads;
  const dK = options.dK ?? dModel / heads;
  const dV = options.dV ?? dK;
  const w = Object.fromEntries(Object.entries(weights).map(([n, t]) => [n, dataOf(t)]));
  const l = { batch, nQ, nK, dModel, heads, kvHeads, dK, dV };
  const Q = project(xd, batch * nQ, dModel, w.wq, w.bq, heads * dK);
  const K = project(ctx, batch * nK, dModel, w.wk, w.bk, kvHeads * dK);
  const V = project(ctx, batch * nK, dModel, w.wv, w.bv, kvHeads * dV);
  const a = {
    batch,
    qHeads: heads,
    kvHeads,
    nQ,
    nNew: nK,
    dK,
    dV,
    threeD: true,
    q: Q,
    k: K,
    v: V,
    mask: maskOf(dataOf(keep), dataOf(bias), nQ, nK),
    causal: options.causal ?? false,
    scale: options.scale,
    softcap: options.softcap ?? 0,
    left: options.left ?? -1,
    right: options.right ?? -1,
    rotary: options.rotary ?? undefined,
    sinks: w.sinks,
  };
  return { l, w, x: xd, ctx, Q, K, V, a };
}

// keep and bias [nQ,nK] (shared by the batch and the heads) as the operator's mask: a boolean
// one for keep alone, else additive (-Infinity where keep is 0).
function maskOf(keep, bias, nQ, nK) {
  if (!keep && !bias) return undefined;
  if (!bias) return { dims: [nQ, nK], boolean: true, values: keep };
  const values = Float64Array.from(bias);
  if (keep) values.forEach((_, e) => keep[e] === 0 && (values[e] = -Infinity));
  return { dims: [nQ, nK], boolean: false, values };
}

// Multi-head attention over a batch.
//   x [batch·nQ·dModel], weights { wq, wk, wv, wo, bq?, bk?, bv?, bo?, sinks? } (tensors or
//     arrays; sinks [heads], one per query head)
//   options: batch, nQ, nK, dModel, heads, kvHeads (default heads), dK (default dModel/heads),
//     dV (default dK), context (undefined: self-attention), causal, keep, bias ([nQ,nK], shared
//     by the batch and the heads), scale, softcap, left, right, rotary
//   Q = x·wq + bq [B,nQ,H·dK], K = ctx·wk + bk [B,nK,Hkv·dK], V = ctx·wv + bv [B,nK,Hkv·dV];
//   concat = attention(Q, K, V) [B,nQ,H·dV]; output = concat·wo + bo [B,nQ,dModel]
// -> { output, q, k, v, concat, heads: [{ q, k, v, scores, scaled, masked, weights, output }] }:
// q, k, v the projections (before rotary); each head's trace has the batch's sequences one after
// the other, q and k rotated, laid out like the package's trace.
export function mhaRef(x, weights, options = {}) {
  const { l, w, Q, K, V, a } = layer(x, weights, options);
  const { batch, nQ, nK, dModel, heads, kvHeads, dK, dV } = l;
  const o = onnxAttentionRef(a);
  const group = heads / kvHeads;
  const perHead = Array.from({ length: heads }, (_, h) => {
    const trace = {};
    const gather = (src, count, head, rows, d) => {
      const out = new Float64Array(batch * rows * d);
      for (let b = 0; b < batch; ++b) out.set(block(src, b * count + head, rows, d), b * rows * d);
      return out;
    };
    const g = Math.floor(h / group);
    trace.q = gather(o.query, heads, h, nQ, dK);
    trace.k = gather(o.presentKey, kvHeads, g, nK, dK);
    trace.v = gather(o.presentValue, kvHeads, g, nK, dV);
    trace.scores = gather(o.scores, heads, h, nQ, nK);
    ['scaled', 'capped', 'masked', 'weights'].forEach((name, mode) => {
      trace[name] = gather(o.qk[mode], heads, h, nQ, nK);
    });
    trace.output = gather(to4d(o.y, true, batch, heads, nQ, dV), heads, h, nQ, dV);
    return trace;
  });
  const output = project(o.y, batch * nQ, heads * dV, w.wo, w.bo, dModel);
  return { output, q: Q, k: K, v: V, concat: o.y, heads: perHead };
}

// Gradients of sum(dOut ⊙ mhaRef(x, weights, options).output)
// -> { dx, dContext (with a context), dwq, dwk, dwv, dwo, dbq, dbk, dbv, dbo, dsinks (with
// weights.sinks) }
export function mhaBackwardRef(x, weights, options, dOut) {
  const { l, w, x: xd, ctx, a } = layer(x, weights, options);
  const { batch, nQ, nK, dModel, heads, kvHeads, dK, dV } = l;
  const dOutData = dataOf(dOut);
  const concat = onnxAttentionRef(a).y;
  const rq = batch * nQ,
    rk = batch * nK;
  // output = concat·wo + bo -> dwo = concatᵀ·dOut, dbo = Σ_rows dOut, dConcat = dOut·woᵀ
  const g = {
    dwo: projectTn(concat, dOutData, rq, heads * dV, dModel),
    dbo: columnSums(dOutData, rq, dModel),
  };
  const dConcat = projectNt(dOutData, w.wo, rq, dModel, heads * dV);
  const { dq, dk, dv, dsinks } = onnxAttentionBackwardRef(a, dConcat); // before rotation, 3-D
  if (dsinks) g.dsinks = dsinks;
  // Q = x·wq + bq, K = ctx·wk + bk, V = ctx·wv + bv -> their weights' and inputs' gradients
  g.dwq = projectTn(xd, dq, rq, dModel, heads * dK);
  g.dbq = columnSums(dq, rq, heads * dK);
  g.dwk = projectTn(ctx, dk, rk, dModel, kvHeads * dK);
  g.dbk = columnSums(dk, rk, kvHeads * dK);
  g.dwv = projectTn(ctx, dv, rk, dModel, kvHeads * dV);
  g.dbv = columnSums(dv, rk, kvHeads * dV);
  const dx = projectNt(dq, w.wq, rq, heads * dK, dModel);
  const dCtx = projectNt(dk, w.wk, rk, kvHeads * dK, dModel);
  const dCtxV = projectNt(dv, w.wv, rk, kvHeads * dV, dModel);
  for (let i = 0; i < dCtx.length; ++i) dCtx[i] += dCtxV[i];
  if (options.context !== undefined) g.dContext = dCtx;
  else for (let i = 0; i < dx.length; ++i) dx[i] += dCtx[i];
  g.dx = dx;
  return g;
}

// ---- Comparison helpers ----

// ||a − b|| / ||b||: the relative RMS error of a against b.
export function relativeRms(a, b) {
  let num = 0,
    den = 0;
  for (let i = 0; i < a.length; ++i) ((num += (a[i] - b[i]) ** 2), (den += b[i] ** 2));
  return Math.sqrt(num / den);
}

// Largest |a_i - b_i| over two arrays of the same length; equal infinities count as 0,
// an infinity against a finite value (or NaN anywhere) as Infinity.
export function maxAbsDiff(a, b) {
  if (a.length !== b.length) throw new Error(`maxAbsDiff: lengths ${a.length} and ${b.length} differ`);
  let max = 0;
  for (let i = 0; i < a.length; ++i) {
    if (a[i] === b[i]) continue;
    const d = Math.abs(a[i] - b[i]);
    if (!(d <= max)) max = Number.isNaN(d) ? Infinity : d;
  }
  return max;
}

// Largest |x| of an array (for tolerances relative to the values' size).
export function maxAbs(a) {
  let max = 0;
  for (const x of a) max = Math.max(max, Math.abs(x));
  return max;
}
