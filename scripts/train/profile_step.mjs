// npm run train-model:profile: where a training step's time goes, for the page's live training
// (one thread, batches of 8, as train_worker.js) and for `npm run train-model` (threads 'auto',
// batches of 10), both on the page's training excerpt with the shipped model's settings.
// Prints the median ms per step and by part (train.js' trainStep timings, plus makeBatch), steps/s
// from the median step, and a hash of the losses: the same hash before and after a change means
// bitwise the same training. CPU ms per step (process.cpuUsage, every thread of the process)
// changes less than the wall clock with the machine's other work.
// Environment: PROFILE_STEPS (timed steps per setting, default 60; 5 more untimed first).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createAttention } from '../../web/lib/index.js';
import { splitAddresses, tokenizeDocs } from '../../web/page/model/corpus_text.js';
import { createTrainer, manifestOptions } from '../../web/page/model/trainer.js';
import { modelFromFiles } from '../../web/page/model/weights.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const data = path.join(ROOT, 'web/page/data');
const STEPS = Number(process.env.PROFILE_STEPS ?? 60);
const SETTINGS = [
  { name: 'page (Worker): 1 thread, batch 8', threads: 1, batch: 8 },
  { name: 'train-model: threads auto, batch 10', threads: 'auto', batch: 10 },
  { name: 'train-model batch 10 on 1 thread', threads: 1, batch: 10 },
];

const read = (name) => fs.readFileSync(path.join(data, 'model', name));
const { manifest, tensors, tokenizer, vocab } = modelFromFiles(
  JSON.parse(read('manifest.json')),
  read('model.bin'),
  JSON.parse(read('tokenizer.json')),
);
const docs = tokenizeDocs(
  splitAddresses(fs.readFileSync(path.join(data, 'corpus/sotu-excerpt.txt'), 'utf8')),
  tokenizer,
);

// FNV-1a over the losses' float64 bytes
function hashLosses(losses) {
  const bytes = new Uint8Array(Float64Array.from(losses).buffer);
  let h = 0x811c9dc5;
  for (const b of bytes) h = Math.imul(h ^ b, 0x01000193) >>> 0;
  return h.toString(16).padStart(8, '0');
}

for (const { name, threads, batch } of SETTINGS) {
  const attn = await createAttention({ threads });
  const trainer = createTrainer(attn, { vocab, docs, batch, ...manifestOptions(manifest, tensors) });
  const losses = [];
  for (let i = 0; i < 5; ++i) losses.push(trainer.step(manifest.training.lr));
  // per step: its parts' ms; the medians stand up to the other work of a shared machine
  const samples = [];
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < STEPS; ++i) {
    const timings = {};
    const t = performance.now();
    losses.push(trainer.step(manifest.training.lr, timings));
    timings.step = performance.now() - t;
    samples.push(timings);
  }
  const { user, system } = process.cpuUsage(cpu0);
  const cpu = (user + system) / 1000 / STEPS;
  const median = (part) => {
    const xs = samples.map((x) => x[part] ?? 0).sort((a, b) => a - b);
    return (xs[(xs.length - 1) >> 1] + xs[xs.length >> 1]) / 2;
  };
  const step = median('step');
  console.log(
    `${name}: median ${step.toFixed(1)} ms per step, ${(1000 / step).toFixed(2)} steps/s; CPU ${cpu.toFixed(1)} ms per step (all threads)`,
  );
  const parts = Object.keys(samples[0])
    .filter((k) => k !== 'step')
    .map((k) => [k, median(k)])
    .sort((a, b) => b[1] - a[1]);
  for (const [part, ms] of parts) console.log(`  ${ms.toFixed(2).padStart(7)} ms  ${part}`);
  console.log(`  losses ${losses.length}, hash ${hashLosses(losses)}, last ${losses.at(-1)}`);
  trainer.dispose();
  attn.dispose();
}
