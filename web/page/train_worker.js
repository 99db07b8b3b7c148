// The page's live training, in a module Worker so that the page stays responsive: the package
// (one thread: the single-thread build, which loads with or without cross-origin isolation), the
// trained model's files (its tokenizer and embeddings among them) and the training text, then model/trainer.js one step
// at a time, yielding between steps so that messages (pause, learning rate) are read.
//
// Page -> worker:
//   { type: 'start', id, from: 'induction'|'random'|'trained', text: null (the shipped excerpt) | string,
//     lr, sentence, run }    a fresh run (also Reset): new weights, Adam and sampler; trains when
//                            run; every message back carries `run: id`. 'induction': the
//                            trained model with layer 2 from random weights, only it learning
//                            (trainer.js INDUCTION_RUN)
//   { type: 'run' } / { type: 'pause' }     resume or pause the steps
//   { type: 'lr', lr }                      the learning rate of the next steps
//   { type: 'sentence', sentence }          the page's sentence: its heads are sent back
//   { type: 'knockout', heads }             [{ layer, head }] knocked out for the copy probability
// Worker -> page:
//   { type: 'ready', tokens, documents, from, text }   a run is set up (training text's size)
//   { type: 'step', step, loss, perSecond, seconds, induction, heads }  after each step; perSecond
//       over the last 10; seconds: the run's training time so far (pauses left out);
//       induction: { score, layer, head } the largest induction score of any head on the sentence
//       repeated (head_stats.js' repeatedSentence), or null without a sentence; heads: every
//       head's induction score there (layers·heads, in heads' order), or null
//   { type: 'scores', step, seconds, prefix, copying }   at most once a second while training
//       (and after set-up and a pause): every head's prefix-matching and copying scores
//       (trainer.js scores) on PROBE_SPAN random vocabulary words written twice, the same words
//       for the whole run (seeded), so that neither depends on the sentence's own words
//   { type: 'heads', step, labels, n, layers, heads, weights, copy }   every head's (n,n) weights
//       on the sentence written twice (as the induction score reads it), weights (layers·heads·n·n): after set-up, a new sentence, a pause, a new
//       knock-out, and at most once a second while training; copy: { all, knocked, knockOut, seconds }, the
//       mean probability of the copy on the repeated sentence (trainer.js copyProbability) with
//       every head and with the knocked-out ones (null when none is), or null
//   { type: 'paused', step }   no step runs until the next 'run' or 'start'
//   { type: 'error', message }
import { createAttention } from '../lib/index.js';
import { splitAddresses, tokenizeDocs } from './model/corpus_text.js';
import { repeatedSentence, repeatedSpan } from './model/head_stats.js';
import { INDUCTION_RUN, createTrainer, manifestOptions } from './model/trainer.js';
import { randomWords } from './model/train.js';
import { seededRandom } from '../lib/index.js';
import { loadModelFiles } from './model/weights.js';
import { pieceLabel, tokenize } from './tokenize.js';

const HEADS_EVERY_MS = 1000;
const PROBE_SPAN = 10; // the random word tokens the prefix-matching and copying scores are measured on
const PROBE_SEED = 9001;
let runId = null; // the page's id of the current run, on every message back (stale ones it drops)
const post = (msg, transfer) => self.postMessage({ ...msg, run: runId }, transfer ?? []);

let assets; // Promise of { attn, model }, loaded once
let excerpt; // Promise of the shipped excerpt's tokenized documents, loaded once
let run = null; // { trainer, gen, model }
let generation = 0;
let running = false;
let lr = 3e-3;
let sentence = [];
let repeated = null; // the sentence's token ids, repeated, for the induction score
let shown = { norms: [], labels: [] }; // the token ids the heads are sent on (`repeated`, or the sentence's) and their labels
let lastHeads = 0;
let knockOut = []; // [{ layer, head }]: the heads knocked out for the copy probability
let probe = null; // PROBE_SPAN random word tokens twice (token ids)
let trainedMs = 0; // the run's training time: wall-clock time while running (steps, measurements, yields), pauses left out
let lastTick = 0;
const stepEnds = [];

function loadAssets() {
  assets ??= Promise.all([
    createAttention({ threads: 1 }),
    loadModelFiles(new URL('./data/model/', import.meta.url)),
  ]).then(([attn, model]) => ({ attn, model }));
  return assets;
}

async function loadExcerpt(tokenizer) {
  excerpt ??= fetch(new URL('./data/corpus/sotu-excerpt.txt', import.meta.url)).then(async (res) => {
    if (!res.ok) throw new Error(`training text: ${res.status} ${res.statusText}`);
    return tokenizeDocs(splitAddresses(await res.text()), tokenizer);
  });
  return excerpt;
}

// Every head's prefix-matching and copying scores on the probe (trainer.js scores).
function sendScores() {
  if (!run) return;
  const { prefix, copying } = run.trainer.scores(probe);
  post({ type: 'scores', step: run.trainer.steps, seconds: trainedMs / 1000, prefix, copying });
}

function sendHeads() {
  lastHeads = performance.now();
  if (run) sendScores();
  if (!run || !sentence.length) return;
  const { model } = run;
  const h = run.trainer.heads(shown.norms);
  const copy = repeated && {
    all: run.trainer.copyProbability(repeated),
    knocked: knockOut.length ? run.trainer.copyProbability(repeated, knockOut) : null,
    knockOut,
    seconds: trainedMs / 1000,
  };
  post(
    {
      type: 'heads',
      copy,
      step: run.trainer.steps,
      labels: shown.labels,
      n: h.n,
      layers: model.manifest.model.layers,
      heads: model.manifest.model.heads,
      weights: h.weights,
    },
    [h.weights.buffer],
  );
}

async function setSentence(text) {
  const { model } = await loadAssets();
  const tokens = tokenize(String(text ?? ''), model.tokenizer);
  const n = model.manifest.model.n;
  sentence = tokens.slice(0, n);
  const norms = tokens.map((t) => t.id),
    texts = tokens.map((t) => pieceLabel(t.text));
  const pieces = tokens.map((t) => t.text);
  const twice = tokens.length ? repeatedSentence(norms, n, pieces) : [];
  repeated = repeatedSpan(twice) ? twice : null; // a one-word sentence has no induction score
  // The grid shows the sentence as the induction score reads it: written twice (a text twice
  // whose copies start with different tokens, "T|h|e" and " The": its second copy twice; else its
  // first n/2 tokens twice when longer), where an induction head's diagonal can form; else as typed.
  shown = repeated
    ? { norms: repeated, labels: repeatedSentence(texts, n, pieces) }
    : { norms: norms.slice(0, n), labels: texts.slice(0, n) };
  sendHeads();
}

// Every head's induction score on the repeated sentence and the best one, or nulls.
function induction() {
  if (!run || !repeated) return { best: null, scores: null };
  const scores = run.trainer.induction(repeated);
  const k = scores.reduce((best, v, j) => (v > scores[best] ? j : best), 0);
  const heads = run.model.manifest.model.heads;
  return { best: { score: scores[k], layer: Math.floor(k / heads), head: k % heads }, scores };
}

async function start({ id, from, text, lr: rate, sentence: text2, run: go }) {
  const gen = ++generation;
  runId = id;
  running = false;
  run?.trainer.dispose();
  run = null;
  lr = rate;
  const { attn, model } = await loadAssets();
  const docs = text == null ? await loadExcerpt(model.tokenizer) : tokenizeDocs([text], model.tokenizer);
  if (gen !== generation) return; // a newer start came while this one loaded
  const options = manifestOptions(model.manifest, model.tensors); // as the shipped model was trained
  const trainer = createTrainer(attn, {
    vocab: model.vocab,
    docs,
    tensors: from === 'random' ? null : model.tensors,
    seed: 1,
    ...options,
    ...(from === 'induction' && INDUCTION_RUN),
    // from the trained weights, the repeated spans' share where the shipped run ended: its
    // schedule's start (every window repeated) is for forming the head, which these weights have
    repeat:
      from === 'induction'
        ? INDUCTION_RUN.repeat
        : from === 'trained' && options.repeat
          ? { ...options.repeat, from: options.repeat.share, hold: 0, over: 0 }
          : options.repeat,
  });
  run = { trainer, gen, model };
  stepEnds.length = 0;
  trainedMs = 0;
  if (!probe) {
    const ids = Array.from(randomWords(model.vocab, seededRandom(PROBE_SEED))(PROBE_SPAN));
    probe = [...ids, ...ids];
  }
  post({ type: 'ready', tokens: trainer.tokens, documents: docs.length, from, text: text == null ? 'excerpt' : 'own' });
  await setSentence(text2);
  if (go) resume();
  else post({ type: 'paused', step: 0 });
}

function resume() {
  if (!run || running) return;
  running = true;
  lastTick = performance.now();
  loop(run.gen).catch(fail);
}

function fail(e) {
  running = false;
  post({ type: 'error', message: e.message });
}

async function loop(gen) {
  while (running && run && run.gen === gen) {
    const loss = run.trainer.step(lr);
    const { best, scores } = induction();
    const now = performance.now();
    trainedMs += now - lastTick;
    lastTick = now;
    stepEnds.push(now);
    if (stepEnds.length > 10) stepEnds.shift();
    const span = now - stepEnds[0];
    post({
      type: 'step',
      step: run.trainer.steps,
      loss,
      perSecond: stepEnds.length > 1 && span > 0 ? ((stepEnds.length - 1) * 1000) / span : 0,
      seconds: trainedMs / 1000,
      induction: best,
      heads: scores,
    });
    if (now - lastHeads >= HEADS_EVERY_MS) sendHeads();
    await new Promise((r) => setTimeout(r, 0)); // let 'pause', 'lr' and 'sentence' in
  }
}

const handlers = {
  start,
  run: resume,
  pause() {
    running = false;
    stepEnds.length = 0;
    sendHeads();
    post({ type: 'paused', step: run?.trainer.steps ?? 0 });
  },
  lr(msg) {
    lr = msg.lr;
  },
  knockout(msg) {
    knockOut = msg.heads;
    sendHeads();
  },
  sentence(msg) {
    return setSentence(msg.sentence);
  },
};

self.addEventListener('message', async ({ data }) => {
  try {
    await handlers[data.type]?.(data);
  } catch (e) {
    fail(e);
  }
});
