// Knock-out, the heads ranked by what they cause, and attribution on the trained model, for the
// page's panel (knockout_panel.js) and window.attentionPage (debug_hook.js): the same numbers on
// both.
//
//   checkAt(state, at, where) -> at, or throws an Error a person can act on (no trained model, at
//     not a token of the sentence)
//   checkKnockOut(state, knockOut, where) -> [[head indices] per layer], or throws: knockOut is
//     [{ layer, head }] 0-based, numbered as the model view's tiles (layer 1 head 1 is { 0, 0 })
//   checkAblation(ablation, where) -> 'zero' | 'mean', or throws
//   predictAt(state, { at, knockOut, ablation, k }) -> { at, base, knocked }: the k (10) most
//     likely next tokens after token `at`, [{ word, p, c, logit }] best first, with every head
//     (base) and with the heads in knockOut ablated (knocked): 'zero' sets their outputs to 0,
//     'mean' to their mean over the held-out windows (heldOutMeans). Both layers rerun through the
//     library: layer 2 reads a residual stream with the layer-1 heads ablated. Nothing of the
//     state changes.
//   attributionAt(state, { at, word }) -> { at, word, c, against, r, parts, logit, diff, total }:
//     logit(c) − logit(r) after token `at` split into its parts (model/knockout.js logitParts):
//     c the predicted word, or `word` when given (a word of the model's output), r the most likely
//     word other than c (the runner-up); diff the model's own difference, total the parts' sum
//   heldOutMeans(state) -> [(h·d_v) per layer]: each head's mean output (before W_O) over the
//     held-out windows of the model's corpus, as the manifest ships them (heldOut.headMeans,
//     written by scripts/train/head_means.mjs); throws when the manifest has none
//   copyCase(state) -> { source: 'text' | 'twice', n, x, targets: [{ at, c }] }: the positions
//     where the next token can be copied, and that token c: on a text S + " " + S, model/copying.js'
//     copyPositions from the second copy on (the positions deliverable 2's figures use); on any
//     other text, every token i with an earlier j + 1 < i where ids[j] = ids[i] and ids[j + 1] =
//     ids[i + 1]; at most COPY_LIMIT of them, evenly spaced. On a text with none, its first
//     tokens written twice (source 'twice', x its X)
//   headEffects(state) -> { source, copy, copyPositions, copyTargets, at, predicted, heads,
//     induction, inductionCopy }: what knocking each head out alone does, with both ablations,
//     made once per text:
//       copy: the mean probability of the copy at copyCase's positions with every head;
//       copyTargets: [{ at, word }] those positions and the token each would copy (at: of the
//         text written twice when source is 'twice');
//       predicted: { word, c, p } the top guess after the followed token `at`;
//       heads: [{ layer, head, zero: { copy, p }, mean: { copy, p } }] the copy probability and
//         p(predicted word) with that head ablated;
//       induction: [{ layer, head }] the induction heads, named by effect (inductionNames);
//       inductionCopy: { zero, mean } the copy probability with all of them ablated together
//   inductionNames(heads, copy) -> the heads after layer 1 (an induction head reads what an
//     earlier layer's previous-token head wrote) whose mean ablation alone removes at least
//     NAMED_SHARE of the copy probability, largest first; else the one that removes most
import { drive, runModelGen } from './compute.js';
import { ablatedWeights, logitParts, readout, residualParts } from './model/knockout.js';
import { copyPositions, secondCopy } from './model/copying.js';
import { embedTokens, feedForward, forwardHead, headParams, topK } from './model/lm.js';
import { sinusoidalPositions } from './positions.js';

export const TOP = 10;
export const NAMED_SHARE = 0.2;

function trainedOf(state, where) {
  const t = state.ctx?.trained;
  if (!t)
    throw new Error(
      `${where}: the trained model is not shown (choose Trained weights and a sentence: the worked example and the Identity and Random presets have no next-word guesses)`,
    );
  return t;
}

export function checkAt(state, at, where) {
  trainedOf(state, where);
  const n = state.ctx.n;
  if (!Number.isInteger(at) || at < 0 || at >= n)
    throw new Error(
      `${where}: at is ${JSON.stringify(at)}, but the sentence has ${n} token${n === 1 ? '' : 's'}: give an integer from 0 to ${n - 1}`,
    );
  return at;
}

export function checkKnockOut(state, knockOut, where) {
  const t = trainedOf(state, where);
  const layers = t.layers.length,
    heads = t.layers[0].heads;
  const byLayer = Array.from({ length: layers }, () => []);
  if (knockOut === undefined || knockOut === null) return byLayer;
  if (!Array.isArray(knockOut))
    throw new Error(`${where}: knockOut must be a list of { layer, head } (0-based), not ${typeof knockOut}`);
  for (const e of knockOut) {
    const ok =
      e &&
      Number.isInteger(e.layer) &&
      Number.isInteger(e.head) &&
      e.layer >= 0 &&
      e.layer < layers &&
      e.head >= 0 &&
      e.head < heads;
    if (!ok)
      throw new Error(
        `${where}: knockOut has ${JSON.stringify(e)}; each entry is { layer, head } with layer 0 to ${layers - 1} and head 0 to ${heads - 1} (layer 1 head 1 of the model view is { layer: 0, head: 0 })`,
      );
    if (!byLayer[e.layer].includes(e.head)) byLayer[e.layer].push(e.head);
  }
  return byLayer;
}

export function checkAblation(ablation, where) {
  if (ablation === undefined) return 'zero';
  if (ablation !== 'zero' && ablation !== 'mean')
    throw new Error(
      `${where}: ablation is ${JSON.stringify(ablation)}; give 'zero' (a knocked-out head adds nothing) or 'mean' (it adds its mean output over held-out text)`,
    );
  return ablation;
}

// Per model: the output tokens' vectors (V,d) (the token embeddings, tied), each token's index
// by its piece, the head means.
const perModel = new WeakMap();
function modelCache(state) {
  if (!perModel.has(state.model)) {
    const { tensors, vocab } = state.model;
    perModel.set(state.model, {
      words: tensors.embed.data,
      index: new Map(vocab.map((w, c) => [w, c])),
      means: null,
    });
  }
  return perModel.get(state.model);
}

// H (n,d) rows -> logits (rows.length, V)
function logitsAt(state, H, rows) {
  const d = state.model.dim,
    V = state.model.vocab.length;
  const h = new Float32Array(rows.length * d);
  rows.forEach((i, r) => h.set(H.subarray(i * d, (i + 1) * d), r * d));
  return forwardHead(headParams(state.model.tensors), h, rows.length, d, V).logits;
}

function softmaxAt(logits, r, V, c) {
  let max = -Infinity;
  for (let k = 0; k < V; ++k) max = Math.max(max, logits[r * V + k]);
  let z = 0;
  for (let k = 0; k < V; ++k) z += Math.exp(logits[r * V + k] - max);
  return Math.exp(logits[r * V + c] - max) / z;
}

const guesses = (state, H, at, k) => {
  const V = state.model.vocab.length;
  const logits = logitsAt(state, H, [at]);
  return topK(logits, 0, V, k).map(({ c, p }) => ({ word: state.model.vocab[c], p, c, logit: logits[c] }));
};

export function heldOutMeans(state) {
  const cache = modelCache(state);
  if (cache.means) return cache.means;
  const means = state.model.manifest.heldOut?.headMeans?.layers;
  if (!means)
    throw new Error(
      "mean ablation: the model's manifest has no heldOut.headMeans (run node scripts/train/head_means.mjs after training)",
    );
  cache.means = means.map((l) => Float64Array.from(l));
  return cache.means;
}

// The model rerun on x with the heads of byLayer ablated -> H (n,d) of the last layer. On the
// text's own X, the layers before the first ablated one are the text's run (t.hs): not rerun.
function runAblated(state, x, byLayer, ablation) {
  const t = state.ctx.trained;
  const means = ablation === 'mean' ? heldOutMeans(state) : null;
  const first =
    x === t.hs[0]
      ? Math.max(
          0,
          byLayer.findIndex((l) => l.length),
        )
      : 0;
  const layers = t.layers.slice(first).map((l, k) => {
    const { w, add } = ablatedWeights(l.w, l.heads, byLayer[first + k], means?.[first + k]);
    return { heads: l.heads, w, add };
  });
  return drive(runModelGen(state.attn, layers, first ? t.hs[first] : x)).hs.at(-1).data;
}

export function predictAt(state, { at, knockOut = [], ablation, k = TOP } = {}) {
  const where = 'predict';
  checkAt(state, at, where);
  const byLayer = checkKnockOut(state, knockOut, where);
  const mode = checkAblation(ablation, where);
  const t = state.ctx.trained;
  const base = guesses(state, t.hs.at(-1).data, at, k);
  if (byLayer.every((l) => !l.length)) return { at, base, knocked: base };
  return { at, base, knocked: guesses(state, runAblated(state, t.hs[0], byLayer, mode), at, k) };
}

export function attributionAt(state, { at, word } = {}) {
  const where = 'attribution';
  checkAt(state, at, where);
  const { vocab, tensors } = state.model;
  const t = state.ctx.trained;
  const d = state.model.dim,
    V = vocab.length;
  const H = t.hs.at(-1).data;
  const logits = logitsAt(state, H, [at]);
  const [first, second] = topK(logits, 0, V, 2);
  let c = first.c;
  if (word !== undefined) {
    c = modelCache(state).index.get(word) ?? -1;
    if (c < 0)
      throw new Error(
        `${where}: word is ${JSON.stringify(word)}, which is not one of the model's ${V} output tokens (predict() lists the likely ones)`,
      );
  }
  const r = c === first.c ? second.c : first.c;
  const p = headParams(tensors);
  const { words } = modelCache(state);
  // F − H at `at`: what the feed-forward block adds (none without one)
  const h = H.subarray(at * d, (at + 1) * d);
  const ff = p.w1 ? feedForward(p, h, 1, d).f.map((v, i) => v - h[i]) : new Float32Array(d);
  const parts = logitParts(
    residualParts({
      hs: t.hs,
      concats: t.concats,
      wos: t.layers.map((l) => l.w.wo),
      heads: t.layers[0].heads,
      dV: t.layers[0].w.wo.shape[0] / t.layers[0].heads,
      ff,
      at,
    }),
    readout(p, words, c, d),
    readout(p, words, r, d),
    { c: p.bout[c], r: p.bout[r] },
  );
  return {
    at,
    word: vocab[c],
    c,
    against: vocab[r],
    r,
    parts,
    logit: logits[c],
    diff: logits[c] - logits[r],
    total: parts.reduce((s, x) => s + x.diff, 0),
  };
}

// At most COPY_LIMIT positions, evenly spaced: each knock-out reads the output layer (V·d_model
// products a position) at every one, seventeen times, so a long text's copy is measured on a sample.
export const COPY_LIMIT = 32;
const spread = (list) =>
  list.length <= COPY_LIMIT
    ? list
    : Array.from({ length: COPY_LIMIT }, (_, k) => list[Math.floor((k * list.length) / COPY_LIMIT)]);

// ids -> [{ at, c }]: every i with an earlier j + 1 < i where ids[j] = ids[i], ids[j+1] = ids[i+1]
function repeatsOf(ids) {
  const out = [];
  for (let i = 2; i + 1 < ids.length; ++i)
    for (let j = i - 2; j >= 0; --j)
      if (ids[j] === ids[i] && ids[j + 1] === ids[i + 1]) {
        out.push({ at: i, c: ids[i + 1] });
        break;
      }
  return out;
}

export function copyCase(state) {
  const ctx = state.ctx;
  const tokens = state.input.tokens;
  const ids = tokens.map((t) => t.id);
  const half = (ctx.text.length - 1) / 2;
  const twice = Number.isInteger(half) && ctx.text.slice(0, half) === ctx.text.slice(half + 1);
  const from = twice ? secondCopy(ctx.text, tokens) : -1;
  const targets = from > 0 ? copyPositions(ids, from).map(({ at, target }) => ({ at, c: target })) : repeatsOf(ids);
  if (targets.length) return { source: 'text', n: ctx.n, x: ctx.trained.hs[0], targets: spread(targets) };
  // The text's first m tokens written twice, with the positions of 2m tokens.
  const m = Math.min(ctx.n, Math.floor(state.model.manifest.model.n / 2));
  const ids2 = [...ids.slice(0, m), ...ids.slice(0, m)];
  const d = state.model.dim;
  const P = sinusoidalPositions(2 * m, d).map((v) => v * state.model.manifest.model.positionScale);
  return {
    source: 'twice',
    n: 2 * m,
    x: { data: embedTokens(state.model.tensors.embed.data, ids2, d, P), shape: [2 * m, d] },
    targets: copyPositions(ids2, m).map(({ at, target }) => ({ at, c: target })),
  };
}

const copyProbability = (state, H, targets) => {
  const V = state.model.vocab.length;
  const logits = logitsAt(
    state,
    H,
    targets.map((t) => t.at),
  );
  return targets.reduce((s, t, r) => s + softmaxAt(logits, r, V, t.c), 0) / Math.max(1, targets.length);
};

export function inductionNames(heads, copy) {
  const removed = (h) => (copy > 0 ? (copy - h.mean.copy) / copy : 0);
  const later = heads.filter((h) => h.layer > 0).sort((a, b) => removed(b) - removed(a));
  const named = later.filter((h) => removed(h) >= NAMED_SHARE);
  return (named.length ? named : later.slice(0, 1)).map(({ layer, head }) => ({ layer, head }));
}

// Per text (state.ctx): the reruns with heads ablated, by key, and the copy probability with
// every head; and the latest headEffects.
const runsOf = new WeakMap();
const effectsOf = new WeakMap();
export function headEffects(state) {
  const ctx = state.ctx;
  trainedOf(state, 'headEffects');
  const at = state.settings.focus;
  const cached = effectsOf.get(ctx);
  if (cached && cached.at === at) return cached;
  const kase = copyCase(state);
  const V = state.model.vocab.length;
  const t = ctx.trained;
  if (!runsOf.has(ctx)) runsOf.set(ctx, { runs: new Map(), baseCopy: null });
  const perText = runsOf.get(ctx);
  const { runs } = perText;
  // H of the text and of the copy case (the same run when the copy case is the text)
  const ran = (key, byLayer, mode) => {
    if (!runs.has(key))
      runs.set(key, {
        text: runAblated(state, t.hs[0], byLayer, mode),
        copy: kase.source === 'text' ? null : runAblated(state, kase.x, byLayer, mode),
      });
    const r = runs.get(key);
    // the copy probability of this run, computed once per text (it does not depend on `at`)
    r.copyP ??= copyProbability(state, r.copy ?? r.text, kase.targets);
    return r;
  };
  const copy =
    kase.source === 'text'
      ? (perText.baseCopy ??= copyProbability(state, t.hs.at(-1).data, kase.targets))
      : ran('base', [[], []], 'zero').copyP;
  const [best] = topK(logitsAt(state, t.hs.at(-1).data, [at]), 0, V, 1);
  const predicted = { word: state.model.vocab[best.c], c: best.c, p: best.p };
  const pAt = (H) => softmaxAt(logitsAt(state, H, [at]), 0, V, best.c);
  const heads = t.layers.flatMap((l, L) =>
    Array.from({ length: l.heads }, (_, k) => {
      const byLayer = t.layers.map((_, M) => (M === L ? [k] : []));
      const effect = (mode) => {
        const r = ran(`${L},${k},${mode}`, byLayer, mode);
        return { copy: r.copyP, p: pAt(r.text) };
      };
      return { layer: L, head: k, zero: effect('zero'), mean: effect('mean') };
    }),
  );
  const induction = inductionNames(heads, copy);
  const byLayer = t.layers.map((_, L) => induction.filter((h) => h.layer === L).map((h) => h.head));
  const jointly = (mode) => ran(`induction,${mode}`, byLayer, mode).copyP;
  const result = {
    at,
    source: kase.source,
    copy,
    copyPositions: kase.targets.length,
    copyTargets: kase.targets.map(({ at: i, c }) => ({ at: i, word: state.model.vocab[c] })),
    predicted,
    heads,
    induction,
    inductionCopy: { zero: jointly('zero'), mean: jointly('mean') },
  };
  effectsOf.set(ctx, result);
  return result;
}
