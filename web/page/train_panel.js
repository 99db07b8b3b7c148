// The "Train it yourself" panel (#train): the page's model trained live in a Worker
// (train_worker.js), with its loss curve, steps per second and every head's weights on the page's
// sentence as it learns; start, pause, resume, reset, learning rate, and where it starts from
// (random or trained weights) and on what (the shipped excerpt or the learner's own text).
//
//   bindTrainPanel({ sentence })   sentence: the page's <textarea>; its text is followed live.
//     The worker starts on the first press of Start, never before.
//
// window.attentionTraining, read-only, for tests and the curious: { state: 'idle' | 'loading' |
// 'running' | 'paused' | 'error', step, losses (every step's), perSecond, headsShown (how many
// times the grid was drawn), headsStep (the step the grid shows) }
import { weightTop } from './colors.js';
import { fmt } from './format.js';
import { createHeatmap } from './heatmap.js';
import { drawLossCurve, MEAN, runningMean } from './loss_curve.js';

const $ = (id) => document.getElementById(id);
const MIN_OWN_WORDS = 200;

export function bindTrainPanel({ sentence }) {
  const view = { state: 'idle', step: 0, losses: [], perSecond: 0, headsShown: 0, headsStep: null };
  window.attentionTraining = {
    get state() {
      return view.state;
    },
    get step() {
      return view.step;
    },
    get losses() {
      return view.losses.slice();
    },
    get perSecond() {
      return view.perSecond;
    },
    get headsShown() {
      return view.headsShown;
    },
    get headsStep() {
      return view.headsStep;
    },
  };
  let worker = null;
  let frame = 0;
  let pendingHeads = null;

  const options = () => {
    const own = document.querySelector('input[name="train-text"]:checked').value === 'own';
    return {
      from: document.querySelector('input[name="train-from"]:checked').value,
      text: own ? $('train-own').value : null,
      lr: Number($('train-lr').value),
      sentence: sentence.value,
    };
  };

  function announce(text) {
    $('train-status').textContent = text;
  }

  function setState(state) {
    view.state = state;
    const button = $('train-run');
    button.textContent =
      state === 'running' ? 'Pause' : state === 'paused' && view.step > 0 ? 'Resume' : 'Start training';
    button.disabled = state === 'loading';
    $('train-reset').disabled = state === 'idle' || state === 'loading';
    $('train').dataset.state = state;
  }

  // Stats and the loss curve: at most once a frame, however fast the steps come.
  function schedule() {
    if (frame) return;
    frame = requestAnimationFrame(() => {
      frame = 0;
      $('train-step').textContent = String(view.step);
      $('train-loss-now').textContent = view.losses.length ? fmt(runningMean(view.losses), 3) : '–';
      $('train-rate').textContent = view.perSecond ? fmt(view.perSecond, 1) : '–';
      drawLossCurve($('train-loss'), view.losses);
      if (pendingHeads) drawHeads(pendingHeads);
      pendingHeads = null;
    });
  }

  // Every head's (n,n) weights on the sentence, one compact heatmap each, layer by layer.
  function drawHeads({ step, labels, n, layers, heads, weights }) {
    const box = $('train-heads');
    const focused = [...box.querySelectorAll('.hm-scroll')].indexOf(document.activeElement);
    let largest = 0;
    for (const v of weights) if (v > largest) largest = v;
    const domainMax = weightTop(largest);
    const rows = [];
    for (let L = 0; L < layers; ++L) {
      const row = document.createElement('div');
      row.className = 'multiples';
      row.setAttribute('role', 'group');
      row.setAttribute('aria-label', `Layer ${L + 1}`);
      for (let h = 0; h < heads; ++h) {
        const data = weights.subarray((L * heads + h) * n * n, (L * heads + h + 1) * n * n);
        const hm = createHeatmap({
          name: `train_l${L + 1}h${h + 1}`,
          label: `layer ${L + 1} head ${h + 1}`,
          data,
          shape: [n, n],
          scale: 'unit',
          domainMax,
          rowLabels: labels,
          colLabels: labels,
          rowNoun: 'query',
          colNoun: 'key',
          selectableRows: false,
          compact: true,
          description: `weights on your sentence after ${step} training steps`,
        });
        row.append(hm.element);
      }
      rows.push(row);
    }
    box.replaceChildren(...rows);
    if (focused >= 0) box.querySelectorAll('.hm-scroll')[focused]?.focus();
    $('train-heads-note').textContent =
      `After ${step} step${step === 1 ? '' : 's'}: ${labels.length} tokens of your sentence, rows are queries, columns keys (causal).`;
    view.headsShown += 1;
    view.headsStep = step;
  }

  function onMessage({ data: m }) {
    if (m.type === 'ready') {
      announce(
        `Training on ${m.text === 'excerpt' ? 'the State of the Union excerpt' : 'your text'} (${m.tokens.toLocaleString('en')} tokens), from ${m.from === 'trained' ? 'the trained weights' : 'random weights'}.`,
      );
    } else if (m.type === 'step') {
      view.step = m.step;
      view.losses.push(m.loss);
      if (m.perSecond) view.perSecond = m.perSecond;
      if (view.state !== 'running') setState('running');
      schedule();
    } else if (m.type === 'heads') {
      pendingHeads = m;
      schedule();
    } else if (m.type === 'paused') {
      view.step = m.step;
      setState('paused');
      schedule();
      if (m.step > 0)
        announce(
          `Paused after ${m.step} steps; the mean loss of the last ${MEAN} is ${fmt(runningMean(view.losses), 3)}.`,
        );
    } else if (m.type === 'error') {
      setState('error');
      announce(`Training stopped: ${m.message}`);
    }
  }

  function ensureWorker() {
    if (worker) return true;
    if (typeof Worker !== 'function') {
      setState('error');
      announce('This browser cannot run a Web Worker, so the page cannot train here.');
      return false;
    }
    worker = new Worker(new URL('./train_worker.js', import.meta.url), { type: 'module' });
    worker.addEventListener('message', onMessage);
    worker.addEventListener('error', (e) => {
      e.preventDefault();
      setState('error');
      announce(`The training worker could not start (${e.message || 'a module Worker did not load'}).`);
      worker = null;
    });
    return true;
  }

  // A fresh run from the chosen weights and text; trains at once when run is true.
  function start(run) {
    const o = options();
    if (o.text !== null && o.text.trim().split(/\s+/).length < MIN_OWN_WORDS) {
      announce(`Paste at least ${MIN_OWN_WORDS} words of your own text (about a page), or train on the excerpt.`);
      $('train-own').focus();
      return;
    }
    if (!ensureWorker()) return;
    Object.assign(view, { step: 0, losses: [], perSecond: 0 });
    setState('loading');
    announce('Loading the library, the word vectors and the text in the training worker…');
    schedule();
    worker.postMessage({ type: 'start', ...o, run });
  }

  $('train-run').addEventListener('click', () => {
    if (view.state === 'running') worker.postMessage({ type: 'pause' });
    else if (view.state === 'paused') {
      worker.postMessage({ type: 'run' });
      announce('Training…');
    } else start(true);
  });
  $('train-reset').addEventListener('click', () => start(view.state === 'running'));
  $('train-lr').addEventListener('change', (e) => worker?.postMessage({ type: 'lr', lr: Number(e.target.value) }));
  // A new choice of weights or text starts over (paused, unless it was training).
  for (const name of ['train-from', 'train-text']) {
    document.querySelectorAll(`input[name="${name}"]`).forEach((input) =>
      input.addEventListener('change', () => {
        $('train-own-area').hidden = document.querySelector('input[name="train-text"]:checked').value !== 'own';
        if (view.state === 'running' || view.state === 'paused') start(view.state === 'running');
      }),
    );
  }
  let typing = 0;
  sentence.addEventListener('input', () => {
    clearTimeout(typing);
    typing = setTimeout(() => worker?.postMessage({ type: 'sentence', sentence: sentence.value }), 300);
  });
  window.addEventListener('resize', schedule);
  setState('idle');
  schedule();
}
