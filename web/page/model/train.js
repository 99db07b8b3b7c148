// The model of web/page/model/lm.js made trainable: its parameters, one training step through the
// package's forward/backward/step, and the held-out evaluation (loss, top-k, per-head stats).
// One implementation for `npm run train-model` (scripts/train_model.mjs, Node) and the page's
// live training (train_worker.js, a browser Worker): plain ES module, no Node or DOM imports.
//
// Parameters: layers [attn1, attn2] (the package's, 4 heads, no biases, so that
// the page's steps show Q = X·W_Q as they are) and p = { embed (V,d) the token embeddings (the
// input's rows and, tied, the output's), wout (d,d), bout (V), with ffn m > 0 layer 2's
// feed-forward block w1 (d,m), b1 (m), w2 (m,d), b2 (d) } in plain JS arrays. Batches: B windows
// of n+1 token ids (tokenize.js). The output layer's products (T·V·d each, most of a step's
// work) run on the package's matmul: the model keeps `attn` for that.
//
//   createModel(attn, { d, heads, layers, seed, logPrior, ffn, qkScale, previousHead, inductionHead, tensors,
//     fresh }) -> { attn, p, layers }
//   trainStep(model, batch, adam, lr, { attnLr, learnHead, timings }) -> loss; attnLr scales the
//     attention layers' learning rate (their step() gets lr·attnLr; an array: one factor per
//     layer; a factor 0: the layer stays as it is); learnHead false: the embeddings, the output
//     layer and the feed-forward block stay as they are (only the gradient through them is
//     computed, and only down to the lowest layer that learns); timings: ms by part, below
//   headForward(attn, p, h, T, d, V), headBackward(...): the output layer on the package's
//     matmul (exported for its tests)
//   isWord(piece) -> true for a token with a letter or a digit, false for punctuation and space
//   evaluate(...), accuracyTally(...), makeBatch(...), windowsOf(...): below
import { seededRandom, xavierUniform } from '../../lib/index.js';
import { sinusoidalPositions } from '../positions.js';
import { headStats, inductionScore } from './head_stats.js';
import { layerWeights } from './weights.js';
import { crossEntropy, feedForward, forwardHead, forwardLayers, topK } from './lm.js';

export const isWord = (piece) => /[\p{L}\p{N}]/u.test(piece);

// idDocs (class ids per document), V -> { counts (V) of each class, total }: what the output
// layer's starting bias (the unigram distribution) and the baselines are made from
export function classCounts(idDocs, V) {
  const counts = new Float64Array(V);
  let total = 0;
  for (const ids of idDocs)
    for (const c of ids) {
      ++counts[c];
      ++total;
    }
  return { counts, total };
}

// Training windows of n+1 tokens: a document chosen in proportion to its length, then a start in
// it, both from next() (uniform in [0,1)). idDocs: each document's token ids. -> () => { ids (n+1) }
export function windowSampler(idDocs, n, next) {
  const starts = [];
  let acc = 0;
  for (const ids of idDocs) starts.push((acc += Math.max(0, ids.length - n - 1)));
  if (acc === 0) throw new RangeError(`training text: no document has more than ${n + 1} tokens`);
  return () => {
    const r = Math.floor(next() * acc);
    let k = 0;
    while (starts[k] <= r) ++k;
    const s = r - (k ? starts[k - 1] : 0);
    return { ids: idDocs[k].subarray(s, s + n + 1) };
  };
}

// Random tokens with a letter or a digit (isWord of their pieces), from next(): the pieces of
// words, with and without their leading space.
//   randomWords(pieces, next) -> (count) -> Int32Array of token ids
export function randomWords(pieces, next) {
  const words = [];
  pieces.forEach((w, c) => isWord(w) && words.push(c));
  return (count) => Int32Array.from({ length: count }, () => words[Math.floor(next() * words.length)]);
}

// Windows with repeated spans, so that an induction head forms (Olsson et al. 2022): with
// probability share(step) a window from sample() gets a span of L random word tokens, L
// uniform in [minSpan, maxSpan], at a start uniform in [0, n+1−2L], followed right away by the
// same L words; the rest of the window stays the text's. Random words, at varying starts and
// lengths: only copying from the earlier occurrence predicts the second copy (neither the tokens'
// usual neighbours nor a fixed offset do). With probability `text`, the span is instead the
// window's own L tokens at that start (text repeated: its common words, " the", " of", ",", get
// copied too, which random tokens seldom are, and so do the pieces of a rare word).
//   repeatSampler(sample, pieces, n, next, { share, minSpan, maxSpan, from, hold, over, text }) ->
//     (step) => { ids }: share(step) is `from` up to step `hold`, then goes linearly to
//     `share` at step `over`, then stays (from = share: always share); null, or share 0 with no
//     `from`: sample's windows
export function repeatSampler(sample, pieces, n, next, repeat) {
  const { share = 0, minSpan, maxSpan, from = share, hold = 0, over = 0, text = 0 } = repeat ?? {};
  if (!(share > 0) && !(from > 0)) return () => sample();
  const draw = randomWords(pieces, next);
  const shareAt = (step) =>
    step <= hold ? from : step < over ? from + ((share - from) * (step - hold)) / (over - hold) : share;
  return (step) => {
    const w = sample();
    if (next() >= shareAt(step)) return w;
    const L = minSpan + Math.floor(next() * (maxSpan - minSpan + 1));
    const s = Math.floor(next() * (n + 2 - 2 * L));
    const own = text > 0 && next() < text;
    const span = own ? w.ids.slice(s, s + L) : draw(L);
    const ids = Int32Array.from(w.ids);
    for (let k = 0; k < 2 * L; ++k) ids[s + k] = span[k % L];
    return { ids };
  };
}

// windows [{ ids (n+1) }], E (V,d) the token embeddings -> { x (B,n,d) tensor, ids (B·n) the
// input tokens, targets (B·n) }; X = E[ids] + P with P = positionScale × the sinusoidal
// positions (as the page's input.js builds it)
const positions = new Map(); // `${n},${d},${positionScale}` -> P (n,d), made once
export function makeBatch(windows, n, d, E, positionScale) {
  const B = windows.length;
  const key = `${n},${d},${positionScale}`;
  let P = positions.get(key);
  if (!P) positions.set(key, (P = sinusoidalPositions(n, d).map((v) => v * positionScale)));
  const x = new Float32Array(B * n * d);
  const inputs = new Int32Array(B * n);
  const targets = new Int32Array(B * n);
  windows.forEach(({ ids }, b) => {
    for (let i = 0; i < n; ++i) {
      const e = ids[i] * d;
      const o = (b * n + i) * d;
      for (let k = 0; k < d; ++k) x[o + k] = E[e + k] + P[i * d + k];
      inputs[b * n + i] = ids[i];
      targets[b * n + i] = ids[i + 1];
    }
  });
  return { x: { data: x, shape: [B, n, d] }, ids: inputs, targets };
}

// -> { attn, p, layers }: layers seeded (seed + L, Xavier-uniform; W_Q and W_K × qkScale; with
// previousHead { layer, head, strength }, that head's W_Q, W_K from lookBack), embed (V,d)
// uniform in ±embedScale·√3 from seed + 200 (rows of norm about embedScale·√d: 6 with the default
// 0.6, the size of the word vectors the positions' scale was chosen beside), wout 0.1·I, bout =
// logPrior (V = its length), w1 Xavier-uniform from seed + 100 and b1, w2, b2 0 (with ffn m, so
// the block starts as the identity); or, with tensors (weights.js' unpackTensors of a trained
// model), copies of those weights (the block where the model has one), but for the attention
// layers in `fresh` (0-based), seeded as above without previousHead.
export function createModel(
  attn,
  {
    d,
    heads,
    layers,
    seed,
    logPrior,
    embedScale = 0.6,
    ffn = 0,
    qkScale = 1,
    previousHead = null,
    inductionHead = null,
    tensors,
    fresh = [],
  },
) {
  if (tensors) {
    const p = {
      embed: tensors.embed.data.slice(),
      wout: tensors.wout.data.slice(),
      bout: tensors.bout.data.slice(),
    };
    for (const k of ['w1', 'b1', 'w2', 'b2']) if (tensors[k]) p[k] = tensors[k].data.slice();
    return {
      attn,
      p,
      layers: Array.from({ length: layers }, (_, L) =>
        fresh.includes(L)
          ? seededLayer(attn, { d, heads, seed: seed + L, qkScale })
          : attn.multiHeadAttention({ dModel: d, heads, bias: false, weights: layerWeights(tensors, L) }),
      ),
    };
  }
  const V = logPrior.length;
  const next = seededRandom(seed + 200);
  const p = {
    embed: Float32Array.from({ length: V * d }, () => (2 * next() - 1) * embedScale * Math.sqrt(3)),
    wout: new Float32Array(d * d),
    bout: Float32Array.from(logPrior), // start from the unigram distribution
  };
  if (ffn > 0) {
    p.w1 = xavierUniform(d, ffn, seededRandom(seed + 100));
    p.b1 = new Float32Array(ffn);
    p.w2 = new Float32Array(ffn * d);
    p.b2 = new Float32Array(d);
  }
  for (let i = 0; i < d; ++i) p.wout[i * d + i] = 0.1;
  const seeded = Array.from({ length: layers }, (_, L) =>
    seededLayer(attn, { d, heads, seed: seed + L, qkScale, previousHead: previousHead?.layer === L && previousHead }),
  );
  if (inductionHead && previousHead) {
    const w = seeded.map((l) => l.weights);
    for (const l of seeded) l.dispose();
    wireInduction(w[previousHead.layer], w[inductionHead.layer], d, heads, previousHead.head, inductionHead);
    return {
      attn,
      p,
      layers: w.map((weights) => attn.multiHeadAttention({ dModel: d, heads, bias: false, weights })),
    };
  }
  return { attn, p, layers: seeded };
}

// An induction circuit to start from (Olsson et al. 2022), on two halves of the residual stream
// where the sinusoids barely move over a window: S1, the sine dimensions 2f of the dK slowest
// pairs (f = d/2 − dK .. d/2 − 1), and S2, their cosine dimensions 2f + 1 (there P is nearly the
// same at every position, so it shifts every key alike and drops out of the softmax).
//   previous-token head (prev, layer of w0): W_V reads S1, W_O writes it into S2 × copy: at token j
//     it adds copy · x_{j−1}[S1] to S2; the layer's other heads write nothing into S1 and S2
//   induction head (head, layer of w1): W_Q reads S1 of token i, W_K reads S2 of token j, both ×
//     match: the score is large where the token before j is token i; W_V reads S1 and W_O writes
//     it back into S1 × out: the token at j is added to i's residual, which the tied output reads
//     as that token's logit
// Every entry in those heads' columns (W_Q, W_K, W_V) and rows (W_O) outside these is 0; the
// rest stays seeded, and training changes all of it like any other weight.
//   wireInduction(w0, w1, d, heads, prev, { head, match, copy, out }) -> changes w0, w1 in place
function wireInduction(w0, w1, d, heads, prev, { head, match, copy, out }) {
  const dK = d / heads,
    cols = heads * dK;
  const S1 = Array.from({ length: dK }, (_, k) => 2 * (d / 2 - dK + k));
  const S2 = S1.map((r) => r + 1);
  const clearColumns = (t, h) => {
    for (let r = 0; r < d; ++r) t.data.fill(0, r * cols + h * dK, r * cols + (h + 1) * dK);
  };
  const clearRows = (t, h) => t.data.fill(0, h * dK * d, (h + 1) * dK * d);
  // the previous-token head: v = x[S1], o = copy · v into S2
  clearColumns(w0.wv, prev);
  clearRows(w0.wo, prev);
  S1.forEach((r, k) => {
    w0.wv.data[r * cols + prev * dK + k] = 1;
    w0.wo.data[(prev * dK + k) * d + S2[k]] = copy;
  });
  // the layer's other heads write nothing into S1 and S2
  for (let h = 0; h < heads; ++h)
    if (h !== prev) for (let k = 0; k < dK; ++k) for (const c of [...S1, ...S2]) w0.wo.data[(h * dK + k) * d + c] = 0;
  // the induction head
  for (const t of [w1.wq, w1.wk, w1.wv]) clearColumns(t, head);
  clearRows(w1.wo, head);
  S1.forEach((r, k) => {
    w1.wq.data[r * cols + head * dK + k] = match;
    w1.wk.data[S2[k] * cols + head * dK + k] = match;
    w1.wv.data[r * cols + head * dK + k] = 1;
    w1.wo.data[(head * dK + k) * d + r] = out;
  });
}

// A layer seeded Xavier-uniform from seed, W_Q and W_K × qkScale: the scores start small, so the
// softmax starts near uniform and its gradient reaches every key (X's norm is about 29 with
// positions × 4: seeded W_Q, W_K alone start every head saturated on one key); with
// previousHead, that head's W_Q, W_K from lookBack.
function seededLayer(attn, { d, heads, seed, qkScale, previousHead = null }) {
  const seeded = attn.multiHeadAttention({ dModel: d, heads, bias: false, seed });
  if (qkScale === 1 && !previousHead) return seeded;
  const w = seeded.weights;
  seeded.dispose();
  const scaled = (t) => ({ data: t.data.map((v) => v * qkScale), shape: t.shape });
  const weights = { wq: scaled(w.wq), wk: scaled(w.wk), wv: w.wv, wo: w.wo };
  if (previousHead) lookBack(weights, d, heads, previousHead);
  return attn.multiHeadAttention({ dModel: d, heads, bias: false, weights });
}

// A head's starting W_Q, W_K (d, heads·dK) set so that, on the sinusoidal positions alone, query i
// scores key j by a·Σ_f cos(ω_f·(i − j − 1)), largest at j = i − 1: the head starts looking one
// word back, which training keeps or changes like any other weight. Positions pair dimensions
// (2f, 2f+1) = (sin ω_f·i, cos ω_f·i), ω_f = 10000^(−2f/d) (embeddings.js); the head's dK
// columns take the ⌊dK/2⌋ fastest pairs, W_Q copying pair f and W_K rotating it one position
// forward, both × strength: a = strength²·positionScale²/√dK. The head's other W_Q, W_K entries
// are 0 (its W_V, W_O stay seeded).
//   lookBack({ wq, wk }, d, heads, { head, strength }) -> changes wq, wk in place
function lookBack({ wq, wk }, d, heads, { head, strength }) {
  const dK = d / heads,
    cols = heads * dK;
  for (let r = 0; r < d; ++r)
    for (let c = head * dK; c < (head + 1) * dK; ++c) wq.data[r * cols + c] = wk.data[r * cols + c] = 0;
  for (let f = 0; f < Math.floor(dK / 2); ++f) {
    const omega = Math.pow(10000, (-2 * f) / d);
    const [sin, cos] = [Math.sin(omega), Math.cos(omega)];
    const [a, b] = [head * dK + 2 * f, head * dK + 2 * f + 1]; // the head's columns for pair f
    const [x, y] = [2 * f * cols, (2 * f + 1) * cols]; // rows 2f (sin) and 2f+1 (cos)
    wq.data[x + a] = wq.data[y + b] = strength;
    // k_j = strength·(sin ω(j+1), cos ω(j+1)), with sin ω(j+1) = sin ωj·cos ω + cos ωj·sin ω and
    // cos ω(j+1) = cos ωj·cos ω − sin ωj·sin ω
    wk.data[x + a] = strength * cos;
    wk.data[y + a] = strength * sin;
    wk.data[x + b] = -strength * sin;
    wk.data[y + b] = strength * cos;
  }
}

// a (m,k) · b (k,n) through the package's matmul (transposeA: a given as (k,m); transposeB: b
// given as (n,k)) -> Float32Array (m,n)
function mm(attn, a, aShape, b, bShape, options) {
  return attn.matmul({ data: a, shape: aShape }, { data: b, shape: bShape }, options).data;
}

// lm.js's forwardHead with its products on the package's matmul:
//   f = h, or h + relu(h·w1 + b1)·w2 + b2 with a feed-forward block (a its hidden activations)
//   z = f·wout (T,d), logits = z·Eᵀ + bout (T,V)
export function headForward(attn, p, h, T, d, V) {
  const words = p.embed;
  const { a = null, f = h } = p.w1 ? feedForward(p, h, T, d, (x, w, t, k, m) => mm(attn, x, [t, k], w, [k, m])) : {};
  const z = mm(attn, f, [T, d], p.wout, [d, d]);
  const logits = mm(attn, z, [T, d], words, [V, d], { transposeB: true });
  for (let t = 0; t < T; ++t) {
    const o = t * V;
    for (let c = 0; c < V; ++c) logits[o + c] += p.bout[c];
  }
  return { a, f, z, logits };
}

// rows (T,m) -> Σ_t rows (m)
function sumRows(x, T, m) {
  const s = new Float32Array(m);
  for (let t = 0; t < T; ++t) for (let j = 0; j < m; ++j) s[j] += x[t * m + j];
  return s;
}

// Backward of headForward on the package's matmul, given dlogits (T,V):
//   dbout = Σ_t dlogits, dembed = dlogitsᵀ·z (V,d) (the output's part of E's gradient),
//   dz = dlogits·E (T,d), dwout = fᵀ·dz (d,d), df = dz·woutᵀ (T,d); without a feed-forward
//   block dh = df; with one: dw2 = aᵀ·df (m,d), db2 = Σ_t df, da = df·w2ᵀ where a > 0 (T,m),
//   dw1 = hᵀ·da (d,m), db1 = Σ_t da, dh = df + da·w1ᵀ
// With inputOnly: dh alone (the parameters held fixed: no dW, dwout, dw1, ...).
export function headBackward(attn, p, h, { a, f, z }, dlogits, T, d, V, { inputOnly = false } = {}) {
  const words = p.embed;
  const dz = mm(attn, dlogits, [T, V], words, [V, d]);
  const df = mm(attn, dz, [T, d], p.wout, [d, d], { transposeB: true });
  if (inputOnly) {
    if (!p.w1) return { dh: df };
    const m = p.b1.length;
    const da = mm(attn, df, [T, d], p.w2, [m, d], { transposeB: true });
    for (let i = 0; i < da.length; ++i) if (a[i] <= 0) da[i] = 0;
    const dh = mm(attn, da, [T, m], p.w1, [d, m], { transposeB: true });
    for (let i = 0; i < dh.length; ++i) dh[i] += df[i];
    return { dh };
  }
  const dbout = sumRows(dlogits, T, V);
  const g = {
    dbout,
    dembed: mm(attn, dlogits, [T, V], z, [T, d], { transposeA: true }),
    dwout: mm(attn, f, [T, d], dz, [T, d], { transposeA: true }),
  };
  if (!p.w1) return { ...g, dh: df };
  const m = p.b1.length;
  const da = mm(attn, df, [T, d], p.w2, [m, d], { transposeB: true });
  for (let i = 0; i < da.length; ++i) if (a[i] <= 0) da[i] = 0;
  const dh = mm(attn, da, [T, m], p.w1, [d, m], { transposeB: true });
  for (let i = 0; i < dh.length; ++i) dh[i] += df[i];
  return {
    ...g,
    dh,
    dw2: mm(attn, a, [T, m], df, [T, d], { transposeA: true }),
    db2: sumRows(df, T, d),
    dw1: mm(attn, h, [T, d], da, [T, m], { transposeA: true }),
    db1: sumRows(da, T, m),
  };
}

// timings (optional): an object trainStep adds each part's milliseconds to (scripts/train/
// profile_step.mjs): layersForward, headForward, crossEntropy, headBackward,
// layersBackward (with their Adam directions and step()), headAdam. -> lap(part)
function stopwatch(timings) {
  if (!timings) return () => {};
  let t = performance.now();
  return (part) => {
    const now = performance.now();
    timings[part] = (timings[part] ?? 0) + now - t;
    t = now;
  };
}

// One step on a batch: forward, loss, backward, Adam directions, step(). Returns the loss.
export function trainStep(model, batch, adam, lr, { attnLr = 1, learnHead = true, timings = null } = {}) {
  const lap = stopwatch(timings);
  const { layers, p } = model;
  const [B, n, d] = batch.x.shape;
  const T = B * n,
    V = p.bout.length;
  const { hs } = forwardLayers(layers, batch.x);
  const h = hs[hs.length - 1];
  lap('layersForward');
  const fwd = headForward(model.attn, p, h, T, d, V);
  lap('headForward');
  const { loss, dlogits } = crossEntropy(fwd.logits, batch.targets, T, V, fwd.logits); // in place
  lap('crossEntropy');
  const g = headBackward(model.attn, p, h, fwd, dlogits, T, d, V, { inputOnly: !learnHead });
  lap('headBackward');
  adam.tick();
  // h_{L+1} = h_L + attn_L(h_L): dh_L = dh_{L+1} + attn_L.backward(dh_{L+1}).dx, down to dX when
  // the embeddings learn; else layers below the lowest that learns (attnLr > 0) need no gradient
  const rate = (L) => (Array.isArray(attnLr) ? attnLr[L] : attnLr);
  let lowest = 0;
  if (!learnHead) while (lowest < layers.length - 1 && rate(lowest) === 0) ++lowest;
  let dh = g.dh;
  for (let L = layers.length - 1; L >= lowest; --L) {
    const grads = layers[L].backward({ data: dh, shape: [B, n, d] });
    const next = new Float32Array(dh.length);
    for (let i = 0; i < dh.length; ++i) next[i] = dh[i] + grads.dx.data[i];
    if (rate(L) > 0) {
      const dirs = {};
      for (const name of ['dwq', 'dwk', 'dwv', 'dwo']) {
        dirs[name] = { data: adam.direction(`${L}.${name}`, grads[name].data), shape: grads[name].shape };
      }
      layers[L].step(dirs, lr * rate(L));
    }
    dh = next;
  }
  // a layer below `lowest` keeps its forward's saved state until its next forward replaces it
  lap('layersBackward');
  if (!learnHead) return loss;
  // X = E[ids] + P: dE[c] += dX[t] for every input token t = c (the input's part of E's gradient)
  const dembed = g.dembed;
  for (let t = 0; t < T; ++t) {
    const o = batch.ids[t] * d;
    for (let k = 0; k < d; ++k) dembed[o + k] += dh[t * d + k];
  }
  for (const [name, grad] of [
    ['embed', dembed],
    ['wout', g.dwout],
    ['bout', g.dbout],
    ...(p.w1 ? ['w1', 'b1', 'w2', 'b2'].map((k) => [k, g[`d${k}`]]) : []),
  ]) {
    adam.update(name, grad, p[name], lr);
  }
  lap('headAdam');
  return loss;
}

// Next-token accuracy over targets y, given each prediction's classes best first (at least 10):
//   all positions: top1, top10 of the predictions, and baselineTop1/baselineTop10 of always
//     guessing `baseline` (the 10 most frequent tokens in training, punctuation too);
//   word positions (targets whose piece has a letter or a digit: isWord): wordTokens, wordTop1, wordTop10 of the same predictions (over all classes), and
//     baselineWordTop1/baselineWordTop10 of always guessing `wordBaseline` (the 10 most frequent
//     word tokens in training).
// The one definition for evaluate() and the count models of scripts/train/ceilings.mjs.
//   accuracyTally(vocab, baseline, wordBaseline) -> { add(best, y), result() -> figures above }
export function accuracyTally(vocab, baseline, wordBaseline) {
  const word = vocab.map((w) => isWord(w));
  const guess = new Set(baseline),
    wordGuess = new Set(wordBaseline);
  const sum = { top1: 0, top10: 0, base1: 0, base10: 0, count: 0 };
  const words = { top1: 0, top10: 0, base1: 0, base10: 0, count: 0 };
  return {
    add(best, y) {
      const hit1 = best[0] === y;
      let hit10 = false;
      for (let i = 0; i < 10; ++i) hit10 ||= best[i] === y;
      sum.top1 += hit1;
      sum.top10 += hit10;
      sum.base1 += baseline[0] === y;
      sum.base10 += guess.has(y);
      ++sum.count;
      if (word[y]) {
        words.top1 += hit1;
        words.top10 += hit10;
        words.base1 += wordBaseline[0] === y;
        words.base10 += wordGuess.has(y);
        ++words.count;
      }
    },
    result() {
      const c = sum.count,
        w = words.count;
      return {
        tokens: c,
        top1: sum.top1 / c,
        top10: sum.top10 / c,
        baselineTop1: sum.base1 / c,
        baselineTop10: sum.base10 / c,
        wordTokens: w,
        wordTop1: words.top1 / w,
        wordTop10: words.top10 / w,
        baselineWordTop1: words.base1 / w,
        baselineWordTop10: words.base10 / w,
      };
    },
  };
}

// Held-out figures over `windows` (batches of B): loss over every position, accuracyTally's
// figures of the model's top 10 classes, and heads: per-head stats (head_stats.js).
export function evaluate(model, vocab, windows, { n, B = 16, baseline, wordBaseline, positionScale }) {
  const { layers, p, attn } = model;
  const V = vocab.length,
    d = p.embed.length / V;
  const tally = accuracyTally(vocab, baseline, wordBaseline);
  const perHead = layers.map((l) => Array.from({ length: l.config.heads }, () => []));
  let loss = 0,
    count = 0;
  for (let s = 0; s < windows.length; s += B) {
    const batch = makeBatch(windows.slice(s, s + B), n, d, p.embed, positionScale);
    const [b] = batch.x.shape;
    const T = b * n;
    const { hs, traces } = forwardLayers(layers, batch.x, { trace: true });
    const h = hs[hs.length - 1];
    const { logits } = attn ? headForward(attn, p, h, T, d, V) : forwardHead(p, h, T, d, V);
    loss += crossEntropy(logits, batch.targets, T, V).loss * T;
    count += T;
    for (let t = 0; t < T; ++t)
      tally.add(
        topK(logits, t * V, V, 10).map((e) => e.c),
        batch.targets[t],
      );
    traces.forEach((heads, L) =>
      heads.forEach((hd, h) => {
        for (let k = 0; k < b; ++k) perHead[L][h].push(hd.weights.data.subarray(k * n * n, (k + 1) * n * n));
      }),
    );
  }
  const { tokens, ...figures } = tally.result();
  return {
    tokens,
    loss: loss / count,
    ...figures,
    heads: perHead.flatMap((hl, L) => hl.map((list, h) => ({ layer: L, head: h, ...headStats(list, n) }))),
  };
}

// The induction test of TransformerLens on `sequences` sequences of n = 2·span tokens: span random
// word tokens (randomWords from seededRandom(seed), a seed training never uses), then the same
// tokens again. -> { span, sequences, seed, heads: [{ layer, head, induction }] (head_stats.js'
// inductionScore, averaged), lossFirst, lossSecond }: the mean loss on predicting each copy's
// tokens after its first (tokens 1..span−1 of the first copy, span+1..2·span−1 of the second),
// so both count the same span−1 predictions per sequence.
export function inductionTest(model, vocab, { span, sequences, seed, positionScale, B = 16 }) {
  const { layers, p, attn } = model;
  const n = 2 * span,
    V = vocab.length,
    d = p.embed.length / V;
  const draw = randomWords(vocab, seededRandom(seed));
  const scores = layers.map((l) => new Float64Array(l.config.heads));
  let first = 0,
    second = 0;
  for (let s = 0; s < sequences; s += B) {
    const windows = Array.from({ length: Math.min(B, sequences - s) }, () => {
      const w = draw(span);
      return { ids: Int32Array.from({ length: n + 1 }, (_, i) => w[i % span]) };
    });
    const batch = makeBatch(windows, n, d, p.embed, positionScale);
    const b = windows.length;
    const { hs, traces } = forwardLayers(layers, batch.x, { trace: true });
    const h = hs[hs.length - 1];
    const { logits } = attn ? headForward(attn, p, h, b * n, d, V) : forwardHead(p, h, b * n, d, V);
    for (let k = 0; k < b; ++k) {
      for (let i = 0; i < n - 1; ++i) {
        if (i === span - 1) continue; // predicts the second copy's first token: no earlier cue
        const o = (k * n + i) * V;
        let max = -Infinity;
        for (let c = 0; c < V; ++c) max = Math.max(max, logits[o + c]);
        let sum = 0;
        for (let c = 0; c < V; ++c) sum += Math.exp(logits[o + c] - max);
        const loss = Math.log(sum) + max - logits[o + batch.targets[k * n + i]];
        if (i < span) first += loss;
        else second += loss;
      }
      traces.forEach((heads, L) =>
        heads.forEach((hd, hh) => {
          scores[L][hh] += inductionScore(hd.weights.data.subarray(k * n * n, (k + 1) * n * n), n, span);
        }),
      );
    }
  }
  const count = sequences * (span - 1);
  return {
    span,
    sequences,
    seed,
    heads: scores.flatMap((sl, L) => Array.from(sl, (v, h) => ({ layer: L, head: h, induction: v / sequences }))),
    lossFirst: first / count,
    lossSecond: second / count,
  };
}

// Consecutive windows of n+1 tokens from each document's ids (the last partial one dropped),
// then `limit` of them evenly spaced over all documents.
export function windowsOf(idDocs, n, limit = Infinity) {
  const all = [];
  for (let k = 0; k < idDocs.length; ++k) {
    for (let s = 0; s + n + 1 <= idDocs[k].length; s += n + 1) all.push([k, s]);
  }
  const picked =
    all.length <= limit ? all : Array.from({ length: limit }, (_, i) => all[Math.floor((i * all.length) / limit)]);
  return picked.map(([k, s]) => ({ ids: idDocs[k].subarray(s, s + n + 1) }));
}
