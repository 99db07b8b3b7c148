// The live training's curves on a <canvas>: the run's training time in seconds on x (a wall-clock
// axis: pauses left out), the value on y, with the ranges written at the axes:
//   drawLossCurve(canvas, losses, seconds, width)   each step's loss (thin, grey) and the mean of
//     the last MEAN steps (thick, accent), on the range of the losses; seconds[i]: when step i
//     ended; redraws, width CSS px wide; sets its aria-label
//   drawHeadCurves(canvas, { name, what, seconds, values, heads }, width)   one line per head
//     (values[i][k]: head k's score at point i, heads [{ layer, head }]) on the fixed range 0 to
//     1, with the INDUCTION_HEAD line dashed; colours HEAD_COLOURS (layer 1's heads dashed)
//   drawCopyCurve(canvas, points, width)   the copy probability [{ seconds, p }] on 0 to 1, the
//     COPY_GUIDE line dashed
//   runningMean(losses, k) -> the mean of the last k losses (fewer at the start)
//   HEAD_COLOURS: Okabe and Ito's palette, readable with colour-blind eyes, one colour per head
//     of a layer
import { fmt } from './format.js';
import { INDUCTION_HEAD } from './model/head_stats.js';

const INK = '#1d2330';
const MUTED = '#5b6475';
const RAW = '#9aa0ab';
const ACCENT = '#3451b2';
const SANS = 'system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif';
export const MEAN = 20;
export const COPY_GUIDE = 0.4;
export const HEAD_COLOURS = ['#0072B2', '#D55E00', '#009E73', '#CC79A7', '#E69F00', '#56B4E9', '#000000', '#F0E442'];

export function runningMean(losses, k = MEAN) {
  const tail = losses.slice(-k);
  return tail.length ? tail.reduce((a, b) => a + b, 0) / tail.length : NaN;
}

const secs = (s) => `${fmt(s, s < 10 ? 1 : 0)} s`;

export function drawLossCurve(canvas, losses, seconds, cssWidth) {
  const count = losses.length;
  const means = new Float64Array(count);
  let sum = 0;
  for (let i = 0; i < count; ++i) {
    sum += losses[i] - (i >= MEAN ? losses[i - MEAN] : 0);
    means[i] = sum / Math.min(i + 1, MEAN);
  }
  const finite = losses.filter(Number.isFinite);
  drawCurve(canvas, cssWidth, {
    seconds,
    series: [
      { values: losses, colour: RAW, width: 1 },
      { values: means, colour: ACCENT, width: 2.5 },
    ],
    empty: 'The loss of each step appears here.',
    emptyLabel: 'Loss curve: no steps yet.',
    label: () =>
      `Loss curve over ${count} step${count > 1 ? 's' : ''} in ${secs(seconds[count - 1])}: the mean of ${MEAN} steps went from ${fmt(means[Math.min(count, MEAN) - 1], 2)} to ${fmt(means[count - 1], 2)}; each step's loss ranged from ${fmt(Math.min(...finite), 2)} to ${fmt(Math.max(...finite), 2)}.`,
  });
}

export function drawHeadCurves(canvas, { name, what, seconds, values, heads }, cssWidth) {
  const count = values.length;
  drawCurve(canvas, cssWidth, {
    seconds,
    range: [0, 1],
    guide: INDUCTION_HEAD,
    series: heads.map((h, k) => ({
      values: values.map((v) => v?.[k] ?? null),
      colour: HEAD_COLOURS[h.head % HEAD_COLOURS.length],
      width: h.layer === 0 ? 1.5 : 2.5,
      dash: h.layer === 0 ? [5, 3] : null,
    })),
    empty: `The ${what} of each head appears here.`,
    emptyLabel: `${name}: no steps yet.`,
    label: () => {
      const last = values[count - 1] ?? [];
      const best = heads.reduce((a, h, k) => ((last[k] ?? -1) > (last[a] ?? -1) ? k : a), 0);
      return `${name} over ${count} ${what === 'induction score' ? 'steps' : 'measurements'} in ${secs(seconds[count - 1])}, one line per head: highest now layer ${heads[best].layer + 1} head ${heads[best].head + 1}, ${fmt(last[best] ?? 0, 2)}.`;
    },
  });
}

export function drawCopyCurve(canvas, points, cssWidth) {
  const count = points.length;
  drawCurve(canvas, cssWidth, {
    seconds: points.map((q) => q.seconds),
    range: [0, 1],
    guide: COPY_GUIDE,
    series: [{ values: points.map((q) => q.p), colour: ACCENT, width: 2.5 }],
    empty: 'The copy probability appears here.',
    emptyLabel: 'Copy probability: no measurement yet.',
    label: () =>
      `Copy probability over ${secs(points[count - 1].seconds)} of training: ${fmt(points[0].p, 2)} first, ${fmt(Math.max(...points.map((q) => q.p)), 2)} at most, ${fmt(points[count - 1].p, 2)} now.`,
  });
}

// seconds (one per point), series [{ values (null: no value at that point), colour, width, dash }]
// -> the curves; { empty, emptyLabel } the text and label with no points yet; range: [lo, hi]
// fixed (else the values'); guide: a value marked by a dashed line; label() -> the aria-label
function drawCurve(canvas, cssWidth, { seconds, series, empty, emptyLabel, range = null, guide = null, label }) {
  const width = Math.max(120, Math.round(cssWidth));
  const height = 180;
  const dpr = Math.max(1, Math.round(window.devicePixelRatio || 1));
  if (canvas.width !== width * dpr || canvas.height !== height * dpr) {
    canvas.width = width * dpr;
    canvas.height = height * dpr;
    canvas.style.height = `${height}px`;
  }
  const g = canvas.getContext('2d');
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.fillStyle = '#fff';
  g.fillRect(0, 0, width, height);
  const pad = { left: 44, right: 10, top: 10, bottom: 24 };
  const w = width - pad.left - pad.right,
    h = height - pad.top - pad.bottom;
  g.strokeStyle = '#dfe3ea';
  g.lineWidth = 1;
  g.strokeRect(pad.left + 0.5, pad.top + 0.5, w, h);
  g.font = `12px ${SANS}`;
  g.fillStyle = MUTED;
  const count = seconds.length;
  if (!count) {
    g.textAlign = 'center';
    g.textBaseline = 'middle';
    g.fillText(empty, pad.left + w / 2, pad.top + h / 2);
    canvas.setAttribute('aria-label', emptyLabel);
    return;
  }
  const finite = series.flatMap((s) => Array.from(s.values).filter(Number.isFinite));
  let [lo, hi] = range ?? [Math.min(...finite), Math.max(...finite)];
  if (!(hi - lo >= 0.1)) [lo, hi] = [lo - 0.05, hi + 0.05];
  const t0 = 0,
    t1 = Math.max(seconds[count - 1], 1e-3);
  const x = (i) => pad.left + ((seconds[i] - t0) / (t1 - t0)) * w;
  const y = (v) => pad.top + (1 - (Math.min(hi, Math.max(lo, v)) - lo) / (hi - lo)) * h;
  // At most about one point per pixel: every stride-th value.
  const stride = Math.max(1, Math.ceil(count / w));
  const points = [];
  for (let i = 0; i < count; i += stride) points.push(i);
  if (points.at(-1) !== count - 1) points.push(count - 1);
  if (guide !== null) {
    g.strokeStyle = RAW;
    g.setLineDash([4, 4]);
    g.beginPath();
    g.moveTo(pad.left, y(guide));
    g.lineTo(pad.left + w, y(guide));
    g.stroke();
    g.setLineDash([]);
  }
  for (const { values, colour, width: lineWidth, dash = null } of series) {
    g.strokeStyle = colour;
    g.lineWidth = lineWidth;
    g.setLineDash(dash ?? []);
    g.beginPath();
    let open = false;
    for (const i of points) {
      const v = values[i];
      if (v === null || v === undefined || !Number.isFinite(v)) {
        open = false;
        continue;
      }
      if (open) g.lineTo(x(i), y(v));
      else g.moveTo(x(i), y(v));
      open = true;
    }
    g.stroke();
  }
  g.setLineDash([]);
  g.fillStyle = INK;
  g.textAlign = 'right';
  g.textBaseline = 'top';
  g.fillText(fmt(hi, 2), pad.left - 6, pad.top);
  g.textBaseline = 'bottom';
  g.fillText(fmt(lo, 2), pad.left - 6, pad.top + h);
  g.textBaseline = 'top';
  g.textAlign = 'left';
  g.fillText('0 s', pad.left, pad.top + h + 6);
  g.textAlign = 'right';
  g.fillText(secs(t1), pad.left + w, pad.top + h + 6);
  canvas.setAttribute('aria-label', label());
}
