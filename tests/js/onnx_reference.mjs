// The ONNX Attention operator (opsets 23-25) in float64, written from its specification for the
// JS tests of the option-rich attention (it never calls the package). The same contract as
// tests/cpp/onnx_attention_reference.h, which says it in full; in short:
//
//   4-D q [B,Hq,nQ,dK], k [B,Hkv,nNew,dK], v [B,Hkv,nNew,dV] -> y [B,Hq,nQ,dV]
//   3-D q [B,nQ,Hq·dK], k [B,nNew,Hkv·dK], v [B,nNew,Hkv·dV] -> y [B,nQ,Hq·dV]
//   pastKey [B,Hkv,nPast,dK], pastValue [B,Hkv,nPast,dV] -> presentKey/presentValue (n = nPast + nNew)
//   qk[mode] [B,Hq,nQ,n] for mode 0 scaled, 1 softcapped, 2 masked, 3 weights
// Query head h reads kv head floor(h / (Hq / Hkv)). bias = mask (boolean keep or additive,
// right-aligned broadcast, padded with masked columns when short) + causal (j <= i + offset)
// + window ((i + offset) - j <= left, j - (i + offset) <= right; -1 unbounded) + padding
// (j < kvLength[b]); offset = nPast with a past, kvLength[b] - nQ with kvLength, else 0.
// A row whose bias is -Infinity everywhere gets zero weights and a zero output row.
// Rotary: pairs (t, t + dims/2) (or (2t, 2t+1) interleaved) of q row i and new key j turn by
// position·base^(-2t/dims), positions offset + nPast + row.

const at = (threeD, heads, rows, d) => (b, h, r, t) =>
  threeD ? ((b * rows + r) * heads + h) * d + t : ((b * heads + h) * rows + r) * d + t;

// x in either layout -> Float64Array [B,heads,rows,d]
function to4d(x, threeD, batch, heads, rows, d) {
  const src = at(threeD, heads, rows, d),
    dst = at(false, heads, rows, d);
  const out = new Float64Array(batch * heads * rows * d);
  for (let b = 0; b < batch; ++b)
    for (let h = 0; h < heads; ++h)
      for (let r = 0; r < rows; ++r) for (let t = 0; t < d; ++t) out[dst(b, h, r, t)] = x[src(b, h, r, t)];
  return out;
}

function from4d(x, threeD, batch, heads, rows, d) {
  const src = at(false, heads, rows, d),
    dst = at(threeD, heads, rows, d);
  const out = new Float64Array(x.length);
  for (let b = 0; b < batch; ++b)
    for (let h = 0; h < heads; ++h)
      for (let r = 0; r < rows; ++r) for (let t = 0; t < d; ++t) out[dst(b, h, r, t)] = x[src(b, h, r, t)];
  return out;
}

// Rotates rows [0, rows) of x (rows,d), block by block of `rows` rows, in place.
export function rotaryRef(x, rows, d, position, { base = 10000, dims = 0, interleaved = false, inverse = false } = {}) {
  const D = dims || d;
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

// a: { batch, qHeads, kvHeads, nQ, nPast, nNew, dK, dV, threeD, q, k, v, pastKey, pastValue,
//      mask: { dims, boolean, values }, causal, scale, softcap, left, right, kvLength,
//      rotary: { offset, base, dims, interleaved } }
// -> { y, presentKey, presentValue, qk: [mode0, mode1, mode2, mode3] } (Float64Arrays)
export function onnxAttentionRef(a) {
  const p = prepare(a);
  const { batch, qHeads, kvHeads, nQ, dV } = a;
  const qk = [0, 1, 2, 3].map(() => new Float64Array(batch * qHeads * nQ * p.n));
  const y = new Float64Array(batch * qHeads * nQ * dV);
  for (let b = 0; b < batch; ++b)
    for (let h = 0; h < qHeads; ++h)
      for (let i = 0; i < nQ; ++i) {
        const r = scoreRow(a, p, b, h, i);
        const row = (b * qHeads + h) * nQ + i,
          g = Math.floor(h / (qHeads / kvHeads));
        [r.raw, r.capped, r.masked, r.weights].forEach((s, mode) => qk[mode].set(s, row * p.n));
        for (let j = 0; j < p.n; ++j)
          for (let t = 0; t < dV; ++t) y[row * dV + t] += r.weights[j] * p.v[((b * kvHeads + g) * p.n + j) * dV + t];
      }
  return { y: from4d(y, a.threeD, batch, qHeads, nQ, dV), presentKey: p.k, presentValue: p.v, qk };
}

// Gradients of sum(dy ⊙ y) with respect to q, k, v (the new rows), shaped as the inputs.
export function onnxAttentionBackwardRef(a, dyIn) {
  const p = prepare(a);
  const { batch, qHeads, kvHeads, nQ, nPast = 0, nNew, dK, dV } = a;
  const dy = to4d(dyIn, a.threeD, batch, qHeads, nQ, dV);
  const dq = new Float64Array(p.q.length),
    dk = new Float64Array(p.k.length),
    dv = new Float64Array(p.v.length);
  for (let b = 0; b < batch; ++b)
    for (let h = 0; h < qHeads; ++h)
      for (let i = 0; i < nQ; ++i) {
        const r = scoreRow(a, p, b, h, i);
        const row = (b * qHeads + h) * nQ + i,
          g = Math.floor(h / (qHeads / kvHeads));
        const dp = new Float64Array(p.n);
        for (let j = 0; j < p.n; ++j) {
          const kv = (b * kvHeads + g) * p.n + j;
          for (let t = 0; t < dV; ++t) {
            dv[kv * dV + t] += r.weights[j] * dy[row * dV + t];
            dp[j] += dy[row * dV + t] * p.v[kv * dV + t];
          }
        }
        let pdp = 0;
        for (let j = 0; j < p.n; ++j) pdp += r.weights[j] * dp[j];
        for (let j = 0; j < p.n; ++j) {
          let ds = r.weights[j] * (dp[j] - pdp);
          if (a.softcap > 0) ds *= 1 - Math.tanh(r.raw[j] / a.softcap) ** 2;
          const kv = (b * kvHeads + g) * p.n + j;
          for (let t = 0; t < dK; ++t) {
            dq[row * dK + t] += p.scale * ds * p.k[kv * dK + t];
            dk[kv * dK + t] += p.scale * ds * p.q[row * dK + t];
          }
        }
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
  return {
    dq: from4d(dq, a.threeD, batch, qHeads, nQ, dK),
    dk: from4d(dkNew, a.threeD, batch, kvHeads, nNew, dK),
    dv: from4d(dvNew, a.threeD, batch, kvHeads, nNew, dV),
  };
}

function prepare(a) {
  const { batch, qHeads, kvHeads, nQ, nPast = 0, nNew, dK, dV, threeD = false } = a;
  if (qHeads % kvHeads !== 0) throw new Error('onnxAttentionRef: qHeads must be a multiple of kvHeads');
  const n = nPast + nNew;
  const scale = a.scale ?? 1 / Math.sqrt(dK);
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
  return { n, scale, q, k: concat(past(a.pastKey), kNew, dK), v: concat(past(a.pastValue), vNew, dV) };
}

function bias(a, b, h, i, j) {
  const offset = a.pastKey ? (a.nPast ?? 0) : a.kvLength ? a.kvLength[b] - a.nQ : 0;
  const frontier = i + offset;
  const { left = -1, right = -1 } = a;
  if (a.causal && j > frontier) return -Infinity;
  if (left >= 0 && frontier - j > left) return -Infinity;
  if (right >= 0 && j - frontier > right) return -Infinity;
  if (a.kvLength && j >= a.kvLength[b]) return -Infinity;
  if (!a.mask) return 0;
  const { dims, values, boolean = false } = a.mask;
  if (j >= dims[dims.length - 1]) return -Infinity; // padded column
  const full = [b, h, i, j];
  let index = 0;
  dims.forEach((size, axis) => {
    index = index * size + (size === 1 ? 0 : full[4 - dims.length + axis]);
  });
  const m = Number(values[index]);
  return boolean ? (m ? 0 : -Infinity) : m;
}

function scoreRow(a, p, b, h, i) {
  const { qHeads, kvHeads, nQ, dK, softcap = 0 } = a;
  const g = Math.floor(h / (qHeads / kvHeads));
  const qo = ((b * qHeads + h) * nQ + i) * dK;
  const raw = new Float64Array(p.n),
    capped = new Float64Array(p.n);
  const masked = new Float64Array(p.n),
    weights = new Float64Array(p.n);
  let allMasked = true;
  for (let j = 0; j < p.n; ++j) {
    const ko = ((b * kvHeads + g) * p.n + j) * dK;
    let dot = 0;
    for (let t = 0; t < dK; ++t) dot += p.q[qo + t] * p.k[ko + t];
    raw[j] = p.scale * dot;
    capped[j] = softcap > 0 ? softcap * Math.tanh(raw[j] / softcap) : raw[j];
    const beta = bias(a, b, h, i, j);
    if (beta !== -Infinity) allMasked = false;
    masked[j] = capped[j] + beta;
  }
  if (!allMasked) {
    let max = -Infinity,
      sum = 0;
    for (const s of masked) max = Math.max(max, s);
    for (let j = 0; j < p.n; ++j) sum += weights[j] = Math.exp(masked[j] - max);
    for (let j = 0; j < p.n; ++j) weights[j] /= sum;
  }
  return { raw, capped, masked, weights };
}

// A multi-head attention layer with the modern options, in float64, its attention part the
// operator above in the 3-D layout (the projections' (batch·n, heads·d) rows are [B,S,H·D]):
//   Q = x·wq + bq [B,nQ,Hq·dK], K = ctx·wk + bk [B,nK,Hkv·dK], V = ctx·wv + bv [B,nK,Hkv·dV]
//   concat = attention(Q, K, V) [B,nQ,Hq·dV], output = concat·wo + bo [B,nQ,dModel]
// l: { batch, nQ, nK, dModel, heads, kvHeads, dK, dV, causal, scale, softcap, left, right,
//      rotary } and the layer's weights { wq, wk, wv, wo, bq?, bk?, bv?, bo? } (arrays);
// x and context (or undefined: self-attention) as flat arrays.
function mhaAttention(l, x, context, w) {
  const { batch, nQ, dModel, heads, kvHeads, dK, dV } = l;
  const ctx = context ?? x;
  const nK = context ? l.nK : nQ;
  const Q = project(x, batch * nQ, dModel, w.wq, w.bq, heads * dK);
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
    causal: l.causal ?? false,
    scale: l.scale,
    softcap: l.softcap ?? 0,
    left: l.left ?? -1,
    right: l.right ?? -1,
    rotary: l.rotary ?? undefined,
  };
  return { a, nK, ctx, concat: onnxAttentionRef(a).y };
}

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

const columnSums = (m, rows, cols) => {
  const out = new Float64Array(cols);
  for (let r = 0; r < rows; ++r) for (let c = 0; c < cols; ++c) out[c] += m[r * cols + c];
  return out;
};

export function mhaModernRef(l, x, context, w) {
  const { concat } = mhaAttention(l, x, context, w);
  return project(concat, l.batch * l.nQ, l.heads * l.dV, w.wo, w.bo, l.dModel);
}

// Gradients of sum(dOut ⊙ output) -> { dx, dContext?, dwq, dwk, dwv, dwo, dbq, dbk, dbv, dbo }
export function mhaModernBackwardRef(l, x, context, w, dOut) {
  const { batch, nQ, dModel, heads, kvHeads, dK, dV } = l;
  const { a, nK, ctx, concat } = mhaAttention(l, x, context, w);
  const rq = batch * nQ,
    rk = batch * nK;
  const g = {
    dwo: projectTn(concat, dOut, rq, heads * dV, dModel),
    dbo: columnSums(dOut, rq, dModel),
  };
  const dConcat = projectNt(dOut, w.wo, rq, dModel, heads * dV);
  const { dq, dk, dv } = onnxAttentionBackwardRef(a, dConcat); // before rotation, 3-D
  g.dwq = projectTn(x, dq, rq, dModel, heads * dK);
  g.dbq = columnSums(dq, rq, heads * dK);
  g.dwk = projectTn(ctx, dk, rk, dModel, kvHeads * dK);
  g.dbk = columnSums(dk, rk, kvHeads * dK);
  g.dwv = projectTn(ctx, dv, rk, dModel, kvHeads * dV);
  g.dbv = columnSums(dv, rk, kvHeads * dV);
  const dx = projectNt(dq, w.wq, rq, heads * dK, dModel);
  const dCtx = projectNt(dk, w.wk, rk, kvHeads * dK, dModel);
  const dCtxV = projectNt(dv, w.wv, rk, kvHeads * dV, dModel);
  for (let i = 0; i < dCtx.length; ++i) dCtx[i] += dCtxV[i];
  if (context) g.dContext = dCtx;
  else for (let i = 0; i < dx.length; ++i) dx[i] += dCtx[i];
  g.dx = dx;
  return g;
}
