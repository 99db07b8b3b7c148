// The gradient-descent panel under the step that has `sgd: true` (dw, the weight gradients): each click takes one
// more SGD step on copies of the layer's weights, from where the last one ended, and shows the
// loss before and after each.
//
//   renderSgd(state)                            #sgd-result, #sgd-reset and #lr from the state
//   bindSgdPanel(state, { onChange, onError, step })  the learning rate, "Take one SGD step",
//                                               "Start over"; onChange('lr' | 'sgd') after each;
//                                               step(options) -> (a Promise of) compute.js
//                                               sgdStep's result or null: who computes it
//                                               (default: sgdStep on the page's library)
//
// state.sgd: null, or { weights (the latest), losses (before the first step, then after each),
// rates (the learning rate of each step), timings (the latest step's library calls), worker (the
// latest step ran in the library's worker form: step() said so with worker: true) }.
import { sgdStep } from './compute.js';
import { fmt } from './format.js';

const $ = (id) => document.getElementById(id);

export function renderSgd({ ctx, sgd, settings }) {
  const el = $('sgd-result');
  $('sgd-reset').disabled = !sgd;
  $('lr').value = String(settings.lr);
  if (!sgd) {
    el.innerHTML = `Now <var>L</var> = ${fmt(ctx.back.loss)}. Each click runs forward, backward and <var>W</var> ← <var>W</var> − lr · d<var>W</var> on a copy of the layer (<code>mha.step(grads, lr)</code>), then forward again for the new loss. The heatmaps keep showing the original weights.`;
    return;
  }
  const L = sgd.losses;
  const count = L.length - 1;
  const last = L[count],
    prev = L[count - 1];
  const change =
    last < prev
      ? `down ${fmt((1 - last / prev) * 100, 1)}% in the last step`
      : last === prev
        ? last === 0
          ? 'the loss is 0, so there is nothing to learn'
          : 'unchanged in the last step'
        : 'up in the last step: the learning rate is too large, and the step overshot';
  el.innerHTML =
    `<span class="sgd-seq">${L.map((x, k) => `<span${k === count ? ' class="last"' : ''}>${fmt(x)}</span>`).join(' → ')}</span> ` +
    `<span class="sgd-note">${count} step${count > 1 ? 's' : ''} (lr ${[...new Set(sgd.rates)].join(', ')}): ${change}.</span>`;
}

// One more step for the current loss, from the weights the last step left (or the layer's), by
// step(options) (compute.js sgdStep's, or the worker's); false when the input or the steps
// changed meanwhile.
async function takeStep(state, step) {
  const { ctx, sgd, settings } = state;
  const b = ctx.back;
  const res = await step({
    x: ctx.x,
    weights: sgd?.weights ?? ctx.result.weights,
    heads: ctx.heads,
    dK: ctx.dK,
    causal: ctx.causal,
    scale: ctx.result.scale,
    query: b.query,
    target: b.target,
    learningRate: settings.lr,
  });
  if (res === null || state.ctx !== ctx || state.ctx.back !== b || state.sgd !== sgd) return false;
  state.sgd = {
    weights: res.weights,
    losses: [...(sgd?.losses ?? [res.before]), res.after],
    rates: [...(sgd?.rates ?? []), settings.lr],
    timings: res.timings,
    worker: res.worker === true,
  };
  return true;
}

export function bindSgdPanel(state, { onChange, onError, step = (options) => sgdStep(state.attn, options) }) {
  let queue = Promise.resolve(); // clicks while a step runs each take one more step, in turn
  $('lr').addEventListener('change', (e) => {
    state.settings.lr = Number(e.target.value);
    onChange('lr');
  });
  $('sgd-step').addEventListener('click', () => {
    queue = queue.then(async () => {
      try {
        if (!(await takeStep(state, step))) return;
      } catch (e) {
        onError(e);
        return;
      }
      renderSgd(state);
      onChange('sgd');
    });
  });
  $('sgd-reset').addEventListener('click', () => {
    state.sgd = null;
    renderSgd(state);
    onChange('sgd');
  });
}
