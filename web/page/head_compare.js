// The head comparison: two heads of the trained model (any layer) on the current sentence, side
// by side, and their difference A − B (n,n) in the diverging scale: red where head A puts more
// weight, blue where head B does, white where they agree.
//
//   createHeadCompare(box, { a, b, note, onChange }) -> { render(state), snapshot(), cellPoint(name, i, j) }
//     a, b     the two <select>s (options "layer L, head k", value "L,k"), on the settings
//              compareA and compareB (state.js; so in a link); note: a line that names the largest
//              difference; onChange() after a select redrew the pair
//     render   draws the chosen pair for state.ctx (nothing without the trained model): a Promise
//              of true once drawn, false when a newer render took over
//     snapshot { a: { layer, head }, b: { layer, head }, n, top, a data, b data, diff data } or null
//     cellPoint  as heatmap.js's, for heatmap 'compare_a', 'compare_b' or 'compare_diff'
//   A long input's (overview.js isLong) as overviews with a zoomed window, one a task (pieces.js).
//
// The cells a causal mask removes are exactly 0 in both heads, so 0 in the difference too; they
// are drawn masked.
import { weightTop } from './colors.js';
import { esc, fmt, quote } from './format.js';
import { createHeatmap } from './heatmap.js';
import { LONG_ROWS } from './limits.js';
import { createOverviewHeatmap, isLong } from './overview.js';
import { createPieces } from './pieces.js';

const value = ({ layer, head }) => `${layer},${head}`;
const parse = (v) => {
  const [layer, head] = String(v).split(',').map(Number);
  return { layer, head };
};
const name = ({ layer, head }) => `layer ${layer + 1}, head ${head + 1}`;

const afterQuery = (r, c) => c > r; // the causal mask; one function, so that rasters are reused

// a − b, element by element, in float32 as drawn.
export function headDifference(a, b) {
  const out = new Float32Array(a.length);
  for (let k = 0; k < a.length; ++k) out[k] = a[k] - b[k];
  return out;
}

export function createHeadCompare(box, { a: selectA, b: selectB, note, onChange = () => {} }) {
  let shown = null; // what is drawn: { a, b, n, top, data: { a, b, diff }, heatmaps }
  let last = null; // the state last rendered, redrawn when a select changes
  const inPieces = createPieces(); // a long input's three heatmaps, one a task
  const SETTING = { a: 'compareA', b: 'compareB' }; // the pair's fields in state.settings

  for (const [key, select] of [
    ['a', selectA],
    ['b', selectB],
  ])
    select.addEventListener('change', async () => {
      if (!last) return;
      last.settings[SETTING[key]] = select.value;
      if (await render(last)) onChange();
    });

  // The options for layers × heads, and each select on its setting (the first head when the
  // setting names no head of this model).
  function fillSelects(settings, layers, heads) {
    const options = [];
    for (let L = 0; L < layers; ++L)
      for (let h = 0; h < heads; ++h) options.push(`<option value="${L},${h}">${name({ layer: L, head: h })}</option>`);
    const html = options.join('');
    const pick = {};
    for (const [key, select] of [
      ['a', selectA],
      ['b', selectB],
    ]) {
      if (select.innerHTML !== html) select.innerHTML = html;
      const p = parse(settings[SETTING[key]]);
      pick[key] = p.layer < layers && p.head < heads ? p : { layer: 0, head: 0 };
      settings[SETTING[key]] = select.value = value(pick[key]);
    }
    return pick;
  }

  function render(state) {
    last = state;
    const { ctx } = state;
    const trained = ctx?.trained;
    selectA.disabled = selectB.disabled = !trained;
    if (!trained) {
      inPieces([], false); // stops a long input's heatmaps still being drawn
      shown = null;
      box.replaceChildren();
      note.textContent = ctx ? 'The comparison shows the trained model: choose Trained weights above.' : '';
      return Promise.resolve(true);
    }
    const { heads } = trained;
    const pick = fillSelects(state.settings, heads.length, heads[0].length);
    const n = ctx.n;
    const wa = heads[pick.a.layer][pick.a.head].data;
    const wb = heads[pick.b.layer][pick.b.head].data;
    let diff, top, specs;
    const heatmaps = [];
    shown = null;
    box.replaceChildren();
    // The difference, its largest cell and the range; the three heatmaps.
    function measure() {
      diff = headDifference(wa, wb);
      let largest = 0,
        far = 0;
      for (let k = 0; k < wa.length; ++k) {
        largest = Math.max(largest, wa[k], wb[k]);
        if (Math.abs(diff[k]) > Math.abs(diff[far])) far = k;
      }
      top = weightTop(largest);
      const square = {
        rowLabels: ctx.labels,
        colLabels: ctx.labels,
        rowNoun: 'query',
        colNoun: 'key',
        selectableRows: false,
        maskedCells: afterQuery,
      };
      specs = [
        { name: 'compare_a', label: `A: ${name(pick.a)}`, data: wa, scale: 'unit', domainMax: top },
        { name: 'compare_b', label: `B: ${name(pick.b)}`, data: wb, scale: 'unit', domainMax: top },
        {
          name: 'compare_diff',
          label: 'A − B',
          data: diff,
          scale: 'signed',
          description: `head A's weights minus head B's: red where A puts more weight, blue where B does`,
        },
      ].map((s) => ({ ...square, ...s, shape: [n, n] }));
      const [i, j] = [Math.floor(far / n), far % n];
      note.innerHTML =
        diff[far] === 0
          ? 'A and B put exactly the same weights everywhere.'
          : `Red: A puts more weight there; blue: B does. The largest difference, ${esc(fmt(diff[far], 2))}, is where ${esc(quote(ctx.labels[i]))} (query ${i + 1}) looks at ${esc(quote(ctx.labels[j]))} (key ${j + 1}).`;
    }
    return inPieces(
      [
        measure,
        ...[0, 1, 2].map((k) => () => {
          const spec = specs[k];
          const hm = (isLong(spec) ? createOverviewHeatmap : createHeatmap)(spec);
          heatmaps.push({ name: spec.name, hm });
          box.append(hm.element);
        }),
        () => {
          shown = { a: pick.a, b: pick.b, n, top, data: { a: wa, b: wb, diff }, heatmaps };
        },
      ],
      n > LONG_ROWS,
    );
  }

  function cellPoint(heatmap, i, j) {
    const entry = shown?.heatmaps.find((h) => h.name === heatmap);
    if (!entry) throw new Error(`no comparison heatmap named ${heatmap}`);
    return entry.hm.cellPoint(i, j);
  }

  return {
    render,
    cellPoint,
    snapshot: () =>
      shown && {
        a: { ...shown.a },
        b: { ...shown.b },
        n: shown.n,
        top: shown.top,
        data: Object.fromEntries(Object.entries(shown.data).map(([k, v]) => [k, Array.from(v)])),
      },
  };
}
