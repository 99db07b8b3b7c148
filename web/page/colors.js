// Colour scales for the heatmaps, readable with colour-vision deficiencies:
//   signed values (X, Q, K, V, scores, outputs)  diverging ColorBrewer RdBu, blue < 0 < red,
//                                                white at 0, symmetric domain [-max|v|, +max|v|]
//   weights in [0,1] (softmax)                   sequential viridis, dark 0 -> yellow 1
// Both come from published colour-blind-safe palettes and stay ordered in lightness.
// Masked cells (-Infinity) are a grey hatch, outside both scales.

// RdBu (11 classes), reversed so that negative is blue.
export const DIVERGING_STOPS = [
  '#053061',
  '#2166ac',
  '#4393c3',
  '#92c5de',
  '#d1e5f0',
  '#f7f7f7',
  '#fddbc7',
  '#f4a582',
  '#d6604d',
  '#b2182b',
  '#67001f',
];
// viridis, 10 evenly spaced samples of matplotlib's table.
export const SEQUENTIAL_STOPS = [
  '#440154',
  '#482878',
  '#3e4989',
  '#31688e',
  '#26828e',
  '#1f9e89',
  '#35b779',
  '#6ece58',
  '#b5de2b',
  '#fde725',
];
export const MASKED_FILL = '#e4e6eb';
export const MASKED_HATCH = '#9aa0ab';

const hexToRgb = (hex) => [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));

// stops -> 256 entries of { css, rgb }, linearly interpolated in sRGB.
function lookupTable(stops, size = 256) {
  const rgb = stops.map(hexToRgb);
  return Array.from({ length: size }, (_, i) => {
    const t = (i / (size - 1)) * (rgb.length - 1);
    const k = Math.min(rgb.length - 2, Math.floor(t));
    const f = t - k;
    const c = rgb[k].map((a, ch) => Math.round(a + (rgb[k + 1][ch] - a) * f));
    return { css: `rgb(${c[0]},${c[1]},${c[2]})`, rgb: c };
  });
}

export const DIVERGING = lookupTable(DIVERGING_STOPS);
export const SEQUENTIAL = lookupTable(SEQUENTIAL_STOPS);

// v in [-maxAbs, maxAbs] -> entry; 0 -> white.
export const diverging = (v, maxAbs) => DIVERGING[divergingIndex(v, maxAbs)];
export function divergingIndex(v, maxAbs) {
  const t = maxAbs > 0 ? Math.max(-1, Math.min(1, v / maxAbs)) : 0;
  return Math.round(((t + 1) / 2) * (DIVERGING.length - 1));
}

// v in [0,1] -> entry.
export const sequential = (v) => SEQUENTIAL[sequentialIndex(v)];
export function sequentialIndex(v) {
  const t = Math.max(0, Math.min(1, v));
  return Math.round(t * (SEQUENTIAL.length - 1));
}

// The tables' rgb as bytes (entry k at 3k), for the loops that colour every cell of a matrix.
const bytes = (table) => Uint8Array.from(table.flatMap((e) => e.rgb));
export const DIVERGING_RGB = bytes(DIVERGING);
export const SEQUENTIAL_RGB = bytes(SEQUENTIAL);

// The top of the weights' colour range: the smallest of 0.05, 0.1, 0.2, 0.25, 0.5, 1 that is
// >= the largest weight, so that flat rows (every weight near 1/n) still show their pattern.
export function weightTop(largest) {
  for (const top of [0.05, 0.1, 0.2, 0.25, 0.5]) if (largest <= top) return top;
  return 1;
}

// Black or white text, whichever reads better on rgb (WCAG relative luminance).
export function textOn(rgb) {
  const lin = rgb.map((c) => {
    const s = c / 255;
    return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
  });
  const l = 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2];
  return l > 0.22 ? '#111' : '#fff';
}

// A CSS linear-gradient for a legend bar.
export function gradientCss(stops) {
  return `linear-gradient(to right, ${stops.join(', ')})`;
}
