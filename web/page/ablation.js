// Knock-out and attribution on the trained model, for the page's panel (knockout_panel.js) and
// window.attentionPage (debug_hook.js): the same numbers on both.
//
//   checkAt(state, at, where) -> at, or throws an Error a person can act on (no trained model, at
//     not a token of the sentence)
//   checkKnockOut(state, knockOut, where) -> [[head indices] per layer], or throws: knockOut is
//     [{ layer, head }] 0-based, numbered as the model view's tiles (layer 1 head 1 is { 0, 0 })
//   predictAt(state, { at, knockOut, ablation, k }) -> { at, base, knocked }: the k (10) most
//     likely next tokens after token `at`, [{ word, p }] best first (word: the token's piece),
//     with every head (base) and with the heads in knockOut zeroed (knocked; ablation: 'zero',
//     the one kind there is). A knocked-out head's W_O rows are 0 (model/knockout.js), so
//     both layers rerun through the library: layer 2 reads a residual stream without the layer-1
//     heads knocked out. Nothing of the state changes.
//   attributionAt(state, at) -> { at, word, c, heads: [{ layer, head, logit }], input, bias,
//     logit, total } for the word the model predicts after token `at` (model/knockout.js)
import { drive, runModelGen } from './compute.js';
import { attribution, knockedOutWeights } from './model/knockout.js';
import { forwardHead, headParams, topK } from './model/lm.js';

export const TOP = 10;

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

// The output classes' vectors (V,d): the token embeddings (tied)
const outputVectors = (state) => state.model.tensors.embed.data;

const guesses = (state, H, at, k) => {
  const { tensors, vocab } = state.model;
  const d = state.model.dim,
    V = vocab.length;
  const { logits } = forwardHead(headParams(tensors), H.subarray(at * d, (at + 1) * d), 1, d, V);
  return topK(logits, 0, V, k).map(({ c, p }) => ({ word: vocab[c], p, c, logit: logits[c] }));
};

export function predictAt(state, { at, knockOut = [], ablation = 'zero', k = TOP } = {}) {
  const where = 'predict';
  checkAt(state, at, where);
  if (ablation !== 'zero') throw new Error(`${where}: ablation is ${JSON.stringify(ablation)}; give 'zero'`);
  const byLayer = checkKnockOut(state, knockOut, where);
  const t = state.ctx.trained;
  const base = guesses(state, t.hs.at(-1).data, at, k);
  if (byLayer.every((l) => !l.length)) return { at, base, knocked: base };
  const layers = t.layers.map((l, L) => ({ heads: l.heads, w: knockedOutWeights(l.w, l.heads, byLayer[L]) }));
  const { hs } = drive(runModelGen(state.attn, layers, t.hs[0]));
  return { at, base, knocked: guesses(state, hs.at(-1).data, at, k) };
}

export function attributionAt(state, at) {
  checkAt(state, at, 'attribution');
  const t = state.ctx.trained;
  const { tensors } = state.model;
  const words = outputVectors(state);
  const [best] = guesses(state, t.hs.at(-1).data, at, 1);
  const parts = attribution({
    p: headParams(tensors),
    words,
    hs: t.hs,
    concats: t.concats,
    wos: t.layers.map((l) => l.w.wo),
    heads: t.layers[0].heads,
    dV: t.layers[0].w.wo.shape[0] / t.layers[0].heads,
    at,
    c: best.c,
  });
  return { at, word: best.word, c: best.c, p: best.p, ...parts };
}
