// Each attention head's mean output over the held-out windows, for mean ablation on the page
// (web/page/ablation.js): written into the shipped model's manifest as heldOut.headMeans.
//
//   headMeans(layers, E, windows, { n, d, positionScale, B }) -> [[h·d_v numbers] per layer]:
//     the mean of each head's output (before W_O, its columns of concat) over every position of
//     every window; layers the model's multiHeadAttention layers, E (V,d) its token embeddings,
//     windows as makeBatch takes them ({ ids } of n+1 tokens)
//
// Run on its own after a training run (npm run train-model calls it too):
//   node scripts/train/head_means.mjs     reads web/page/data/model/, writes its manifest.json
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { createAttention } from '../../web/lib/index.js';
import { forwardLayers } from '../../web/page/model/lm.js';
import { createModel, makeBatch } from '../../web/page/model/train.js';
import { unpackTensors } from '../../web/page/model/weights.js';
import { DATA_DIR, loadTrainingData } from './data.mjs';

export const HEAD_MEANS_DEFINITION =
  "each head's mean output (its d_v columns of concat, before W_O) over every position of the held-out windows (heldOut.windows); layers[L][k·d_v + j]. Mean ablation puts that mean, times the head's rows of W_O, in place of the head's output";

export function headMeans(layers, E, windows, { n, d, positionScale, B = 16 }) {
  const sums = [];
  let rows = 0;
  for (let s = 0; s < windows.length; s += B) {
    const batch = makeBatch(windows.slice(s, s + B), n, d, E, positionScale);
    const T = batch.x.shape[0] * n;
    const { traces } = forwardLayers(layers, batch.x, { trace: true });
    traces.forEach((heads, L) => {
      const dV = heads[0].output.shape.at(-1);
      sums[L] ??= new Float64Array(heads.length * dV);
      heads.forEach((hd, k) => {
        for (let t = 0; t < T; ++t) for (let j = 0; j < dV; ++j) sums[L][k * dV + j] += hd.output.data[t * dV + j];
      });
    });
    rows += T;
  }
  return sums.map((s) => Array.from(s, (v) => v / rows));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const dir = path.join(DATA_DIR, 'model');
  const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf8'));
  const tensors = unpackTensors(fs.readFileSync(path.join(dir, 'model.bin')), manifest);
  const { pattern, merges } = JSON.parse(fs.readFileSync(path.join(dir, 'tokenizer.json'), 'utf8'));
  const m = manifest.model;
  const { held } = loadTrainingData({
    vocab: m.classes,
    n: m.n,
    heldOutWindows: manifest.heldOut.windows,
    spec: { pattern, merges },
  });
  const attn = await createAttention({ threads: 1 });
  const model = createModel(attn, { d: m.dModel, heads: m.heads, layers: m.layers, tensors });
  manifest.heldOut.headMeans = {
    definition: HEAD_MEANS_DEFINITION,
    layers: headMeans(model.layers, model.p.embed, held, { n: m.n, d: m.dModel, positionScale: m.positionScale }),
  };
  for (const l of model.layers) l.dispose();
  attn.dispose();
  fs.writeFileSync(path.join(dir, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  console.log(
    `wrote heldOut.headMeans (${held.length} windows) into ${path.relative(process.cwd(), dir)}/manifest.json`,
  );
}
