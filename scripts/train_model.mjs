// npm run train-model: trains the page's tokenizer (byte-level BPE, scripts/train/bpe.mjs) and its
// small causal language model (web/page/model/lm.js) with the package's own multi-head attention
// layers, and writes web/page/data/model/ (manifest.json, model.bin, tokenizer.json).
// Deterministic from the seed.
// Environment: TRAIN_STEPS (steps), TRAIN_CONFIG (JSON overriding CONFIG's fields, e.g.
// '{"steps":3,"seed":2}'), TRAIN_OUT (another output folder), TRAIN_TOKENIZER (a tokenizer.json
// to use instead of training one: the same merges the run would train, faster), TRAIN_CORPUS
// ('sotu', the default, or 'austen': scripts/train/corpus.mjs).
//
// 2 layers x 4 heads, d_model 100, n = 64 tokens per window, batches of 6 windows drawn from the
// training addresses; Adam directions applied with step(), the attention layers at attnLr (0.5
// for layer 1, 3 for layer 2) times the learning rate. Tokens: V = 3,072 (256 bytes and 2,816
// merges learned on the training addresses); the model learns their embeddings E (V,d), the
// input's rows and, tied, the output's. Positions: the page's sinusoids × positionScale (4).
// W_Q and W_K start at qkScale (0.1) × the seeded ones, but layer 1 head 1's, which start
// looking one token back (previousHead). Layer 2's feed-forward block F = H + relu(H·w1 + b1)·w2
// + b2 (ffn hidden units), then logits = F·W_out·Eᵀ + bout: linear in the final residual stream.
// Training windows mix in repeated spans, of random word tokens or of the window's own text
// (repeat), so that an induction head forms; the manifest records them, each head's induction
// score, the induction test's losses (train.js inductionTest), the copy on learners' sentences
// written twice (copying.js COPY_SENTENCES) and the training steps' CPU seconds.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createAttention, seededRandom } from '../web/lib/index.js';
import { describeHead } from '../web/page/model/head_stats.js';
import { packTensors } from '../web/page/model/weights.js';
import { createAdam } from '../web/page/model/adam.js';
import { COPY_SENTENCES, copyOnSentences } from '../web/page/model/copying.js';
import {
  createModel,
  evaluate,
  inductionTest,
  makeBatch,
  repeatSampler,
  trainStep,
  windowSampler,
} from '../web/page/model/train.js';
import { CORPUS, corpusVersion } from './train/corpus.mjs';
import { loadTrainingData } from './train/data.mjs';
import { HEAD_MEANS_DEFINITION, headMeans } from './train/head_means.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const OUT = process.env.TRAIN_OUT ? path.resolve(process.env.TRAIN_OUT) : path.join(ROOT, 'web/page/data/model');
export const CONFIG = {
  seed: 3,
  vocab: 3072, // tokens: 256 bytes + 2,816 merges
  n: 64, // a learner's sentence of 8-10 words written twice is 36-56 of these tokens
  batch: 6,
  heads: 4,
  layers: 2,
  steps: 2000,
  lr: 2e-3,
  // the attention layers' learning rate over lr, per layer: layer 1's low, so that its
  // previous-token head (previousHead) is not rewritten by Adam's full-size early steps
  attnLr: [0.5, 3],
  positionScale: 4,
  embedScale: 0.6, // the token embeddings start with rows of norm about 6
  qkScale: 0.1, // the seeded W_Q, W_K scaled: every head starts near uniform
  ffn: 256, // layer 2's feed-forward block: hidden width (0: none)
  // layer 1 head 1 starts looking one token back (train.js lookBack), the head an induction head
  // composes with
  previousHead: { layer: 0, head: 0, strength: 1 },
  // layer 2 head 1 starts as an induction head over it (train.js wireInduction): with the token
  // embeddings learned from random ones, no layer-2 head passed an induction score of 0.07 by
  // step 1,000 of the same run without it (all windows repeated)
  inductionHead: { layer: 1, head: 0, match: 1.5, copy: 2, out: 10 },
  // windows with a repeated span (train.js repeatSampler): all of them up to step `hold` (the
  // induction head forms), then a share falling linearly to `share` at step `over`; of those,
  // `text` repeat a span of their own text instead of random word tokens. Chosen by the copy on
  // COPY_SENTENCES (web/docs/page.md): 0.5 to step 1,000 of 1,500 steps gave a mean P of 0.44;
  // 0.7 to step 1,200 of 2,000, 0.50; 0.8 with the induction head's `out` at 20, 0.49
  repeat: { share: 0.7, minSpan: 3, maxSpan: 30, from: 1, hold: 600, over: 1200, text: 0.5 },
  // the induction test: sequences of `span` random word tokens twice, drawn from their own seed
  induction: { span: 12, sequences: 256, seed: 9001 },
  warmup: 50,
  evalEvery: 250,
  heldOutWindows: 400,
  threads: 'auto', // the package's threads: the same weights with any number
  ...JSON.parse(process.env.TRAIN_CONFIG ?? '{}'),
};
if (process.env.TRAIN_STEPS) CONFIG.steps = Number(process.env.TRAIN_STEPS);

const t0 = performance.now();
const log = (msg) => console.log(`[${((performance.now() - t0) / 1000).toFixed(0).padStart(4)} s] ${msg}`);

const given = process.env.TRAIN_TOKENIZER ? JSON.parse(fs.readFileSync(process.env.TRAIN_TOKENIZER, 'utf8')) : null;
const data = loadTrainingData({ ...CONFIG, spec: given && { pattern: given.pattern, merges: given.merges } });
const { files, spec, tokenizer, vocab, trainIds, heldIds, counts, total, baseline, wordBaseline, held } = data;
const V = vocab.length,
  d = 100,
  { n } = CONFIG;
log(
  `tokenizer: ${V} tokens (${given ? 'given' : `merges trained in ${data.bpeSeconds.toFixed(0)} s`}); ${files.length} documents (${CORPUS.name}): ${total} training tokens in ${trainIds.length}, held out ${heldIds.reduce((a, x) => a + x.length, 0)} in ${heldIds.length}`,
);

const attn = await createAttention({ threads: CONFIG.threads });
const model = createModel(attn, {
  d,
  heads: CONFIG.heads,
  layers: CONFIG.layers,
  seed: CONFIG.seed,
  embedScale: CONFIG.embedScale,
  ffn: CONFIG.ffn,
  qkScale: CONFIG.qkScale,
  previousHead: CONFIG.previousHead,
  inductionHead: CONFIG.inductionHead,
  logPrior: Array.from(counts, (c) => Math.log((c + 1) / (total + V))),
});
const adam = createAdam();
const next = seededRandom(CONFIG.seed);

// Training windows: a document chosen in proportion to its length, then a start in it; a share
// of them with a repeated span.
const sample = repeatSampler(windowSampler(trainIds, n, next), vocab, n, next, CONFIG.repeat);
const induction = (sequences) =>
  inductionTest(model, vocab, { ...CONFIG.induction, sequences, positionScale: CONFIG.positionScale });
const inductionLine = (t) =>
  `induction: best head ${Math.max(...t.heads.map((h) => h.induction)).toFixed(2)} (${t.heads.map((h) => h.induction.toFixed(2)).join(' ')}), loss 2nd/1st copy ${t.lossSecond.toFixed(2)}/${t.lossFirst.toFixed(2)}`;

// The copy on COPY_SENTENCES written twice (copying.js)
const copyFigures = () => copyOnSentences(model, tokenizer, COPY_SENTENCES, CONFIG.positionScale);
const copyLine = (c) =>
  `copy on ${COPY_SENTENCES.length} learner sentences twice: mean P ${c.meanP.toFixed(3)}, top-1 ${(100 * c.top1).toFixed(0)} % of ${c.positions} positions`;
const cpu0 = process.cpuUsage();

let smooth = null;
for (let step = 1; step <= CONFIG.steps; ++step) {
  // linear warm-up, then linear decay to 10 %
  const lr = CONFIG.lr * Math.min(step / CONFIG.warmup, 1 - (0.9 * (step - 1)) / CONFIG.steps);
  const windows = Array.from({ length: CONFIG.batch }, () => sample(step));
  const batch = makeBatch(windows, n, d, model.p.embed, CONFIG.positionScale);
  const loss = trainStep(model, batch, adam, lr, { attnLr: CONFIG.attnLr });
  smooth = smooth === null ? loss : 0.95 * smooth + 0.05 * loss;
  if (step % 50 === 0 || step === 1)
    log(
      `step ${step}/${CONFIG.steps}  loss ${loss.toFixed(3)}  (smoothed ${smooth.toFixed(3)})  lr ${lr.toExponential(1)}`,
    );
  if (step % CONFIG.evalEvery === 0 && step < CONFIG.steps) {
    const e = evaluate(model, vocab, held.slice(0, 100), {
      n,
      baseline,
      wordBaseline,
      positionScale: CONFIG.positionScale,
    });
    log(
      `  held-out (100 windows): loss ${e.loss.toFixed(3)}, top-10 ${(100 * e.top10).toFixed(1)} % vs ${(100 * e.baselineTop10).toFixed(1)} %, prev-token shares ${e.heads.map((h) => h.prev.toFixed(2)).join(' ')}`,
    );
    log(`  ${inductionLine(induction(32))}`);
    log(`  ${copyLine(copyFigures())}`);
  }
}

const trainCpu = process.cpuUsage(cpu0);
const trainSeconds = (performance.now() - t0) / 1000;
const ev = evaluate(model, vocab, held, { n, baseline, wordBaseline, positionScale: CONFIG.positionScale });
const ind = induction(CONFIG.induction.sequences);
const copy = copyFigures();
log(inductionLine(ind));
log(copyLine(copy));
log(
  `held-out: loss ${ev.loss.toFixed(3)}, top-1 ${(100 * ev.top1).toFixed(1)} % (baseline ${(100 * ev.baselineTop1).toFixed(1)} %), top-10 ${(100 * ev.top10).toFixed(1)} % (baseline ${(100 * ev.baselineTop10).toFixed(1)} %)`,
);
ev.heads.forEach((h, i) => {
  h.induction = ind.heads[i].induction;
  log(`  layer ${h.layer + 1} head ${h.head + 1}: ${describeHead(h)}`);
});

const entries = [];
model.layers.forEach((layer, L) => {
  for (const [name, t] of Object.entries(layer.weights)) entries.push([`layers.${L}.${name}`, t]);
});
entries.push(
  ['embed', { data: model.p.embed, shape: [V, d] }],
  ['wout', { data: model.p.wout, shape: [d, d] }],
  ['bout', { data: model.p.bout, shape: [V] }],
);
if (model.p.w1) {
  const m = CONFIG.ffn;
  entries.push(
    ['w1', { data: model.p.w1, shape: [d, m] }],
    ['b1', { data: model.p.b1, shape: [m] }],
    ['w2', { data: model.p.w2, shape: [m, d] }],
    ['b2', { data: model.p.b2, shape: [d] }],
  );
}
const { bin, tensors } = packTensors(entries);
const heldTokens = heldIds.reduce((a, x) => a + x.length, 0);
const manifest = {
  format: 'wasm-attention page model 2: see web/page/model/weights.js',
  corpus: {
    ...CORPUS,
    version: corpusVersion(),
    documents: files.length,
    trainingTokens: total,
  },
  tokenizer: {
    kind: 'byte-level BPE (GPT-2 split pattern, minbpe RegexTokenizer): web/page/tokenize.js',
    tokens: V,
    merges: spec.merges.length,
    file: 'tokenizer.json',
    trainedOn: 'the training documents (scripts/train/bpe.mjs)',
    heldOutCharsPerToken: data.heldChars / heldTokens,
  },
  model: {
    dModel: d,
    heads: CONFIG.heads,
    layers: CONFIG.layers,
    n,
    classes: V,
    positions: 'sinusoidal × positionScale, added to the token embeddings',
    positionScale: CONFIG.positionScale,
    feedForward:
      CONFIG.ffn > 0 ? { hidden: CONFIG.ffn, after: 'layer 2', form: 'F = H + relu(H·w1 + b1)·w2 + b2' } : null,
    output: `logits = ${CONFIG.ffn > 0 ? 'F' : 'H'}·W_out·Eᵀ + bout (E: the token embeddings, tied)`,
    causal: true,
  },
  training: {
    seed: CONFIG.seed,
    steps: CONFIG.steps,
    batch: CONFIG.batch,
    optimizer: 'Adam directions through multiHeadAttention.step()',
    lr: CONFIG.lr,
    attnLr: CONFIG.attnLr,
    embedScale: CONFIG.embedScale,
    qkScale: CONFIG.qkScale,
    previousHead: CONFIG.previousHead
      ? {
          ...CONFIG.previousHead,
          what: 'the head starts looking one token back: its W_Q, W_K on the positions alone score key j for query i by a·Σ_f cos(ω_f·(i − j − 1)), over the ⌊d_K/2⌋ fastest sinusoid pairs, a = strength²·positionScale²/√d_K (train.js lookBack); trained like every other weight',
        }
      : null,
    inductionHead: CONFIG.inductionHead
      ? {
          ...CONFIG.inductionHead,
          what: "layer 2's head starts as an induction head over layer 1's previous-token head, on the slowest sinusoid pairs' sine (S1) and cosine (S2) dimensions: the previous-token head copies x_{j−1}[S1] × copy into S2, the induction head's W_Q reads S1 and W_K reads S2 (× match), its W_V reads S1 and W_O writes it back into S1 × out (train.js wireInduction); trained like every other weight",
        }
      : null,
    schedule: `linear warm-up over ${CONFIG.warmup} steps, then linear decay to 10 %`,
    repeatedSpans: {
      ...CONFIG.repeat,
      what: 'with probability p, a window gets minSpan..maxSpan random word tokens at a random start, followed by the same tokens; p is `from` up to step `hold`, then goes linearly to `share` at step `over`, then stays; with probability `text` such a span is the text already at that start instead of random tokens',
    },
    bpeSeconds: given ? null : Math.round(data.bpeSeconds),
    seconds: Math.round(trainSeconds),
    // the training steps' CPU time (user + system, every thread of the process), before evaluation
    cpuSeconds: Math.round((trainCpu.user + trainCpu.system) / 1e6),
  },
  heldOut: {
    windows: held.length,
    loss: ev.loss,
    tokens: ev.tokens,
    top1: ev.top1,
    top10: ev.top10,
    baselineTop1: ev.baselineTop1,
    baselineTop10: ev.baselineTop10,
    baselineGuesses: baseline.map((c) => vocab[c]),
    // the page's mean ablation (web/page/ablation.js)
    headMeans: {
      definition: HEAD_MEANS_DEFINITION,
      layers: headMeans(model.layers, model.p.embed, held, { n, d, positionScale: CONFIG.positionScale }),
    },
    words: {
      definition:
        'positions whose target token has a letter or a digit; the model still ranks all its tokens; baseline: always guessing the 10 most frequent such tokens in training',
      tokens: ev.wordTokens,
      top1: ev.wordTop1,
      top10: ev.wordTop10,
      baselineTop1: ev.baselineWordTop1,
      baselineTop10: ev.baselineWordTop10,
      top10Ratio: ev.wordTop10 / ev.baselineWordTop10,
      baselineGuesses: wordBaseline.map((c) => vocab[c]),
    },
  },
  heads: ev.heads,
  induction: {
    definition:
      "TransformerLens: sequences of `span` random word tokens, then the same tokens again; a head's score is the mean weight from each token of the second copy to the token right after its earlier occurrence (heads[].induction). lossFirst/lossSecond: mean loss on each copy's tokens after its first",
    span: ind.span,
    sequences: ind.sequences,
    seed: ind.seed,
    lossFirst: ind.lossFirst,
    lossSecond: ind.lossSecond,
    lossRatio: ind.lossSecond / ind.lossFirst,
  },
  copy: {
    sentences: COPY_SENTENCES.length,
    definition:
      'each sentence S written twice (S + " " + S); at every token of the second copy whose next token can be copied from the first (copying.js copyPositions): meanP the mean probability of that next token, top1 the share of positions where it is the most likely',
    ...copy,
  },
  tensors,
};
// the count models' figures (npm run train-model:ceilings) depend on the split, tokenizer, n and
// windows only: kept from the manifest this run replaces where those are the same
const previousFile = path.join(OUT, 'manifest.json');
if (fs.existsSync(previousFile)) {
  const previous = JSON.parse(fs.readFileSync(previousFile, 'utf8'));
  const same = (m) => [m.corpus.version, m.tokenizer?.tokens, m.model.n, m.heldOut.windows].join();
  const sameMerges =
    fs.existsSync(path.join(OUT, 'tokenizer.json')) &&
    JSON.parse(fs.readFileSync(path.join(OUT, 'tokenizer.json'), 'utf8')).merges.join() === spec.merges.join();
  if (previous.ceilings && sameMerges && same(previous) === same(manifest)) manifest.ceilings = previous.ceilings;
}
fs.mkdirSync(OUT, { recursive: true });
fs.writeFileSync(path.join(OUT, 'model.bin'), bin);
fs.writeFileSync(
  path.join(OUT, 'tokenizer.json'),
  `${JSON.stringify({ pattern: spec.pattern, merges: spec.merges })}\n`,
);
fs.writeFileSync(path.join(OUT, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
log(`wrote ${path.relative(ROOT, OUT)}: model.bin ${(bin.length / 1024).toFixed(0)} KiB`);
attn.dispose?.();
