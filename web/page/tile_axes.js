// Token labels and the masked hatch on the small canvases that have no HTML axes: the model
// view's tiles (model_view.js) and the live training's grid (head_grid.js), drawn as heatmap.js
// draws its own figures' (rows: the word that looks; columns, turned upright: the words looked at).
//
//   axisSpace(cell, dpr) -> the canvas px kept left of and above the cells for the labels (0 when
//     a cell is under MIN_CELL CSS px: the labels would not be readable; the tile says so instead)
//   drawAxes(g, labels, { x0, y0, cell, dpr })  labels beside the rows and above the columns of
//     cells that start at canvas px (x0, y0), cell canvas px a side
//   hatchMasked(g, n, { x0, y0, cell })  the masked hatch (heatmap.js) over the cells a causal
//     mask removes: column j > row i
import { maskedPattern } from './heatmap.js';
// (heatmap.js imports this module too: the cycle is safe, each reads the other's exports only
// when drawing)

export const MIN_CELL = 6; // CSS px: smaller cells get no labels
export const AXIS_CSS = 44; // CSS px for the labels
const FONT_CSS = 9;

export const axisSpace = (cell, dpr) => (cell / dpr >= MIN_CELL ? Math.round(AXIS_CSS * dpr) : 0);

const short = (t) => (t.length > 7 ? `${t.slice(0, 6)}\u2026` : t);

export function drawAxes(g, labels, { x0, y0, cell, dpr }) {
  if (!x0 || !y0) return;
  g.save();
  g.fillStyle = '#1d2330';
  // no taller than a cell, so that neighbouring labels do not overlap
  g.font = `${Math.round(Math.min(FONT_CSS * dpr, cell))}px system-ui, sans-serif`;
  g.textBaseline = 'middle';
  g.textAlign = 'right';
  labels.forEach((t, i) => g.fillText(short(t), x0 - 3 * dpr, y0 + (i + 0.5) * cell));
  g.textAlign = 'left';
  labels.forEach((t, j) => {
    g.save();
    g.translate(x0 + (j + 0.5) * cell, y0 - 3 * dpr);
    g.rotate(-Math.PI / 2);
    g.fillText(short(t), 0, 0);
    g.restore();
  });
  g.restore();
}

export function hatchMasked(g, n, { x0, y0, cell }) {
  g.save();
  g.fillStyle = maskedPattern(g);
  for (let r = 0; r < n - 1; ++r) g.fillRect(x0 + (r + 1) * cell, y0 + r * cell, (n - r - 1) * cell, cell);
  g.restore();
}
