// A training run of the page's model (train.js, the one `npm run train-model` uses) on a text,
// one step at a time, for the page's live training (train_worker.js) and its tests.
//
//   manifestOptions(manifest, tensors) -> the shipped model's settings below, from its manifest
//   createTrainer(attn, { vocab, docs, d, tensors, seed, n, batch, positionScale, heads, layers,
//                         warmup, embedScale, ffn, qkScale, previousHead, attnLr, repeat, fresh,
//                         learnHead })
//     vocab   the tokens' pieces (the tokenizer's, weights.js);  d  d_model
//     docs    [Int32Array] the training text's documents as token ids (corpus_text.js)
//     tensors null: start from seeded random layers and embeddings and the text's unigram
//             distribution, as train_model.mjs does; else the trained model's tensors
//             (weights.js), copied
//     warmup  steps over which the learning rate rises linearly to the one asked for
//     embedScale, ffn, qkScale, previousHead, attnLr, repeat  as train_model.mjs (the starting
//             embeddings' size; layer 2's feed-forward width; the starting W_Q, W_K scale; the
//             head that starts looking one token back, or null; the attention layers'
//             learning-rate factor; the repeated spans mixed into the windows, or null)
//     fresh   with tensors: the layers (0-based) that start from seeded random weights instead
//     learnHead false: the output layer and the feed-forward block keep their starting weights
//   -> { step(lr, timings) -> loss of the batch before the step, heads(ids) -> { n, weights },
//        induction(ids) -> [score] (layers·heads), steps, tokens, dispose() }
//   timings (optional): ms by part, as train.js' trainStep adds them, plus batch (makeBatch)
//   heads(ids): the sentence's X (n,d) = E[ids] + P as the trainer builds it, then both layers
//     with trace: weights (layers·heads·n·n) Float32Array, block [L][h] the (n,n) causal weights
//   induction(ids): each head's induction score (head_stats.js) on ids, a text twice
//     (repeatedSpan(ids) not null: ids are S S), in heads' order
//   copyProbability(ids, knockOut) -> on ids, a text S S of L tokens a copy: the mean over the
//     second copy's tokens i = L..2L−2 of the probability the model gives the token after i (the
//     copy of the one after its earlier occurrence), with the heads in knockOut
//     ([{ layer, head }], 0-based) zeroed (knockout.js)
//   scores(ids) -> { prefix, copying }, each (layers·heads) in heads' order, on ids = S S (L
//     tokens a copy; the page gives random word tokens), the two halves of an induction head
//     (Olsson et al. 2022) measured apart: prefix, prefix matching: the head's mean weight from
//     each token i of the second copy on t = i − L + 1, the token after i's earlier occurrence
//     (the induction score on these tokens); copying: the share of those i at which the head's
//     output for t alone (its value row v[t] · W_O,k, read straight through W_out, past the
//     feed-forward block) scores t's own token highest of the text's tokens
//
// INDUCTION_RUN: the live training's default, an induction head forming in a few hundred steps
// (about a minute in a browser Worker on a loaded 2-core machine; page_train.test.mjs): the
// trained model's embeddings, layer 1 (its previous-token head) and output, layer 2 from seeded
// random weights, and only layer 2 learning, on windows that all repeat a span of random words.
import { seededRandom } from '../../lib/index.js';
import { createAdam } from './adam.js';
import { inductionScore, repeatedSpan } from './head_stats.js';
import { ablatedWeights } from './knockout.js';
import { forwardHead, forwardLayers } from './lm.js';
import { classCounts, createModel, makeBatch, repeatSampler, trainStep, windowSampler } from './train.js';

// The trained model's settings as createTrainer takes them, from its manifest (and tensors, for
// the feed-forward width): a run that trains the same model the same way as train_model.mjs.
export function manifestOptions(manifest, tensors) {
  const m = manifest.model,
    t = manifest.training;
  return {
    n: m.n,
    heads: m.heads,
    layers: m.layers,
    positionScale: m.positionScale,
    d: m.dModel,
    embedScale: t.embedScale,
    ffn: tensors.b1?.data.length ?? 0,
    qkScale: t.qkScale ?? 1,
    previousHead: t.previousHead ?? null,
    inductionHead: t.inductionHead ?? null,
    attnLr: t.attnLr ?? 1,
    repeat: t.repeatedSpans ?? null,
  };
}

export const INDUCTION_RUN = {
  fresh: [1], // layer 2 starts from random weights: its induction head forms live
  n: 24, // windows of 24 tokens (the shipped model's 64 cost more a step; the spans fit in 24)
  attnLr: [0, 3], // layer 1 (the previous-word head an induction head reads) stays as trained
  // layer 2's seeded W_Q, W_K at full size (the shipped run starts them at a tenth): with the
  // default learning rate (0.003) a layer-2 head's score on the page's sentence twice passed 0.4
  // after 374 training steps (seed 1) and 398 (seed 2) in Node; at a tenth, after 516; at twice,
  // none within 600, nor with a larger layer-2 learning rate (attnLr 10)
  qkScale: 1,
  learnHead: false, // the output layer and the feed-forward block stay as trained
  // every window repeats a span of 3 to 12 random word tokens: copying is all there is to
  // learn beyond what the trained parts already predict
  repeat: { share: 1, minSpan: 3, maxSpan: 12, text: 0 },
};

export function createTrainer(
  attn,
  {
    vocab,
    docs,
    d = 100,
    tensors = null,
    seed = 1,
    n = 24,
    batch = 8,
    positionScale = 1,
    heads = 4,
    layers = 2,
    warmup = 20,
    embedScale = 0.6,
    ffn = 0,
    qkScale = 1,
    previousHead = null,
    inductionHead = null,
    attnLr = 1,
    repeat = null,
    fresh = [],
    learnHead = true,
  },
) {
  const V = vocab.length;
  const { counts, total: tokens } = classCounts(docs, V);
  const next = seededRandom(seed);
  // RangeError when the text is too short
  const sample = repeatSampler(windowSampler(docs, n, next), vocab, n, next, repeat);
  const model = createModel(attn, {
    d,
    heads,
    layers,
    seed,
    logPrior: Array.from(counts, (c) => Math.log((c + 1) / (tokens + V))),
    embedScale,
    ffn,
    qkScale,
    previousHead,
    inductionHead,
    tensors,
    fresh,
  });
  const adam = createAdam();
  let steps = 0;
  // ids (m) -> X (1,m,d) = E[ids] + P as a training batch builds it
  const input = (ids) => makeBatch([{ ids: [...ids, 0] }], ids.length, d, model.p.embed, positionScale).x;
  function headWeights(ids) {
    const m = ids.length;
    const x = input(ids);
    const { traces } = forwardLayers(model.layers, x, { trace: true });
    const weights = new Float32Array(layers * heads * m * m);
    traces.forEach((hs, L) => hs.forEach((hd, h) => weights.set(hd.weights.data, (L * heads + h) * m * m)));
    return { n: m, weights };
  }
  return {
    get steps() {
      return steps;
    },
    tokens,
    step(lr, timings = null) {
      const t = timings ? performance.now() : 0;
      const b = makeBatch(
        Array.from({ length: batch }, () => sample(steps + 1)),
        n,
        d,
        model.p.embed,
        positionScale,
      );
      if (timings) timings.batch = (timings.batch ?? 0) + performance.now() - t;
      // linear warm-up, as train_model.mjs: Adam's first directions are full size for every weight
      const loss = trainStep(model, b, adam, lr * Math.min(1, (steps + 1) / warmup), {
        attnLr,
        learnHead,
        timings,
      });
      ++steps;
      return loss;
    },
    heads: headWeights,
    copyProbability(ids, knockOut = []) {
      const L = repeatedSpan(ids)?.span; // ids: S S, the copies' tokens the same
      if (!L) throw new RangeError('copyProbability: the text must be some tokens twice');
      const m = ids.length;
      const x = input(ids);
      // the layers with the knocked-out heads' W_O rows zeroed (knockout.js), made for this call
      const knocked = model.layers.map((layer, Lr) => {
        const out = knockOut.filter((k) => k.layer === Lr).map((k) => k.head);
        return out.length
          ? attn.multiHeadAttention({
              dModel: d,
              heads,
              bias: false,
              weights: ablatedWeights(layer.weights, heads, out).w,
            })
          : null;
      });
      try {
        const { hs } = forwardLayers(
          knocked.map((k, Lr) => k ?? model.layers[Lr]),
          x,
        );
        const { logits } = forwardHead(model.p, hs.at(-1), m, d, V);
        let sum = 0;
        for (let i = L; i < 2 * L - 1; ++i) {
          const o = i * V;
          let max = -Infinity;
          for (let c = 0; c < V; ++c) max = Math.max(max, logits[o + c]);
          let z = 0;
          for (let c = 0; c < V; ++c) z += Math.exp(logits[o + c] - max);
          sum += Math.exp(logits[o + ids[i + 1]] - max) / z;
        }
        return sum / (L - 1);
      } finally {
        for (const k of knocked) k?.dispose();
      }
    },
    scores(ids) {
      const L = repeatedSpan(ids)?.span; // ids: S S, the copies' tokens the same
      if (!L) throw new RangeError('scores: the text must be some tokens twice');
      const m = ids.length;
      const { traces } = forwardLayers(model.layers, input(ids), { trace: true });
      // u_c = W_out · E[c] (d) for each token of the text (the output scores the embeddings E)
      const words = model.p.embed;
      const classes = [...new Set(ids)];
      const u = classes.map((c) => {
        const out = new Float64Array(d);
        for (let i = 0; i < d; ++i) {
          let sum = 0;
          for (let j = 0; j < d; ++j) sum += model.p.wout[i * d + j] * words[c * d + j];
          out[i] = sum;
        }
        return out;
      });
      const prefix = [],
        copying = [];
      traces.forEach((hs, Lr) => {
        const wo = model.layers[Lr].weights.wo.data;
        hs.forEach((hd, k) => {
          prefix.push(inductionScore(hd.weights.data, m, L));
          const dV = hd.v.shape.at(-1);
          let hits = 0;
          for (let i = L; i < 2 * L; ++i) {
            const t = i - L + 1;
            // o (d) = v[t] · W_O[k·d_v : (k+1)·d_v, :]
            const o = new Float64Array(d);
            for (let r = 0; r < dV; ++r) {
              const z = hd.v.data[t * dV + r];
              for (let j = 0; j < d; ++j) o[j] += z * wo[(k * dV + r) * d + j];
            }
            let best = 0,
              bestScore = -Infinity;
            u.forEach((uc, q) => {
              let sc = 0;
              for (let j = 0; j < d; ++j) sc += o[j] * uc[j];
              if (sc > bestScore) [best, bestScore] = [q, sc];
            });
            if (classes[best] === ids[t]) ++hits;
          }
          copying.push(hits / L);
        });
      });
      return { prefix, copying };
    },
    induction(ids) {
      const L = repeatedSpan(ids)?.span; // ids: S S, the copies' tokens the same
      if (!L) throw new RangeError('induction: the text must be some tokens twice');
      const { n: m, weights } = headWeights(ids);
      return Array.from({ length: layers * heads }, (_, k) =>
        inductionScore(weights.subarray(k * m * m, (k + 1) * m * m), m, L),
      );
    },
    dispose() {
      for (const l of model.layers) l.dispose();
    },
  };
}
