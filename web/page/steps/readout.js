// Pieces of a step's side panel (its `inspect`): the followed row as numbered lists and tables, so
// that every number a heatmap draws for that row can also be read by keyboard and screen-reader
// users.
import { esc, fmt } from '../format.js';

export const sub = (x) => `<sub>${x}</sub>`;

// Row i of a (rows, cols) tensor, as a view.
export const row = (t, i) => {
  const cols = t.shape[t.shape.length - 1];
  return t.data.subarray(i * cols, (i + 1) * cols);
};

// A vector as a numbered list: 1-based indices, values with 4 decimals; groupSize marks blocks.
export function vectorList(values, { groupSize = 0 } = {}) {
  const items = Array.from(values, (x, c) => {
    const head = groupSize && c % groupSize === 0 ? ' class="group-start"' : '';
    return `<li${head}><span class="i">${c + 1}</span> <span class="val">${fmt(x)}</span></li>`;
  });
  return `<ol class="vec">${items.join('')}</ol>`;
}

// A table with a header row; each row's first cell is its header; row `highlight` is marked.
export function table(headers, rows, highlight) {
  const head = headers.map((h) => `<th scope="col">${h}</th>`).join('');
  const body = rows
    .map((cells, r) => {
      const [first, ...rest] = cells;
      return `<tr${r === highlight ? ' class="self"' : ''}><th scope="row">${first}</th>${rest.map((c) => `<td>${c}</td>`).join('')}</tr>`;
    })
    .join('');
  return `<div class="table-box"><table class="row-table"><thead><tr>${head}</tr></thead><tbody>${body}</tbody></table></div>`;
}

// Key j as a table row header: its number and token.
export const keyCell = (ctx, j) => `<span class="k-idx">${j + 1}</span> ${esc(ctx.labels[j])}`;
