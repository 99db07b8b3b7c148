// Pieces of a step's side panel (its `inspect`): the followed row as numbered lists and tables, so
// that every number a heatmap draws for that row can also be read by keyboard and screen-reader
// users.
import { esc, fmt } from '../format.js';
import { LONG_TABLE_ROWS } from '../limits.js';

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
// Past LONG_TABLE_ROWS rows (a long input: up to 512 keys), longTable's form instead.
export function table(headers, rows, highlight) {
  if (rows.length > LONG_TABLE_ROWS) return longTable(headers, rows, highlight);
  const head = headers.map((h) => `<th scope="col">${h}</th>`).join('');
  const body = rows
    .map((cells, r) => {
      const [first, ...rest] = cells;
      return `<tr${r === highlight ? ' class="self"' : ''}><th scope="row">${first}</th>${rest.map((c) => `<td>${c}</td>`).join('')}</tr>`;
    })
    .join('');
  return `<div class="table-box"><table class="row-table"><thead><tr>${head}</tr></thead><tbody>${body}</tbody></table></div>`;
}

const CHUNK_ROWS = 32;
const ROW_PX = 24; // a row's height in style.css, for the size of a chunk not laid out yet

// The same table as ARIA table roles on a CSS grid, its rows in chunks of CHUNK_ROWS that the
// browser lays out only when they scroll into view (content-visibility: auto): a <table> of 512
// rows costs a long layout on every step. Every row stays in the document (find in page, screen
// readers).
function longTable(headers, rows, highlight) {
  const head = headers.map((h) => `<span role="columnheader">${h}</span>`).join('');
  const chunks = [];
  for (let r0 = 0; r0 < rows.length; r0 += CHUNK_ROWS) {
    const body = rows
      .slice(r0, r0 + CHUNK_ROWS)
      .map(([first, ...rest], k) => {
        const self = r0 + k === highlight ? ' self' : '';
        return `<div role="row" class="rt-row${self}"><span role="rowheader">${first}</span>${rest.map((c) => `<span role="cell">${c}</span>`).join('')}</div>`;
      })
      .join('');
    const rowCount = Math.min(CHUNK_ROWS, rows.length - r0);
    chunks.push(
      `<div role="rowgroup" class="rt-chunk" style="contain-intrinsic-size: auto ${rowCount * ROW_PX}px">${body}</div>`,
    );
  }
  const columns = `minmax(0, 1.6fr) repeat(${headers.length - 1}, minmax(0, 1fr))`;
  return (
    `<div class="table-box"><div role="table" class="row-table long" style="--rt-columns: ${columns}">` +
    `<div role="rowgroup"><div role="row" class="rt-row rt-head">${head}</div></div>${chunks.join('')}</div></div>`
  );
}

// Key j as a table row header: its number and token.
export const keyCell = (ctx, j) => `<span class="k-idx">${j + 1}</span> ${esc(ctx.labels[j])}`;
