// A training run of the page's model (train.js, the one `npm run train-model` uses) on a text,
// one step at a time, for the page's live training (train_worker.js) and its tests.
//
//   createTrainer(attn, { emb, vocab, docs, tensors, seed, n, batch, positionScale, heads, layers,
//                         warmup, outputDelta, attnLr })
//     emb     the page's word vectors (embeddings.js);  vocab  the output classes (vocab.txt)
//     docs    [[norm]] the training text's documents, tokenized (corpus_text.js)
//     tensors null: start from seeded random layers and the text's unigram distribution, as
//             train_model.mjs does; else the trained model's tensors (weights.js), copied
//     warmup  steps over which the learning rate rises linearly to the one asked for
//     outputDelta, attnLr  as train_model.mjs (learned output-vector corrections; the attention
//             layers' learning-rate factor)
//   -> { step(lr, timings) -> loss of the batch before the step, heads(norms) -> { n, weights },
//        steps, tokens, dispose() }
//   timings (optional): ms by part, as train.js' trainStep adds them, plus batch (makeBatch)
//   heads(norms): the sentence's X (n,d) = E + P as the trainer builds it, then both layers with
//     trace: weights (layers·heads·n·n) Float32Array, block [L][h] the (n,n) causal weights
import { random } from '../random.js';
import { createAdam } from './adam.js';
import { forwardLayers } from './lm.js';
import { classCounts, createModel, makeBatch, toIds, trainStep, vectorCache, windowSampler } from './train.js';

export function createTrainer(
  attn,
  {
    emb,
    vocab,
    docs,
    tensors = null,
    seed = 1,
    n = 24,
    batch = 8,
    positionScale = 1,
    heads = 4,
    layers = 2,
    warmup = 20,
    outputDelta = false,
    attnLr = 1,
  },
) {
  const V = vocab.length,
    d = emb.dim;
  const idDocs = docs.map((doc) => toIds(doc, vocab));
  const { counts, total: tokens } = classCounts(idDocs, V);
  const sample = windowSampler(docs, idDocs, n, random(seed)); // RangeError when the text is too short
  const model = createModel(attn, {
    d,
    heads,
    layers,
    seed,
    logPrior: Array.from(counts, (c) => Math.log((c + 1) / (tokens + V))),
    outputDelta,
    tensors,
  });
  const adam = createAdam();
  const vec = vectorCache(emb);
  let steps = 0;
  return {
    get steps() {
      return steps;
    },
    tokens,
    step(lr, timings = null) {
      const t = timings ? performance.now() : 0;
      const b = makeBatch(Array.from({ length: batch }, sample), n, d, vec, positionScale);
      if (timings) timings.batch = (timings.batch ?? 0) + performance.now() - t;
      // linear warm-up, as train_model.mjs: Adam's first directions are full size for every weight
      const loss = trainStep(model, emb, vocab, b, adam, lr * Math.min(1, (steps + 1) / warmup), { attnLr, timings });
      ++steps;
      return loss;
    },
    heads(norms) {
      const m = norms.length;
      const { x } = makeBatch([{ words: [...norms, ''], ids: new Int32Array(m + 1) }], m, d, vec, positionScale);
      const { traces } = forwardLayers(model.layers, x, { trace: true });
      const weights = new Float32Array(layers * heads * m * m);
      traces.forEach((hs, L) => hs.forEach((hd, h) => weights.set(hd.weights.data, (L * heads + h) * m * m)));
      return { n: m, weights };
    },
    dispose() {
      for (const l of model.layers) l.dispose();
    },
  };
}
