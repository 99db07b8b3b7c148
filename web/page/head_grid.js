// Every head's attention weights as a grid of small heatmaps that redraw in place: for the live
// training (train_panel.js), where the weights change every second and rebuilding heatmap.js'
// figures each time would cost the main thread too much. Rows are queries, columns keys.
//
//   createHeadGrid(box) -> { update({ step, labels, n, layers, heads, weights }) }
//     weights (layers·heads·n·n), block [L][h] the (n,n) weights of head h of layer L. The figures
//     are rebuilt only when the tokens or the number of heads change; otherwise each canvas is
//     repainted: one pixel per cell (viridis, 0 to 1), scaled up without smoothing, the masked
//     cells hatched and the tokens beside the rows and above the columns (tile_axes.js); its
//     aria-label gives the head's measured shares on the sentence (head_stats.js).
//   Hover or tap a cell: the shared tooltip (heatmap.js) gives query, key and weight.
import { gradientCss, sequential, SEQUENTIAL_STOPS } from './colors.js';
import { esc, fmt, quote } from './format.js';
import { hideTooltip, showTooltip } from './heatmap.js';
import { headStats } from './model/head_stats.js';
import { axisSpace, drawAxes, hatchMasked } from './tile_axes.js';

const pct = (x) => `${Math.round(100 * x)} %`;

export function createHeadGrid(box) {
  let key = null;
  let cells = []; // per head: { canvas, g, pixels (ImageData), small (canvas n×n), data }
  let labels = [];
  let cell = 8;
  let dpr = 1;
  let axes = 0; // canvas px left of and above the cells for the token labels (tile_axes.js)

  function build({ n, layers, heads }) {
    const side = Math.min(188, Math.floor((window.innerWidth - 80) / 2));
    cell = Math.max(2, Math.min(16, Math.floor(side / n)));
    dpr = Math.max(1, Math.round(window.devicePixelRatio || 1));
    axes = axisSpace(cell * dpr, dpr);
    cells = [];
    const rows = [];
    for (let L = 0; L < layers; ++L) {
      const row = document.createElement('div');
      row.className = 'multiples';
      row.setAttribute('role', 'group');
      row.setAttribute('aria-label', `Layer ${L + 1}`);
      for (let h = 0; h < heads; ++h) {
        const figure = document.createElement('figure');
        figure.className = 'heatmap compact';
        figure.dataset.shape = `${n},${n}`;
        figure.innerHTML = `<figcaption><span class="hm-label">layer ${L + 1} head ${h + 1}</span></figcaption>`;
        const canvas = document.createElement('canvas');
        canvas.width = canvas.height = axes + n * cell * dpr;
        canvas.style.width = canvas.style.height = `${axes / dpr + n * cell}px`;
        canvas.setAttribute('role', 'img');
        const small = document.createElement('canvas');
        small.width = small.height = n;
        const entry = { canvas, g: canvas.getContext('2d'), small, pixels: new ImageData(n, n), data: null, L, h };
        canvas.addEventListener('pointermove', (e) => hover(entry, e));
        canvas.addEventListener('pointerdown', (e) => hover(entry, e));
        canvas.addEventListener('pointerleave', hideTooltip);
        figure.append(canvas);
        row.append(figure);
        cells.push(entry);
      }
      rows.push(row);
    }
    const legend = document.createElement('div');
    legend.className = 'hm-legend';
    legend.setAttribute('aria-hidden', 'true');
    legend.innerHTML = `<span>0</span><span class="bar" style="background:${gradientCss(SEQUENTIAL_STOPS)}"></span><span>1</span><span class="masked-swatch"></span><span>masked: a word never looks at later words</span>`;
    box.replaceChildren(...rows, legend);
  }

  function hover(entry, e) {
    if (!entry.data) return;
    const n = labels.length;
    const rect = entry.canvas.getBoundingClientRect();
    const r = Math.floor((e.clientY - rect.top - axes / dpr) / cell),
      c = Math.floor((e.clientX - rect.left - axes / dpr) / cell);
    if (r < 0 || c < 0 || r >= n || c >= n) return hideTooltip();
    showTooltip(
      `<div class="tt-title">layer ${entry.L + 1} head ${entry.h + 1} [${r + 1}, ${c + 1}]</div>` +
        `<div class="tt-row">query ${r + 1} ${esc(quote(labels[r]))}</div>` +
        `<div class="tt-col">key ${c + 1} ${esc(quote(labels[c]))}</div>` +
        `<div class="tt-value">${fmt(entry.data[r * n + c])}${c > r ? ' (masked)' : ''}</div>`,
      e.clientX,
      e.clientY,
    );
  }

  function paint(entry, data, n, step) {
    entry.data = data;
    const px = entry.pixels.data;
    for (let i = 0; i < n * n; ++i) {
      const [r, g, b] = sequential(data[i]).rgb;
      px.set([r, g, b, 255], 4 * i);
    }
    entry.small.getContext('2d').putImageData(entry.pixels, 0, 0);
    const { g, canvas } = entry;
    const side = canvas.width - axes; // the cells' canvas px
    const s = side / n;
    g.fillStyle = '#fff';
    g.fillRect(0, 0, canvas.width, canvas.height);
    g.imageSmoothingEnabled = false;
    g.drawImage(entry.small, axes, axes, side, side);
    // the masked cells (key after query) hatched, as heatmap.js draws them
    hatchMasked(g, n, { x0: axes, y0: axes, cell: s });
    if (cell >= 6) {
      // white lines between cells, as heatmap.js draws them
      g.fillStyle = '#fff';
      for (let k = 1; k < n; ++k) {
        g.fillRect(axes + Math.round(k * s) - 1, axes, 1, side);
        g.fillRect(axes, axes + Math.round(k * s) - 1, side, 1);
      }
    }
    drawAxes(g, labels, { x0: axes, y0: axes, cell: s, dpr });
    const stats = n >= 3 ? headStats([data], n) : null;
    canvas.setAttribute(
      'aria-label',
      `Weights of layer ${entry.L + 1} head ${entry.h + 1} on your sentence after ${step} steps, ${n} by ${n}` +
        (stats
          ? `: on average ${pct(stats.prev)} of a word's weight on the previous word, ${pct(stats.self)} on itself, ${pct(stats.first)} on the first word.`
          : '.'),
    );
  }

  return {
    update({ step, labels: words, n, layers, heads, weights }) {
      const next = `${layers}×${heads}:${words.join('\u0001')}`;
      if (next !== key) {
        key = next;
        labels = words;
        build({ n, layers, heads });
      }
      cells.forEach((entry, k) => paint(entry, weights.subarray(k * n * n, (k + 1) * n * n), n, step));
    },
  };
}
