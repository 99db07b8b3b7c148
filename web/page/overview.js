// A long input's token matrix as an overview and a zoomed detail, so that a 256-token heatmap
// stays readable: the whole matrix downsampled to fit (one pixel a cell, averaged), a window on it
// (dragged with the pointer, moved with the keys) and that window at full cell size beside it, a
// heatmap.js heatmap with token labels, tooltips and the followed row. The window keeps the
// followed row in view.
//
//   isLong(spec) -> boolean      a heatmap spec (heatmap.js) with token rows, more than LONG_ROWS
//                                of them, not a small multiple: shown by this module
//   createOverviewHeatmap(spec, { onSelectRow, focusRow })
//     -> { element, canvas, setFocusRow(i | null), cellPoint(i, j), window() }
//     the same as createHeatmap's, in the whole matrix's indices (canvas: the zoom's); the window
//     starts around focusRow (the followed row, when there is one: null by default); cellPoint
//     moves the window to (i, j) first; window() is { r0, c0, rows, cols }, the zoomed region
//
// Keys on the overview (focusable): ↑ ↓ move the window a quarter of its height, ← → a quarter of
// its width (token × token only; elsewhere they still change the step), Page Up / Page Down a
// whole window, Home / End to the start / end.
import { esc, fmtShape } from './format.js';
import { createHeatmap } from './heatmap.js';
import { LONG_ROWS } from './limits.js';
import { colourScale, drawScaled, rasterize } from './raster.js';
export const isLong = (spec) => Boolean(spec.rowLabels) && !spec.compact && spec.shape[0] > LONG_ROWS;

const clamp = (v, lo, hi) => Math.max(lo, Math.min(hi, v));

// The overview's largest side and the window's size in cells, from the window's width (a guess
// at the room the step column has: the page's layout in style.css).
function sizes(spec, square) {
  const phone = innerWidth < 700;
  const overviewSide = phone ? Math.min(240, innerWidth - 70) : 240;
  const main = innerWidth >= 1100 ? Math.min(innerWidth, 1280) - 450 : innerWidth - (phone ? 54 : 100);
  const beside = main >= overviewSide + 28 + 400;
  const cell = phone ? 14 : 15;
  const room = main - (beside ? overviewSide + 28 : 0) - 90 - (spec.rowSums ? 58 : 0);
  const rows = square ? clamp(Math.floor(room / cell), 8, 32) : phone ? 16 : 32;
  return { overviewSide, cell: square ? cell : undefined, rows, cols: square ? rows : spec.shape[1] };
}

export function createOverviewHeatmap(spec, { onSelectRow, focusRow = null } = {}) {
  const [rows, cols] = spec.shape;
  const square = Boolean(spec.colLabels);
  const size = sizes(spec, square);
  const wr = Math.min(rows, size.rows),
    wc = Math.min(cols, size.cols);
  const scale = colourScale(spec);
  const raster = rasterize(spec);
  let r0 = 0,
    c0 = 0,
    focus = null,
    detail = null;

  // Overview size: about one pixel a cell, at most overviewSide a side, at least 120.
  const ow = clamp(cols, 120, size.overviewSide),
    oh = clamp(rows, 120, size.overviewSide);
  const sx = ow / cols,
    sy = oh / rows;

  const figure = document.createElement('figure');
  figure.className = 'heatmap long';
  figure.dataset.name = spec.name;
  figure.dataset.shape = `${rows},${cols}`;
  const caption = document.createElement('figcaption');
  caption.innerHTML = `<span class="hm-label">${spec.labelHtml ?? esc(spec.label)}</span> <span class="hm-shape">${fmtShape(spec.shape)}</span> <span class="hm-note">overview and zoom</span>`;
  const layout = document.createElement('div');
  layout.className = 'hm-long';
  const overview = document.createElement('div');
  overview.className = 'hm-overview';
  overview.tabIndex = 0;
  overview.setAttribute('role', 'group');
  const where = document.createElement('p');
  where.className = 'hm-window-text';
  where.id = `overview-${spec.name}-${Math.random().toString(36).slice(2, 8)}`;
  overview.setAttribute('aria-describedby', where.id);
  overview.setAttribute(
    'aria-label',
    `Overview of ${spec.label}, ${rows} by ${cols}: the framed window is shown zoomed. ` +
      `Drag it, or move it with the arrow keys, Page Up, Page Down, Home and End.`,
  );
  const canvas = document.createElement('canvas');
  const dpr = Math.max(1, Math.round(window.devicePixelRatio || 1));
  canvas.width = Math.round(ow * dpr);
  canvas.height = Math.round(oh * dpr);
  canvas.style.width = `${ow}px`;
  canvas.style.height = `${oh}px`;
  canvas.setAttribute('aria-hidden', 'true');
  overview.append(canvas, where);
  const detailBox = document.createElement('div');
  detailBox.className = 'hm-detail-box';
  layout.append(overview, detailBox);
  figure.append(caption, layout);

  const g = canvas.getContext('2d');
  function drawOverview() {
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, ow, oh);
    drawScaled(g, raster, 0, 0, ow, oh);
    // Outside the window a little paler; the window framed dark and white, the followed row a line.
    const x = c0 * sx,
      y = r0 * sy,
      w = wc * sx,
      h = wr * sy;
    g.fillStyle = 'rgba(255,255,255,0.3)';
    g.fillRect(0, 0, ow, y);
    g.fillRect(0, y + h, ow, oh - y - h);
    g.fillRect(0, y, x, h);
    g.fillRect(x + w, y, ow - x - w, h);
    if (focus !== null) {
      g.fillStyle = '#3451b2';
      g.fillRect(0, (focus + 0.5) * sy - 1, ow, 2);
    }
    g.lineWidth = 2;
    g.strokeStyle = '#000';
    g.strokeRect(x + 1, y + 1, Math.max(2, w - 2), Math.max(2, h - 2));
    g.lineWidth = 1;
    g.strokeStyle = '#fff';
    g.strokeRect(x + 2.5, y + 2.5, Math.max(1, w - 5), Math.max(1, h - 5));
    const last = (a, n) => a + n;
    where.textContent = square
      ? `Zoom: rows ${r0 + 1}\u2013${last(r0, wr)}, columns ${c0 + 1}\u2013${last(c0, wc)}.`
      : `Zoom: rows ${r0 + 1}\u2013${last(r0, wr)}.`;
  }

  // Row r of the whole matrix summed (softmax rows sum to 1), for the detail's Σ column.
  const rowSum = (r) => {
    let s = 0;
    for (let c = 0; c < cols; ++c) s += spec.data[r * cols + c];
    return s;
  };

  function buildDetail() {
    const data = new Float32Array(wr * wc);
    for (let r = 0; r < wr; ++r) data.set(spec.data.subarray((r0 + r) * cols + c0, (r0 + r) * cols + c0 + wc), r * wc);
    const sub = {
      ...spec,
      data,
      shape: [wr, wc],
      rowLabels: spec.rowLabels.slice(r0, r0 + wr),
      colLabels: square ? spec.colLabels.slice(c0, c0 + wc) : spec.colLabels,
      rowOffset: r0,
      colOffset: c0,
      maxAbs: scale.maxAbs,
      domainMax: scale.unitTop,
      maskedCells: spec.maskedCells && ((r, c) => spec.maskedCells(r + r0, c + c0)),
      rowSums: spec.rowSums ? (r) => rowSum(r + r0) : undefined,
      cell: size.cell,
      description: `rows ${r0 + 1} to ${r0 + wr}${square ? `, columns ${c0 + 1} to ${c0 + wc}` : ''} of ${rows} by ${cols}`,
    };
    const hm = createHeatmap(sub, { onSelectRow });
    hm.element.className = 'hm-detail';
    delete hm.element.dataset.name;
    hm.element.querySelector('figcaption').textContent = `Zoomed: ${where.textContent.replace(/^Zoom: /, '')}`;
    hm.setFocusRow(focus);
    detailBox.replaceChildren(hm.element);
    detail = hm;
  }

  let pending = 0;
  // Moves the window's top-left to (r, c), clamped; redraws now or at the next frame.
  function moveTo(r, c, now = false) {
    const nr = clamp(Math.round(r), 0, rows - wr),
      nc = square ? clamp(Math.round(c), 0, cols - wc) : 0;
    if (nr === r0 && nc === c0 && detail) return;
    r0 = nr;
    c0 = nc;
    drawOverview();
    if (now) {
      cancelAnimationFrame(pending);
      pending = 0;
      buildDetail();
    } else if (!pending) {
      pending = requestAnimationFrame(() => {
        pending = 0;
        buildDetail();
      });
    }
  }
  const centreOn = (r, c, now) => moveTo(r - wr / 2, c - wc / 2, now);

  // Pointer: press and drag to centre the window on the pointer.
  let dragging = false;
  const at = (e) => {
    const rect = canvas.getBoundingClientRect();
    return { r: (e.clientY - rect.top) / sy, c: (e.clientX - rect.left) / sx };
  };
  canvas.addEventListener('pointerdown', (e) => {
    dragging = true;
    canvas.setPointerCapture?.(e.pointerId);
    const p = at(e);
    centreOn(p.r, p.c);
  });
  canvas.addEventListener('pointermove', (e) => {
    if (!dragging) return;
    const p = at(e);
    centreOn(p.r, p.c);
  });
  const stop = () => {
    dragging = false;
  };
  canvas.addEventListener('pointerup', stop);
  canvas.addEventListener('pointercancel', stop);

  overview.addEventListener('keydown', (e) => {
    if (e.altKey || e.ctrlKey || e.metaKey) return;
    const qr = Math.max(1, Math.floor(wr / 4)),
      qc = Math.max(1, Math.floor(wc / 4));
    const moves = {
      ArrowUp: [r0 - qr, c0],
      ArrowDown: [r0 + qr, c0],
      PageUp: [r0 - wr, c0],
      PageDown: [r0 + wr, c0],
      Home: [0, 0],
      End: [rows, cols],
      ...(square ? { ArrowLeft: [r0, c0 - qc], ArrowRight: [r0, c0 + qc] } : {}),
    };
    const m = moves[e.key];
    if (!m) return;
    e.preventDefault();
    e.stopPropagation(); // the arrow keys move the window here, not the step
    moveTo(m[0], m[1]);
  });

  // Start on the first rows, or around the followed row when it is not among them (as
  // setFocusRow moves the window), so that the zoom is built once.
  focus = focusRow;
  if (focus !== null && focus >= wr) {
    r0 = clamp(Math.round(focus - wr / 2), 0, rows - wr);
    c0 = square ? clamp(Math.round(focus - wc / 2), 0, cols - wc) : 0;
  }
  drawOverview();
  buildDetail();

  return {
    element: figure,
    get canvas() {
      return detail.canvas;
    },
    setFocusRow(i) {
      focus = i;
      if (i !== null && (i < r0 || i >= r0 + wr)) centreOn(i, square ? i : 0, true);
      else {
        drawOverview();
        detail.setFocusRow(i);
      }
    },
    cellPoint(i, j) {
      if (i < r0 || i >= r0 + wr || (square && (j < c0 || j >= c0 + wc))) centreOn(i, square ? j : 0, true);
      return detail.cellPoint(i - r0, square ? j - c0 : j);
    },
    window: () => ({ r0, c0, rows: wr, cols: wc }),
  };
}
