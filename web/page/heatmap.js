// One matrix as a <canvas> heatmap: row and column labels, a colour legend, the values written
// in the cells when they fit, a tooltip on hover, the followed query row outlined, and (for
// softmax weights) a column of row sums.
//
//   createHeatmap(spec, { onSelectRow }) -> { element, setFocusRow(i | null), cellPoint(i, j) }
//
//   spec.name       id of the matrix in window.attentionPage (e.g. 'scores')
//   spec.label      its name as text (e.g. 'QKᵀ'); spec.labelHtml to show it with markup
//   spec.data       Float32Array (rows·cols), row-major;  spec.shape [rows, cols]
//   spec.scale      'signed' (diverging, centred at 0, ±max|v|) | 'unit' (sequential, weights in
//                   [0,1], drawn from 0 to spec.domainMax or a round number above the largest)
//   spec.rowLabels  tokens, when rows are tokens (then rows are selectable); else rows are numbered
//   spec.selectableRows  false: rowLabels name the rows but clicking them follows nothing
//   spec.colLabels  tokens, when columns are tokens; else columns are numbered
//   spec.rowNoun, spec.colNoun   what a row / column is, for tooltips ('query', 'key', 'dimension')
//   spec.colGroups, spec.rowGroups  { size, label(g), short(g) }: blocks of columns/rows (heads) to
//                   separate and name, e.g. "head 2" or, where that does not fit, "h2"
//   spec.rowSums    draw each row's sum at the right (softmax rows sum to 1)
//   spec.maskedCells  (r, c) -> true where a mask removed the cell: drawn with the masked hatch
//                   like -Infinity, but the value (a gradient, exactly 0 there) is still written
//                   and given in the tooltip as "0.0000 (masked)"
//   spec.maxSide    a weight matrix (no token rows): at most this many px a side (default 400)
//   spec.compact    a small multiple: small cells; token labels small (tile_axes.js) where they fit
//   spec.targetWidth  about how wide (px) a tokens × dimensions matrix should be (default 600)
//   spec.description  extra words for the canvas's aria-label
//   A window of a larger matrix (overview.js's zoomed detail) also has:
//   spec.rowOffset, spec.colOffset  the window's first row and column in the whole matrix: tooltips,
//                   the readout, onSelectRow and setFocusRow speak in the whole matrix's indices
//   spec.maxAbs     the signed scale's ±range (the whole matrix's), instead of this data's
//   spec.cell       the cell size in px, instead of the one chosen from the size
//   spec.rowSums    may also be a function r -> the row's sum (of the whole row)
//
// A matrix wider than its box scrolls sideways in it with its row labels kept in view (a sticky
// copy of the label strip) and a cue above it naming the columns out of view.
//
// A tap (touch) on a cell shows its value in the tooltip and in a line under the heatmap
// (.hm-readout, announced); it does not change the followed row (a tap on a row label does).
// Matrices of more than FAST_CELLS cells, and zoomed windows, are drawn as pixels (raster.js),
// cells of any size.
//
// Sizes are in CSS pixels; the canvas backing store is scaled by devicePixelRatio so that cells
// and text are crisp.
import { DIVERGING_STOPS, MASKED_FILL, MASKED_HATCH, SEQUENTIAL_STOPS, gradientCss, textOn } from './colors.js';
import { AXIS_CSS, MIN_CELL, drawAxes } from './tile_axes.js';
import { esc, fmt, fmtShape, fmtShort, quote } from './format.js';
import { FAST_CELLS } from './limits.js';
import { colourScale, drawScaled, rasterize } from './raster.js';

const SANS = 'system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif';
const MONO = 'ui-monospace, "SF Mono", Menlo, Consolas, "DejaVu Sans Mono", monospace';
const INK = '#1d2330';
const MUTED = '#5b6475';
const ACCENT = '#3451b2';
const clamp = (v, lo, hi) => Math.max(lo, Math.min(hi, v));

let measureCtx;
function textWidth(text, font) {
  measureCtx ??= document.createElement('canvas').getContext('2d');
  measureCtx.font = font;
  return measureCtx.measureText(text).width;
}

// text shortened with "…" to fit maxWidth.
function fitText(text, font, maxWidth) {
  if (textWidth(text, font) <= maxWidth) return text;
  let s = text;
  while (s.length > 1 && textWidth(`${s}\u2026`, font) > maxWidth) s = s.slice(0, -1);
  return `${s}\u2026`;
}

// Cell size and what is drawn, from the matrix size and kind.
function layoutFor(spec) {
  const [rows, cols] = spec.shape;
  if (spec.cell) return { cw: spec.cell, ch: spec.cell, values: false };
  if (spec.compact) {
    // About 188 px a side; two side by side on a phone. Below 2 px a cell, fractional cells (drawn
    // as pixels, averaged).
    // (less the token labels' space when it has token rows and columns: tile_axes.js)
    const axes = spec.rowLabels && spec.colLabels ? AXIS_CSS : 0;
    const side = Math.min(188, Math.floor((window.innerWidth - 80) / 2) - axes);
    const fit = side / Math.max(rows, cols);
    const c = fit < 2 ? fit : clamp(Math.floor(fit), 2, 16);
    return { cw: c, ch: c, values: false };
  }
  if (rows <= 8 && cols <= 8) return { cw: 66, ch: 30, values: true };
  if (spec.rowLabels && spec.colLabels) {
    // token × token: square cells
    const c =
      rows <= 12 ? 24 : rows <= 16 ? 22 : rows <= 24 ? 18 : rows <= 32 ? 15 : rows <= 48 ? 12 : rows <= 64 ? 11 : 10;
    return { cw: c, ch: c, values: false };
  }
  if (spec.rowLabels) {
    // tokens × dimensions: about targetWidth px wide
    const ch = rows <= 16 ? 20 : rows <= 32 ? 16 : rows <= 64 ? 12 : 10;
    return { cw: clamp(Math.floor((spec.targetWidth ?? 600) / cols), 4, 24), ch, values: false };
  }
  // A weight matrix: square cells, at most maxSide px a side, and narrow enough for a phone.
  const side = Math.min(spec.maxSide ?? 400, window.innerWidth - 110);
  const c = clamp(Math.floor(side / Math.max(rows, cols)), 2, 20);
  return { cw: c, ch: c, values: false };
}

// Every nth index gets a label, n from 1 2 5 10 20 25 50..., so labels are >= minGap px apart.
function tickStep(cell, minGap) {
  for (const s of [1, 2, 5, 10, 20, 25, 50, 100, 200, 500]) if (s * cell >= minGap) return s;
  return 1000;
}

let hatchPattern;
// The masked cells' hatch as a fill pattern for ctx (tile_axes.js draws it on the small tiles too).
export const maskedPattern = (ctx) => hatch(ctx);
function hatch(ctx) {
  if (!hatchPattern) {
    const tile = document.createElement('canvas');
    tile.width = tile.height = 6;
    const t = tile.getContext('2d');
    t.fillStyle = MASKED_FILL;
    t.fillRect(0, 0, 6, 6);
    t.strokeStyle = MASKED_HATCH;
    t.lineWidth = 1;
    t.beginPath();
    t.moveTo(-1, 7);
    t.lineTo(7, -1);
    t.moveTo(-1, 1);
    t.lineTo(1, -1);
    t.moveTo(5, 7);
    t.lineTo(7, 5);
    t.stroke();
    hatchPattern = tile;
  }
  return ctx.createPattern(hatchPattern, 'repeat');
}

// ---- the tooltip: one fixed-position element shared by every heatmap (no layout shifts) ----
function tooltipElement() {
  let el = document.getElementById('tooltip');
  if (!el) {
    el = document.createElement('div');
    el.id = 'tooltip';
    el.setAttribute('role', 'tooltip');
    el.hidden = true;
    document.body.append(el);
  }
  return el;
}

export function showTooltip(html, clientX, clientY) {
  const el = tooltipElement();
  el.innerHTML = html;
  el.hidden = false;
  const { offsetWidth: w, offsetHeight: h } = el;
  let x = clientX + 14;
  let y = clientY + 16;
  if (x + w > innerWidth - 4) x = Math.max(4, clientX - w - 14);
  if (y + h > innerHeight - 4) y = Math.max(4, clientY - h - 12);
  el.style.transform = `translate(${Math.round(x)}px, ${Math.round(y)}px)`;
}

export function hideTooltip() {
  tooltipElement().hidden = true;
}

// ---- the heatmap ----
export function createHeatmap(spec, { onSelectRow } = {}) {
  const [rows, cols] = spec.shape;
  const data = spec.data;
  const { cw, ch, values } = layoutFor(spec);
  const labelFont = (bold = false) => `${bold ? '600 ' : ''}${clamp(ch - 2, 9, 12)}px ${SANS}`;
  const tickFont = `10px ${SANS}`;
  const rowOffset = spec.rowOffset ?? 0,
    colOffset = spec.colOffset ?? 0;

  // The colour range (raster.js): finite values, masked cells, the scale.
  const { min, max, maxAbs, unitTop, hasMasked, colour } = colourScale(spec);
  // Cells a mask removed although their value is finite (gradients: exactly 0 there).
  const maskedAt = spec.maskedCells ?? (() => false);
  let maskedZeros = 0;
  if (spec.maskedCells)
    for (let r = 0; r < rows; ++r) for (let c = 0; c < cols; ++c) if (maskedAt(r, c)) maskedZeros += 1;

  // Margins: row labels left, column labels on top, row sums right.
  let padLeft = 0,
    padTop = 0,
    padRight = 0,
    sumsWidth = 0,
    colLabelsFlat = false;
  // A small multiple of tokens × tokens: its tokens beside the rows and above the columns, small
  // (tile_axes.js), when its cells are big enough to read them.
  const compactAxes = Boolean(spec.compact && spec.rowLabels && spec.colLabels && cw >= MIN_CELL);
  if (compactAxes) padLeft = padTop = AXIS_CSS;
  if (!spec.compact) {
    if (spec.rowLabels) {
      const widest = Math.max(...spec.rowLabels.map((t) => textWidth(t, labelFont(true))));
      padLeft = Math.ceil(Math.min(widest, 96)) + 10;
    } else {
      padLeft = spec.rowGroups ? 30 : Math.ceil(textWidth(String(rows), tickFont)) + 8;
    }
    if (spec.colLabels) {
      const widest = Math.max(...spec.colLabels.map((t) => textWidth(t, labelFont())));
      colLabelsFlat = widest <= cw - 6; // short labels over wide cells read better upright
      padTop = colLabelsFlat ? 20 : Math.ceil(Math.min(widest, 88)) + 8;
    } else {
      padTop = 16;
      padRight = spec.colGroups ? 0 : 12; // room for the last column number
    }
    if (spec.rowSums) sumsWidth = 58;
  }
  const gridW = cols * cw,
    gridH = rows * ch;
  const width = padLeft + gridW + Math.max(sumsWidth, padRight) + 3;
  const height = padTop + gridH + 3;
  const x0 = padLeft + 1,
    y0 = padTop + 1; // top-left of cell (0,0)

  // DOM: <figure class="heatmap" data-name data-shape> caption, scroll box, legend.
  const figure = document.createElement('figure');
  figure.className = `heatmap${spec.compact ? ' compact' : ''}`;
  figure.dataset.name = spec.name;
  figure.dataset.shape = `${rows},${cols}`;
  const caption = document.createElement('figcaption');
  caption.innerHTML = `<span class="hm-label">${spec.labelHtml ?? esc(spec.label)}</span> <span class="hm-shape">${fmtShape(spec.shape)}</span>`;
  const scroller = document.createElement('div');
  scroller.className = 'hm-scroll';
  // A wide matrix scrolls sideways in this box (on phones): focusable, so that the arrow keys
  // scroll it too, and named for its matrix.
  scroller.tabIndex = 0;
  scroller.setAttribute('role', 'group');
  scroller.setAttribute('aria-label', `${spec.label} ${fmtShape(spec.shape)}`);
  const canvas = document.createElement('canvas');
  const dpr = Math.max(1, Math.round(window.devicePixelRatio || 1));
  canvas.width = width * dpr;
  canvas.height = height * dpr;
  canvas.style.width = `${width}px`;
  canvas.style.height = `${height}px`;
  canvas.setAttribute('role', 'img');
  const rangeText = hasMasked
    ? `finite values from ${fmtShort(min)} to ${fmtShort(max)}, masked cells minus infinity`
    : `values from ${fmtShort(min)} to ${fmtShort(max)}${maskedZeros ? `, ${maskedZeros} masked cells, each 0` : ''}`;
  canvas.setAttribute(
    'aria-label',
    `Heatmap of ${spec.label}, ${rows} by ${cols}${spec.description ? `: ${spec.description}` : ''}; ${rangeText}.`,
  );
  // Row labels that stay in view while a wide matrix scrolls sideways: a copy of the canvas's
  // label strip (redrawn with it), sticky at the scroll box's left edge, over the canvas's own.
  const strip = spec.rowLabels && padLeft > 0 ? document.createElement('canvas') : null;
  if (strip) {
    strip.className = 'hm-rows';
    strip.width = padLeft * dpr;
    strip.height = height * dpr;
    strip.style.width = `${padLeft}px`;
    strip.style.height = `${height}px`;
    strip.style.marginRight = `${-padLeft}px`;
    strip.setAttribute('aria-hidden', 'true');
  }
  // the strip after the canvas in the DOM (the figure's first canvas is the heatmap), before it on
  // screen (style.css: order −1)
  scroller.append(canvas, ...(strip ? [strip] : []));
  // A cue when the matrix is wider than its box: the columns out of view, and which way to go.
  const cue = document.createElement('p');
  cue.className = 'hm-cue';
  cue.setAttribute('aria-hidden', 'true'); // the box's name and the arrow keys tell screen readers
  cue.hidden = true;
  function updateCue() {
    const hiddenPx = scroller.scrollWidth - scroller.clientWidth;
    cue.hidden = hiddenPx <= 2;
    if (cue.hidden) return figure.classList.remove('hm-more');
    // the first column not wholly in view (the last 28 px fade out: style.css)
    const first = Math.max(0, Math.floor((scroller.scrollLeft + scroller.clientWidth - 28 - x0) / cw));
    const more = scroller.scrollLeft < hiddenPx - 2;
    figure.classList.toggle('hm-more', more);
    cue.textContent = more
      ? `Scroll sideways for ${first >= cols - 1 ? `column ${cols}` : `columns ${first + 1}\u2013${cols}`} \u2192`
      : `\u2190 Scroll back for the first columns`;
  }
  scroller.addEventListener('scroll', updateCue, { passive: true });
  if (typeof ResizeObserver === 'function') new ResizeObserver(updateCue).observe(scroller);
  figure.append(caption, cue, scroller, legend());

  function legend() {
    const el = document.createElement('div');
    el.className = 'hm-legend';
    el.setAttribute('aria-hidden', 'true');
    if (spec.scale === 'unit') {
      el.innerHTML = `<span>0</span><span class="bar" style="background:${gradientCss(SEQUENTIAL_STOPS)}"></span><span>${unitTop}</span>`;
    } else {
      el.innerHTML = `<span>${fmtShort(-maxAbs)}</span><span class="bar" style="background:${gradientCss(DIVERGING_STOPS)}"><i>0</i></span><span>${fmtShort(maxAbs)}</span>`;
    }
    if (hasMasked)
      el.insertAdjacentHTML('beforeend', '<span class="masked-swatch"></span><span>\u2212\u221e masked</span>');
    else if (maskedZeros)
      el.insertAdjacentHTML('beforeend', '<span class="masked-swatch"></span><span>0, masked</span>');
    return el;
  }

  // The cells and unchanging labels, drawn once into an offscreen canvas.
  const base = document.createElement('canvas');
  base.width = canvas.width;
  base.height = canvas.height;
  {
    const g = base.getContext('2d');
    g.scale(dpr, dpr);
    g.fillStyle = '#fff';
    g.fillRect(0, 0, width, height);
    const gap = cw >= 8 && ch >= 8 ? 1 : 0;
    const pattern = hasMasked || maskedZeros ? hatch(g) : null;
    g.textAlign = 'center';
    g.textBaseline = 'middle';
    g.font = `12px ${MONO}`;
    // (a zoomed window, spec.cell, too: it is redrawn each time the window moves)
    if (!values && (rows * cols > FAST_CELLS || spec.cell)) drawPixels(g, gap, pattern);
    else
      for (let r = 0; r < rows; ++r) {
        for (let c = 0; c < cols; ++c) {
          const v = data[r * cols + c];
          const x = x0 + c * cw,
            y = y0 + r * ch;
          if (v === -Infinity || maskedAt(r, c)) {
            g.fillStyle = pattern;
            g.fillRect(x, y, cw - gap, ch - gap);
            if (values) {
              g.fillStyle = INK;
              g.fillText(fmt(v), x + cw / 2, y + ch / 2);
            }
            continue;
          }
          const col = colour(v);
          g.fillStyle = col.css;
          g.fillRect(x, y, cw - gap, ch - gap);
          if (values) {
            g.fillStyle = textOn(col.rgb);
            g.fillText(fmt(v), x + cw / 2, y + ch / 2);
          }
        }
      }
    // Head blocks: white separators.
    g.fillStyle = '#fff';
    if (spec.colGroups)
      for (let k = spec.colGroups.size; k < cols; k += spec.colGroups.size) g.fillRect(x0 + k * cw - 1, y0, 2, gridH);
    if (spec.rowGroups)
      for (let k = spec.rowGroups.size; k < rows; k += spec.rowGroups.size) g.fillRect(x0, y0 + k * ch - 1, gridW, 2);
    if (!spec.compact) drawLabels(g);
    else if (compactAxes)
      drawAxes(
        g,
        spec.rowLabels,
        { x0, y0, cell: cw, dpr: 1 }, // g draws in CSS px here
      );
  }

  // Many cells: one pixel each (raster.js), scaled to the grid; then the hatch over each row's runs
  // of masked cells and the white gaps between cells, where cells are big enough to show them.
  function drawPixels(g, gap, pattern) {
    drawScaled(g, rasterize(spec), x0, y0, gridW, gridH);
    if (pattern && cw >= 2 && ch >= 2) {
      g.fillStyle = pattern;
      for (let r = 0; r < rows; ++r) {
        for (let c = 0; c < cols;) {
          const masked = (k) => data[r * cols + k] === -Infinity || maskedAt(r, k);
          if (!masked(c)) {
            c += 1;
            continue;
          }
          const start = c;
          while (c < cols && masked(c)) c += 1;
          g.fillRect(x0 + start * cw, y0 + r * ch, (c - start) * cw, ch);
        }
      }
    }
    if (gap) {
      g.fillStyle = '#fff';
      for (let c = 1; c <= cols; ++c) g.fillRect(x0 + c * cw - 1, y0, 1, gridH);
      for (let r = 1; r <= rows; ++r) g.fillRect(x0, y0 + r * ch - 1, gridW, 1);
    }
  }

  function drawLabels(g) {
    g.fillStyle = MUTED;
    g.textBaseline = 'middle';
    // Row labels.
    if (spec.rowLabels) {
      g.textAlign = 'right';
      g.font = labelFont();
      for (let r = 0; r < rows; ++r) {
        g.fillStyle = INK;
        g.fillText(fitText(spec.rowLabels[r], labelFont(), padLeft - 8), padLeft - 5, y0 + r * ch + ch / 2);
      }
    } else if (spec.rowGroups) {
      g.textAlign = 'right';
      g.font = tickFont;
      const size = spec.rowGroups.size;
      for (let k = 0; k * size < rows; ++k)
        g.fillText(spec.rowGroups.short(k), padLeft - 4, y0 + (k + 0.5) * size * ch);
    } else {
      g.textAlign = 'right';
      g.font = tickFont;
      const step = tickStep(ch, 14);
      for (let r = 0; r < rows; ++r) {
        if (r === 0 || (r + 1) % step === 0) g.fillText(String(r + 1), padLeft - 4, y0 + r * ch + ch / 2);
      }
    }
    // Column labels.
    g.fillStyle = MUTED;
    if (spec.colLabels && colLabelsFlat) {
      g.font = labelFont();
      g.textAlign = 'center';
      for (let c = 0; c < cols; ++c) {
        g.fillStyle = INK;
        g.fillText(spec.colLabels[c], x0 + c * cw + cw / 2, padTop / 2);
      }
    } else if (spec.colLabels) {
      g.font = labelFont();
      g.textAlign = 'left';
      for (let c = 0; c < cols; ++c) {
        g.save();
        g.translate(x0 + c * cw + cw / 2, padTop - 4);
        g.rotate(-Math.PI / 2);
        g.fillStyle = INK;
        g.fillText(fitText(spec.colLabels[c], labelFont(), padTop - 8), 0, 0);
        g.restore();
      }
    } else if (spec.colGroups) {
      g.font = tickFont;
      g.textAlign = 'center';
      const size = spec.colGroups.size;
      for (let k = 0; k * size < cols; ++k) {
        const full = spec.colGroups.label(k);
        const text = textWidth(full, tickFont) + 4 <= size * cw ? full : spec.colGroups.short(k);
        if (textWidth(text, tickFont) <= size * cw + 2) g.fillText(text, x0 + (k + 0.5) * size * cw, padTop / 2);
      }
    } else {
      g.font = tickFont;
      g.textAlign = 'center';
      const step = tickStep(cw, 22);
      for (let c = 0; c < cols; ++c) {
        if (c === 0 || (c + 1) % step === 0) g.fillText(String(c + 1), x0 + c * cw + cw / 2, padTop / 2);
      }
    }
    // Row sums.
    if (spec.rowSums) {
      g.textAlign = 'right';
      g.font = `600 10px ${SANS}`;
      g.fillStyle = MUTED;
      g.fillText('\u03a3 row', x0 + gridW + sumsWidth - 4, padTop - 8);
      g.font = `${clamp(ch - 2, 9, 12)}px ${MONO}`;
      g.fillStyle = INK;
      for (let r = 0; r < rows; ++r) g.fillText(fmt(rowSum(r)), x0 + gridW + sumsWidth - 4, y0 + r * ch + ch / 2);
    }
  }

  function rowSum(r) {
    if (typeof spec.rowSums === 'function') return spec.rowSums(r);
    let s = 0;
    for (let c = 0; c < cols; ++c) s += data[r * cols + c];
    return s;
  }

  let focusRow = null;
  let hover = null; // { r, c } of the cell under the pointer
  const ctx = canvas.getContext('2d');

  function draw() {
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.drawImage(base, 0, 0);
    ctx.scale(dpr, dpr);
    if (focusRow !== null && spec.rowLabels && selectable && focusRow >= 0 && focusRow < rows) {
      const y = y0 + focusRow * ch;
      if (!spec.compact) {
        // The followed row's label, bold, in the accent colour, with a marker.
        ctx.fillStyle = '#eef1fb';
        ctx.fillRect(0, y, padLeft - 1, ch);
        ctx.font = labelFont(true);
        ctx.textAlign = 'right';
        ctx.textBaseline = 'middle';
        ctx.fillStyle = ACCENT;
        ctx.fillText(fitText(spec.rowLabels[focusRow], labelFont(true), padLeft - 8), padLeft - 5, y + ch / 2);
      }
      outline(x0, y, gridW + (spec.rowSums ? sumsWidth : 0), ch);
    }
    if (hover) outline(x0 + hover.c * cw, y0 + hover.r * ch, cw, ch);
    if (strip) {
      const sg = strip.getContext('2d');
      sg.fillStyle = '#fff';
      sg.fillRect(0, 0, strip.width, strip.height);
      sg.drawImage(canvas, 0, 0, strip.width, strip.height, 0, 0, strip.width, strip.height);
    }
  }

  // A 2 px dark frame with a 1 px white inner frame: visible on every colour of both scales.
  function outline(x, y, w, h) {
    ctx.lineWidth = 2;
    ctx.strokeStyle = '#000';
    ctx.strokeRect(x - 1, y - 1, w + 1, h + 1);
    if (w > 4 && h > 4) {
      ctx.lineWidth = 1;
      ctx.strokeStyle = '#fff';
      ctx.strokeRect(x + 0.5, y + 0.5, w - 2, h - 2);
    }
  }

  // What is under a point in CSS pixels of the canvas.
  function hit(x, y) {
    const c = Math.floor((x - x0) / cw),
      r = Math.floor((y - y0) / ch);
    const inRows = r >= 0 && r < rows,
      inCols = c >= 0 && c < cols;
    if (inRows && inCols) return { kind: 'cell', r, c };
    if (inRows && x < x0) return { kind: 'rowLabel', r };
    if (inRows && x >= x0 + gridW && spec.rowSums) return { kind: 'sum', r };
    if (inCols && y < y0) return { kind: 'colLabel', c };
    return null;
  }

  // Rows and columns by their index in the whole matrix (1-based).
  const rowText = (r) =>
    spec.rowLabels
      ? `${spec.rowNoun ?? 'token'} ${r + rowOffset + 1} ${quote(spec.rowLabels[r])}`
      : `${spec.rowNoun ?? 'row'} ${r + rowOffset + 1}`;
  const colText = (c) =>
    spec.colLabels
      ? `${spec.colNoun ?? 'token'} ${c + colOffset + 1} ${quote(spec.colLabels[c])}`
      : `${spec.colNoun ?? 'column'} ${c + colOffset + 1}`;
  const cellName = (h) => `${spec.label} [${h.r + rowOffset + 1}, ${h.c + colOffset + 1}]`;
  const cellValue = (h) => {
    const v = data[h.r * cols + h.c];
    return `${fmt(v)}${v === -Infinity || maskedAt(h.r, h.c) ? ' (masked)' : ''}`;
  };

  function tooltipHtml(h) {
    if (h.kind === 'cell') {
      return (
        `<div class="tt-title">${esc(cellName(h))}</div>` +
        `<div class="tt-row">${esc(rowText(h.r))}</div><div class="tt-col">${esc(colText(h.c))}</div>` +
        `<div class="tt-value">${cellValue(h)}</div>`
      );
    }
    if (h.kind === 'sum') {
      return `<div class="tt-title">Sum of row ${h.r + rowOffset + 1}</div><div class="tt-row">${esc(rowText(h.r))}</div><div class="tt-value">${fmt(rowSum(h.r))}</div>`;
    }
    if (h.kind === 'rowLabel' && spec.rowLabels) {
      return `<div class="tt-row">${esc(rowText(h.r))}</div>${selectable ? '<div class="tt-hint">Click to follow this row</div>' : ''}`;
    }
    if (h.kind === 'colLabel' && spec.colLabels) {
      return `<div class="tt-col">${esc(colText(h.c))}</div>${selectable ? '<div class="tt-hint">Click to follow its query row</div>' : ''}`;
    }
    return null;
  }

  const selectable = spec.selectableRows !== false;
  const selectableRow = (h) => {
    if (!h || !onSelectRow || !selectable) return null;
    if (spec.rowLabels && h.kind !== 'colLabel') return h.r + rowOffset;
    if (spec.colLabels && h.kind === 'colLabel') return h.c + colOffset;
    return null;
  };

  function pointAt(e) {
    const rect = canvas.getBoundingClientRect();
    return hit(e.clientX - rect.left, e.clientY - rect.top);
  }

  function onMove(e) {
    const h = pointAt(e);
    const cell = h?.kind === 'cell' ? { r: h.r, c: h.c } : null;
    if (cell?.r !== hover?.r || cell?.c !== hover?.c) {
      hover = cell;
      draw();
    }
    const html = h ? tooltipHtml(h) : null;
    if (html) showTooltip(html, e.clientX, e.clientY);
    else hideTooltip();
    canvas.style.cursor = selectableRow(h) !== null ? 'pointer' : 'default';
  }
  // Touch: the tapped cell's value stays in the readout under the heatmap (and its tooltip up).
  const readout = document.createElement('p');
  readout.className = 'hm-readout';
  readout.setAttribute('aria-live', 'polite');
  readout.hidden = true;
  figure.append(readout);
  let touchedCell = false;
  function onDown(e) {
    onMove(e);
    const h = pointAt(e);
    touchedCell = e.pointerType === 'touch' && h?.kind === 'cell';
    if (!touchedCell) return;
    readout.hidden = false;
    readout.textContent = `${cellName(h)}: ${rowText(h.r)}, ${colText(h.c)}: ${cellValue(h)}`;
  }
  canvas.addEventListener('pointermove', onMove);
  canvas.addEventListener('pointerdown', onDown);
  canvas.addEventListener('pointerleave', (e) => {
    if (e.pointerType === 'touch') return;
    hover = null;
    draw();
    hideTooltip();
  });
  canvas.addEventListener('click', (e) => {
    if (touchedCell) return; // a tap on a cell reads it; a tap on a row label follows the row
    const r = selectableRow(pointAt(e));
    if (r !== null) onSelectRow(r);
  });

  draw();

  return {
    element: figure,
    canvas,
    setFocusRow(i) {
      focusRow = i === null ? null : i - rowOffset;
      draw();
    },
    // Viewport coordinates of the centre of cell (i, j), and the cell's size, scrolled into view
    // first (for tests).
    cellPoint(i, j) {
      const cx = x0 + (j + 0.5) * cw,
        cy = y0 + (i + 0.5) * ch;
      scroller.scrollLeft = Math.max(0, cx - scroller.clientWidth / 2);
      const before = canvas.getBoundingClientRect();
      window.scrollBy(0, before.top + cy - innerHeight / 2);
      const rect = canvas.getBoundingClientRect();
      return { x: rect.left + cx, y: rect.top + cy, w: cw, h: ch };
    },
  };
}
