// Each heatmap's downloads: the picture as PNG and the numbers as CSV, two buttons under it.
//
//   addExportButtons(hm, spec)   hm: createHeatmap's or createOverviewHeatmap's handle; spec its
//                                heatmap spec. PNG: the heatmap as drawn; for a small multiple or
//                                a long input's overview, the whole matrix drawn at full size
//                                (cells of 10 px or more, 6 px past 256 rows); CSV: matrixCsv(spec)
//   matrixCsv(spec) -> string    RFC 4180: a header row (a corner cell, then the column labels:
//                                the tokens, or 1…cols), then one line per row (its label, then its
//                                values as JavaScript writes the float32 numbers: exact, -Infinity
//                                for a masked score)
//   download(blob, filename)     saves a Blob through a temporary <a download>
import { esc } from './format.js';
import { createHeatmap } from './heatmap.js';
import { isLong } from './overview.js';

const field = (s) => (/[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s);

export function matrixCsv(spec) {
  const [rows, cols] = spec.shape;
  const corner = spec.rowLabels ? (spec.rowNoun ?? 'token') : (spec.rowNoun ?? 'row');
  const colNames = spec.colLabels ?? Array.from({ length: cols }, (_, c) => String(c + 1));
  const lines = [[corner, ...colNames].map(field).join(',')];
  for (let r = 0; r < rows; ++r) {
    const label = spec.rowLabels ? spec.rowLabels[r] : String(r + 1);
    const values = Array.from(spec.data.subarray(r * cols, (r + 1) * cols), String);
    lines.push([field(label), ...values].join(','));
  }
  return `${lines.join('\r\n')}\r\n`;
}

export function download(blob, filename) {
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = filename;
  a.hidden = true;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

export function addExportButtons(hm, spec) {
  const bar = document.createElement('div');
  bar.className = 'hm-export';
  bar.innerHTML =
    `<button type="button" class="small-button" data-export="png" aria-label="Download ${esc(spec.label)} as PNG">PNG</button>` +
    `<button type="button" class="small-button" data-export="csv" aria-label="Download ${esc(spec.label)} numbers as CSV">CSV</button>`;
  bar.addEventListener('click', (e) => {
    const kind = e.target.closest('button[data-export]')?.dataset.export;
    if (kind === 'csv') download(new Blob([matrixCsv(spec)], { type: 'text/csv' }), `${spec.name}.csv`);
    if (kind === 'png') {
      const full = spec.compact || isLong(spec);
      const canvas = full
        ? createHeatmap({ ...spec, compact: false, cell: spec.shape[0] > 256 ? 6 : undefined }).canvas
        : hm.canvas;
      canvas.toBlob((blob) => blob && download(blob, `${spec.name}.png`), 'image/png');
    }
  });
  hm.element.append(bar);
}
