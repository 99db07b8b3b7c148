// The "Train it yourself" panel (#train): the page's model trained live in a Worker
// (train_worker.js), with its loss curve, steps per second and every head's weights on the page's
// sentence as it learns; start, pause, resume, reset, learning rate, and where it starts from
// (layer 2 random on the trained rest, random or trained weights) and on what (the shipped excerpt
// or the learner's own text); heads of the model being trained knocked out, and the copy they make.
//
//   bindTrainPanel({ sentence })   sentence: the page's <textarea>; its text is followed live.
//     The worker starts on the first press of Start, never before.
//
// The curves have the run's training time in seconds on x (loss_curve.js): the loss; every head's
// induction score (each step, on the sentence written twice), prefix-matching or copying score
// (about once a second, on random words written twice: trainer.js scores), one line per head;
// and the copy probability (about once a second).
//
// window.attentionTraining, read-only, for tests and the curious: { state: 'idle' | 'loading' |
// 'running' | 'paused' | 'error', step, losses (every step's), seconds (every step's training
// time), induction (every step's best induction score on the repeated sentence, null without
// one), inductionHead ({ layer, head } of the last step's best), heads (the latest [{ layer,
// head, induction, prefix, copying }], null before the first step), copies ([{ step, seconds, p }]
// every copy probability measured), perSecond, headsShown (how many times the grid was drawn),
// headsStep (the step the grid shows), copy ({ step, all, knocked }: the latest mean probability
// of the right copy on the repeated sentence with every head and with the knocked-out ones, or
// null), knockOut ([{ layer, head }] knocked out by the panel's toggles) }
import { fmt } from './format.js';
import { createHeadGrid } from './head_grid.js';
import { HEAD_COLOURS, drawCopyCurve, drawHeadCurves, drawLossCurve, MEAN, runningMean } from './loss_curve.js';

const $ = (id) => document.getElementById(id);
const MIN_OWN_WORDS = 200;
const HEADS = 4; // per layer, as the page's model
const FROM = {
  induction: 'the trained weights with layer 2 random, only layer 2 learning, every window a repeated span',
  random: 'random weights',
  trained: 'the trained weights',
};
const RENDER_MS = 500;
const SCORES = {
  induction: {
    name: 'Induction score',
    what: 'induction score',
    note: "on your sentence written twice (its first 12 tokens, or the sentence itself when it already is one text twice): the head's mean weight from each word of the second copy on the word after its earlier occurrence, after every step.",
  },
  prefix: {
    name: 'Prefix-matching score',
    what: 'prefix-matching score',
    note: 'the same weight on 10 random words written twice (the same words all run), about once a second: where the head looks, whatever the words.',
  },
  copying: {
    name: 'Copying score',
    what: 'copying score',
    note: "on those random words: the share of the second copy's words whose own word the head's output for the word it should look at, read straight through the output layer, raises most of the text's words; about once a second.",
  },
};

export function bindTrainPanel({ sentence }) {
  const view = {
    state: 'idle',
    step: 0,
    losses: [],
    seconds: [],
    induction: [],
    inductionHead: null,
    headInduction: [], // every step's induction score of every head (or null)
    scores: [], // [{ step, seconds, prefix, copying }]
    copies: [], // [{ step, seconds, p }]
    perSecond: 0,
    headsShown: 0,
    headsStep: null,
    copy: null,
    knockOut: [],
  };
  window.attentionTraining = {
    get copy() {
      return view.copy && { ...view.copy };
    },
    get knockOut() {
      return view.knockOut.map((k) => ({ ...k }));
    },
    get state() {
      return view.state;
    },
    get step() {
      return view.step;
    },
    get losses() {
      return view.losses.slice();
    },
    get seconds() {
      return view.seconds.slice();
    },
    get copies() {
      return view.copies.map((c) => ({ ...c }));
    },
    get heads() {
      const ind = view.headInduction.at(-1);
      const sc = view.scores.at(-1);
      if (!ind && !sc) return null;
      const count = (ind ?? sc.prefix).length;
      return Array.from({ length: count }, (_, k) => ({
        layer: Math.floor(k / HEADS),
        head: k % HEADS,
        induction: ind?.[k] ?? null,
        prefix: sc?.prefix[k] ?? null,
        copying: sc?.copying[k] ?? null,
      }));
    },
    get induction() {
      return view.induction.slice();
    },
    get inductionHead() {
      return view.inductionHead;
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
  const grid = createHeadGrid($('train-heads'));
  let worker = null;
  let runId = 0;
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

  // Stats, the loss curve and the heads: at most every RENDER_MS, in an animation frame, however
  // fast the steps come, so that the page's own work stays small. The curve's width is read on
  // resize only (reading it after a write would force a layout).
  let lastRender = -Infinity;
  let curveWidth = 0;
  function schedule() {
    if (frame) return;
    const wait = Math.max(0, lastRender + RENDER_MS - performance.now());
    frame = setTimeout(() => requestAnimationFrame(render), wait);
  }
  function render(now) {
    frame = 0;
    lastRender = now;
    $('train-step').textContent = String(view.step);
    $('train-loss-now').textContent = view.losses.length ? fmt(runningMean(view.losses), 3) : '–';
    $('train-rate').textContent = view.perSecond ? fmt(view.perSecond, 1) : '–';
    curveWidth ||= $('train-loss').clientWidth; // before the first resize report
    drawLossCurve($('train-loss'), view.losses, view.seconds, curveWidth);
    drawScores();
    drawCopyCurve($('train-copy-curve'), view.copies, curveWidth);
    const last = view.induction.at(-1);
    $('train-induction-now').textContent =
      last == null
        ? '–'
        : `${fmt(last, 2)} (layer ${view.inductionHead.layer + 1} head ${view.inductionHead.head + 1})`;
    if (pendingHeads) drawHeads(pendingHeads);
    pendingHeads = null;
  }
  // Every head's chosen score (#train-score), one line each, and the legend (made once).
  function drawScores() {
    const key = $('train-score').value;
    const { name, what, note } = SCORES[key];
    const heads = Array.from({ length: 2 * HEADS }, (_, k) => ({ layer: Math.floor(k / HEADS), head: k % HEADS }));
    const series =
      key === 'induction'
        ? { seconds: view.seconds, values: view.headInduction }
        : { seconds: view.scores.map((x) => x.seconds), values: view.scores.map((x) => x[key]) };
    drawHeadCurves($('train-induction'), { name, what, heads, ...series }, curveWidth);
    $('train-score-note').textContent = note;
    const legend = $('train-legend');
    if (!legend.childElementCount)
      legend.innerHTML = heads
        .map(
          (h) =>
            `<li><span class="swatch${h.layer === 0 ? ' dashed' : ''}" style="--c:${HEAD_COLOURS[h.head]}" aria-hidden="true"></span>layer ${h.layer + 1} head ${h.head + 1}</li>`,
        )
        .join('');
  }
  $('train-score').addEventListener('change', () => schedule());
  new ResizeObserver(([entry]) => {
    curveWidth = Math.round(entry.contentRect.width);
    schedule();
  }).observe($('train-loss'));

  // Every head's (n,n) weights on the sentence (head_grid.js).
  function drawHeads(m) {
    grid.update(m);
    const tokens = m.labels.map((t, i) => `${i + 1} ${t}`).join(' · ');
    $('train-heads-note').textContent =
      `After ${m.step} step${m.step === 1 ? '' : 's'}, on your sentence written twice, as the induction score reads it (${tokens}): row i is token i's weights over tokens 1 to i (causal). An induction head draws a diagonal in the second copy, one column right of each word's earlier occurrence. Hover or tap a cell for its weight.`;
    view.headsShown += 1;
    view.headsStep = m.step;
    drawKnock(m);
  }

  // The knock-out toggles (one per head, built once) and the copy probability line.
  function drawKnock(m) {
    const box = $('train-knock');
    if (box.childElementCount !== m.layers * m.heads) {
      box.innerHTML = Array.from({ length: m.layers * m.heads }, (_, k) => {
        const L = Math.floor(k / m.heads),
          h = k % m.heads;
        return `<button type="button" class="small-button mv-knock" data-knock="${L},${h}" aria-pressed="false">Knock out layer ${L + 1} head ${h + 1}</button>`;
      }).join('');
    }
    for (const b of box.querySelectorAll('button[data-knock]')) {
      const [L, h] = b.dataset.knock.split(',').map(Number);
      b.setAttribute('aria-pressed', String(view.knockOut.some((k) => k.layer === L && k.head === h)));
    }
    view.copy = m.copy ? { step: m.step, all: m.copy.all, knocked: m.copy.knocked } : null;
    const names = (m.copy?.knockOut ?? []).map((k) => `layer ${k.layer + 1} head ${k.head + 1}`).join(', ');
    $('train-copy').textContent = !m.copy
      ? 'Type a sentence of at least two words above to measure the copy.'
      : `After ${m.step} steps, the probability of the right copy over the second copy of your sentence: ${fmt(100 * m.copy.all, 1)} % with every head` +
        (m.copy.knocked === null ? '.' : `, ${fmt(100 * m.copy.knocked, 1)} % with ${names} knocked out.`);
  }
  $('train-knock').addEventListener('click', (e) => {
    const b = e.target.closest('button[data-knock]');
    if (!b) return;
    const [layer, head] = b.dataset.knock.split(',').map(Number);
    const out = view.knockOut.some((k) => k.layer === layer && k.head === head);
    view.knockOut = out
      ? view.knockOut.filter((k) => k.layer !== layer || k.head !== head)
      : [...view.knockOut, { layer, head }];
    b.setAttribute('aria-pressed', String(!out));
    worker?.postMessage({ type: 'knockout', heads: view.knockOut });
  });

  function onMessage({ data: m }) {
    if (m.run !== runId) return; // from a run that has been replaced
    if (m.type === 'ready') {
      announce(
        `Training on ${m.text === 'excerpt' ? 'the State of the Union excerpt' : 'your text'} (${m.tokens.toLocaleString('en')} tokens), from ${FROM[m.from]}.`,
      );
    } else if (m.type === 'step') {
      view.step = m.step;
      view.losses.push(m.loss);
      view.seconds.push(m.seconds);
      view.headInduction.push(m.heads);
      view.induction.push(m.induction?.score ?? null);
      if (m.induction) view.inductionHead = { layer: m.induction.layer, head: m.induction.head };
      if (m.perSecond) view.perSecond = m.perSecond;
      if (view.state !== 'running') setState('running');
      schedule();
    } else if (m.type === 'scores') {
      view.scores.push({ step: m.step, seconds: m.seconds, prefix: m.prefix, copying: m.copying });
      schedule();
    } else if (m.type === 'heads') {
      if (m.copy && m.copy.seconds > (view.copies.at(-1)?.seconds ?? -1))
        view.copies.push({ step: m.step, seconds: m.copy.seconds, p: m.copy.all });
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
  let lastRun = false;
  function start(run) {
    lastRun = run;
    const o = options();
    if (o.text !== null && o.text.trim().split(/\s+/).length < MIN_OWN_WORDS) {
      announce(`Paste at least ${MIN_OWN_WORDS} words of your own text (about a page), or train on the excerpt.`);
      $('train-own').focus();
      return;
    }
    if (!ensureWorker()) return;
    Object.assign(view, {
      step: 0,
      losses: [],
      seconds: [],
      induction: [],
      inductionHead: null,
      headInduction: [],
      scores: [],
      copies: [],
      perSecond: 0,
    });
    setState('loading');
    announce('Loading the library, the trained model and the text in the training worker…');
    schedule();
    worker.postMessage({ type: 'knockout', heads: view.knockOut });
    worker.postMessage({ type: 'start', id: ++runId, ...o, run });
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
        if (view.state === 'loading') start(lastRun);
        else if (view.state === 'running' || view.state === 'paused') start(view.state === 'running');
      }),
    );
  }
  let typing = 0;
  sentence.addEventListener('input', () => {
    clearTimeout(typing);
    typing = setTimeout(() => worker?.postMessage({ type: 'sentence', sentence: sentence.value }), 300);
  });
  setState('idle');
  schedule();
}
