// The tutorial page's wiring: loads the library and the trained model, turns each control, key
// and click into an action on the state (state.js), and redraws what the action changed.
//
// Flow: input (sentence or worked example) -> tokens -> X (n,d_model) -> compute.runGen -> steps ->
// the current step's heatmaps, the side panel (followed row) and the under-the-hood panel.
// The backward steps (part 'back') add compute.runBackwardGen for the loss L = ½‖y_i − x_j‖², with i the
// followed token and j the target: a new followed token or target reruns only that part.
//
// input.js      the sentence or worked example -> tokens and X
// state.js      the settings, what was computed from them, and the rules of each action
// steps/        one descriptor per step: view, pill label, library call, side panel, hand values
// step_view.js  the current step on the page; sgd_panel.js the gradient-descent panel
// compute.js    every library call;  debug_hook.js  window.attentionPage, for tests
// train_panel.js  "Train it yourself": the model trained live in a Worker (train_worker.js)
// offload.js    long inputs (> WORKER_TOKENS) computed by the library's worker form, their SGD steps too
// url_state.js  the settings in the address: a link reproduces the view
// model/        the trained model: its files, its plain-JS output layer, its heads' measured stats
// model_view.js every head of the trained model at a glance; head_compare.js two heads and A − B
// knockout_panel.js  heads knocked out and each head's part in the predicted word (ablation.js)
import { renderChips, setPressed } from './chips.js';
import { loadLibrary, sgdStep } from './compute.js';
import { bindControls, bindStepKeys, syncControls } from './controls.js';
import { installDebugHook } from './debug_hook.js';
import { createHeadCompare } from './head_compare.js';
import { predictAt } from './ablation.js';
import { createKnockoutPanel, isOut } from './knockout_panel.js';
import { createModelView } from './model_view.js';
import { loadModelFiles } from './model/weights.js';
import { renderBuild, renderTimings } from './under_the_hood.js';
import { renderTokenStatus, renderWeightsNote } from './input_notes.js';
import { WORKER_TOKENS } from './limits.js';
import { createOffload, tokenCount } from './offload.js';
import { bindSgdPanel } from './sgd_panel.js';
import {
  allTimings,
  change,
  createState,
  effectiveDK,
  effectiveHeads,
  goTo,
  isRow,
  recompute,
  recomputeBackward,
} from './state.js';
import { composition, compositionHtml, keyHeads, namedHead, sinkSentence } from './induction.js';
import { referenceHtml } from './reference_note.js';
import { createStepView } from './step_view.js';
import { STEPS } from './steps/index.js';
import { bindTrainPanel } from './train_panel.js';
import { readSettingsQuery, writeUrlSettings } from './url_state.js';
import { nextTask } from './pieces.js';

const $ = (id) => document.getElementById(id);

const state = createState($('sentence').value);
const stepView = createStepView(state, { onSelectRow: setFocus });
// The model view and the head comparison (below the steps): a tile opens its head in the steps.
const modelView = createModelView($('model-grid'), {
  onOpen: openHead,
  onKnock: (layer, head) => toggleKnock(layer, head),
  onUseTrained: () => {
    if (change(state, { mode: 'sentence', projection: 'trained' })) attempt(refresh);
  },
});
const compare = createHeadCompare($('compare'), {
  a: $('compare-a'),
  b: $('compare-b'),
  note: $('compare-note'),
  onChange: () => rendered(),
});
const knockPanel = createKnockoutPanel($('knock'), {
  onChange: (what) => (what === 'clear' ? setKnockOut([]) : setKnockOut(state.knockOut)),
});

// The heads knocked out: the model view's toggles, the steps' toggle and the panel follow them.
function setKnockOut(list) {
  state.knockOut = list;
  modelView.markKnocked(state);
  showKnockOut();
  rendered();
}
function toggleKnock(layer, head) {
  const out = isOut(state, layer, head);
  setKnockOut(
    out ? state.knockOut.filter((k) => k.layer !== layer || k.head !== head) : [...state.knockOut, { layer, head }],
  );
}
// The panel, and the steps' toggle for the head the steps show with its effect on the top guess.
function showKnockOut() {
  if (!attempt(() => knockPanel.render(state))) return;
  const line = $('knock-step-line');
  const ctx = state.ctx;
  line.hidden = !ctx?.trained;
  if (line.hidden) return;
  const { layer, head } = state.settings;
  const out = isOut(state, layer, head);
  $('knock-step').setAttribute('aria-pressed', String(out));
  $('knock-step').textContent = `Knock out layer ${layer + 1} head ${head + 1}`; // pressed: knocked out
  const at = state.settings.focus;
  const { base, knocked } = predictAt(state, { at, knockOut: state.knockOut, ablation: state.ablation });
  const top = base[0];
  const after = knocked.find((g) => g.word === top.word);
  const pct = (p) => `${Math.round(100 * p)} %`;
  $('knock-step-note').textContent = state.knockOut.length
    ? `Next word after “${ctx.labels[at]}”: “${top.word}” ${pct(top.p)} with every head, ${after ? pct(after.p) : 'out of the top 10'} with ${state.knockOut.length === 1 ? 'that head' : `the ${state.knockOut.length} heads`} knocked out (the panel below the steps has the top 10).`
    : `Next word after “${ctx.labels[at]}”: “${top.word}” (${pct(top.p)}).`;
}

// The induction head's note (induction.js) for the followed token, and the attention sink's line.
function showInduction() {
  const ctx = state.ctx;
  const trained = Boolean(ctx?.trained);
  $('induction').innerHTML = trained ? compositionHtml(ctx, state.settings.focus) : '';
  $('sink-note').textContent = trained ? sinkSentence(ctx.trained.manifest) : '';
  $('reference-note').innerHTML = trained ? referenceHtml(ctx, state.settings.focus) : '';

  $('follow-induction').hidden = !trained;
  $('induction-title').hidden = !trained;
}
// The model view and the comparison; resolves once both are drawn (a long input's in pieces).
const showViews = () => {
  showInduction();
  showKnockOut();
  return Promise.all([modelView.render(state), compare.render(state)]);
};
const hook = installDebugHook(state, stepView, { modelView, compare });
const offload = createOffload(state);

const rendered = () => {
  writeUrlSettings(state.settings);
  state.version += 1;
};
// Resolves once the step is drawn (a long input's takes a few tasks: step_view.js).
const showStep = async () => {
  if (await stepView.show()) rendered();
};
const showTimings = () => renderTimings($('hood-timings').tBodies[0], allTimings(state));

function showError(e) {
  $('token-status').textContent = `Something went wrong: ${e.message}`;
  $('token-status').classList.add('warn');
  console.error(e);
}

// Runs action(), showing an exception on the page instead of throwing it; false when it threw.
function attempt(action) {
  try {
    action();
    return true;
  } catch (e) {
    showError(e);
    return false;
  }
}

// A new input or setting: everything is recomputed and redrawn (a long input by the worker, later).
function refresh() {
  if (tokenCount(state) > WORKER_TOKENS) return refreshInWorker();
  offload.supersede();
  return showComputed(recompute(state)).catch(showError);
}

async function refreshInWorker() {
  $('busy').hidden = false;
  try {
    const hasTokens = await offload.recompute();
    await nextTask(); // the drawing in tasks of its own, after the one that took the result
    if (hasTokens !== null) await showComputed(hasTokens);
  } catch (e) {
    showError(e);
  } finally {
    $('busy').hidden = !offload.busy;
  }
}

// Everything drawn for a new result; resolves once drawn.
async function showComputed(hasTokens) {
  renderTokenStatus($('token-status'), state.input);
  await showViews();
  if (!hasTokens) return;
  const { settings, input } = state;
  const sizes = { heads: effectiveHeads(state), dK: effectiveDK(state), dModel: state.model.dim };
  showTimings();
  renderChips($('chips'), input.labels, setFocus);
  setPressed($('chips'), settings.focus);
  syncControls(settings, sizes);
  renderWeightsNote($('weights-note'), settings, sizes);
  await showStep();
}

// The backward for a new followed token or target (by the worker when it computed the input);
// resolves to false when it threw or a newer recompute replaced it.
async function backward() {
  if (!state.ctx.worker) return attempt(() => recomputeBackward(state));
  $('busy').hidden = false;
  try {
    return (await offload.recomputeBackward()) !== null;
  } catch (e) {
    showError(e);
    return false;
  } finally {
    $('busy').hidden = !offload.busy;
  }
}

// One SGD step of the panel: by the worker when it computed the input (a long one).
async function sgdStepFor(options) {
  if (!state.ctx.worker) return sgdStep(state.attn, options);
  $('busy').hidden = false;
  try {
    const res = await offload.sgdStep(options);
    return res && { ...res, worker: state.ctx.worker };
  } finally {
    $('busy').hidden = !offload.busy;
  }
}

// The followed token is also the loss's i: the backward steps are recomputed for it.
async function setFocus(i) {
  if (!isRow(state, i)) return;
  state.settings.focus = i;
  setPressed($('chips'), i);
  if (!(await backward())) return;
  showTimings();
  showInduction();
  showKnockOut();
  if (state.steps[state.settings.step].part === 'back') showStep();
  else if (await stepView.follow(i)) rendered();
}

async function setTarget(j) {
  if (!isRow(state, j)) return;
  state.settings.target = j;
  if (!(await backward())) return;
  showTimings();
  showStep();
}

// A head of the model view: its layer and head in the steps, on the softmax weights step.
function openHead(layer, head) {
  const patch = { layer, head, step: STEPS.findIndex((s) => s.id === 'softmax') };
  if (change(state, patch) && !attempt(refresh)) return;
  $('steps').focus();
}

const step = (i) => {
  if (goTo(state, i)) showStep();
};

async function start() {
  bindControls((patch) => {
    if (change(state, patch)) attempt(refresh);
  });
  bindStepKeys((delta) => step(state.settings.step + delta));
  $('prev').addEventListener('click', () => step(state.settings.step - 1));
  $('next').addEventListener('click', () => step(state.settings.step + 1));
  $('step-list').addEventListener('click', (e) => {
    const b = e.target.closest('button[data-step]');
    if (b) step(Number(b.dataset.step));
  });
  $('loss-row').addEventListener('change', (e) => setFocus(Number(e.target.value)));
  $('target').addEventListener('change', (e) => setTarget(Number(e.target.value)));
  bindSgdPanel(state, {
    onChange: (what) => {
      if (what === 'sgd') showTimings();
      rendered();
    },
    onError: showError,
    step: sgdStepFor,
  });
  bindTrainPanel({ sentence: $('sentence') });
  $('knock-step').addEventListener('click', () => toggleKnock(state.settings.layer, state.settings.head));
  // The induction head in the steps, following the repeated word the note is about.
  $('follow-induction').addEventListener('click', async () => {
    const { layer, head } = keyHeads(state.model.manifest, namedHead(state.ctx)).induction;
    const token = composition(state.ctx, state.settings.focus)?.token ?? -1;
    const patch = { layer, head, step: STEPS.findIndex((s) => s.id === 'softmax') };
    if (change(state, patch)) {
      if (token >= 0) state.settings.focus = token;
      attempt(refresh);
    } else if (token >= 0) await setFocus(token);
    $('steps').focus();
  });

  const t0 = performance.now();
  let modelMs;
  const [lib, model] = await Promise.all([
    loadLibrary(),
    loadModelFiles(new URL('./data/model/', import.meta.url)).then((m) => {
      modelMs = performance.now() - t0;
      return m;
    }),
  ]);
  Object.assign(state, { attn: lib.attn, model, loadMs: { library: lib.ms, model: modelMs } });
  renderBuild($('hood-build'), state.attn.backend, globalThis.crossOriginIsolated === true);
  state.settings.text = $('sentence').value;
  // A shared link's settings (the rules of change(), then the followed token, target and step).
  const { focus, target, step: at, ...linked } = readSettingsQuery(location.search);
  change(state, linked);
  Object.assign(
    state.settings,
    Object.fromEntries(Object.entries({ focus, target, step: at }).filter(([, v]) => v !== undefined)),
  );
  $('sentence').value = state.settings.text;
  await refresh();
  if (!state.steps.length) $('step-title').textContent = 'Type a sentence to begin';
}

start().then(hook.resolve, (e) => {
  showError(e);
  $('hood-build').textContent = `The library could not be loaded: ${e.message}`;
  hook.reject(e);
});
