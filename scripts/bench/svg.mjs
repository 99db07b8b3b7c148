// A small SVG writer (no dependencies) and the results chart: horizontal bars of GFLOP/s,
// one group per case, one bar per implementation configuration, its time written at the
// end of the bar; rows that did not run say why in grey. A dashed line marks the measured
// one-core SIMD peak. Colours and legend from configs.mjs (Okabe-Ito).
import { configOf, configOrder, CONFIGS } from './configs.mjs';
import { fmtMs } from './table.mjs';

const escape = (s) =>
  String(s).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]);

// el('rect', { x: 1 }, ...children) -> '<rect x="1">...</rect>'; strings are escaped text
function el(name, attrs = {}, ...children) {
  const a = Object.entries(attrs)
    .filter(([, v]) => v !== undefined && v !== null)
    .map(([k, v]) => ` ${k}="${escape(typeof v === 'number' ? +v.toFixed(2) : v)}"`)
    .join('');
  const inner = children
    .flat()
    .map((c) => (c && typeof c === 'object' && 'svg' in c ? c.svg : escape(c ?? '')))
    .join('');
  return { svg: children.length ? `<${name}${a}>${inner}</${name}>` : `<${name}${a}/>` };
}

// 1, 2, 5 × 10^k steps giving about `count` ticks, the last one at or past max
function ticks(max, count = 6) {
  const raw = max / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw);
  const out = [0];
  while (out[out.length - 1] < max) out.push(+(out.length * step).toFixed(6));
  return out;
}

const FONT = 'system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif';
// a white outline under text, so grid lines and the peak line never run through a label
const HALO = { stroke: '#fff', 'stroke-width': 3, 'paint-order': 'stroke', 'stroke-linejoin': 'round' };

export function renderChart(results) {
  const groups = [];
  const caseIds = [];
  for (const r of results.rows) if (!caseIds.includes(r.case)) caseIds.push(r.case);
  for (const id of caseIds) {
    const list = results.rows.filter((r) => r.case === id);
    groups.push({ title: list[0].label, rows: list });
  }
  for (const n of results.long?.sizes ?? []) {
    const list = results.long.rows.filter((r) => r.n === n);
    if (list.length) groups.push({ title: `long sequence: causal attention n=${n} d=64`, rows: list });
  }
  for (const g of groups) g.rows.sort((a, b) => configOrder(a.impl) - configOrder(b.impl));

  const W = 980,
    left = 250,
    right = 150,
    barH = 15,
    gap = 3,
    groupGap = 14,
    titleH = 18;
  const plotW = W - left - right;
  const peak = results.peak.perCoreGflops;
  const maxValue = Math.max(peak, ...groups.flatMap((g) => g.rows.map((r) => r.gflops ?? 0)));
  const axis = ticks(maxValue * 1.02);
  const xMax = axis[axis.length - 1];
  const x = (v) => left + (v / xMax) * plotW;

  const parts = [];
  let y = 20;
  parts.push(
    el(
      'text',
      { x: 12, y, 'font-size': 17, 'font-weight': 'bold' },
      `wasm-attention vs tfjs-wasm, onnxruntime-web${results.machine.browser ? ` in ${results.machine.browser}` : ' and plain JS'}`,
    ),
  );
  y += 18;
  const m = results.machine;
  parts.push(
    el(
      'text',
      { x: 12, y, 'font-size': 12, fill: '#444' },
      `GFLOP/s (nominal, higher is better), time per call at the bar's end. ${m.cpuModel ?? 'CPU model not visible to a page'}, ${m.cores} cores, ${m.browser ?? `Node ${m.node}`}, ${results.startedAt}${results.options.quick ? ', --quick' : ''}.`,
    ),
  );
  y += 16;
  parts.push(
    el(
      'text',
      { x: 12, y, 'font-size': 12, fill: '#444' },
      `Dashed line: measured wasm SIMD peak of one core, ${peak.toFixed(1)} GFLOP/s (all ${results.peak.cores} cores: ${results.peak.allCoresGflops.toFixed(1)}).`,
    ),
  );
  y += 14;

  // legend, two columns
  const used = CONFIGS.filter((c) => groups.some((g) => g.rows.some((r) => r.impl === c.key)));
  used.forEach((c, i) => {
    const lx = 12 + (i % 3) * 320,
      ly = y + 8 + Math.floor(i / 3) * 18;
    parts.push(
      el('rect', { x: lx, y: ly, width: 14, height: 12, fill: c.colour, stroke: '#333', 'stroke-width': 0.5 }),
    );
    parts.push(el('text', { x: lx + 20, y: ly + 10.5, 'font-size': 12 }, c.label));
  });
  y += 8 + Math.ceil(used.length / 3) * 18 + 10;

  const top = y;
  for (const g of groups) {
    y += titleH;
    parts.push(el('text', { x: 12, y: y - 5, 'font-size': 13, 'font-weight': 'bold' }, g.title));
    for (const r of g.rows) {
      const c = configOf(r.impl);
      parts.push(el('text', { x: left - 8, y: y + barH - 4, 'font-size': 11.5, 'text-anchor': 'end' }, c.label));
      if (r.status === 'ok') {
        const w = Math.max(1, x(r.gflops) - left);
        parts.push(
          el(
            'rect',
            { x: left, y, width: w, height: barH, fill: c.colour, stroke: '#333', 'stroke-width': 0.5 },
            el(
              'title',
              {},
              `${c.label}: ${r.gflops.toFixed(2)} GFLOP/s, ${fmtMs(r.ms)} ms${r.formulation ? ` (${r.formulation})` : ''}`,
            ),
          ),
        );
        parts.push(
          el(
            'text',
            { x: left + w + 5, y: y + barH - 4, 'font-size': 11, ...HALO },
            `${r.gflops.toFixed(1)} GFLOP/s · ${fmtMs(r.ms)} ms`,
          ),
        );
      } else {
        const why = String(r.reason ?? r.status);
        parts.push(
          el(
            'text',
            { x: left + 4, y: y + barH - 4, 'font-size': 11, fill: '#666', 'font-style': 'italic', ...HALO },
            `${r.status}: ${why.length > 110 ? `${why.slice(0, 107)}...` : why}`,
          ),
        );
      }
      y += barH + gap;
    }
    y += groupGap;
  }
  const bottom = y;

  // axis, grid and peak line behind the bars and labels: drawn first in the output
  const grid = [];
  for (const t of axis) {
    grid.push(el('line', { x1: x(t), y1: top, x2: x(t), y2: bottom, stroke: '#e3e3e3' }));
    grid.push(
      el('text', { x: x(t), y: bottom + 14, 'font-size': 11, 'text-anchor': 'middle', fill: '#444' }, String(t)),
    );
  }
  grid.push(el('text', { x: left + plotW / 2, y: bottom + 30, 'font-size': 12, 'text-anchor': 'middle' }, 'GFLOP/s'));
  const peakLine = [
    el('line', {
      x1: x(peak),
      y1: top,
      x2: x(peak),
      y2: bottom,
      stroke: '#000',
      'stroke-dasharray': '5 4',
      'stroke-width': 1.2,
    }),
    el('text', { x: x(peak) + 3, y: top + 10, 'font-size': 11, ...HALO }, '1-core peak'),
  ];
  const H = bottom + 44;
  const svg = el(
    'svg',
    { xmlns: 'http://www.w3.org/2000/svg', width: W, height: H, viewBox: `0 0 ${W} ${H}` },
    el('rect', { x: 0, y: 0, width: W, height: H, fill: '#fff' }),
    el('g', { 'font-family': FONT, fill: '#111' }, ...grid, ...peakLine, ...parts),
  );
  return `<?xml version="1.0" encoding="UTF-8"?>\n${svg.svg}\n`;
}
