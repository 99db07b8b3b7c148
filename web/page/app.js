// The tutorial page: state, wiring and rendering. Library calls live in compute.js, the steps in
// steps.js, drawing in heatmap.js.
//
// Flow: input (sentence or worked example) -> tokens -> X (n,d_model) -> compute.run -> steps ->
// the current step's heatmaps, the inspector (followed row) and the under-the-hood panel.
// The backward steps (12-18) add compute.runBackward for the loss L = ½‖y_i − x_j‖², with i the
// followed token and j the target: a new followed token or target reruns only that part.
//
// window.attentionPage, a debug hook for tests and the curious (read-only):
//   ready      Promise resolved after the first render (rejected when loading failed)
//   version    a counter, increased after every render (new input, setting, step or followed row)
//   state      a snapshot: { mode: 'sentence'|'worked', text, n, tokens: [{ text, norm, known }],
//              truncatedFrom (token count before the cap, or null), projection: 'identity'|'random',
//              seed, heads, dK, head (followed head, 0-based), causal, scaling, positions,
//              step (0-based), stepId, focus (followed row, 0-based; also the loss's i), target
//              (the loss's j, 0-based), loss, lr (the SGD learning rate), sgdLosses (the loss
//              before and after each SGD step taken, [] before the first), backend, isolated }
//   steps      [{ id, title, matrices: [{ name, shape: [rows, cols], data: number[] }] }] for all
//              eighteen steps: the exact float32 values each heatmap draws, row-major
//   timings    [{ call, detail, ms }]: the library calls behind the current input (forward,
//              backward, and the latest SGD step)
//   cellPoint(name, i, j) -> { x, y, w, h }: the viewport point of cell (i, j) of the current
//              step's heatmap `name`, scrolled into view (to hover it), and the cell's size
// Every heatmap is a <figure class="heatmap" data-name="…" data-shape="rows,cols">.
import { loadEmbeddings, sinusoidalPositions } from './embeddings.js';
import { tokenize } from './tokenize.js';
import { loadLibrary, identity, run, runBackward, sgdStep } from './compute.js';
import { buildSteps, stepKicker, STEP_LABELS } from './steps.js';
import { createHeatmap, hideTooltip } from './heatmap.js';
import { renderInspector } from './inspector.js';
import { markTarget, renderChips, setPressed } from './chips.js';
import { bindControls, bindStepKeys, syncControls } from './controls.js';
import { renderBuild, renderTimings } from './hood.js';
import { WORKED, handNote } from './worked_example.js';
import { esc, fmt, fmtShape, plural } from './format.js';

const MAX_TOKENS = 96;
const D_MODEL = 100;
const $ = (id) => document.getElementById(id);

const state = {
  mode: 'sentence',
  text: $('sentence').value,
  projection: 'identity',
  seed: 42,
  heads: 4,
  dK: 25,            // the d_k field, used with random projections
  dkTouched: false,  // false: the field follows 100 / heads
  causal: false,
  scaling: true,
  positions: false,
  head: 0,
  step: 0,
  focus: null,
  target: null,      // the loss's j; null: a default picked from the tokens (see defaultTarget)
  lr: 0.01,
};

let attn, emb, libraryMs, embeddingsMs;
let ctx = null;        // the current input and results (see steps.js)
let steps = [];
let heatmaps = [];     // [{ name, hm }] of the current step
let input = null;
let version = 0;
let renderMs = 0;
let sgd = null;        // { weights, losses, rates, timings } after SGD steps on the current loss

const effectiveDK = () => (state.mode === 'worked' ? WORKED.dK : state.projection === 'identity' ? D_MODEL / state.heads : state.dK);
const effectiveHeads = () => (state.mode === 'worked' ? WORKED.heads : state.heads);

// ---- input -> tokens and X -------------------------------------------------------------------
function prepareInput() {
  if (state.mode === 'worked') {
    return {
      labels: WORKED.tokens, unknown: WORKED.tokens.map(() => false),
      tokens: WORKED.tokens.map((t) => ({ text: t, norm: t, known: true })),
      x: WORKED.x, e: null, p: null, truncatedFrom: null,
    };
  }
  const all = tokenize(state.text, { vocab: emb });
  if (all.length === 0) return null;
  const toks = all.slice(0, MAX_TOKENS);
  const n = toks.length, d = emb.dim;
  // E (n,d): each token's word vector, or its stand-in when unknown.
  const looked = toks.map((t) => emb.lookup(t));
  const e = new Float32Array(n * d);
  looked.forEach((l, i) => e.set(l.vector, i * d));
  let x = e, p = null;
  if (state.positions) {
    // P (n,d) sinusoidal; X = E + P (n,d)
    p = sinusoidalPositions(n, d);
    x = new Float32Array(n * d);
    for (let k = 0; k < x.length; ++k) x[k] = e[k] + p[k];
  }
  return {
    labels: toks.map((t) => t.text),
    unknown: looked.map((l) => !l.known),
    tokens: toks.map((t, i) => ({ text: t.text, norm: t.norm, known: looked[i].known })),
    x: { data: x, shape: [n, d] },
    e: { data: e, shape: [n, d] },
    p: p && { data: p, shape: [n, d] },
    truncatedFrom: all.length > MAX_TOKENS ? all.length : null,
  };
}

function tokenStatus() {
  const el = $('token-status');
  el.classList.toggle('warn', !input || input.truncatedFrom !== null);
  if (!input) {
    el.textContent = 'Type a sentence to start: the steps below need at least one token.';
  } else if (input.truncatedFrom !== null) {
    el.textContent = `${input.truncatedFrom} tokens: the page uses the first ${MAX_TOKENS}, so that every matrix stays readable. Shorten the text to see the rest.`;
  } else {
    const unknown = input.unknown.filter(Boolean).length;
    el.textContent = `${plural(input.labels.length, 'token')} (up to ${MAX_TOKENS})${unknown ? `, ${unknown} not in the vocabulary` : ''}.`;
  }
}

function weightsNote() {
  const heads = effectiveHeads(), dK = effectiveDK();
  let text;
  if (state.mode === 'worked') {
    text = 'Weights: the worked example\'s fixed W<sub>Q</sub> = I, W<sub>K</sub> = [1 1; 0 1], W<sub>V</sub> = I and W<sub>O</sub> = I.';
  } else if (state.projection === 'identity') {
    text = '<strong>Identity projections:</strong> W<sub>Q</sub> = W<sub>K</sub> = W<sub>V</sub> = I and W<sub>O</sub> = I, so attention runs on the raw similarity of the word vectors.' +
      (heads > 1 ? ` With ${heads} heads, each head uses its own ${dK} of the ${D_MODEL} dimensions.` : '');
  } else {
    text = `<strong>Random projections:</strong> Xavier-uniform weights drawn by the library's seeded initializer from seed ${state.seed}: W<sub>Q</sub>, W<sub>K</sub>, W<sub>V</sub> are ${D_MODEL}×${heads * dK} (${heads} head${heads > 1 ? 's' : ''} of d<sub>k</sub> = ${dK}), W<sub>O</sub> is ${heads * dK}×${D_MODEL}. Change the seed for other weights.`;
  }
  $('weights-note').innerHTML = text;
}

// ---- compute ---------------------------------------------------------------------------------
function recompute() {
  input = prepareInput();
  tokenStatus();
  if (!input) return;
  const heads = effectiveHeads(), dK = effectiveDK();
  state.head = Math.min(state.head, heads - 1);
  const worked = state.mode === 'worked';
  const result = run(attn, {
    x: input.x, heads, dK,
    weights: worked ? WORKED.weights : state.projection === 'identity' ? identityWeights() : null,
    seed: state.seed, causal: state.causal, scaling: state.scaling, head: state.head,
  });
  const n = input.labels.length;
  if (state.focus === null) state.focus = Math.max(0, input.tokens.findIndex((t) => t.norm === 'it'));
  state.focus = Math.min(state.focus, n - 1);
  ctx = {
    worked, labels: input.labels, unknown: input.unknown, n, dModel: input.x.shape[1], heads, dK, dV: dK,
    head: state.head, causal: state.causal, scaling: state.scaling, positions: state.positions && !worked,
    projection: state.projection, seed: state.seed, e: input.e, p: input.p, x: input.x, result, back: null,
  };
  recomputeBackward();
  renderChips($('chips'), input.labels, input.unknown, setFocus);
  setPressed($('chips'), state.focus);
  syncControls({ ...state, effectiveDK: dK });
  weightsNote();
  showStep();
}

// The default target j for query i: the first other token that is a known word of 4 letters or
// more ("animal" for "it" in the example sentence), else the first other token.
function defaultTarget(i) {
  const word = input.tokens.findIndex((t, k) => k !== i && t.known && /^\p{L}{4,}$/u.test(t.text));
  if (word >= 0) return word;
  return ctx.n > 1 && i === 0 ? 1 : 0;
}

// The backward steps for the followed token and the target; rebuilds the steps. Any SGD steps
// taken were for the previous loss and are dropped.
function recomputeBackward() {
  const i = state.focus;
  const j = state.target !== null && state.target < ctx.n ? state.target : defaultTarget(i);
  ctx.back = runBackward(attn, ctx.result, {
    x: ctx.x, heads: ctx.heads, dK: ctx.dK, causal: ctx.causal, head: ctx.head, query: i, target: j,
  });
  sgd = null;
  steps = buildSteps(ctx);
  renderTimings($('hood-timings').tBodies[0], allTimings());
}

const allTimings = () => (ctx ? [...ctx.result.timings, ...(ctx.back?.timings ?? []), ...(sgd?.timings ?? [])] : []);

function identityWeights() {
  const eye = identity(D_MODEL);
  return { wq: eye, wk: eye, wv: eye, wo: eye };
}

// ---- render ----------------------------------------------------------------------------------
function renderStepList() {
  const groups = [['one', 'One head'], ['all', 'All heads'], ['back', 'Backward']];
  $('step-list').innerHTML = groups.map(([part, label]) => {
    const items = steps.map((s, i) => ({ s, i })).filter(({ s }) => s.part === part).map(({ s, i }) =>
      `<li><button type="button" class="step-pill" data-step="${i}" aria-label="Step ${i + 1} ${esc(STEP_LABELS[i])}: ${esc(s.title)}"${i === state.step ? ' aria-current="step"' : ''}>` +
      `<span class="n">${i + 1}</span> <span class="lbl" aria-hidden="true">${esc(STEP_LABELS[i])}</span></button></li>`).join('');
    return `<div class="step-group" role="group" aria-label="${label}"><span class="group-label" aria-hidden="true">${label}</span><ol>${items}</ol></div>`;
  }).join('');
}

function showStep() {
  const t0 = performance.now();
  const step = steps[state.step];
  hideTooltip();
  renderStepList();
  $('prev').disabled = state.step === 0;
  $('next').disabled = state.step === steps.length - 1;
  $('step-kicker').textContent = stepKicker(step, state.step, steps.length, ctx);
  $('step-title').innerHTML = `${state.step + 1}. ${step.titleHtml ?? esc(step.title)}`;
  $('step-formula').innerHTML = step.formulaHtml;
  $('step-shapes').innerHTML = step.shapes.map((s) => `<li>${esc(s)}</li>`).join('');
  $('step-explain').innerHTML = step.explainHtml;
  const hand = ctx.worked ? handNote(step.id, ctx) : null;
  $('step-hand').hidden = !hand;
  $('step-hand').innerHTML = hand ?? '';
  $('step-source').innerHTML = sourceLine(step);
  const back = step.part === 'back';
  $('backward-bar').hidden = !back;
  if (back) syncBackwardBar();
  markTarget($('chips'), back ? ctx.back.target : null);
  $('sgd').hidden = step.id !== 'dw';
  if (step.id === 'dw') renderSgd();

  const box = $('matrices');
  box.replaceChildren();
  heatmaps = [];
  const main = document.createElement('div');
  main.className = 'matrix-row';
  const multiples = document.createElement('div');
  multiples.className = 'multiples';
  const details = document.createElement('details');
  details.className = 'weights-details';
  const detailsRow = document.createElement('div');
  detailsRow.className = 'matrix-row';
  for (const spec of step.matrices) {
    const hm = createHeatmap(spec, { onSelectRow: setFocus });
    if (spec.rowLabels && spec.selectableRows !== false) hm.setFocusRow(state.focus);
    heatmaps.push({ name: spec.name, hm });
    ({ details: detailsRow, multiples }[spec.place] ?? main).append(hm.element);
  }
  if (main.childElementCount) box.append(main);
  if (multiples.childElementCount) box.append(multiples);
  if (detailsRow.childElementCount) {
    const names = step.matrices.filter((m) => m.place === 'details');
    details.innerHTML = `<summary>${step.detailsHtml ?? `The projection matrices ${names.map((m) => m.labelHtml).join(', ')} (${fmtShape(names[0].shape)} each)`}</summary>`;
    details.append(detailsRow);
    box.append(details);
  }
  renderInspector($('inspector'), step, ctx, state.focus);
  $('live').textContent = `Step ${state.step + 1} of ${steps.length}: ${step.title}`;
  renderMs = performance.now() - t0;
  $('hood-extra').textContent = `Drawing step ${state.step + 1} took ${renderMs.toFixed(1)} ms (page code, not the library). ` +
    `Loading: the library ${libraryMs.toFixed(0)} ms, the word vectors ${embeddingsMs.toFixed(0)} ms.`;
  version += 1;
}

function sourceLine(step) {
  if (step.sourceHtml) return step.sourceHtml;
  if (!step.source) {
    return ctx.worked ? 'Typed in by hand: the page passes it to the library as it is.'
      : `Built by the page: word vectors looked up in the vocabulary${ctx.positions ? ', plus sinusoidal positions' : ''}.`;
  }
  const t = step.part === 'back' ? ctx.back.timings : ctx.result.timings;
  const ms = (call) => t.filter((x) => x.call === call).reduce((a, x) => a + x.ms, 0);
  let call = step.timingCall ?? null;
  if (call) { /* given by the step */ }
  else if (step.source.startsWith('attn.attention')) call = 'attn.attention';
  else if (step.source.startsWith('mha.forward')) call = 'mha.forward';
  else if (step.source.startsWith('attn.matmul')) call = 'attn.matmul';
  return `Computed by <code>${esc(step.source)}</code>${call ? ` in ${ms(call).toFixed(2)} ms` : ''}.`;
}

// ---- actions ---------------------------------------------------------------------------------
function goTo(i) {
  const next = Math.max(0, Math.min(steps.length - 1, i));
  if (next === state.step || !steps.length) return;
  state.step = next;
  showStep();
}

// The followed token is also the loss's i: the backward steps are recomputed for it.
function setFocus(i) {
  if (!ctx || i < 0 || i >= ctx.n || !Number.isInteger(i)) return;
  state.focus = i;
  setPressed($('chips'), i);
  try {
    recomputeBackward();
  } catch (e) {
    showError(e);
    return;
  }
  if (steps[state.step].part === 'back') {
    showStep();
    return;
  }
  for (const { hm } of heatmaps) hm.setFocusRow(i);
  renderInspector($('inspector'), steps[state.step], ctx, i);
  version += 1;
}

function setTarget(j) {
  if (!ctx || j < 0 || j >= ctx.n || !Number.isInteger(j)) return;
  state.target = j;
  try {
    recomputeBackward();
  } catch (e) {
    showError(e);
    return;
  }
  showStep();
}

// The i and j selects above the backward steps, and the loss.
function syncBackwardBar() {
  const options = ctx.labels.map((label, k) => `<option value="${k}">${k + 1} ${esc(label)}</option>`).join('');
  for (const [id, value] of [['loss-row', ctx.back.query], ['target', ctx.back.target]]) {
    const select = $(id);
    if (select.dataset.options !== options) {
      select.innerHTML = options;
      select.dataset.options = options;
    }
    select.value = String(value);
  }
  const I = ctx.back.query + 1, J = ctx.back.target + 1;
  $('loss-line').innerHTML = `<var>L</var> = ½ ‖<var>y</var><sub>${I}</sub> − <var>x</var><sub>${J}</sub>‖² = <strong>${fmt(ctx.back.loss)}</strong>`;
}

// Gradient descent on copies of the weights: each click one more step from where the last ended.
function takeSgdStep() {
  const b = ctx.back;
  try {
    const res = sgdStep(attn, {
      x: ctx.x, weights: sgd?.weights ?? ctx.result.weights, heads: ctx.heads, dK: ctx.dK, causal: ctx.causal,
      scale: ctx.result.scale, query: b.query, target: b.target, learningRate: state.lr,
    });
    sgd = {
      weights: res.weights, losses: [...(sgd?.losses ?? [res.before]), res.after],
      rates: [...(sgd?.rates ?? []), state.lr], timings: res.timings,
    };
  } catch (e) {
    showError(e);
    return;
  }
  renderSgd();
  renderTimings($('hood-timings').tBodies[0], allTimings());
  version += 1;
}

function renderSgd() {
  const el = $('sgd-result');
  $('sgd-reset').disabled = !sgd;
  $('lr').value = String(state.lr);
  if (!sgd) {
    el.innerHTML = `Now <var>L</var> = ${fmt(ctx.back.loss)}. Each click runs forward, backward and <var>W</var> ← <var>W</var> − lr · d<var>W</var> on a copy of the layer (<code>mha.step(grads, lr)</code>), then forward again for the new loss. The heatmaps keep showing the original weights.`;
    return;
  }
  const L = sgd.losses;
  const count = L.length - 1;
  const last = L[count], prev = L[count - 1];
  const change = last < prev
    ? `down ${fmt((1 - last / prev) * 100, 1)}% in the last step`
    : last === prev
      ? (last === 0 ? 'the loss is 0, so there is nothing to learn' : 'unchanged in the last step')
      : 'up in the last step: the learning rate is too large, and the step overshot';
  el.innerHTML = `<span class="sgd-seq">${L.map((x, k) => `<span${k === count ? ' class="last"' : ''}>${fmt(x)}</span>`).join(' → ')}</span> ` +
    `<span class="sgd-note">${count} step${count > 1 ? 's' : ''} (lr ${[...new Set(sgd.rates)].join(', ')}): ${change}.</span>`;
}

function change(patch) {
  // A field's `change` on blur repeats what its `input` already applied: nothing to redo (and
  // redrawing the step list under a pointer that is clicking a step would swallow the click).
  if (Object.entries(patch).every(([k, val]) => state[k] === val)) return;
  if ('heads' in patch || 'projection' in patch) {
    const heads = patch.heads ?? state.heads;
    if (!state.dkTouched && !('dK' in patch)) patch.dK = D_MODEL / heads;
  }
  // A new mode starts on its first token (the worked example) or on "it" (a sentence).
  if ('mode' in patch && patch.mode !== state.mode) state.focus = patch.mode === 'worked' ? 0 : null;
  // New tokens: the target's index would point at another word.
  if ('mode' in patch || 'text' in patch) state.target = null;
  Object.assign(state, patch);
  try {
    recompute();
  } catch (e) {
    showError(e);
  }
}

function showError(e) {
  $('token-status').textContent = `Something went wrong: ${e.message}`;
  $('token-status').classList.add('warn');
  console.error(e);
}

// ---- debug hook ------------------------------------------------------------------------------
let resolveReady, rejectReady;
const ready = new Promise((res, rej) => { resolveReady = res; rejectReady = rej; });
window.attentionPage = {
  ready,
  get version() { return version; },
  get state() {
    return {
      mode: state.mode, text: state.text, n: ctx?.n ?? 0, tokens: input?.tokens ?? [],
      truncatedFrom: input?.truncatedFrom ?? null, projection: state.projection, seed: state.seed,
      heads: effectiveHeads(), dK: effectiveDK(), head: state.head, causal: state.causal,
      scaling: state.scaling, positions: ctx?.positions ?? false, step: state.step,
      stepId: steps[state.step]?.id ?? null, focus: state.focus,
      target: ctx?.back?.target ?? null, loss: ctx?.back?.loss ?? null, lr: state.lr, sgdLosses: sgd ? [...sgd.losses] : [],
      backend: attn?.backend ?? null, isolated: globalThis.crossOriginIsolated === true, renderMs,
    };
  },
  get steps() {
    return steps.map((s) => ({
      id: s.id, title: s.title,
      matrices: s.matrices.map((m) => ({ name: m.name, shape: [...m.shape], data: Array.from(m.data) })),
    }));
  },
  get timings() { return allTimings().map((t) => ({ ...t })); },
  cellPoint(name, i, j) {
    const entry = heatmaps.find((h) => h.name === name);
    if (!entry) throw new Error(`no heatmap named ${name} in step ${steps[state.step]?.id}`);
    const details = entry.hm.element.closest('details');
    if (details) details.open = true;
    return entry.hm.cellPoint(i, j);
  },
};

// ---- start -----------------------------------------------------------------------------------
async function start() {
  bindControls(change);
  bindStepKeys((d) => goTo(state.step + d));
  $('prev').addEventListener('click', () => goTo(state.step - 1));
  $('next').addEventListener('click', () => goTo(state.step + 1));
  $('step-list').addEventListener('click', (e) => {
    const b = e.target.closest('button[data-step]');
    if (b) goTo(Number(b.dataset.step));
  });
  $('loss-row').addEventListener('change', (e) => setFocus(Number(e.target.value)));
  $('target').addEventListener('change', (e) => setTarget(Number(e.target.value)));
  $('lr').addEventListener('change', (e) => { state.lr = Number(e.target.value); version += 1; });
  $('sgd-step').addEventListener('click', takeSgdStep);
  $('sgd-reset').addEventListener('click', () => {
    sgd = null;
    renderSgd();
    renderTimings($('hood-timings').tBodies[0], allTimings());
    version += 1;
  });

  const t0 = performance.now();
  const [lib, vectors] = await Promise.all([
    loadLibrary(),
    loadEmbeddings(new URL('./data/', import.meta.url)).then((v) => { embeddingsMs = performance.now() - t0; return v; }),
  ]);
  ({ attn, ms: libraryMs } = lib);
  emb = vectors;
  renderBuild($('hood-build'), attn.backend, globalThis.crossOriginIsolated === true);
  state.text = $('sentence').value;
  recompute();
  if (!steps.length) renderEmpty();
}

function renderEmpty() {
  $('step-title').textContent = 'Type a sentence to begin';
}

ready.catch(() => {});  // reported on the page and in the console already
start().then(() => resolveReady(), (e) => {
  showError(e);
  $('hood-build').textContent = `The library could not be loaded: ${e.message}`;
  rejectReady(e);
});
