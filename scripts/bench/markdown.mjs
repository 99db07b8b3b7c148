// One run's results as markdown, for web/docs/performance.md:
//   node scripts/bench/markdown.mjs [build/bench/results.json]
//   node scripts/bench/markdown.mjs build/bench/results-browser.json   (a --browser run)
// A table of median ms per case (each peer's ratio to ours at the same thread count), the
// targets, startup, first call, sizes and long sequences.
import { readFileSync } from 'node:fs';

const file = process.argv[2] ?? new URL('../../build/bench/results.json', import.meta.url).pathname;
const r = JSON.parse(readFileSync(file, 'utf8'));
const row = (c, impl) => r.rows.find((x) => x.case === c && x.impl === impl);
const fmt = (v) => (v < 10 ? v.toFixed(2) : v < 100 ? v.toFixed(1) : v.toFixed(0));
const ms = (x) => (x?.status === 'ok' ? fmt(x.ms) : 'n/a');

const out = [];
const where = r.machine.browser ? `${r.machine.browser} (Node ${r.machine.node} drove it)` : `Node ${r.machine.node}`;
out.push(
  `Run of ${r.startedAt}${r.options.quick ? ' (--quick)' : ''}: ${r.machine.cpuModel ?? 'CPU not named'}, ${r.machine.cores} cores, ${where}; wasm SIMD peak ${r.peak.perCoreGflops.toFixed(1)} GFLOP/s per core (probe).`,
  '',
);
const hasJs = r.rows.some((x) => x.impl === 'js-1');
out.push(
  `| median ms (× = how many times slower than ours) | ours 1 thread | ours relaxed SIMD 1 ² | tfjs-wasm 1 | onnxruntime-web 1 | ours 2 threads | tfjs-wasm 2 ¹ | onnxruntime-web 2 |${hasJs ? ' plain JS |' : ''}`,
);
out.push(`|---|---|---|---|---|---|---|---|${hasJs ? '---|' : ''}`);
const cases = [...new Set(r.rows.map((x) => x.case))];
for (const c of cases) {
  const label = r.rows.find((x) => x.case === c).label;
  const cell = (impl, ours) => {
    const x = row(c, impl),
      o = row(c, ours);
    if (x?.status !== 'ok') return 'n/a';
    return impl.startsWith('ours') || o?.status !== 'ok' ? ms(x) : `${ms(x)} (${(x.ms / o.ms).toFixed(2)}×)`;
  };
  const gf = row(c, 'ours-1')?.gflops;
  // our relaxed-SIMD build: its time and its speed-up over our SIMD128 build
  const relaxed = (id) => {
    const x = row(id, 'ours-relaxed-1'),
      o = row(id, 'ours-1');
    if (x?.status !== 'ok') return x ? 'n/a' : '';
    return o?.status === 'ok' ? `${ms(x)} (${(o.ms / x.ms).toFixed(2)}× faster)` : ms(x);
  };
  out.push(
    `| ${label} | **${ms(row(c, 'ours-1'))}**${gf ? ` (${gf.toFixed(0)} GFLOP/s)` : ''} | ${relaxed(c)} | ${cell('tfjs-1', 'ours-1')} | ${cell('ort-1', 'ours-1')} | **${ms(row(c, 'ours-2'))}** | ${cell('tfjs-2', 'ours-2')} | ${cell('ort-2', 'ours-2')} |${hasJs ? ` ${cell('js-1', 'ours-1')} |` : ''}`,
  );
}
out.push(
  '',
  r.machine.browser
    ? '¹ tfjs-wasm sizes its pool to navigator.hardwareConcurrency / 2: its 2-thread frame reports twice the cores (scripts/bench/platform.mjs).'
    : '¹ tfjs-wasm does not run threaded in Node as published; patched as scripts/bench/tfjs_node_threads.mjs says.',
  "² our relaxed-SIMD build (f32x4.relaxed_madd: FMA), 1 thread; in brackets its speed-up over our SIMD128 build's 1 thread, same run.",
  '',
);
out.push('| target | this run | goal | |', '|---|---|---|---|');
for (const t of r.targets) {
  const v = t.value == null ? 'n/a' : `${t.value.toFixed(t.unit === '%' ? 1 : 2)} ${t.unit}`;
  out.push(
    `| ${t.target} | ${v} | ${t.unit.startsWith('KB') ? `< ${t.goal} KB` : `≥ ${t.goal} ${t.unit}`} | ${t.ok == null ? 'n/a' : t.ok ? 'met' : '**missed**'} |`,
  );
}
if (r.startup) {
  out.push('', '| ready module (fresh process) | ms |', '|---|---|');
  for (const s of r.startup) out.push(`| ${s.label} | ${s.error ? 'failed' : s.totalMs.toFixed(0)} |`);
}
if (r.firstCall) {
  out.push('', '| attention n=19 d=100, fresh instance | first call ms | second ms | steady ms |', '|---|---|---|---|');
  for (const f of r.firstCall) {
    out.push(
      `| ${f.label} | ${f.error ? 'failed | | ' : [f.firstMs, f.secondMs, f.steadyMs].map((v) => (v < 1 ? v.toFixed(3) : fmt(v))).join(' | ')} |`,
    );
  }
}
if (r.long) {
  out.push(
    '',
    '| causal attention, d = 64 | ' +
      [...new Set(r.long.rows.map((x) => x.n))].map((n) => `n = ${n}`).join(' | ') +
      ' |',
  );
  out.push('|---|' + [...new Set(r.long.rows.map((x) => x.n))].map(() => '---|').join(''));
  for (const impl of [...new Set(r.long.rows.map((x) => x.impl))]) {
    const cells = r.long.rows
      .filter((x) => x.impl === impl)
      .map((x) =>
        x.status === 'ok'
          ? `${ms(x)} ms${x.wasmBytes ? `, ${(x.wasmBytes / 2 ** 20).toFixed(0)} MB` : ''}`
          : x.status === 'failed'
            ? `fails: ${x.reason.slice(0, 40)}`
            : x.status,
      );
    out.push(`| ${impl} | ${cells.join(' | ')} |`);
  }
}
process.stdout.write(`${out.join('\n')}\n`);
