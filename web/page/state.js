// The page's state: the settings the controls chose, what the page computed from them, and the
// rules each action follows. No DOM here: app.js renders after each action.
//
//   createState(text)                  settings with their defaults; nothing loaded or computed
//   effectiveHeads(state), effectiveDK(state)    what runs (the worked example has its own)
//   change(state, patch) -> boolean    apply a settings patch; false when it changes nothing
//   recompute(state) -> boolean        input -> X -> forward -> backward -> steps; false: no tokens
//   recomputeBackward(state)           the backward for the followed token and the target
//   recomputeGen(state, attn), recomputeBackwardGen(state, attn)   the same as generators of
//                                      library calls (compute.js), for the worker form (offload.js)
//   goTo(state, i) -> boolean          move to step i (clamped); false when it stays
//   isRow(state, i)                    i is a token row of the current input
//   allTimings(state)                  the library calls behind what is shown
//
// The trained preset (projection 'trained', the default) runs the model of web/page/data/model/: causal, with
// positions, 4 heads; the steps show settings.layer (0 or 1), whose input is X₁ = E + P or the
// residual X₂ = X₁ + layer 1(X₁), and the output step adds the model's next-word guesses.
//
// The backward steps (part 'back') are for the loss L = ½‖y_i − x_j‖², with i the followed token
// (settings.focus) and j the target: a new followed token or target reruns only the backward.
import { drive, identity, runBackwardGen, runGen, runModelGen } from './compute.js';
import { prepareInput } from './input.js';
import { predictNext } from './model/predict.js';
import { layerWeights } from './model/weights.js';
import { repeatedSpan } from './model/head_stats.js';
import { copyAt, copyToken } from './induction.js';
import { headEffects, predictAt } from './ablation.js';
import { isWord } from './model/train.js';
import { buildSteps } from './steps/index.js';
import { WORKED } from './worked_example.js';

export function createState(text) {
  return {
    settings: {
      mode: 'sentence', // or 'worked'
      text,
      projection: 'trained', // or 'identity', or 'random'; 'trained': the shipped model
      layer: 0, // with 'trained': the layer the steps show (0 or 1)
      seed: 42,
      ...TRAINED_FIXED, // heads, dK, causal, scaling, positions: as the trained model runs
      head: 0, // the head that the steps qkv to weighted and dhead to dqk follow
      step: 0,
      focus: null, // the followed row (the loss's i); null: "it", or the first token
      target: null, // the loss's j; null: a default picked from the tokens (see defaultTarget)
      lr: 0.01, // the SGD learning rate
      compareA: '0,0', // the head comparison's heads A and B: 'layer,head' (head_compare.js)
      compareB: '1,0',
    },
    attn: null, // the library, once loaded
    model: null, // the trained model, once loaded: { manifest, tensors, tokenizer, vocab, dim } (model/weights.js);
    // its tokenizer and token embeddings give every preset its tokens and X (model.dim is d_model)
    loadMs: null, // { library, model }: how long each took to load
    input: null, // prepareInput's (input.js)
    ctx: null, // the current input and results (steps/index.js)
    steps: [], // buildSteps(ctx)
    sgd: null, // { weights, losses, rates, timings } after SGD steps on the current loss
    knockOut: [], // [{ layer, head }] 0-based: the trained model's heads knocked out (knockout_panel.js)
    ablation: 'zero', // how they are knocked out: 'zero' or 'mean' (ablation.js)
    attrWord: null, // { at, word }: the token the attribution explains at token `at`; else the predicted one
    untrained: { ...UNTRAINED }, // the settings Trained fixes, as they were before it: given back on leaving it
    version: 0, // increased after every render (window.attentionPage.version)
  };
}

export const effectiveHeads = ({ settings: s }) => (s.mode === 'worked' ? WORKED.heads : s.heads);
export function effectiveDK({ settings: s, model }) {
  if (s.mode === 'worked') return WORKED.dK;
  return s.projection === 'identity' || s.dK === null ? model.dim / s.heads : s.dK;
}

export function change(state, patch) {
  const s = state.settings;
  // A field's `change` on blur repeats what its `input` already applied: nothing to redo (and
  // redrawing the step list under a pointer that is clicking a step would swallow the click).
  if (Object.entries(patch).every(([k, val]) => s[k] === val)) return false;
  // A new mode starts on its first token (the worked example) or on "it" (a sentence).
  if ('mode' in patch && patch.mode !== s.mode) s.focus = patch.mode === 'worked' ? 0 : null;
  // New tokens: the target's index would point at another word; the followed token is found
  // again by its text (followAgain), not kept by its index.
  if ('mode' in patch || 'text' in patch) s.target = null;
  if ('text' in patch && patch.text !== s.text && s.mode === 'sentence' && !('mode' in patch)) {
    const tokens = state.input?.tokens ?? [];
    const t = tokens[s.focus];
    state.follow = t ? { norm: t.norm, nth: tokens.slice(0, s.focus).filter((u) => u.norm === t.norm).length } : null;
    s.focus = null;
  }
  // The trained model was trained causal, with positions and 4 heads: it runs only that way. The
  // settings it fixes are kept aside while it runs (a sentence with Trained weights) and given
  // back when another preset or the worked example takes over.
  const wasTrained = isTrained(state);
  const before = pick(s, Object.keys(UNTRAINED));
  Object.assign(s, patch);
  const nowTrained = isTrained(state);
  if (nowTrained && !wasTrained) state.untrained = before;
  if (nowTrained) Object.assign(s, TRAINED_FIXED);
  else if (wasTrained) Object.assign(s, state.untrained, pick(patch, Object.keys(UNTRAINED)));
  return true;
}

const pick = (o, keys) => Object.fromEntries(keys.filter((k) => k in o).map((k) => [k, o[k]]));

export const TRAINED_HEADS = 4;
// What Trained fixes, and the other presets' defaults for the same settings. The d_k field's
// null: d_model / heads.
const TRAINED_FIXED = { heads: TRAINED_HEADS, dK: null, causal: true, scaling: true, positions: true };
export const UNTRAINED = { heads: 4, dK: null, causal: false, scaling: true, positions: false };
export const isTrained = ({ settings: s }) => s.projection === 'trained' && s.mode !== 'worked';

// Row i's entry, computed when first read: the model's output layer costs n × V tokens × d_model,
// and the page shows one row's guesses at a time.
function lazyRows(n, rowOf) {
  const cache = new Map();
  return new Proxy([], {
    get(target, key) {
      if (key === 'length') return n;
      if (typeof key === 'string' && /^\d+$/.test(key) && Number(key) < n) {
        const i = Number(key);
        if (!cache.has(i)) cache.set(i, rowOf(i));
        return cache.get(i);
      }
      return Reflect.get(target, key);
    },
  });
}

// With the trained preset: both layers' residual stream and every row's next-word guesses.
function* runTrained(state, x, attn) {
  const { manifest, tensors } = state.model;
  const layers = Array.from({ length: manifest.model.layers }, (_, L) => ({
    heads: manifest.model.heads,
    w: layerWeights(tensors, L),
  }));
  const { hs, heads, concats, timings } = yield* runModelGen(attn, layers, x);
  const n = x.shape[0],
    d = x.shape[1];
  const last = hs[hs.length - 1].data;
  return {
    layers,
    hs,
    heads, // heads[L][k]: (n,n) softmax weights of layer L's head k
    concats, // concats[L] (n, h·d_v): layer L's heads' outputs before W_O
    timings,
    manifest,
    predictions: lazyRows(n, (i) => predictNext(state.model, last.subarray(i * d, (i + 1) * d), 1)[0]),
  };
}

export const recompute = (state) => drive(recomputeGen(state));

export function* recomputeGen(state, attn = state.attn) {
  const s = state.settings;
  state.input = prepareInput(s, state.model, isTrained(state) ? state.model.manifest.model.positionScale : 1);
  const input = state.input;
  if (!input) return false;
  const heads = effectiveHeads(state),
    dK = effectiveDK(state);
  const worked = s.mode === 'worked';
  s.head = Math.min(s.head, heads - 1);
  const trained = isTrained(state) ? yield* runTrained(state, input.x, attn) : null;
  if (trained) s.layer = Math.min(s.layer, trained.layers.length - 1);
  const x = trained ? trained.hs[s.layer] : input.x;
  const result = yield* runGen(attn, {
    x,
    heads,
    dK,
    weights: worked
      ? WORKED.weights
      : trained
        ? trained.layers[s.layer].w
        : s.projection === 'identity'
          ? identityWeights(input.x.shape[1])
          : null,
    seed: s.seed,
    causal: s.causal,
    scaling: s.scaling,
    head: s.head,
  });
  if (trained) result.timings.unshift(...trained.timings);
  const n = input.labels.length;
  const norms = input.tokens.map((t) => t.norm);
  const repeatedAnew = trained && state.ctx && state.ctx.text !== s.text && repeatedSpan(norms) !== null;
  if (s.focus === null && state.follow) s.focus = followAgain(input.tokens, state.follow);
  state.follow = null;
  if (s.focus === null)
    s.focus = Math.max(
      0,
      input.tokens.findIndex((t) => t.norm.trim().toLowerCase() === 'it'),
    );
  s.focus = Math.min(s.focus, n - 1);
  state.ctx = {
    worked,
    text: s.text,
    labels: input.labels,
    norms: input.tokens.map((t) => t.norm),
    n,
    dModel: input.x.shape[1],
    heads,
    dK,
    dV: dK,
    head: s.head,
    causal: s.causal,
    scaling: s.scaling,
    positions: s.positions && !worked && (!trained || s.layer === 0),
    projection: s.projection,
    seed: s.seed,
    e: input.e,
    p: input.p,
    x,
    result,
    back: null,
    layer: trained ? s.layer : null,
    trained,
  };
  // The induction heads named for this text by their knock-outs' effect on the copy, made when
  // first asked for (ablation.js headEffects; induction.js, the panel and the hook read them).
  if (trained) trained.inductionHeads = () => headEffects(state).induction;
  // A new text that is one text twice (Repeat): follow the word of the second copy whose copy
  // the model predicts most (where the knock-out and the induction note have something to show).
  if (repeatedAnew) s.focus = bestCopy(state, norms);
  yield* recomputeBackwardGen(state, attn);
  return true;
}

// The followed token of the text before, { norm, nth } (its piece and how many of the same came
// before it), found in the new tokens: the same occurrence, else the last one there is, else null
// (the default: "it", or the first token).
function followAgain(tokens, { norm, nth }) {
  const at = [];
  tokens.forEach((t, k) => t.norm === norm && at.push(k));
  return at.length ? at[Math.min(nth, at.length - 1)] : null;
}

const COPY_CANDIDATES = 64;

// norms: a text twice -> the token i of the second copy whose copied token (the token after its
// earlier occurrence) has the largest
// probability after i (of the first COPY_CANDIDATES repeated words: a long text's first ones); a
// word (not punctuation) when one is in the top 10 anywhere; else the token copyToken
// (induction.js) picks.
function bestCopy(state, norms) {
  let best = -1,
    bestP = 0,
    tried = 0;
  // at most COPY_CANDIDATES words tried (each is the output layer on one row: V·d_model products)
  for (let i = 0; i < norms.length && tried < COPY_CANDIDATES; ++i) {
    const j = copyAt(norms, i);
    if (j < 0 || !isWord(norms[j + 1])) continue;
    ++tried;
    const copied = norms[j + 1];
    const p = predictAt(state, { at: i }).base.find((g) => g.word === copied)?.p ?? 0;
    if (p > bestP) [best, bestP] = [i, p];
  }
  return best >= 0 ? best : Math.max(0, copyToken(norms, -1));
}

function identityWeights(dModel) {
  const eye = identity(dModel);
  return { wq: eye, wk: eye, wv: eye, wo: eye };
}

// The default target j for query i: the first token of the first other word of 4 letters or more
// (" an" of " an|im|al" for " it" in the example sentence), never a piece inside a word; else the
// first other token. A word's tokens: one that starts it (the first, one with a leading space, or
// one after a token without letters) and the letters-only tokens right after it.
function defaultTarget(state, i) {
  const pieces = state.input.tokens.map((t) => t.text);
  const starts = (k) => k === 0 || /^\s/u.test(pieces[k]) || !/\p{L}/u.test(pieces[k - 1]);
  const wordAt = (k) => {
    let w = pieces[k].trim();
    for (let m = k + 1; m < pieces.length && !starts(m) && /^\p{L}+$/u.test(pieces[m]); ++m) w += pieces[m];
    return w;
  };
  const word = pieces.findIndex((p, k) => k !== i && starts(k) && /^\p{L}{4,}$/u.test(wordAt(k)));
  if (word >= 0) return word;
  return state.ctx.n > 1 && i === 0 ? 1 : 0;
}

// Rebuilds the steps. Any SGD steps taken were for the previous loss and are dropped.
export const recomputeBackward = (state) => drive(recomputeBackwardGen(state));

export function* recomputeBackwardGen(state, attn = state.attn) {
  const { ctx, settings: s } = state;
  const i = s.focus;
  const j = s.target !== null && s.target < ctx.n ? s.target : defaultTarget(state, i);
  ctx.back = yield* runBackwardGen(attn, ctx.result, {
    x: ctx.x,
    heads: ctx.heads,
    dK: ctx.dK,
    causal: ctx.causal,
    head: ctx.head,
    query: i,
    target: j,
  });
  state.sgd = null;
  state.steps = buildSteps(ctx);
  s.step = Math.min(s.step, state.steps.length - 1); // a shared link may name a step past the last
}

export function goTo(state, i) {
  const next = Math.max(0, Math.min(state.steps.length - 1, i));
  if (next === state.settings.step || !state.steps.length) return false;
  state.settings.step = next;
  return true;
}

export const isRow = (state, i) => state.ctx !== null && Number.isInteger(i) && i >= 0 && i < state.ctx.n;

export const allTimings = ({ ctx, sgd }) =>
  ctx ? [...ctx.result.timings, ...(ctx.back?.timings ?? []), ...(sgd?.timings ?? [])] : [];
