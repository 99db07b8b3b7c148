// The current step on the page: the stepper, its heading and prose, the source line with the
// call's time, its heatmaps and the side panel.
//
//   createStepView(state, { onSelectRow }) -> { show(), follow(i), cellPoint(name, i, j), renderMs }
//     show()      draws state.steps[settings.step] for state.ctx
//     follow(i)   outlines row i in every heatmap and redraws the side panel (a forward step)
//     cellPoint   the viewport point of cell (i, j) of heatmap `name`, scrolled into view
//     renderMs    how long the last show() took
//
// Every heatmap is a <figure class="heatmap" data-name="…" data-shape="rows,cols"> with PNG and CSV
// buttons (export.js); a long input's token matrices are an overview and a zoom (overview.js).
import { markTarget } from './chips.js';
import { esc, fmtShape } from './format.js';
import { addExportButtons } from './export.js';
import { createHeatmap, hideTooltip } from './heatmap.js';
import { renderInspector } from './inspector.js';
import { renderLossBar } from './loss_bar.js';
import { createOverviewHeatmap, isLong } from './overview.js';
import { renderSgd } from './sgd_panel.js';
import { renderStepList, stepKicker } from './step_list.js';

const $ = (id) => document.getElementById(id);

// "Computed by <code>attn.attention(…)</code> in 1.17 ms.": the step's call and its time for the
// current input (backward steps from the backward's timings).
function sourceLine(step, ctx) {
  if (step.sourceHtml) return step.sourceHtml;
  const timings = step.part === 'back' ? ctx.back.timings : ctx.result.timings;
  const ms = timings.filter((t) => t.call === step.timing).reduce((a, t) => a + t.ms, 0);
  return `Computed by <code>${esc(step.source)}</code>${step.timing ? ` in ${ms.toFixed(2)} ms` : ''}.`;
}

// The step's heatmaps into `box`: in a row, as small multiples, or behind a disclosure.
function renderMatrices(box, step, focus, onSelectRow) {
  box.replaceChildren();
  const heatmaps = [];
  const main = document.createElement('div');
  main.className = 'matrix-row';
  const multiples = document.createElement('div');
  multiples.className = 'multiples';
  const details = document.createElement('details');
  details.className = 'weights-details';
  const detailsRow = document.createElement('div');
  detailsRow.className = 'matrix-row';
  for (const spec of step.matrices) {
    const hm = (isLong(spec) ? createOverviewHeatmap : createHeatmap)(spec, { onSelectRow });
    addExportButtons(hm, spec);
    if (spec.rowLabels && spec.selectableRows !== false) hm.setFocusRow(focus);
    heatmaps.push({ name: spec.name, hm });
    (({ details: detailsRow, multiples })[spec.place] ?? main).append(hm.element);
  }
  if (main.childElementCount) box.append(main);
  if (multiples.childElementCount) box.append(multiples);
  if (detailsRow.childElementCount) {
    const names = step.matrices.filter((m) => m.place === 'details');
    details.innerHTML = `<summary>${step.detailsHtml ?? `The projection matrices ${names.map((m) => m.labelHtml).join(', ')} (${fmtShape(names[0].shape)} each)`}</summary>`;
    details.append(detailsRow);
    box.append(details);
  }
  return heatmaps;
}

export function createStepView(state, { onSelectRow }) {
  let heatmaps = []; // [{ name, hm }] of the step shown
  let renderMs = 0;

  function show() {
    const t0 = performance.now();
    const {
      ctx,
      steps,
      settings: { step: index, focus },
    } = state;
    const step = steps[index];
    hideTooltip();
    renderStepList($('step-list'), steps, index);
    $('prev').disabled = index === 0;
    $('next').disabled = index === steps.length - 1;
    $('step-kicker').textContent = stepKicker(step, index, steps.length, ctx);
    $('step-title').innerHTML = `${index + 1}. ${step.titleHtml ?? esc(step.title)}`;
    $('step-formula').innerHTML = step.formulaHtml;
    $('step-shapes').innerHTML = step.shapes.map((s) => `<li>${esc(s)}</li>`).join('');
    $('step-explain').innerHTML = step.explainHtml;
    const hand = (ctx.worked && step.hand?.(ctx)) || null;
    $('step-hand').hidden = !hand;
    $('step-hand').innerHTML = hand ?? '';
    $('step-source').innerHTML = sourceLine(step, ctx);
    const back = step.part === 'back';
    $('backward-bar').hidden = !back;
    if (back) renderLossBar(ctx);
    markTarget($('chips'), back ? ctx.back.target : null);
    $('sgd').hidden = !step.sgd;
    if (step.sgd) renderSgd(state);
    heatmaps = renderMatrices($('matrices'), step, focus, onSelectRow);
    renderInspector($('inspector'), step, ctx, focus);
    $('live').textContent = `Step ${index + 1} of ${steps.length}: ${step.title}`;
    renderMs = performance.now() - t0;
    const { library, embeddings } = state.loadMs;
    $('hood-extra').textContent =
      `Drawing step ${index + 1} took ${renderMs.toFixed(1)} ms (page code, not the library). ` +
      `Loading: the library ${library.toFixed(0)} ms, the word vectors ${embeddings.toFixed(0)} ms.`;
  }

  function follow(i) {
    for (const { hm } of heatmaps) hm.setFocusRow(i);
    renderInspector($('inspector'), state.steps[state.settings.step], state.ctx, i);
  }

  function cellPoint(name, i, j) {
    const entry = heatmaps.find((h) => h.name === name);
    if (!entry) throw new Error(`no heatmap named ${name} in step ${state.steps[state.settings.step]?.id}`);
    const details = entry.hm.element.closest('details');
    if (details) details.open = true;
    return entry.hm.cellPoint(i, j);
  }

  return {
    show,
    follow,
    cellPoint,
    get renderMs() {
      return renderMs;
    },
  };
}
