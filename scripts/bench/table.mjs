// The text report on stdout: fixed-width tables, one block per case, then startup, first
// call, sizes and long sequences.
import { TOLERANCE } from './compare.mjs';
import { caseById } from './cases.mjs';
import { configOf, configOrder } from './configs.mjs';
import { cacheBytes, decodeInCache, decodeRead, tokenBytes } from './targets.mjs';

export const fmtMs = (ms) => (ms == null ? '' : ms < 10 ? ms.toFixed(2) : ms < 100 ? ms.toFixed(1) : ms.toFixed(0));
const fmtG = (g) => (g == null ? '' : g < 10 ? g.toFixed(2) : g.toFixed(1));
const fmtBytes = (b) =>
  b == null
    ? 'n/a'
    : b >= 2 ** 30
      ? `${(b / 2 ** 30).toFixed(2)} GB`
      : b >= 2 ** 20
        ? `${(b / 2 ** 20).toFixed(1)} MB`
        : `${(b / 2 ** 10).toFixed(1)} KB`;

// rows of cells -> lines, columns padded; numeric-looking columns right-aligned
function grid(header, rows, rightAligned) {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i] ?? '').length)));
  const line = (cells) =>
    cells
      .map((c, i) => {
        const s = String(c ?? '');
        return rightAligned.includes(i) ? s.padStart(widths[i]) : s.padEnd(widths[i]);
      })
      .join('  ')
      .trimEnd();
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)];
}

// bandwidth: the read probe (bandwidth.mjs) by thread count, or null where none ran; flops:
// the case's nominal FLOPs; peak: the SIMD peak probe (peak_probe.mjs); all: the run's rows
function notes(r, bandwidth, flops, peak, all) {
  const parts = [];
  if (r.status !== 'ok') parts.push(r.reason ?? r.status);
  if (r.status === 'ok' && r.case.startsWith('decode-')) {
    const spec = caseById(r.case);
    const { gbs, probe } = decodeRead(r, bandwidth);
    const which = r.probeGbs
      ? `${r.threads}-thread read probe beside it (${r.probeGbs.toFixed(1)} GB/s)`
      : `${r.threads}-thread read probe`;
    parts.push(`${tokenBytes(spec)} bytes per token per kv head`);
    parts.push(
      `${gbs.toFixed(1)} GB/s of cache read${probe ? `, ${Math.round((100 * gbs) / probe)}% of the ${which}` : ''}`,
    );
    // the other limit: the multiply-adds a byte of cache takes (2 FLOPs per float32 value and
    // query head of its group), at the mul+add peak of the row's thread count
    const perByte = flops / cacheBytes(spec);
    const computeGbs = peak.forThreads(r.threads) / perByte;
    parts.push(
      `${perByte.toFixed(1)} FLOPs per byte: the mul+add peak reads at most ${computeGbs.toFixed(1)} GB/s${probe ? ` (${Math.round((100 * computeGbs) / probe)}% of the probe)` : ''}`,
    );
    // the limit it sits on: the same decode's rate over a cache the CPU's caches hold
    const ref = decodeInCache(r, all);
    if (ref)
      parts.push(
        `${Math.round((100 * r.gflops) / ref.gflops)}% of the same decode's GFLOP/s in cache (${ref.past} keys, ${(ref.bytes / 2 ** 20).toFixed(1)} MiB; at that rate it would read ${(ref.gflops / perByte).toFixed(1)} GB/s)`,
      );
  }
  if (r.formulation) parts.push(r.formulation);
  if (r.note) parts.push(r.note);
  if (r.check && !r.check.reference && !r.check.ok)
    parts.push(`OUTPUT DIFFERS from ${r.check.against}: ${r.check.relDiff.toExponential(1)} relative`);
  return parts.join('; ');
}

function caseBlock(label, flops, rows, peak, bandwidth, all) {
  const lines = [`${label}   (${(flops / 1e6).toFixed(1)} MFLOP nominal)`];
  const sorted = [...rows].sort((a, b) => configOrder(a.impl) - configOrder(b.impl));
  const body = sorted.map((r) => [
    configOf(r.impl).label,
    r.status === 'ok' ? fmtMs(r.ms) : r.status,
    r.status === 'ok' ? fmtG(r.gflops) : '',
    r.status === 'ok' ? `${Math.round((100 * r.gflops) / peak.forThreads(r.threads))}%` : '',
    r.oursSpeedup ? `${r.oursSpeedup.factor.toFixed(2)}×` : '',
    r.check ? (r.check.reference ? 'ref' : r.check.ok ? 'ok' : 'DIFF') : '',
    notes(r, bandwidth, flops, peak, all),
  ]);
  lines.push(
    ...grid(
      ['implementation', 'ms', 'GFLOP/s', '%peak', 'ours ×', 'check', 'formulation / notes'],
      body,
      [1, 2, 3, 4],
    ).map((l) => `  ${l}`),
  );
  return lines;
}

// The machine, in one line: Node's view, or a browser's (which cannot see the CPU's model:
// the Node process that drove the browser adds it, a visitor's page says so).
export function machineLine(m) {
  const cpu = m.cpuModel ?? 'CPU model not visible to a web page';
  if (!m.browser) {
    return `${cpu}, ${m.cores} cores, ${m.memoryGB} GB; Node ${m.node} (V8 ${m.v8}); load average at start ${m.loadAverage.join(' ')}`;
  }
  const load = m.loadAverage ? `; load average at start ${m.loadAverage.join(' ')}` : '';
  return `${cpu}, ${m.cores} logical cores; ${m.browser}${m.crossOriginIsolated ? ', cross-origin isolated (threads on)' : ', NOT cross-origin isolated (one thread only)'}${load}`;
}

export function renderReport(results) {
  const { machine, peak, rows, startup, firstCall, sizes, long } = results;
  const out = [];
  const where = machine.browser ? ` in ${machine.browser}` : '';
  out.push(`wasm-attention benchmark${where} — ${results.startedAt}${results.options.quick ? ' (--quick)' : ''}`);
  out.push(`machine: ${machineLine(machine)}`);
  for (const n of results.notes) out.push(`note: ${n}`);
  out.push(
    `wasm SIMD peak: ${peak.perCoreGflops.toFixed(1)} GFLOP/s on one core, ${peak.allCoresGflops.toFixed(1)} on all ${peak.cores} (${peak.method})`,
  );
  if (peak.fmaPerCoreGflops)
    out.push(
      `wasm relaxed-SIMD FMA peak: ${peak.fmaPerCoreGflops.toFixed(1)} GFLOP/s on one core, ${(peak.fmaPerCoreGflops / peak.perCoreGflops).toFixed(2)}× the mul+add peak (${peak.fmaMethod})`,
    );
  if (results.bandwidth)
    for (const [threads, gbs] of Object.entries(results.bandwidth.byThreads ?? { 1: results.bandwidth.gbPerSecond }))
      out.push(
        `memory read probe: ${gbs.toFixed(1)} GB/s (${results.bandwidth.methods?.[threads] ?? results.bandwidth.method})`,
      );
  out.push('');

  if (rows.length) {
    out.push(
      'ms: median wall time per call, JS arrays in and out.  GFLOP/s: nominal FLOPs (flops.mjs: causal counts as full, backward as 2× forward) ÷ time.',
    );
    out.push(
      `%peak: of the SIMD peak for the row's threads (over 100% is possible for causal rows, whose nominal FLOPs include the masked half).  ours ×: this row's time ÷ ours (SIMD128) at the same thread count (> 1: ours is faster; for our relaxed-SIMD row, < 1: relaxed SIMD is faster).  check: output sample vs the float64 reference (scripts/lib/reference.mjs) where the case has one, else vs ours on 1 thread (ref), relative difference <= ${TOLERANCE}.`,
    );
    out.push('');
    const seen = [];
    for (const r of rows) if (!seen.includes(r.case)) seen.push(r.case);
    for (const id of seen) {
      const list = rows.filter((r) => r.case === id);
      out.push(...caseBlock(list[0].label, list[0].flops, list, peak, results.bandwidth, rows), '');
    }
  }

  if (startup?.length) {
    out.push('time to a ready module (fresh processes, median of ' + startup[0].processes + '):');
    const body = startup.map((s) => [
      s.label,
      s.error ? 'failed' : fmtMs(s.importMs),
      s.error ? '' : fmtMs(s.initMs),
      s.error ? '' : fmtMs(s.totalMs),
      s.error ? '' : fmtMs(s.sinceProcessStartMs),
      s.error ?? '',
    ]);
    out.push(
      ...grid(
        ['configuration', 'import ms', 'init ms', 'total ms', 'since process start ms', 'notes'],
        body,
        [1, 2, 3, 4],
      ).map((l) => `  ${l}`),
      '',
    );
  }

  if (firstCall?.length) {
    out.push(
      `first call on a fresh instance: attention n=19 d=100 right after createAttention, then the second call, then the steady state (median after warm-up); fresh processes, median of ${firstCall[0].processes}:`,
    );
    const fine = (ms) => (ms < 1 ? ms.toFixed(3) : fmtMs(ms));
    const body = firstCall.map((f) =>
      f.error
        ? [f.label, 'failed', '', '', '', f.error]
        : [f.label, fine(f.firstMs), fine(f.secondMs), fine(f.steadyMs), `${(f.firstMs / f.steadyMs).toFixed(0)}×`, ''],
    );
    out.push(
      ...grid(
        ['configuration', 'first ms', 'second ms', 'steady ms', 'first ÷ steady', 'notes'],
        body,
        [1, 2, 3, 4],
      ).map((l) => `  ${l}`),
      '',
    );
  }

  if (sizes) {
    out.push('wasm files:');
    const body = [
      ...sizes.ours.map((s) => [s.file, s.bytes, s.gzipBytes]),
      ...sizes.peers.map((s) => [`(${s.peer}) ${s.file}`, s.bytes, s.gzipBytes]),
    ].map(([f, b, g]) => [f, `${b.toLocaleString('en-US')} B`, fmtBytes(b), `${fmtBytes(g)} gzip -9`]);
    out.push(...grid(['file', 'bytes', '', 'compressed'], body, [1, 2, 3]).map((l) => `  ${l}`), '');
  }

  if (long?.rows.length) {
    out.push('long sequences: causal attention, d = 64 (one fresh process per cell; GFLOP/s nominal: 4·n²·d)');
    out.push(
      '  cell: ms, GFLOP/s, peak wasm memory (ours: attn.memory().wasmBytes after the call; tfjs: its wasm heap; ORT: not exposed), peak RSS of the process',
    );
    const keys = [...new Set(long.rows.map((r) => r.impl))].sort((a, b) => configOrder(a) - configOrder(b));
    for (const key of keys) {
      out.push(`  ${configOf(key).label}:`);
      for (const r of long.rows.filter((x) => x.impl === key)) {
        const text =
          r.status === 'ok'
            ? `${fmtMs(r.ms).padStart(8)} ms  ${fmtG(r.gflops).padStart(6)} GFLOP/s  wasm ${fmtBytes(r.wasmBytes)}, RSS ${fmtBytes(r.maxRssBytes)}${r.note ? `  (${r.note})` : ''}`
            : `${r.status}: ${r.reason}${r.status === 'failed' && (r.wasmBytes || r.maxRssBytes) ? ` (by then: wasm ${fmtBytes(r.wasmBytes)}, RSS ${fmtBytes(r.maxRssBytes)})` : ''}`;
        out.push(`    n=${String(r.n).padEnd(6)} ${text}`);
      }
    }
    out.push('');
  }
  return out.join('\n');
}
