// Trained page models compared across corpora (scripts/train/corpus.mjs CORPORA), in units that do
// not depend on the tokenizer: bits per character.
//   node scripts/train/compare_corpora.mjs MODEL_DIR...   (each a folder train_model.mjs wrote)
// For each model, on each corpus's held-out documents (400 windows of n tokens, as the manifest's
// held-out figure) and on learners' sentences (copying.js COPY_SENTENCES, none from either
// corpus, each alone): the loss of every next token but a text's first, summed,
// over the characters those tokens spell, in bits; and the copy on the sentences written twice
// (copying.js copyOnSentences). Austen's held-out chapters need JANEAUSTENR_ROOT (corpus.mjs).
import fs from 'node:fs';
import path from 'node:path';
import { createAttention } from '../../web/lib/index.js';
import { COPY_SENTENCES, copyOnSentences } from '../../web/page/model/copying.js';
import { crossEntropy, embedTokens, forwardHead, forwardLayers, headParams } from '../../web/page/model/lm.js';
import { windowsOf } from '../../web/page/model/train.js';
import { layerWeights, modelFromFiles } from '../../web/page/model/weights.js';
import { sinusoidalPositions } from '../../web/page/positions.js';
import { CORPORA, loadCorpus } from './corpus.mjs';

const dirs = process.argv.slice(2);
if (!dirs.length) throw new Error('usage: node scripts/train/compare_corpora.mjs MODEL_DIR...');
const attn = await createAttention({ threads: 1 });
const heldOut = Object.fromEntries(
  Object.values(CORPORA).map((c) => [c.name, loadCorpus({ only: 'heldOut', corpus: c }).heldOut]),
);

// ids (m) through the model -> { loss: Σ −ln P(ids[i+1] | ids[0..i]) over i < m − 1, chars }
function textLoss({ layers, p, pieces, positionScale }, ids) {
  const V = p.bout.length,
    d = p.embed.length / V,
    m = ids.length;
  const P = sinusoidalPositions(m, d).map((v) => v * positionScale);
  const { hs } = forwardLayers(layers, { data: embedTokens(p.embed, ids, d, P), shape: [1, m, d] });
  const { logits } = forwardHead(p, hs.at(-1), m, d, V);
  const targets = Int32Array.from({ length: m - 1 }, (_, i) => ids[i + 1]);
  const { loss } = crossEntropy(logits.subarray(0, (m - 1) * V), targets, m - 1, V);
  return { loss: loss * (m - 1), chars: [...targets].reduce((a, c) => a + pieces[c].length, 0) };
}

const rows = [];
for (const dir of dirs) {
  const read = (name) => fs.readFileSync(path.join(dir, name));
  const model = modelFromFiles(
    JSON.parse(read('manifest.json')),
    read('model.bin'),
    JSON.parse(read('tokenizer.json')),
  );
  const { dModel, heads, n, positionScale } = model.manifest.model;
  const layers = [0, 1].map((L) => attn.multiHeadAttention({ dModel, heads, weights: layerWeights(model.tensors, L) }));
  const m = { layers, p: headParams(model.tensors), pieces: model.vocab, positionScale };
  const row = { model: `${path.basename(path.resolve(dir))} (${model.manifest.corpus.name ?? 'sotu'})` };
  for (const [name, texts] of Object.entries(heldOut)) {
    const ids = texts.map((t) => Int32Array.from(model.tokenizer.encode(t), (x) => x.id));
    const windows = windowsOf(ids, n, 400);
    let loss = 0,
      chars = 0;
    for (const { ids: w } of windows) {
      const r = textLoss(m, w);
      loss += r.loss;
      chars += r.chars;
    }
    row[`${name} held-out bits/char`] = loss / chars / Math.LN2;
  }
  for (const [name, sentences] of [['learners’ sentences', COPY_SENTENCES]]) {
    let loss = 0,
      chars = 0;
    for (const s of sentences) {
      const r = textLoss(
        m,
        model.tokenizer.encode(s).map((t) => t.id),
      );
      loss += r.loss;
      chars += r.chars;
    }
    const copy = copyOnSentences(m, model.tokenizer, sentences, positionScale);
    row[`${name} bits/char`] = loss / chars / Math.LN2;
    row[`${name} twice: copy mean P`] = copy.meanP;
    row[`${name} twice: top-1`] = copy.top1;
  }
  for (const l of layers) l.dispose();
  rows.push(row);
}
for (const key of Object.keys(rows[0]))
  console.log(
    `${key.padEnd(36)} ${rows.map((r) => (typeof r[key] === 'number' ? r[key].toFixed(3) : r[key]).padStart(18)).join(' ')}`,
  );
attn.dispose?.();
