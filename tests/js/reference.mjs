// A plain float64 reference for the JS API tests, written from the math (it never calls the
// package), plus a seeded generator for test inputs and comparison helpers.
//
// Matrices are row-major: either { data, shape } tensors or bare arrays with the sizes passed
// alongside. Results are Float64Arrays.
//
// Softmax input, for raw scores s = q·kᵀ (nQ by nK):
//   x_ij = s_ij·scale + bias_ij   if key j is kept for query i
//   x_ij = -Infinity              if it is masked
// Key j is masked for query i when causal && j > i (top-left aligned, also for nQ != nK) or
// keep_ij == 0. weights = row softmax of x; a row with every key masked gets all-zero weights
// and a zero output row (never NaN).

// mulberry32 -> uniform floats in [0, 1); same seed, same sequence. The package's own seeded
// generator (it only makes test inputs here; none of the math under test).
export { random as rng } from '../../web/lib/init.js';

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

// q [nQ,dK], k [nK,dK], v [nK,dV] (tensors) -> { output [nQ,dV], scores, scaled, masked,
// weights [nQ,nK] }. options: causal, keep (nQ·nK, 0 = masked), bias (nQ·nK, added after
// scaling), scale (default 1/sqrt(dK)). keep and bias may be tensors or bare arrays.
export function attentionRef(q, k, v, options = {}) {
  const [nQ, dK] = q.shape;
  const [nK, dV] = v.shape;
  if (k.shape[0] !== nK || k.shape[1] !== dK) throw new Error('attentionRef: shapes do not fit');
  return attentionCore(q.data, k.data, v.data, nQ, nK, dK, dV, options);
}

function attentionCore(q, k, v, nQ, nK, dK, dV, { causal = false, keep, bias, scale } = {}) {
  const s = scale ?? 1 / Math.sqrt(dK);
  const keepData = dataOf(keep);
  const biasData = dataOf(bias);
  const scores = new Float64Array(nQ * nK);
  const scaled = new Float64Array(nQ * nK);
  const masked = new Float64Array(nQ * nK);
  const weights = new Float64Array(nQ * nK);
  const output = new Float64Array(nQ * dV);
  for (let i = 0; i < nQ; ++i) {
    let max = -Infinity;
    for (let j = 0; j < nK; ++j) {
      let dot = 0;
      for (let c = 0; c < dK; ++c) dot += q[i * dK + c] * k[j * dK + c];
      const ij = i * nK + j;
      scores[ij] = dot;
      scaled[ij] = dot * s;
      const isMasked = (causal && j > i) || (keepData && keepData[ij] === 0);
      const x = isMasked ? -Infinity : dot * s + (biasData ? biasData[ij] : 0);
      masked[ij] = x;
      if (x > max) max = x;
    }
    if (max === -Infinity) continue; // every key masked: zero weights, zero output row
    let sum = 0;
    for (let j = 0; j < nK; ++j) {
      const e = Math.exp(masked[i * nK + j] - max);
      weights[i * nK + j] = e;
      sum += e;
    }
    for (let j = 0; j < nK; ++j) weights[i * nK + j] /= sum;
    for (let j = 0; j < nK; ++j) {
      const w = weights[i * nK + j];
      if (w === 0) continue;
      for (let c = 0; c < dV; ++c) output[i * dV + c] += w * v[j * dV + c];
    }
  }
  return { output, scores, scaled, masked, weights };
}

// a (rows,inner) · b (inner,cols) + bias (cols, optional) -> (rows,cols), float64
function matmul(a, b, rows, inner, cols, bias) {
  const out = new Float64Array(rows * cols);
  for (let r = 0; r < rows; ++r) {
    for (let c = 0; c < cols; ++c) {
      let acc = bias ? bias[c] : 0;
      for (let t = 0; t < inner; ++t) acc += a[r * inner + t] * b[t * cols + c];
      out[r * cols + c] = acc;
    }
  }
  return out;
}

// Columns [c0, c0+width) of a (rows,stride) matrix.
function columns(src, rows, stride, c0, width) {
  const out = new Float64Array(rows * width);
  for (let r = 0; r < rows; ++r) {
    for (let c = 0; c < width; ++c) out[r * width + c] = src[r * stride + c0 + c];
  }
  return out;
}

// Multi-head attention over a batch.
//   x (batch·nQ·dModel values), context (batch·nK·dModel, or undefined for self-attention)
//   weights: { wq, wk, wv, wo, bq?, bk?, bv?, bo? } as tensors or bare arrays
//   Q = x·wq + bq, K = ctx·wk + bk, V = ctx·wv + bv; head i uses columns [i·dK,(i+1)·dK) of Q
//   and K and [i·dV,(i+1)·dV) of V; output = concat(heads)·wo + bo.
// options.keep / options.bias: the [nQ,nK] masks, shared by the batch and the heads.
// -> { output (batch·nQ·dModel), q, k, v, concat (batch·nQ·h·dV),
//      heads: [{ q, k, v, scores, scaled, masked, weights, output }] each with the batch
//      sequences one after the other, laid out like the package's trace }
export function mhaRef(
  x,
  weights,
  { batch = 1, nQ, nK, dModel, heads, dK, dV, context, causal = false, keep, bias, scale } = {},
) {
  const xd = dataOf(x);
  const cd = context === undefined ? xd : dataOf(context);
  nK ??= context === undefined ? nQ : cd.length / (batch * dModel);
  dK ??= dModel / heads;
  dV ??= dK;
  const w = Object.fromEntries(Object.entries(weights).map(([n, t]) => [n, dataOf(t)]));
  const hk = heads * dK,
    hv = heads * dV;
  const Q = matmul(xd, w.wq, batch * nQ, dModel, hk, w.bq);
  const K = matmul(cd, w.wk, batch * nK, dModel, hk, w.bk);
  const V = matmul(cd, w.wv, batch * nK, dModel, hv, w.bv);
  const concat = new Float64Array(batch * nQ * hv);
  const perHead = Array.from({ length: heads }, () => ({
    q: new Float64Array(batch * nQ * dK),
    k: new Float64Array(batch * nK * dK),
    v: new Float64Array(batch * nK * dV),
    scores: new Float64Array(batch * nQ * nK),
    scaled: new Float64Array(batch * nQ * nK),
    masked: new Float64Array(batch * nQ * nK),
    weights: new Float64Array(batch * nQ * nK),
    output: new Float64Array(batch * nQ * dV),
  }));
  for (let b = 0; b < batch; ++b) {
    const Qb = Q.subarray(b * nQ * hk, (b + 1) * nQ * hk);
    const Kb = K.subarray(b * nK * hk, (b + 1) * nK * hk);
    const Vb = V.subarray(b * nK * hv, (b + 1) * nK * hv);
    for (let h = 0; h < heads; ++h) {
      const qh = columns(Qb, nQ, hk, h * dK, dK);
      const kh = columns(Kb, nK, hk, h * dK, dK);
      const vh = columns(Vb, nK, hv, h * dV, dV);
      const r = attentionCore(qh, kh, vh, nQ, nK, dK, dV, { causal, keep, bias, scale });
      const ph = perHead[h];
      ph.q.set(qh, b * nQ * dK);
      ph.k.set(kh, b * nK * dK);
      ph.v.set(vh, b * nK * dV);
      for (const name of ['scores', 'scaled', 'masked', 'weights']) ph[name].set(r[name], b * nQ * nK);
      ph.output.set(r.output, b * nQ * dV);
      for (let i = 0; i < nQ; ++i) {
        for (let c = 0; c < dV; ++c) concat[(b * nQ + i) * hv + h * dV + c] = r.output[i * dV + c];
      }
    }
  }
  const output = matmul(concat, w.wo, batch * nQ, hv, dModel, w.bo);
  return { output, q: Q, k: K, v: V, concat, heads: perHead };
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
