// Pieces every step's view uses: math markup for formulas and titles, and heatmap specs.
//
//   v('Q') -> <var>Q</var>      W('Q') -> W_Q      T('K') -> Kᵀ      d(v('Z')) -> dZ
//   tokenMatrix(ctx, name, label, labelHtml, t, options)   a tensor with token rows (n, ·)
//   weightMatrix(name, label, labelHtml, t, options)       a tensor with numbered rows
//   headGroups(ctx)   the head blocks of C's columns and W_O's rows (none with one head)
//
// A matrix is a heatmap spec (see heatmap.js) plus `place`: 'main' (default), 'details' (behind a
// disclosure) or 'multiples' (small multiples).

export const v = (s) => `<var>${s}</var>`;
export const W = (s) => `${v('W')}<sub>${s}</sub>`;
export const T = (s) => `${v(s)}<sup>T</sup>`;
export const dims = (shape) => shape.join('\u00d7');
export const d = (s) => `d${s}`; // a gradient: d + the (marked-up) name
// 9 -> "₉": token numbers in canvas labels.
export const subDigits = (k) => String(k).replace(/\d/g, (c) => String.fromCharCode(0x2080 + Number(c)));

// A tensor as a heatmap spec: its name, labels and values, then the spec's other fields.
const matrixSpec = (name, label, labelHtml, t, fields) => ({
  name,
  label,
  labelHtml,
  data: t.data,
  shape: t.shape,
  ...fields,
});

// A tensor as a matrix spec with token rows (and token columns when `square`).
export function tokenMatrix(
  ctx,
  name,
  label,
  labelHtml,
  t,
  { scale = 'signed', square = false, rowNoun = 'token', colNoun = 'dimension', ...rest } = {},
) {
  return matrixSpec(name, label, labelHtml, t, {
    scale,
    rowLabels: ctx.labels,
    rowNoun,
    colLabels: square ? ctx.labels : undefined,
    colNoun: square ? 'key' : colNoun,
    ...rest,
  });
}

// A tensor as a matrix spec with numbered rows and columns (a weight matrix).
export const weightMatrix = (name, label, labelHtml, t, rest = {}) =>
  matrixSpec(name, label, labelHtml, t, { scale: 'signed', rowNoun: 'row', colNoun: 'column', ...rest });

export const headGroups = (ctx) =>
  ctx.heads > 1 ? { size: ctx.dV, label: (k) => `head ${k + 1}`, short: (k) => `h${k + 1}` } : undefined;
