// The page's live training (web/page/model/trainer.js), in Node: the same model as
// `npm run train-model` (web/page/model/train.js), the shipped excerpt free of held-out addresses,
// and training that learns. The browser side (the Worker, the panel) is page_train.test.mjs.
// run with: node --test tests/js/page/trainer.test.mjs
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { corpusDir } from '../../../scripts/train/corpus.mjs';
import { createAttention, seededRandom } from '../../../web/lib/index.js';
import { sinusoidalPositions } from '../../../web/page/positions.js';
import { splitAddresses, tokenizeDocs } from '../../../web/page/model/corpus_text.js';
import { createAdam } from '../../../web/page/model/adam.js';
import { crossEntropy, forwardHead, forwardLayers } from '../../../web/page/model/lm.js';
import {
  createModel,
  inductionTest,
  headBackward,
  headForward,
  makeBatch,
  repeatSampler,
  trainStep,
  windowSampler,
} from '../../../web/page/model/train.js';
import { inductionScore, repeatedSentence, repeatedSpan } from '../../../web/page/model/head_stats.js';
import { INDUCTION_RUN, createTrainer, manifestOptions } from '../../../web/page/model/trainer.js';
import { layerWeights } from '../../../web/page/model/weights.js';
import { tokenize } from '../../../web/page/tokenize.js';
import { loadShippedModel } from '../helpers/shipped_model.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const data = path.join(root, 'web', 'page', 'data');
const { manifest, tensors, tokenizer, vocab, dim } = loadShippedModel();
const E = tensors.embed.data;
const excerptText = fs.readFileSync(path.join(data, 'corpus', 'sotu-excerpt.txt'), 'utf8');
// a sentence's token ids
const SENTENCE = tokenize('The animal did not cross the street because it was too tired', tokenizer).map((t) => t.id);
const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;

describe('live training', () => {
  let attn;
  const trainers = [];
  const make = (options) => {
    const t = createTrainer(attn, { vocab, d: dim, ...options });
    trainers.push(t);
    return t;
  };
  before(async () => {
    attn = await createAttention({ threads: 1 });
  });
  after(() => {
    for (const t of trainers) t.dispose();
  });

  test('the excerpt is training text only: no held-out address, each one whole', () => {
    const files = fs
      .readdirSync(corpusDir())
      .filter((f) => f.endsWith('.txt'))
      .sort();
    const names = [...excerptText.matchAll(/^# (.*)$/gm)].map((m) => m[1]);
    const texts = splitAddresses(excerptText);
    assert.ok(names.length >= 5, `${names.length} addresses`);
    assert.equal(texts.length, names.length);
    names.forEach((name, i) => {
      const k = files.indexOf(`${name}.txt`);
      assert.ok(k >= 0, `${name} is not an address of the corpus`);
      assert.notEqual(k % 10, 9, `${name} is held out by train-model`);
      assert.equal(texts[i], fs.readFileSync(path.join(corpusDir(), files[k]), 'utf8').trim());
    });
    assert.ok(excerptText.length > 200000 && excerptText.length < 400000, `${excerptText.length} characters`);
  });

  test('from the trained weights, the heads are the shipped model heads', () => {
    const t = make({
      docs: tokenizeDocs(['a short text that is long enough '.repeat(10)], tokenizer),
      tensors,
      positionScale: manifest.model.positionScale,
    });
    const n = SENTENCE.length,
      d = dim;
    const { n: m, weights } = t.heads(SENTENCE);
    assert.equal(m, n);
    // The page's trained forward, built by hand: X = E + P, then layer by layer with residuals.
    const P = sinusoidalPositions(n, d);
    let h = new Float32Array(n * d);
    SENTENCE.forEach((c, i) => {
      const v = E.subarray(c * d, (c + 1) * d);
      for (let k = 0; k < d; ++k) h[i * d + k] = v[k] + manifest.model.positionScale * P[i * d + k];
    });
    let worst = 0;
    for (let L = 0; L < manifest.model.layers; ++L) {
      const layer = attn.multiHeadAttention({ dModel: d, heads: 4, weights: layerWeights(tensors, L) });
      const r = layer.forward({ data: h, shape: [n, d] }, { causal: true, trace: true });
      r.heads.forEach((hd, k) => {
        const got = weights.subarray((L * 4 + k) * n * n, (L * 4 + k + 1) * n * n);
        for (let i = 0; i < n * n; ++i) worst = Math.max(worst, Math.abs(got[i] - hd.weights.data[i]));
      });
      h = h.map((x, i) => x + r.output.data[i]);
      layer.dispose();
    }
    assert.ok(worst < 1e-5, `largest difference ${worst}`);
  });

  test('a run is deterministic from its seed', () => {
    const docs = tokenizeDocs(splitAddresses(excerptText).slice(0, 1), tokenizer);
    const a = make({ docs, seed: 7, batch: 2 }),
      b = make({ docs, seed: 7, batch: 2 });
    const la = [a.step(3e-3), a.step(3e-3), a.step(3e-3)];
    const lb = [b.step(3e-3), b.step(3e-3), b.step(3e-3)];
    assert.deepEqual(la, lb);
    assert.deepEqual(a.heads(SENTENCE).weights, b.heads(SENTENCE).weights);
    assert.equal(a.steps, 3);
  });

  test('from random weights it learns a short text: the loss falls to a quarter', () => {
    const text = 'We the people of the United States, in order to form a more perfect union. '.repeat(6);
    const t = make({ docs: tokenizeDocs([text], tokenizer), batch: 4, warmup: 5 });
    const losses = Array.from({ length: 30 }, () => t.step(1e-2));
    const first = mean(losses.slice(0, 3)),
      last = mean(losses.slice(-3));
    // the embeddings learn too
    assert.ok(last < 0.25 * first, `mean loss of the first 3 steps ${first}, of the last 3 ${last}`);
  });

  test('the trained weights start lower than random ones on the excerpt', () => {
    const docs = tokenizeDocs(splitAddresses(excerptText).slice(0, 2), tokenizer);
    // the shipped model's settings (positions × 4 above all), on the text alone
    const settings = { ...manifestOptions(manifest, tensors), repeat: null };
    const random = make({ docs, batch: 4, ...settings }),
      trained = make({ docs, batch: 4, ...settings, tensors });
    const lr = 1e-3;
    const r = mean([random.step(lr), random.step(lr)]),
      t = mean([trained.step(lr), trained.step(lr)]);
    assert.ok(t < r - 0.2, `trained ${t}, random ${r}`);
  });

  test("a step's loss is lm.js' plain forward with the current embeddings, step after step", () => {
    // trainStep's products run on the package's matmul; here the plain lm.js path (forwardHead)
    // from the model's weights before each step
    const d = dim,
      V = vocab.length,
      n = 12,
      B = 2;
    const model = createModel(attn, { d, heads: 4, layers: 2, tensors });
    const adam = createAdam();
    const docs = tokenizeDocs(splitAddresses(excerptText).slice(0, 1), tokenizer);
    const sample = windowSampler(docs, n, seededRandom(3));
    try {
      for (let step = 0; step < 3; ++step) {
        const batch = makeBatch(Array.from({ length: B }, sample), n, d, model.p.embed, manifest.model.positionScale);
        const { hs } = forwardLayers(model.layers, batch.x);
        const { logits } = forwardHead(model.p, hs.at(-1), B * n, d, V);
        const expected = crossEntropy(logits, batch.targets, B * n, V).loss;
        const loss = trainStep(model, batch, adam, 1e-2, { attnLr: 3 });
        assert.ok(Math.abs(loss - expected) < 1e-4, `step ${step + 1}: loss ${loss}, plain ${expected}`);
      }
    } finally {
      for (const l of model.layers) l.dispose();
    }
  });

  test("the output layer's gradients (the block, W_out, the tied embeddings) match finite differences of the loss", () => {
    // a small output layer (d 6, m 5, V 7, T 4) in float32: central differences of the mean loss
    const d = 6,
      m = 5,
      V = 7,
      T = 4;
    const next = seededRandom(11);
    const u = (k, s = 1) => Float32Array.from({ length: k }, () => s * (2 * next() - 1));
    const p = { embed: u(V * d), wout: u(d * d), bout: u(V), w1: u(d * m), b1: u(m, 0.5), w2: u(m * d), b2: u(d) };
    const h = u(T * d);
    const targets = Int32Array.from({ length: T }, (_, t) => t % V);
    const lossOf = () => crossEntropy(headForward(attn, p, h, T, d, V).logits, targets, T, V).loss;
    const fwd = headForward(attn, p, h, T, d, V);
    const { dlogits } = crossEntropy(fwd.logits, targets, T, V);
    const g = headBackward(attn, p, h, fwd, dlogits, T, d, V);
    let worst = 0;
    for (const [name, grad] of [
      ['w1', g.dw1],
      ['b1', g.db1],
      ['w2', g.dw2],
      ['b2', g.db2],
      ['wout', g.dwout],
      ['embed', g.dembed],
      ['bout', g.dbout],
    ]) {
      for (const i of [0, 3, grad.length - 1]) {
        const keep = p[name][i];
        const eps = 1e-3; // small: a step across a ReLU kink would break the difference
        p[name][i] = keep + eps;
        const up = lossOf();
        p[name][i] = keep - eps;
        const down = lossOf();
        p[name][i] = keep;
        worst = Math.max(worst, Math.abs((up - down) / (2 * eps) - grad[i]));
      }
    }
    // dh through the block and its skip connection
    for (const i of [0, 7, h.length - 1]) {
      const keep = h[i];
      h[i] = keep + 1e-3;
      const up = lossOf();
      h[i] = keep - 1e-3;
      const down = lossOf();
      h[i] = keep;
      worst = Math.max(worst, Math.abs((up - down) / 2e-3 - g.dh[i]));
    }
    assert.ok(worst < 2e-3, `largest difference from finite differences ${worst}`);
  });

  test('repeated spans: random word tokens, then the same tokens right after, in a share of the windows', () => {
    const docs = tokenizeDocs(splitAddresses(excerptText).slice(0, 1), tokenizer);
    const ids = docs;
    const n = 24;
    const make = (seed, share) => {
      const next = seededRandom(seed);
      return repeatSampler(windowSampler(ids, n, next), vocab, n, next, { share, minSpan: 3, maxSpan: 12 });
    };
    const sample = make(5, 0.5);
    let repeated = 0;
    for (let k = 0; k < 200; ++k) {
      const w = sample(k + 1);
      assert.equal(w.ids.length, n + 1);
      // a span of L >= 3 followed by itself somewhere
      let found = false;
      for (let L = 3; L <= 12 && !found; ++L)
        for (let s = 0; s + 2 * L <= n + 1 && !found; ++s) {
          let same = true;
          for (let j = 0; j < L && same; ++j) same = w.ids[s + j] === w.ids[s + L + j];
          found = same;
        }
      repeated += found;
    }
    assert.ok(repeated > 70 && repeated < 140, `${repeated} of 200 windows repeat a span`);
    const a = make(9, 0.5),
      b = make(9, 0.5);
    for (let k = 0; k < 20; ++k) assert.deepEqual(a(k + 1).ids, b(k + 1).ids);
    // a schedule: every window repeats at first, none from step `over` on
    const next = seededRandom(4);
    const ramp = repeatSampler(windowSampler(ids, n, next), vocab, n, next, {
      share: 0,
      from: 1,
      over: 100,
      minSpan: 12,
      maxSpan: 12,
    });
    // (12 words twice in 25 tokens: from token 0 or 1)
    const repeats = (w) => [0, 1].some((s) => w.ids.subarray(s, s + 12).every((c, i) => c === w.ids[s + 12 + i]));
    assert.ok(repeats(ramp(1)) && repeats(ramp(1)), 'step 1: every window repeats');
    for (let k = 0; k < 20; ++k) assert.ok(!repeats(ramp(100)), 'step 100: none does');
    // share 0: the text's windows as they are
    const plain = make(9, 0),
      text = (() => {
        const next = seededRandom(9);
        return windowSampler(ids, n, next);
      })();
    for (let k = 0; k < 5; ++k) assert.deepEqual(plain(k + 1).ids, text().ids);
  });

  test("repeated spans of the window's own text: its tokens at the start, then the same tokens", () => {
    const docs = tokenizeDocs(splitAddresses(excerptText).slice(0, 1), tokenizer);
    const ids = docs;
    const n = 24;
    const next = seededRandom(6),
      plainNext = seededRandom(6);
    const sample = repeatSampler(windowSampler(ids, n, next), vocab, n, next, {
      share: 1,
      minSpan: 12,
      maxSpan: 12,
      text: 1,
    });
    // the same generator draws the same window first: each sample() below replays its draws
    const plain = windowSampler(ids, n, plainNext);
    for (let k = 0; k < 20; ++k) {
      const w = sample(k + 1);
      const t = plain();
      for (let j = 0; j < 3; ++j) plainNext(); // share, L, start (text's own draw after them)
      const s = [0, 1].find((s) => w.ids.subarray(s, s + 12).every((c, i) => c === w.ids[s + 12 + i]));
      assert.ok(s !== undefined, `window ${k} repeats no 12 tokens`);
      // the first copy is the text's, the second the same tokens
      assert.deepEqual(w.ids.subarray(0, s + 12), t.ids.subarray(0, s + 12));
      assert.deepEqual(w.ids.subarray(s + 12, s + 24), t.ids.subarray(s, s + 12));
      plainNext(); // text: the random words' draw is skipped
    }
  });

  test('previousHead: that head starts looking one word back, the others as seeded', () => {
    const d = dim,
      n = 24,
      positionScale = 4;
    const options = { d, heads: 4, layers: 2, seed: 3, logPrior: new Array(vocab.length).fill(0), qkScale: 0.1 };
    const plain = createModel(attn, options);
    const back = createModel(attn, { ...options, previousHead: { layer: 0, head: 1, strength: 1 } });
    // on held-out-like text: the training excerpt's first windows, positions × 4
    const docs = tokenizeDocs(splitAddresses(excerptText).slice(0, 1), tokenizer);
    const windows = Array.from({ length: 8 }, (_, k) => ({ ids: docs[0].slice(k * (n + 1), (k + 1) * (n + 1)) }));
    const { x } = makeBatch(windows, n, d, E, positionScale);
    const trace = (m) => forwardLayers(m.layers, x, { trace: true }).traces[0];
    const [a, b] = [trace(plain), trace(back)];
    let prev = 0,
      count = 0;
    const w = b[1].weights.data;
    for (let k = 0; k < windows.length; ++k) for (let i = 1; i < n; ++i, ++count) prev += w[k * n * n + i * n + i - 1];
    assert.ok(prev / count > 0.85, `head 2's mean weight on the previous word ${prev / count}`);
    for (const h of [0, 2, 3]) assert.deepEqual(b[h].weights.data, a[h].weights.data, `head ${h + 1}`);
    for (const m of [plain, back]) for (const l of m.layers) l.dispose();
  });

  test('inductionHead: layer 2 head 1 starts as an induction head over the previous-token head', () => {
    const d = dim,
      span = 12,
      options = { d, heads: 4, layers: 2, seed: 3, logPrior: new Array(vocab.length).fill(0), qkScale: 0.1 };
    const previousHead = { layer: 0, head: 0, strength: 1 };
    const wired = createModel(attn, {
      ...options,
      previousHead,
      inductionHead: { layer: 1, head: 0, match: 1.5, copy: 2, out: 5 },
    });
    const plain = createModel(attn, { ...options, previousHead });
    const test = { span, sequences: 32, seed: 9001, positionScale: 4 };
    const [a, b] = [wired, plain].map((m) => inductionTest(m, vocab, test));
    assert.ok(a.heads[4].induction > 0.5, `wired: layer 2 head 1 scores ${a.heads[4].induction}`);
    assert.ok(b.heads[4].induction < 0.2, `seeded: ${b.heads[4].induction}`);
    assert.ok(
      a.lossSecond < a.lossFirst - 1,
      `wired: the second copy's loss ${a.lossSecond}, the first's ${a.lossFirst}`,
    );
    // layer 1's W_Q, W_K (head 1 looking one token back) are the seeded model's
    for (const w of ['wq', 'wk']) assert.deepEqual(wired.layers[0].weights[w].data, plain.layers[0].weights[w].data, w);
    for (const m of [wired, plain]) for (const l of m.layers) l.dispose();
  });

  test('attnLr per layer: a factor of 0 leaves that layer as it was', () => {
    const d = dim,
      n = 8;
    const m = createModel(attn, {
      d,
      heads: 4,
      layers: 2,
      seed: 2,
      logPrior: new Array(vocab.length).fill(0),
      qkScale: 0.1,
    });
    const before = m.layers.map((l) => l.weights.wq.data.slice());
    const ids = tokenize('We the people of the United States, in order to form', tokenizer).map((t) => t.id);
    const batch = makeBatch([{ ids }], n, d, m.p.embed, 4);
    trainStep(m, batch, createAdam(), 1e-2, { attnLr: [0, 1] });
    assert.deepEqual(m.layers[0].weights.wq.data, before[0]);
    assert.notDeepEqual(m.layers[1].weights.wq.data, before[1]);
    for (const l of m.layers) l.dispose();
  });

  test('the induction score: a head that looks at the word after the earlier occurrence scores 1', () => {
    const L = 4,
      n = 2 * L;
    const w = new Float32Array(n * n);
    for (let i = 0; i < n; ++i) w[i * n + (i >= L ? i - L + 1 : i)] = 1; // second copy: shifted diagonal
    assert.equal(inductionScore(w, n, L), 1);
    const prev = new Float32Array(n * n);
    for (let i = 0; i < n; ++i) prev[i * n + Math.max(0, i - 1)] = 1; // previous word: 0
    assert.equal(inductionScore(prev, n, L), 0);
    assert.deepEqual(repeatedSpan(['a', 'b', 'c', 'a', 'b', 'c']), { start: 0, span: 3, again: 3 });
    assert.equal(repeatedSpan(['a', 'b', 'c', 'a', 'b', 'd']), null);
    // the copies' first word differs by its leading space: "My" and " My", "T|h|e" and " The"
    assert.deepEqual(repeatedSpan(['My', 'b', 'c', ' My', 'b', 'c']), { start: 1, span: 2, again: 4 });
    const the = ['T', 'h', 'e', ' cat', ' sat', '.', ' The', ' cat', ' sat', '.'];
    assert.deepEqual(repeatedSpan(the), { start: 3, span: 3, again: 7 });
    assert.equal(repeatedSpan(['T', 'h', 'e', ' cat', ' sat', '.', ' A', ' cat', ' sat', '.']), null);
    assert.equal(repeatedSpan([7, 1, 2, 8, 1, 2]), null); // ids: the copies' tokens all the same
    assert.equal(repeatedSpan(['a', 'a']), null);
    assert.equal(repeatedSpan(['a', 'b', 'c', 'a', 'b']), null); // an odd count, not a repeat
    // the score on such a text: the second copy's rows on the first copy's next tokens
    const m = the.length;
    const diag = new Float32Array(m * m);
    for (let k = 0; k < 3; ++k) diag[(7 + k) * m + 3 + k + 1] = 1;
    assert.equal(inductionScore(diag, m, 3, 3, 7), 1);
    assert.equal(inductionScore(diag, m, 3, 3), 0);
    assert.deepEqual(repeatedSentence(the, 24), [' The', ' cat', ' sat', '.', ' The', ' cat', ' sat', '.']);
    assert.deepEqual(repeatedSentence([0, 1, 2, 3, 4, 5, 6, 7, 8, 9], 24, the), [6, 7, 8, 9, 6, 7, 8, 9]);
    assert.deepEqual(repeatedSentence(['x', 'y', 'z'], 24), ['x', 'y', 'z', 'x', 'y', 'z']);
    assert.deepEqual(repeatedSentence(['x', 'y', 'x', 'y'], 24), ['x', 'y', 'x', 'y']);
    assert.equal(repeatedSentence([...'abcdefghijklmnop'], 24).length, 24);
  });

  test("the trainer's induction scores are its heads' on the repeated sentence", () => {
    const t = make({
      docs: tokenizeDocs(['a short text that is long enough '.repeat(10)], tokenizer),
      tensors,
      positionScale: manifest.model.positionScale,
    });
    const twice = repeatedSentence(SENTENCE, manifest.model.n);
    const scores = t.induction(twice);
    const { n, weights } = t.heads(twice);
    assert.equal(scores.length, 8);
    scores.forEach((s, k) =>
      assert.equal(s, inductionScore(weights.subarray(k * n * n, (k + 1) * n * n), n, SENTENCE.length)),
    );
    assert.throws(() => t.induction(SENTENCE), RangeError);
  });

  test('INDUCTION_RUN: layer 2 starts seeded and learns; layer 1, the feed-forward block and the output stay as trained', () => {
    const options = { ...manifestOptions(manifest, tensors), ...INDUCTION_RUN };
    const docs = tokenizeDocs(splitAddresses(excerptText).slice(0, 1), tokenizer);
    const t = make({ docs, tensors, seed: 1, ...options });
    const shipped = make({ docs, tensors, seed: 1, ...manifestOptions(manifest, tensors) });
    const twice = repeatedSentence(SENTENCE, manifest.model.n);
    const m = twice.length;
    const block = (w, k) => w.subarray(k * m * m, (k + 1) * m * m);
    const start = t.heads(twice).weights;
    const trained = shipped.heads(twice).weights;
    for (let k = 0; k < 4; ++k)
      assert.deepEqual(block(start, k), block(trained, k), `layer 1 head ${k + 1} at the start`);
    for (let k = 4; k < 8; ++k)
      assert.notDeepEqual(block(start, k), block(trained, k), `layer 2 head ${k - 3} is the trained one`);
    const layer2 = [0, 1, 2, 3].map((head) => ({ layer: 1, head }));
    const without = t.copyProbability(twice, layer2);
    const all = t.copyProbability(twice);
    for (let s = 0; s < 5; ++s) t.step(3e-3);
    const after = t.heads(twice).weights;
    for (let k = 0; k < 4; ++k) assert.deepEqual(block(after, k), block(start, k), `layer 1 head ${k + 1} learned`);
    assert.notDeepEqual(block(after, 4), block(start, 4), 'layer 2 did not learn');
    // with layer 2 knocked out, what is left (layer 1, the block, the output) did not change
    assert.equal(t.copyProbability(twice, layer2), without);
    assert.notEqual(t.copyProbability(twice), all);
    for (const v of [without, all]) assert.ok(v > 0 && v < 1, `copy probability ${v}`);
    assert.throws(() => t.copyProbability(SENTENCE), RangeError);
  });

  test('a text shorter than one window is a RangeError', () => {
    assert.throws(() => make({ docs: tokenizeDocs(['too short'], tokenizer) }), RangeError);
  });
});
