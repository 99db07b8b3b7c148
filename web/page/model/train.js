// The model of web/page/model/lm.js made trainable: its parameters, one training step through the
// package's forward/backward/step, and the held-out evaluation (loss, top-k, per-head stats).
// One implementation for `npm run train-model` (scripts/train_model.mjs, Node) and the page's
// live training (train_worker.js, a browser Worker): plain ES module, no Node or DOM imports.
//
// Parameters: layers [attn1, attn2] (the package's, 4 heads, no biases, so that
// the page's steps show Q = X·W_Q as they are) and p = { wout (d,d),
// bout (V), unk (d), with outputDelta wdelta (V,d), with ffn m > 0 layer 2's feed-forward block
// w1 (d,m), b1 (m), w2 (m,d), b2 (d) } in plain JS arrays. Batches: B windows
// of n+1 class ids and n input words. The output layer's products (T·V·d each, most of a step's
// work) run on the package's matmul: the model keeps `attn` for that.
//
//   createModel(attn, { d, heads, layers, seed, logPrior, outputDelta, ffn, qkScale, previousHead,
//     tensors, fresh }) -> { attn, p, layers }
//   trainStep(model, emb, vocab, batch, adam, lr, { attnLr, learnHead, timings }) -> loss; attnLr
//     scales the attention layers' learning rate (their step() gets lr·attnLr; an array: one
//     factor per layer; a layer below the lowest with a factor above 0 is not differentiated);
//     learnHead false: the output layer and the feed-forward block stay as they are (only the
//     gradient through them is computed); timings: ms by part, below
//   headForward(attn, p, words, h, T, d, V), headBackward(...): the output layer on the package's
//     matmul (exported for its tests)
//   isWord(w) -> true for a word (it has a letter or a digit), false for punctuation and "<unk>"
//   evaluate(...), accuracyTally(...), makeBatch(...), vectorCache(emb), windowsOf(...): below
import { seededRandom, xavierUniform } from '../../lib/index.js';
import { sinusoidalPositions } from '../embeddings.js';
import { headStats, inductionScore } from './head_stats.js';
import { layerWeights } from './weights.js';
import { crossEntropy, feedForward, forwardHead, forwardLayers, outputWords, topK } from './lm.js';

export const isWord = (w) => w !== '<unk>' && /[\p{L}\p{N}]/u.test(w);

// Word vectors by norm, as the page looks them up (unknown words: the hashed stand-in).
export function vectorCache(emb) {
  const cache = new Map();
  return (w) => {
    let v = cache.get(w);
    if (!v) cache.set(w, (v = emb.lookup(w).vector));
    return v;
  };
}

// doc (norms) -> Int32Array of class ids (unknown words -> the last class, "<unk>")
export function toIds(doc, vocab) {
  const id = new Map(vocab.map((w, c) => [w, c]));
  const unk = vocab.length - 1;
  return Int32Array.from(doc, (w) => id.get(w) ?? unk);
}

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
// it, both from next() (uniform in [0,1)). -> () => { words (n+1 norms), ids (n+1) }
export function windowSampler(docs, idDocs, n, next) {
  const starts = [];
  let acc = 0;
  for (const ids of idDocs) starts.push((acc += Math.max(0, ids.length - n - 1)));
  if (acc === 0) throw new RangeError(`training text: no document has more than ${n + 1} tokens`);
  return () => {
    const r = Math.floor(next() * acc);
    let k = 0;
    while (starts[k] <= r) ++k;
    const s = r - (k ? starts[k - 1] : 0);
    return { words: docs[k].slice(s, s + n + 1), ids: idDocs[k].subarray(s, s + n + 1) };
  };
}

// Random words of the vocabulary (classes that are words: isWord, not "<unk>"), from next().
//   randomWords(vocab, next) -> (count) -> Int32Array of class ids
export function randomWords(vocab, next) {
  const words = [];
  vocab.forEach((w, c) => c < vocab.length - 1 && isWord(w) && words.push(c));
  return (count) => Int32Array.from({ length: count }, () => words[Math.floor(next() * words.length)]);
}

// Windows with repeated spans, so that an induction head forms (Olsson et al. 2022): with
// probability share(step) a window from sample() gets a span of L random vocabulary words, L
// uniform in [minSpan, maxSpan], at a start uniform in [0, n+1−2L], followed right away by the
// same L words; the rest of the window stays the text's. Random words, at varying starts and
// lengths: only copying from the earlier occurrence predicts the second copy (neither the words'
// usual neighbours nor a fixed offset do). With probability `text`, the span is instead the
// window's own L tokens at that start (text repeated: its common words, "the", "of", ",", get
// copied too, which random vocabulary words seldom are).
//   repeatSampler(sample, vocab, n, next, { share, minSpan, maxSpan, from, hold, over, text }) ->
//     (step) => { words, ids }: share(step) is `from` up to step `hold`, then goes linearly to
//     `share` at step `over`, then stays (from = share: always share); null, or share 0 with no
//     `from`: sample's windows
export function repeatSampler(sample, vocab, n, next, repeat) {
  const { share = 0, minSpan, maxSpan, from = share, hold = 0, over = 0, text = 0 } = repeat ?? {};
  if (!(share > 0) && !(from > 0)) return () => sample();
  const draw = randomWords(vocab, next);
  const shareAt = (step) =>
    step <= hold ? from : step < over ? from + ((share - from) * (step - hold)) / (over - hold) : share;
  return (step) => {
    const w = sample();
    if (next() >= shareAt(step)) return w;
    const L = minSpan + Math.floor(next() * (maxSpan - minSpan + 1));
    const s = Math.floor(next() * (n + 2 - 2 * L));
    const own = text > 0 && next() < text;
    const span = own ? w.ids.slice(s, s + L) : draw(L);
    const spanWords = own ? w.words.slice(s, s + L) : Array.from(span, (c) => vocab[c]);
    const ids = Int32Array.from(w.ids);
    const words = w.words.slice();
    for (let k = 0; k < 2 * L; ++k) {
      ids[s + k] = span[k % L];
      words[s + k] = spanWords[k % L];
    }
    return { words, ids };
  };
}

// windows [{ words (n+1 norms), ids (n+1) }] -> { x (B,n,d) tensor, targets (B·n) };
// X = E + P with P = positionScale × the sinusoidal positions (as the page's input.js builds it)
const positions = new Map(); // `${n},${d},${positionScale}` -> P (n,d), made once
export function makeBatch(windows, n, d, vec, positionScale) {
  const B = windows.length;
  const key = `${n},${d},${positionScale}`;
  let P = positions.get(key);
  if (!P) positions.set(key, (P = sinusoidalPositions(n, d).map((v) => v * positionScale)));
  const x = new Float32Array(B * n * d);
  const targets = new Int32Array(B * n);
  windows.forEach(({ words, ids }, b) => {
    for (let i = 0; i < n; ++i) {
      const v = vec(words[i]);
      const o = (b * n + i) * d;
      for (let k = 0; k < d; ++k) x[o + k] = v[k] + P[i * d + k];
      targets[b * n + i] = ids[i + 1];
    }
  });
  return { x: { data: x, shape: [B, n, d] }, targets };
}

// -> { attn, p, layers }: layers seeded (seed + L, Xavier-uniform; W_Q and W_K × qkScale; with
// previousHead { layer, head, strength }, that head's W_Q, W_K from lookBack), wout 0.1·I, bout = logPrior,
// wdelta 0 (with outputDelta), w1 Xavier-uniform from seed + 100 and b1, w2, b2 0 (with ffn m,
// so the block starts as the identity); or, with tensors (weights.js' unpackTensors of a trained
// model), copies of those weights (wdelta and the block where the model has them), but for the
// attention layers in `fresh` (0-based), seeded as above without previousHead.
export function createModel(
  attn,
  {
    d,
    heads,
    layers,
    seed,
    logPrior,
    outputDelta = false,
    ffn = 0,
    qkScale = 1,
    previousHead = null,
    tensors,
    fresh = [],
  },
) {
  if (tensors) {
    const p = { wout: tensors.wout.data.slice(), bout: tensors.bout.data.slice(), unk: tensors.unk.data.slice() };
    if (tensors.wdelta) p.wdelta = tensors.wdelta.data.slice();
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
  const p = {
    wout: new Float32Array(d * d),
    bout: Float32Array.from(logPrior), // start from the unigram distribution
    unk: new Float32Array(d),
  };
  // learned corrections to the output word vectors, starting at 0 (W = word vectors + wdelta)
  if (outputDelta) p.wdelta = new Float32Array(V * d);
  if (ffn > 0) {
    p.w1 = xavierUniform(d, ffn, seededRandom(seed + 100));
    p.b1 = new Float32Array(ffn);
    p.w2 = new Float32Array(ffn * d);
    p.b2 = new Float32Array(d);
  }
  for (let i = 0; i < d; ++i) p.wout[i * d + i] = 0.1;
  return {
    attn,
    p,
    layers: Array.from({ length: layers }, (_, L) =>
      seededLayer(attn, { d, heads, seed: seed + L, qkScale, previousHead: previousHead?.layer === L && previousHead }),
    ),
  };
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
//   z = f·wout (T,d), logits = z·Wᵀ + bout (T,V)
export function headForward(attn, p, words, h, T, d, V) {
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
//   dbout = Σ_t dlogits, dW = dlogitsᵀ·z (V,d) (dunk its last row; dwdelta all of it),
//   dz = dlogits·W (T,d), dwout = fᵀ·dz (d,d), df = dz·woutᵀ (T,d); without a feed-forward
//   block dh = df; with one: dw2 = aᵀ·df (m,d), db2 = Σ_t df, da = df·w2ᵀ where a > 0 (T,m),
//   dw1 = hᵀ·da (d,m), db1 = Σ_t da, dh = df + da·w1ᵀ
// With inputOnly: dh alone (the parameters held fixed: no dW, dwout, dw1, ...).
export function headBackward(attn, p, words, h, { a, f, z }, dlogits, T, d, V, { inputOnly = false } = {}) {
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
  const dW = mm(attn, dlogits, [T, V], z, [T, d], { transposeA: true });
  const g = {
    dbout,
    dunk: dW.slice((V - 1) * d),
    dwdelta: dW,
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

// lm.js' outputWords(emb, vocab, p.unk, p.wdelta) for a step, the same floats: the vocabulary's
// vectors looked up once per model, then each step the unk row and the corrections wdelta into
// one buffer per model (a step's products copy it into wasm; nothing holds it past the step).
const scratch = new WeakMap(); // model -> { vectors (V,d) with a zero unk row, words (V,d) }
function stepWords(model, emb, vocab) {
  const { p } = model;
  let s = scratch.get(model);
  if (!s) {
    const vectors = outputWords(emb, vocab, new Float32Array(emb.dim));
    scratch.set(model, (s = { vectors, words: new Float32Array(vectors.length) }));
  }
  const { vectors, words } = s;
  const u = vectors.length - emb.dim;
  words.set(vectors.subarray(0, u));
  words.set(p.unk, u);
  const delta = p.wdelta;
  if (delta) for (let i = 0; i < words.length; ++i) words[i] += delta[i];
  return words;
}

// timings (optional): an object trainStep adds each part's milliseconds to (scripts/train/
// profile_step.mjs): words, layersForward, headForward, crossEntropy, headBackward,
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
export function trainStep(model, emb, vocab, batch, adam, lr, { attnLr = 1, learnHead = true, timings = null } = {}) {
  const lap = stopwatch(timings);
  const { layers, p } = model;
  const [B, n, d] = batch.x.shape;
  const T = B * n,
    V = vocab.length;
  const words = stepWords(model, emb, vocab);
  lap('words');
  const { hs } = forwardLayers(layers, batch.x);
  const h = hs[hs.length - 1];
  lap('layersForward');
  const fwd = headForward(model.attn, p, words, h, T, d, V);
  lap('headForward');
  const { loss, dlogits } = crossEntropy(fwd.logits, batch.targets, T, V, fwd.logits); // in place
  lap('crossEntropy');
  const g = headBackward(model.attn, p, words, h, fwd, dlogits, T, d, V, { inputOnly: !learnHead });
  lap('headBackward');
  adam.tick();
  // h_{L+1} = h_L + attn_L(h_L): dh_L = dh_{L+1} + attn_L.backward(dh_{L+1}).dx; layers below
  // the lowest that learns (attnLr > 0) need no gradient
  const rate = (L) => (Array.isArray(attnLr) ? attnLr[L] : attnLr);
  let lowest = 0;
  while (lowest < layers.length - 1 && rate(lowest) === 0) ++lowest;
  let dh = g.dh;
  for (let L = layers.length - 1; L >= lowest; --L) {
    const grads = layers[L].backward({ data: dh, shape: [B, n, d] });
    const next = new Float32Array(dh.length);
    for (let i = 0; i < dh.length; ++i) next[i] = dh[i] + grads.dx.data[i];
    const dirs = {};
    for (const name of ['dwq', 'dwk', 'dwv', 'dwo']) {
      dirs[name] = { data: adam.direction(`${L}.${name}`, grads[name].data), shape: grads[name].shape };
    }
    layers[L].step(dirs, lr * rate(L));
    dh = next;
  }
  // a layer below `lowest` keeps its forward's saved state until its next forward replaces it
  lap('layersBackward');
  if (!learnHead) return loss;
  for (const [name, grad] of [
    ['wout', g.dwout],
    ['bout', g.dbout],
    p.wdelta ? ['wdelta', g.dwdelta] : ['unk', g.dunk],
    ...(p.w1 ? ['w1', 'b1', 'w2', 'b2'].map((k) => [k, g[`d${k}`]]) : []),
  ]) {
    adam.update(name, grad, p[name], lr);
  }
  lap('headAdam');
  return loss;
}

// Next-token accuracy over targets y, given each prediction's classes best first (at least 10):
//   all positions: top1, top10 of the predictions, and baselineTop1/baselineTop10 of always
//     guessing `baseline` (the 10 most frequent classes in training, "<unk>" and punctuation too);
//   word positions (targets that are words of the vocabulary: isWord, so not punctuation, not
//     "<unk>"): wordTokens, wordTop1, wordTop10 of the same predictions (over all classes), and
//     baselineWordTop1/baselineWordTop10 of always guessing `wordBaseline` (the 10 most frequent
//     words in training).
// The one definition for evaluate() and the count models of scripts/train/ceilings.mjs.
//   accuracyTally(vocab, baseline, wordBaseline) -> { add(best, y), result() -> figures above }
export function accuracyTally(vocab, baseline, wordBaseline) {
  const V = vocab.length;
  const word = vocab.map((w, c) => c < V - 1 && isWord(w));
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
export function evaluate(model, emb, vocab, windows, { n, B = 16, baseline, wordBaseline, positionScale }) {
  const { layers, p, attn } = model;
  const d = emb.dim,
    V = vocab.length;
  const words = outputWords(emb, vocab, p.unk, p.wdelta);
  const vec = vectorCache(emb);
  const tally = accuracyTally(vocab, baseline, wordBaseline);
  const perHead = layers.map((l) => Array.from({ length: l.config.heads }, () => []));
  let loss = 0,
    count = 0;
  for (let s = 0; s < windows.length; s += B) {
    const batch = makeBatch(windows.slice(s, s + B), n, d, vec, positionScale);
    const [b] = batch.x.shape;
    const T = b * n;
    const { hs, traces } = forwardLayers(layers, batch.x, { trace: true });
    const h = hs[hs.length - 1];
    const { logits } = attn ? headForward(attn, p, words, h, T, d, V) : forwardHead(p, words, h, T, d, V);
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
// vocabulary words (randomWords from seededRandom(seed), a seed training never uses), then the same
// words again. -> { span, sequences, seed, heads: [{ layer, head, induction }] (head_stats.js'
// inductionScore, averaged), lossFirst, lossSecond }: the mean loss on predicting each copy's
// tokens after its first (tokens 1..span−1 of the first copy, span+1..2·span−1 of the second),
// so both count the same span−1 predictions per sequence.
export function inductionTest(model, emb, vocab, { span, sequences, seed, positionScale, B = 16 }) {
  const { layers, p, attn } = model;
  const n = 2 * span,
    d = emb.dim,
    V = vocab.length;
  const words = outputWords(emb, vocab, p.unk, p.wdelta);
  const vec = vectorCache(emb);
  const draw = randomWords(vocab, seededRandom(seed));
  const scores = layers.map((l) => new Float64Array(l.config.heads));
  let first = 0,
    second = 0;
  for (let s = 0; s < sequences; s += B) {
    const windows = Array.from({ length: Math.min(B, sequences - s) }, () => {
      const w = draw(span);
      const ids = Int32Array.from({ length: n + 1 }, (_, i) => w[i % span]);
      return { ids, words: Array.from(ids, (c) => vocab[c]) };
    });
    const batch = makeBatch(windows, n, d, vec, positionScale);
    const b = windows.length;
    const { hs, traces } = forwardLayers(layers, batch.x, { trace: true });
    const h = hs[hs.length - 1];
    const { logits } = attn ? headForward(attn, p, words, h, b * n, d, V) : forwardHead(p, words, h, b * n, d, V);
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

// Consecutive windows of n+1 tokens from each document (the last partial one dropped), then
// `limit` of them evenly spaced over all documents.
export function windowsOf(docs, idDocs, n, limit = Infinity) {
  const all = [];
  for (let k = 0; k < docs.length; ++k) {
    for (let s = 0; s + n + 1 <= docs[k].length; s += n + 1) all.push([k, s]);
  }
  const picked =
    all.length <= limit ? all : Array.from({ length: limit }, (_, i) => all[Math.floor((i * all.length) / limit)]);
  return picked.map(([k, s]) => ({ words: docs[k].slice(s, s + n + 1), ids: idDocs[k].subarray(s, s + n + 1) }));
}
