// The live training's curves on a <canvas>, step on x, the value on y, with the range written at
// the axes:
//   drawLossCurve(canvas, losses, width)   each step's loss (thin, grey) and the mean of the last
//     MEAN steps (thick, accent), on the range of the losses; redraws, width CSS px wide; sets its
//     aria-label
//   drawInductionCurve(canvas, scores, width)   each step's induction score on the repeated
//     sentence (thick, accent) on the fixed range 0 to 1, with the INDUCTION_HEAD line dashed
//   runningMean(losses, k) -> the mean of the last k losses (fewer at the start)
import { fmt } from './format.js';
import { INDUCTION_HEAD } from './model/head_stats.js';

const INK = '#1d2330';
const MUTED = '#5b6475';
const RAW = '#9aa0ab';
const ACCENT = '#3451b2';
const SANS = 'system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif';
export const MEAN = 20;

export function runningMean(losses, k = MEAN) {
  const tail = losses.slice(-k);
  return tail.length ? tail.reduce((a, b) => a + b, 0) / tail.length : NaN;
}

export const drawLossCurve = (canvas, losses, cssWidth) =>
  drawCurve(canvas, losses, cssWidth, {
    empty: 'The loss of each step appears here.',
    emptyLabel: 'Loss curve: no steps yet.',
    mean: true,
    label: (count, means, lo, hi) =>
      `Loss curve over ${count} step${count > 1 ? 's' : ''}: the mean of ${MEAN} steps went from ${fmt(means[Math.min(count, MEAN) - 1], 2)} to ${fmt(means[count - 1], 2)}; each step's loss ranged from ${fmt(lo, 2)} to ${fmt(hi, 2)}.`,
  });

export const drawInductionCurve = (canvas, scores, cssWidth) =>
  drawCurve(canvas, scores, cssWidth, {
    empty: 'The induction score of each step appears here.',
    emptyLabel: 'Induction score: no steps yet.',
    range: [0, 1],
    guide: INDUCTION_HEAD,
    label: (count) =>
      `Induction score over ${count} step${count > 1 ? 's' : ''}: ${fmt(scores[0], 2)} after step 1, ${fmt(Math.max(...scores), 2)} at most, ${fmt(scores[count - 1], 2)} now.`,
  });

// losses (any values) -> the curve; { empty, emptyLabel } the text and label with no values yet; mean: the
// running mean drawn over the raw values (else the values themselves, thick); range: [lo, hi]
// fixed (else the values'); guide: a value marked by a dashed line; label(count, means, lo, hi)
// -> the aria-label
function drawCurve(canvas, losses, cssWidth, { empty, emptyLabel, mean = false, range = null, guide = null, label }) {
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
  const count = losses.length;
  if (!count) {
    g.textAlign = 'center';
    g.textBaseline = 'middle';
    g.fillText(empty, pad.left + w / 2, pad.top + h / 2);
    canvas.setAttribute('aria-label', emptyLabel);
    return;
  }
  const finite = losses.filter(Number.isFinite);
  let [lo, hi] = range ?? [Math.min(...finite), Math.max(...finite)];
  if (hi - lo < 0.1) [lo, hi] = [lo - 0.05, hi + 0.05];
  const x = (i) => pad.left + (count > 1 ? (i / (count - 1)) * w : w / 2);
  const y = (v) => pad.top + (1 - (Math.min(hi, Math.max(lo, v)) - lo) / (hi - lo)) * h;
  // At most about one point per pixel: every stride-th loss.
  const stride = Math.max(1, Math.ceil(count / w));
  const line = (values, colour, lineWidth) => {
    g.strokeStyle = colour;
    g.lineWidth = lineWidth;
    g.beginPath();
    for (let i = 0; i < count; i += stride) {
      const v = values(i);
      if (i === 0) g.moveTo(x(i), y(v));
      else g.lineTo(x(i), y(v));
    }
    g.stroke();
  };
  if (guide !== null) {
    g.strokeStyle = RAW;
    g.setLineDash([4, 4]);
    g.beginPath();
    g.moveTo(pad.left, y(guide));
    g.lineTo(pad.left + w, y(guide));
    g.stroke();
    g.setLineDash([]);
  }
  const means = new Float64Array(count);
  if (mean) {
    line((i) => losses[i], RAW, 1);
    let sum = 0;
    for (let i = 0; i < count; ++i) {
      sum += losses[i] - (i >= MEAN ? losses[i - MEAN] : 0);
      means[i] = sum / Math.min(i + 1, MEAN);
    }
    line((i) => means[i], ACCENT, 2.5);
  } else line((i) => losses[i], ACCENT, 2.5);
  g.fillStyle = INK;
  g.textAlign = 'right';
  g.textBaseline = 'top';
  g.fillText(fmt(hi, 2), pad.left - 6, pad.top);
  g.textBaseline = 'bottom';
  g.fillText(fmt(lo, 2), pad.left - 6, pad.top + h);
  g.textBaseline = 'top';
  g.textAlign = 'left';
  g.fillText('step 1', pad.left, pad.top + h + 6);
  g.textAlign = 'right';
  g.fillText(`step ${count}`, pad.left + w, pad.top + h + 6);
  canvas.setAttribute('aria-label', label(count, means, lo, hi));
}
