// The bench's text report (scripts/bench/table.mjs) on a made-up run: each decode row states both
// of its limits, its share of the read probe at its thread count and the GB/s the mul+add peak
// allows at its FLOPs per cache byte (float32 2, int8 7.5: the same FLOPs on fewer bytes), and a
// long row its GFLOP/s against the same decode over a cache the CPU's caches hold.
// Nothing here runs a kernel or asserts a speed.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { caseById } from '../../../scripts/bench/cases.mjs';
import { forwardFlops } from '../../../scripts/bench/flops.mjs';
import { peakRecord } from '../../../scripts/bench/peak_probe.mjs';
import { renderReport } from '../../../scripts/bench/table.mjs';
import { checkTargets } from '../../../scripts/bench/targets.mjs';

// A run with one decode row per case id, each 6 ms on `threads` threads, a 41 GFLOP/s peak per
// core and read probes of 23 (1 thread) and 38 GB/s (2); probeGbs: each row's own probe, where
// given -> the report's lines
function decodeRows(ids, threads, probeGbs) {
  return ids.map((id) => {
    const spec = caseById(id);
    const flops = forwardFlops(spec);
    return {
      case: id,
      section: 'decode',
      impl: `ours-${threads}`,
      threads,
      status: 'ok',
      ms: 6,
      flops,
      gflops: flops / 6e6,
      label: spec.label,
      ...(probeGbs ? { probeGbs } : {}),
    };
  });
}
const BANDWIDTH = { gbPerSecond: 23, byThreads: { 1: 23, 2: 38 }, methods: {} };
function report(ids, threads, probeGbs) {
  const peak = peakRecord({ perCoreGflops: 41, allCoresGflops: 80, cores: 2 });
  const rows = decodeRows(ids, threads, probeGbs);
  const machine = { cpuModel: 'a CPU', cores: 2, memoryGB: 8, node: '20', v8: '11', loadAverage: [0, 0, 0] };
  return renderReport({ machine, peak, rows, notes: [], options: {}, startedAt: 'now', bandwidth: BANDWIDTH }).split(
    '\n',
  );
}

test('a float32 decode row states its % of the read probe and the mul+add peak as GB/s at 2 FLOPs per byte', () => {
  const [line] = report(['decode-8192'], 1).filter((l) => l.includes('bytes per token per kv head'));
  // 8 kv heads × 8193 tokens × 1024 bytes in 6 ms
  const gbs = (8 * 8193 * 1024) / 6e6;
  assert.match(
    line,
    new RegExp(`${gbs.toFixed(1)} GB/s of cache read, ${Math.round((100 * gbs) / 23)}% of the 1-thread read probe`),
  );
  assert.match(line, /2\.0 FLOPs per byte: the mul\+add peak reads at most 20\.5 GB\/s \(89% of the probe\)/);
});

test('an int8 row does the same FLOPs on 272 bytes per token: 7.5 FLOPs per byte; 2 threads take two cores of peak', () => {
  const [line] = report(['decode-8192-int8'], 2).filter((l) => l.includes('bytes per token per kv head'));
  const perByte = (4 * 32 * 128) / (8 * 272);
  assert.match(line, /272 bytes per token per kv head/);
  assert.match(
    line,
    new RegExp(
      `${perByte.toFixed(1)} FLOPs per byte: the mul\\+add peak reads at most ${(80 / perByte).toFixed(1)} GB/s \\(${Math.round((100 * 80) / perByte / 38)}% of the probe\\)`,
    ),
  );
});

test('a row measured with a probe beside it is stated against that probe, in the table and the targets', () => {
  const gbs = (8 * 8193 * 1024) / 6e6; // 11.2 GB/s
  const [line] = report(['decode-8192'], 1, 20).filter((l) => l.includes('bytes per token per kv head'));
  assert.match(
    line,
    new RegExp(
      `${gbs.toFixed(1)} GB/s of cache read, ${Math.round((100 * gbs) / 20)}% of the 1-thread read probe beside it \\(20\\.0 GB/s\\)`,
    ),
  );
  const peak = peakRecord({ perCoreGflops: 41, allCoresGflops: 80, cores: 2 });
  const share = (rows) =>
    checkTargets({ rows, peak, bandwidth: BANDWIDTH }).find((t) =>
      t.target.startsWith('decode, cache 8192, 1 thread: cache read'),
    );
  assert.equal(share(decodeRows(['decode-8192'], 1, 20)).value, (100 * gbs) / 20);
  assert.equal(share(decodeRows(['decode-8192'], 1)).value, (100 * gbs) / 23); // the run's probe
});

test('a long decode row states its GFLOP/s against the same decode in cache, in the table and the targets', () => {
  // the 8192 row at 6 ms against 512- and 1024-key rows at the same 6 ms: the faster of the two
  // in GFLOP/s is the 1024 row (more FLOPs in the same time)
  const rows = decodeRows(['decode-512', 'decode-1024', 'decode-8192'], 1);
  const peak = peakRecord({ perCoreGflops: 41, allCoresGflops: 80, cores: 2 });
  const machine = { cpuModel: 'a CPU', cores: 2, memoryGB: 8, node: '20', v8: '11', loadAverage: [0, 0, 0] };
  const lines = renderReport({ machine, peak, rows, notes: [], options: {}, startedAt: 'now', bandwidth: BANDWIDTH })
    .split('\n')
    .filter((l) => l.includes('bytes per token per kv head'));
  const [r512, r1024, r8192] = rows;
  const share = Math.round((100 * r8192.gflops) / r1024.gflops);
  const inCache = (r1024.gflops / 2).toFixed(1); // 2 FLOPs per byte
  assert.match(
    lines[2],
    new RegExp(
      `${share}% of the same decode's GFLOP/s in cache \\(1024 keys, 8\\.0 MiB; at that rate it would read ${inCache} GB/s\\)`,
    ),
  );
  // the in-cache rows themselves are not held to one
  assert.ok(!lines[0].includes('in cache') && !lines[1].includes('in cache'));
  const target = (list) =>
    checkTargets({ rows: list, peak, bandwidth: BANDWIDTH }).find((t) =>
      t.target.startsWith('decode, cache 8192, 1 thread: GFLOP/s over the same decode in cache'),
    );
  assert.equal(target(rows).value, r8192.gflops / r1024.gflops);
  assert.equal(target([r512, r8192]).value, r8192.gflops / r512.gflops); // the 512 row alone
  assert.equal(target([r8192]).value, null); // no in-cache row: not measured
  // another dtype's or thread count's in-cache row is not this row's reference
  assert.equal(target([...decodeRows(['decode-1024-int8'], 1), ...decodeRows(['decode-1024'], 2), r8192]).value, null);
});
