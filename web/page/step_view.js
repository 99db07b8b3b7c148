// The current step on the page: the stepper, its heading and prose, the source line with the
// call's time, its heatmaps and the side panel.
//
//   createStepView(state, { onSelectRow }) -> { show(), follow(i), cellPoint(name, i, j), renderMs }
//     show()      draws state.steps[settings.step] for state.ctx
//     follow(i)   outlines row i in every heatmap and redraws the side panel (a forward step)
//     Both return a Promise of true once drawn, or of false when a newer show() or follow() took
//     over first. A long input's (more than LONG_ROWS tokens) are drawn a piece a task (the
//     step's text, each heatmap, the side panel), so that the page keeps answering meanwhile.
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
import { createPieces } from './pieces.js';
import { renderLossBar } from './loss_bar.js';
import { LONG_ROWS } from './limits.js';
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

// The step's heatmap containers in `box`: in a row, as small multiples, or behind a disclosure.
// Returns place(spec) -> the container a spec's heatmap goes in (shown from then on); finish()
// drops the ones no heatmap went in.
function matrixBoxes(box, step) {
  box.replaceChildren();
  const main = document.createElement('div');
  main.className = 'matrix-row';
  const multiples = document.createElement('div');
  multiples.className = 'multiples';
  const details = document.createElement('details');
  details.className = 'weights-details';
  const detailsRow = document.createElement('div');
  detailsRow.className = 'matrix-row';
  const names = step.matrices.filter((m) => m.place === 'details');
  if (names.length) {
    details.innerHTML = `<summary>${step.detailsHtml ?? `The projection matrices ${names.map((m) => m.labelHtml).join(', ')} (${fmtShape(names[0].shape)} each)`}</summary>`;
    details.append(detailsRow);
  }
  // Hidden until their first heatmap (a long input's come a task apart), in this order.
  const boxes = [main, multiples, details];
  for (const el of boxes) el.hidden = true;
  box.append(...boxes);
  return {
    place(spec) {
      const [el, inner] = { details: [details, detailsRow], multiples: [multiples] }[spec.place] ?? [main];
      el.hidden = false;
      return inner ?? el;
    },
    finish() {
      for (const el of boxes) if (el.hidden) el.remove();
    },
  };
}

// One heatmap for a step's matrix spec: a long input's token matrix as overview and zoom.
function heatmapOf(spec, focus, onSelectRow) {
  const follows = spec.rowLabels && spec.selectableRows !== false;
  if (isLong(spec)) return createOverviewHeatmap(spec, { onSelectRow, focusRow: follows ? focus : null });
  const hm = createHeatmap(spec, { onSelectRow });
  if (follows) hm.setFocusRow(focus);
  return hm;
}

export function createStepView(state, { onSelectRow }) {
  let heatmaps = []; // [{ name, hm }] of the step shown
  let renderMs = 0;
  const inPieces = createPieces(); // show() and follow(): a newer one stops an older one
  let drawn = Promise.resolve(true); // the latest show()
  const apart = () => state.ctx.n > LONG_ROWS;

  function show() {
    let ms = 0;
    const timed = (piece) => () => {
      const t0 = performance.now();
      piece();
      ms += performance.now() - t0;
    };
    const { ctx, steps } = state;
    const index = state.settings.step;
    const step = steps[index];
    let boxes;
    heatmaps = [];
    const pieces = [
      () => {
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
        boxes = matrixBoxes($('matrices'), step);
      },
      ...step.matrices.map((spec) => () => {
        const hm = heatmapOf(spec, state.settings.focus, onSelectRow);
        addExportButtons(hm, spec);
        heatmaps.push({ name: spec.name, hm });
        boxes.place(spec).append(hm.element);
      }),
      () => {
        boxes.finish();
        renderInspector($('inspector'), step, ctx, state.settings.focus);
        $('live').textContent = `Step ${index + 1} of ${steps.length}: ${step.title}`;
      },
    ].map(timed);
    drawn = inPieces(pieces, apart()).then((done) => {
      if (!done) return false;
      renderMs = ms;
      const { library, model } = state.loadMs;
      $('hood-extra').textContent =
        `Drawing step ${index + 1} took ${renderMs.toFixed(1)} ms (page code, not the library). ` +
        `Loading: the library ${library.toFixed(0)} ms, the trained model and its tokenizer ${model.toFixed(0)} ms.`;
      return true;
    });
    return drawn;
  }

  async function follow(i) {
    const shown = drawn;
    // After the step's heatmaps exist; a newer show() draws row i itself.
    if (!(await shown) || shown !== drawn) return false;
    const step = state.steps[state.settings.step];
    return inPieces(
      [
        ...heatmaps.map(
          ({ hm }) =>
            () =>
              hm.setFocusRow(i),
        ),
        () => renderInspector($('inspector'), step, state.ctx, i),
      ],
      apart(),
    );
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
