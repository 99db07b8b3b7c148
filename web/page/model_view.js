// The model view: every head of every layer of the trained model on the current sentence, as
// small heatmaps on one screen, each named by what the head was measured to do on held-out text
// (the manifest's stats through model/head_stats.js's describeHead: numbers, never claims).
// A tile is a button: clicking it (or Enter/Space on it) opens that head in the steps; the
// "Knock out" toggle under it switches the head off for the knock-out panel (knockout_panel.js).
//
//   createModelView(box, { onOpen(layer, head), onUseTrained(), onKnock(layer, head) })
//     -> { render(state), markKnocked(state), snapshot() }
//     render(state)  draws ctx.trained.heads (layers × heads of (n,n) weights) for state.ctx, the
//                    tile of settings.layer/head marked aria-current; without the trained model
//                    (another preset, the worked example) a line and a button to switch to it.
//                    A Promise of true once drawn (a long input's tiles one a task: pieces.js),
//                    of false when a newer render took over
//     snapshot()     { top, tiles: [{ layer, head, description, current, data }] } or null
//
// One colour range for every tile (0 to a round number above the largest weight, colors.js), so
// that tiles compare; the cells a causal mask removes (key after query) are hatched as in every
// heatmap; each tile has its tokens beside its rows and above its columns (tile_axes.js).
import { SEQUENTIAL_RGB, SEQUENTIAL_STOPS, gradientCss, sequentialIndex, weightTop } from './colors.js';
import { axisSpace, drawAxes, hatchMasked } from './tile_axes.js';
import { esc } from './format.js';
import { describeHead } from './model/head_stats.js';
import { LONG_ROWS } from './limits.js';
import { createPieces } from './pieces.js';

const SIDE = 200; // CSS px of a tile's heatmap at most (less on a phone: it fills its tile)
const LAYER_NOTE = ['reads the words and their positions', "reads layer 1's result added to its input"];
const isKnocked = (state, L, h) => (state.knockOut ?? []).some((k) => k.layer === L && k.head === h);

// weights (n,n), the tokens' labels -> a canvas: the cells n·k px a side (k whole pixels a cell),
// the token labels left and above (tile_axes.js) when cells are big enough, masked cells hatched;
// scaled down by CSS.
function drawTile(weights, n, top, labels) {
  const canvas = document.createElement('canvas');
  const dpr = Math.max(1, Math.round(window.devicePixelRatio || 1));
  const k = Math.max(1, Math.ceil((SIDE * dpr) / n));
  const a = axisSpace(Math.min(k, (SIDE * dpr) / n), dpr);
  canvas.width = canvas.height = a + n * k;
  canvas.setAttribute('aria-hidden', 'true');
  const small = new ImageData(n, n);
  const px = small.data;
  for (let r = 0, k = 0; r < n; ++r)
    for (let c = 0; c < n; ++c, ++k) {
      const e = 3 * sequentialIndex(weights[k] / top);
      px.set([SEQUENTIAL_RGB[e], SEQUENTIAL_RGB[e + 1], SEQUENTIAL_RGB[e + 2], 255], 4 * k);
    }
  const tmp = document.createElement('canvas');
  tmp.width = tmp.height = n;
  tmp.getContext('2d').putImageData(small, 0, 0);
  const g = canvas.getContext('2d');
  g.fillStyle = '#fff';
  g.fillRect(0, 0, canvas.width, canvas.height);
  g.imageSmoothingEnabled = false;
  g.drawImage(tmp, a, a, n * k, n * k);
  hatchMasked(g, n, { x0: a, y0: a, cell: k });
  drawAxes(g, labels, { x0: a, y0: a, cell: k, dpr });
  return canvas;
}

function legend(top) {
  const el = document.createElement('p');
  el.className = 'hm-legend mv-legend';
  el.innerHTML =
    `<span>weight 0</span><span class="bar" style="background:${gradientCss(SEQUENTIAL_STOPS)}"></span>` +
    `<span>${top}</span><span class="masked-swatch"></span><span>masked: a word never looks at later words</span>`;
  return el;
}

export function createModelView(box, { onOpen, onUseTrained, onKnock }) {
  let shown = null; // { top, tiles } as drawn
  const inPieces = createPieces(); // a long input's tiles, one a task

  box.addEventListener('click', (e) => {
    const knock = e.target.closest('button[data-knock]');
    if (knock) {
      const [L, h] = knock.dataset.knock.split(',').map(Number);
      onKnock?.(L, h);
      return;
    }
    const tile = e.target.closest('button[data-layer]');
    if (tile) onOpen(Number(tile.dataset.layer), Number(tile.dataset.head));
    else if (e.target.closest('#use-trained')) onUseTrained();
  });

  function renderOff(text) {
    shown = null;
    box.innerHTML = `<p class="mv-off">${text} <button type="button" id="use-trained" class="small-button">Use the trained weights</button></p>`;
  }

  function render(state) {
    const { ctx, settings } = state;
    if (!ctx || !ctx.trained) {
      inPieces([], false); // stops a long input's tiles still being drawn
      shown = null;
      if (!ctx) box.replaceChildren();
      else
        renderOff(
          ctx.worked
            ? 'The model view shows the trained model on your sentence.'
            : 'The model view shows the trained model: these weights are not it.',
        );
      return Promise.resolve(true);
    }
    const { heads, manifest } = ctx.trained;
    const n = ctx.n;
    const all = heads.flatMap((layer, L) => layer.map((w, h) => ({ L, h, data: w.data })));
    let top = 1;
    const tiles = [];
    const buttons = []; // all's tiles' buttons
    // The layers' sections of tile buttons, each without its heatmap yet.
    function build() {
      const parts = heads.map((layer, L) => {
        const section = document.createElement('div');
        section.className = 'mv-layer';
        section.innerHTML = `<h3 class="sub-label">Layer ${L + 1} <span class="muted">${LAYER_NOTE[L] ?? ''}</span></h3>`;
        const list = document.createElement('ul');
        list.className = 'mv-grid';
        list.setAttribute('aria-label', `Layer ${L + 1}: its ${layer.length} heads`);
        layer.forEach((w, h) => {
          const stats = manifest.heads.find((s) => s.layer === L && s.head === h);
          const description = stats ? describeHead(stats) : 'not measured';
          const current = settings.layer === L && settings.head === h;
          tiles.push({ layer: L, head: h, description, current, data: w.data });
          const item = document.createElement('li');
          const button = document.createElement('button');
          button.type = 'button';
          button.className = 'mv-tile';
          button.dataset.layer = String(L);
          button.dataset.head = String(h);
          if (current) button.setAttribute('aria-current', 'true');
          button.innerHTML =
            `<span class="mv-name">Layer ${L + 1}, head ${h + 1}</span>` +
            `<span class="mv-desc">${esc(description)}</span>` +
            `<span class="visually-hidden">. Open it in the steps.</span>`;
          buttons.push(button);
          const knock = document.createElement('button');
          knock.type = 'button';
          knock.className = 'small-button mv-knock';
          knock.dataset.knock = `${L},${h}`;
          knock.setAttribute('aria-pressed', String(isKnocked(state, L, h)));
          knock.innerHTML = `Knock out<span class="visually-hidden"> layer ${L + 1} head ${h + 1}</span>`;
          item.classList.toggle('knocked', isKnocked(state, L, h));
          item.append(button, knock);
          list.append(item);
        });
        section.append(list);
        return section;
      });
      box.replaceChildren(...parts, legend(top));
    }
    shown = null;
    // A long input's: the range, the buttons, then each tile's heatmap, a task each.
    return inPieces(
      [
        () => {
          let largest = 0;
          for (const { data } of all) for (let k = 0; k < data.length; ++k) if (data[k] > largest) largest = data[k];
          top = weightTop(largest);
        },
        build,
        ...all.map(
          ({ data }, k) =>
            () =>
              buttons[k].querySelector('.mv-name').after(drawTile(data, n, top, ctx.labels)),
        ),
        () => {
          shown = { top, tiles };
        },
      ],
      n > LONG_ROWS,
    );
  }

  // The knock-out toggles pressed as state.knockOut says, without redrawing the tiles.
  function markKnocked(state) {
    for (const b of box.querySelectorAll('button[data-knock]')) {
      const [L, h] = b.dataset.knock.split(',').map(Number);
      b.setAttribute('aria-pressed', String(isKnocked(state, L, h)));
      b.closest('li').classList.toggle('knocked', isKnocked(state, L, h));
    }
  }

  return {
    render,
    markKnocked,
    snapshot: () => shown && { top: shown.top, tiles: shown.tiles.map((t) => ({ ...t, data: Array.from(t.data) })) },
  };
}
