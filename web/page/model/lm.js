// The page's small causal language model, outside its attention layers: plain JS float32.
// Shared by the trainer (scripts/train_model.mjs), its test and the page.
//
//   x = E + P                       E (n,d) the page's word vectors, P (n,d) sinusoidal positions
//                                   × the manifest's positionScale
//   h1 = x + attn1(x), h2 = h1 + attn2(h1)      attn = the package's multiHeadAttention, causal
//   f = h2 + relu(h2·w1 + b1)·w2 + b2            layer 2's feed-forward block (w1 (d,m), w2 (m,d)),
//                                                when the model has one; else f = h2
//   z = f·wout (n,d);  logits = z·Wᵀ + bout (n,V)    W (V,d): row c the word vector of class c
//                                                   (the last class, "<unk>", has a learned row)
//   loss = mean over rows of −log softmax(logits)[target]
// T = batch·n rows; d = d_model = 100; V output classes.

// a (T,d) · b (d,m) -> (T,m); out accumulates in float32, row by row.
export function matmul(a, b, T, d, m) {
  const out = new Float32Array(T * m);
  for (let t = 0; t < T; ++t) {
    const o = t * m;
    for (let k = 0; k < d; ++k) {
      const av = a[t * d + k];
      if (av === 0) continue;
      const bo = k * m;
      for (let j = 0; j < m; ++j) out[o + j] += av * b[bo + j];
    }
  }
  return out;
}

// z (T,d), words (V,d) -> z·wordsᵀ + bias (T,V)
export function scoreWords(z, words, bias, T, d, V) {
  const out = new Float32Array(T * V);
  for (let t = 0; t < T; ++t) {
    const zo = t * d,
      o = t * V;
    for (let c = 0; c < V; ++c) {
      const wo = c * d;
      let s = bias[c];
      for (let k = 0; k < d; ++k) s += z[zo + k] * words[wo + k];
      out[o + c] = s;
    }
  }
  return out;
}

// The output classes' word vectors W (V,d): the page's vectors of vocab[0..V-2], then `unk`;
// plus the learned corrections wdelta (V,d) when the model has them.
export function outputWords(emb, vocab, unk, wdelta = null) {
  const d = emb.dim,
    V = vocab.length;
  const words = new Float32Array(V * d);
  for (let c = 0; c < V - 1; ++c) words.set(emb.vector(vocab[c]), c * d);
  words.set(unk, (V - 1) * d);
  if (wdelta) for (let i = 0; i < words.length; ++i) words[i] += wdelta[i];
  return words;
}

// layers [attn1, attn2], x (B,n,d) tensor -> { hs: [x, h1, h2] } (each (B·n·d) data)
export function forwardLayers(layers, x, { trace = false } = {}) {
  const hs = [x.data];
  const traces = [];
  let h = x;
  for (const layer of layers) {
    const r = layer.forward(h, { causal: true, trace });
    const next = new Float32Array(h.data.length);
    for (let i = 0; i < next.length; ++i) next[i] = h.data[i] + r.output.data[i];
    if (trace) traces.push(r.heads);
    h = { data: next, shape: h.shape };
    hs.push(next);
  }
  return { hs, traces };
}

// The feed-forward block: h (T,d), p.w1 (d,m), p.b1 (m), p.w2 (m,d), p.b2 (d), products by `mm`
// ((a, b, T, k, m) -> a (T,k)·b (k,m)) -> { a (T,m) = relu(h·w1 + b1), f (T,d) = h + a·w2 + b2 }
export function feedForward(p, h, T, d, mm = matmul) {
  const m = p.b1.length;
  const a = mm(h, p.w1, T, d, m);
  for (let t = 0; t < T; ++t) {
    const o = t * m;
    for (let j = 0; j < m; ++j) {
      const v = a[o + j] + p.b1[j];
      a[o + j] = v > 0 ? v : 0;
    }
  }
  const f = mm(a, p.w2, T, m, d);
  for (let t = 0; t < T; ++t) {
    const o = t * d;
    for (let k = 0; k < d; ++k) f[o + k] += h[o + k] + p.b2[k];
  }
  return { a, f };
}

// The output parameters as forwardHead takes them, from weights.js' tensors
export const headParams = (tensors) => ({
  wout: tensors.wout.data,
  bout: tensors.bout.data,
  unk: tensors.unk.data,
  wdelta: tensors.wdelta?.data,
  ...(tensors.w1 && { w1: tensors.w1.data, b1: tensors.b1.data, w2: tensors.w2.data, b2: tensors.b2.data }),
});

// The head: h (T,d) -> { z (T,d), logits (T,V) } (through the feed-forward block when p has w1)
export function forwardHead(p, words, h, T, d, V) {
  const f = p.w1 ? feedForward(p, h, T, d).f : h;
  const z = matmul(f, p.wout, T, d, d);
  return { z, logits: scoreWords(z, words, p.bout, T, d, V) };
}

// logits (T,V), targets (T) -> { loss (mean), dlogits (T,V) = (softmax − onehot)/T }; softmax
// as max, exp-minus-max with sum, scale. dlogits: a new array, or `out` (logits itself may be
// given: a training step needs no logits after this).
export function crossEntropy(logits, targets, T, V, out = null) {
  const dlogits = out ?? new Float32Array(T * V);
  let loss = 0;
  for (let t = 0; t < T; ++t) {
    const o = t * V;
    let max = -Infinity;
    for (let c = 0; c < V; ++c) if (logits[o + c] > max) max = logits[o + c];
    const target = logits[o + targets[t]];
    let sum = 0;
    for (let c = 0; c < V; ++c) {
      const e = Math.exp(logits[o + c] - max);
      dlogits[o + c] = e;
      sum += e;
    }
    loss += Math.log(sum) + max - target;
    for (let c = 0; c < V; ++c) dlogits[o + c] /= sum * T;
    dlogits[o + targets[t]] -= 1 / T;
  }
  return { loss: loss / T, dlogits };
}

// Backward of forwardHead, given dlogits (T,V):
//   logits = z·Wᵀ + b:  dbout = Σ_t dlogits, dz = dlogits·W (T,d), dunk = dlogits[:,V−1]ᵀ·z (d)
//   z = h·wout:         dwout = hᵀ·dz (d,d), dh = dz·woutᵀ (T,d)
export function backwardHead(p, words, h, z, dlogits, T, d, V) {
  const dbout = new Float32Array(V);
  const dz = new Float32Array(T * d);
  const dunk = new Float32Array(d);
  for (let t = 0; t < T; ++t) {
    const o = t * V,
      zo = t * d;
    for (let c = 0; c < V; ++c) {
      const g = dlogits[o + c];
      dbout[c] += g;
      const wo = c * d;
      for (let k = 0; k < d; ++k) dz[zo + k] += g * words[wo + k];
    }
    const gu = dlogits[o + V - 1];
    for (let k = 0; k < d; ++k) dunk[k] += gu * z[zo + k];
  }
  const dwout = new Float32Array(d * d);
  const dh = new Float32Array(T * d);
  for (let t = 0; t < T; ++t) {
    for (let i = 0; i < d; ++i) {
      const hv = h[t * d + i];
      let s = 0;
      for (let j = 0; j < d; ++j) {
        dwout[i * d + j] += hv * dz[t * d + j];
        s += dz[t * d + j] * p.wout[i * d + j];
      }
      dh[t * d + i] = s;
    }
  }
  return { dbout, dz, dunk, dwout, dh };
}

// logits row (V) -> the k best classes [{ c, p }] by probability, best first.
export function topK(logits, o, V, k) {
  let max = -Infinity;
  for (let c = 0; c < V; ++c) if (logits[o + c] > max) max = logits[o + c];
  let sum = 0;
  for (let c = 0; c < V; ++c) sum += Math.exp(logits[o + c] - max);
  const best = [];
  for (let c = 0; c < V; ++c) {
    const v = logits[o + c];
    if (best.length < k || v > logits[o + best[best.length - 1]]) {
      best.push(c);
      best.sort((a, b) => logits[o + b] - logits[o + a]);
      if (best.length > k) best.pop();
    }
  }
  return best.map((c) => ({ c, p: Math.exp(logits[o + c] - max) / sum }));
}
