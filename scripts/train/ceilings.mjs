// npm run train-model:ceilings: what count models reach on the page model's own held-out figure,
// as evidence for the bar (next-token top-10 over always guessing the most frequent word
// tokens). Same split, tokenizer (tokenizer.json), classes, windows and word-only figure as the
// shipped model's manifest (data.mjs, train.js' accuracyTally): unigram (the baseline), then
// interpolated modified Kneser-Ney models of order 2 to 5 (kneser_ney.mjs) counted on the training
// addresses, each predicting a window's token i+1 from its tokens 0..i (the model's context too),
// and the shipped model re-evaluated. Prints a table and writes the count models' figures as the
// `ceilings` block of web/page/data/model/manifest.json (the rest of the manifest is kept).
// --all: also every held-out window (about 20 times the manifest's 400; some 10 minutes on a loaded
// machine): the shipped block comes from such a run.
import fs from 'node:fs';
import path from 'node:path';
import { createAttention } from '../../web/lib/index.js';
import { accuracyTally, createModel, evaluate, windowsOf } from '../../web/page/model/train.js';
import { modelFromFiles } from '../../web/page/model/weights.js';
import { DATA_DIR, loadTrainingData } from './data.mjs';
import { countNgrams, kneserNey } from './kneser_ney.mjs';

const MODEL_DIR = path.join(DATA_DIR, 'model');
const ORDERS = [2, 3, 4, 5];
const ALL = process.argv.includes('--all');

const t0 = performance.now();
const log = (msg) => console.log(`[${((performance.now() - t0) / 1000).toFixed(0).padStart(4)} s] ${msg}`);

const read = (name) => fs.readFileSync(path.join(MODEL_DIR, name));
const shipped = modelFromFiles(
  JSON.parse(read('manifest.json')),
  read('model.bin'),
  JSON.parse(read('tokenizer.json')),
);
const { manifest } = shipped;
const { n } = manifest.model;
const data = loadTrainingData({
  vocab: manifest.model.classes,
  n,
  heldOutWindows: manifest.heldOut.windows,
  spec: JSON.parse(read('tokenizer.json')),
});
const { vocab, trainIds, heldIds, baseline, wordBaseline } = data;
const V = vocab.length;

// p (V) -> the k most probable classes, best first (ties: the lower class id)
function topClasses(p, k) {
  const best = [];
  for (let c = 0; c < p.length; ++c) {
    if (best.length === k && p[c] <= p[best[k - 1]]) continue;
    let i = best.length === k ? k - 1 : best.length;
    while (i > 0 && p[best[i - 1]] < p[c]) {
      best[i] = best[i - 1];
      --i;
    }
    best[i] = c;
  }
  return best;
}

// windows [{ ids (n+1) }] -> accuracyTally's figures of model's predictions, and the mean
// log-loss (nats) over every position
function countModelFigures(model, windows) {
  const tally = accuracyTally(vocab, baseline, wordBaseline);
  const p = new Float64Array(V);
  let loss = 0,
    count = 0;
  for (const { ids } of windows) {
    for (let i = 0; i < n; ++i) {
      model.distribution(ids.subarray(0, i + 1), p);
      const y = ids[i + 1];
      loss -= Math.log(p[y]);
      ++count;
      tally.add(topClasses(p, 10), y);
    }
  }
  return { loss: loss / count, ...tally.result() };
}

const counts = countNgrams(trainIds, V, Math.max(...ORDERS));
log(`counted ${counts.nodes - 1} distinct n-grams (orders 1 to ${counts.maxOrder}) in the training addresses`);

const sets = [['heldOut', data.held]];
if (ALL) sets.push(['allHeldOut', windowsOf(heldIds, n)]);
const row = (f) => ({
  top1: f.wordTop1,
  top10: f.wordTop10,
  top10Ratio: f.wordTop10 / f.baselineWordTop10,
  loss: f.loss,
});
const results = {};
for (const [name, windows] of sets) {
  const rows = {};
  let ref;
  for (const order of ORDERS) {
    const f = countModelFigures(kneserNey(counts, order), windows);
    ref ??= f;
    rows[`${order}-gram`] = row(f);
    log(`${name} (${windows.length} windows): ${order}-gram Kneser-Ney done`);
  }
  results[name] = {
    windows: windows.length,
    wordTokens: ref.wordTokens,
    unigram: { top1: ref.baselineWordTop1, top10: ref.baselineWordTop10, top10Ratio: 1 },
    ...rows,
  };
}

// the shipped model on the same windows
const attn = await createAttention();
const model = createModel(attn, {
  d: shipped.dim,
  heads: manifest.model.heads,
  layers: manifest.model.layers,
  tensors: shipped.tensors,
});
for (const [name, windows] of sets) {
  const ev = evaluate(model, vocab, windows, {
    n,
    baseline,
    wordBaseline,
    positionScale: manifest.model.positionScale,
  });
  results[name].shippedModel = row(ev);
  log(`${name}: the shipped model done`);
}
for (const l of model.layers) l.dispose();
attn.dispose();

const pct = (x) => `${(100 * x).toFixed(1)} %`.padStart(7);
for (const [name, r] of Object.entries(results)) {
  console.log(`\n${name}: ${r.windows} windows of ${n} predictions, ${r.wordTokens} word targets`);
  console.log('model            word top-1  word top-10  ratio  loss (all positions)');
  for (const [k, f] of Object.entries(r)) {
    if (typeof f !== 'object') continue;
    const loss = f.loss === undefined ? '' : f.loss.toFixed(3);
    console.log(`${k.padEnd(16)} ${pct(f.top1)}     ${pct(f.top10)}    ${f.top10Ratio.toFixed(2)}x  ${loss}`);
  }
}

// the manifest keeps the count models only: they hold for any model trained on this split
// (train_model.mjs carries the block over); the shipped model's own figures are heldOut's
for (const r of Object.values(results)) delete r.shippedModel;
manifest.ceilings = {
  definition:
    "word top-1/top-10 as heldOut.words (positions whose target token has a letter or a digit; every token ranked), on the manifest's held-out windows (heldOut: the same 400; allHeldOut: every window of the held-out addresses); top10Ratio: over always guessing the 10 most frequent words (unigram); loss: mean nats over every position",
  countModels:
    'interpolated modified Kneser-Ney (Chen & Goodman 1998; discounts D1, D2, D3+ per order from counts of counts) over the token ids of the training addresses, no n-gram across an address; a position sees the window tokens before it, as the model does',
  script: 'npm run train-model:ceilings (scripts/train/ceilings.mjs)',
  ...results,
};
fs.writeFileSync(path.join(MODEL_DIR, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
log(`wrote the ceilings into ${path.relative(process.cwd(), path.join(MODEL_DIR, 'manifest.json'))}`);
