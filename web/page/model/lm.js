// The page's small causal language model, outside its attention layers: plain JS float32.
// Shared by the trainer (scripts/train_model.mjs), its test and the page.
//
//   x = E[ids] + P                  E (V,d) the model's token embeddings (row c: token c of the
//                                   tokenizer, tokenize.js), P (n,d) sinusoidal positions × the
//                                   manifest's positionScale
//   h1 = x + attn1(x), h2 = h1 + attn2(h1)      attn = the package's multiHeadAttention, causal
//   f = h2 + relu(h2·w1 + b1)·w2 + b2            layer 2's feed-forward block (w1 (d,m), w2 (m,d)),
//                                                when the model has one; else f = h2
//   z = f·wout (n,d);  logits = z·Eᵀ + bout (n,V)    the output scores the same embeddings E
//                                                   (tied, as GPT-2): logits are linear in f
//   loss = mean over rows of −log softmax(logits)[target]
// T = batch·n rows; d = d_model = 100; V tokens, every one an output class.

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

// ids (n) of token embeddings E (V,d), P (n,d) -> X (n,d) = E[ids] + P (P null: E[ids] alone)
export function embedTokens(E, ids, d, P = null) {
  const n = ids.length;
  const x = new Float32Array(n * d);
  for (let i = 0; i < n; ++i) {
    const o = ids[i] * d;
    for (let k = 0; k < d; ++k) x[i * d + k] = E[o + k] + (P ? P[i * d + k] : 0);
  }
  return x;
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
  embed: tensors.embed.data,
  wout: tensors.wout.data,
  bout: tensors.bout.data,
  ...(tensors.w1 && { w1: tensors.w1.data, b1: tensors.b1.data, w2: tensors.w2.data, b2: tensors.b2.data }),
});

// The head: h (T,d) -> { z (T,d), logits (T,V) } (through the feed-forward block when p has w1)
export function forwardHead(p, h, T, d, V) {
  const f = p.w1 ? feedForward(p, h, T, d).f : h;
  const z = matmul(f, p.wout, T, d, d);
  return { z, logits: scoreWords(z, p.embed, p.bout, T, d, V) };
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
