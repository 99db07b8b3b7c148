// Where attention's time goes, per engine: the pieces of rows_probe.cpp (bench-only modules in
// build/wasm/bench/, built on demand: bench_modules.mjs), timed side by side in one process or page.
//
//   node scripts/forensics/rows_probe.mjs [--rounds N] [--json]             V8 (Node)
//   node_modules/.bin/bun scripts/forensics/rows_probe.mjs [--rounds N]     JavaScriptCore (Bun)
//   node scripts/forensics/rows_probe.mjs --browser chromium|firefox|webkit [--rounds N]
//
// Three shapes, on 1 thread:
//   attention  single-head causal attention, n 512, d 64 (the bench's attention-causal)
//   full       the same, not causal (the bench's attention)
//   decode     one token over a cache of 4096 keys, Hq 32 Hkv 8 d 128: one kv head's work (its
//              GQA group of 4 query heads stacked), times 8 for the whole decode
// and their pieces, each walked over the same row and key blocks as attention_rows_online:
//   scores   q·kᵀ per key block (GEMM)           softmax  scale, mask, max, exp, sum
//   values   weights·v per key block (GEMM)      exp      the exp polynomial alone, as many lanes
//   online   attention_rows_online itself: the three pieces and the rescaling of the sums
//   forward  the whole call in wasm (attention_forward: k and v packed, the rows, the output
//            normalized); not for decode
// For each ISA the engine runs (SIMD128; relaxed SIMD where it validates), every round runs
// every piece once in turn (so a busy neighbour slows them alike); medians and bests of the
// rounds. Shares are of scores + softmax + values, from the bests (a neighbour only ever adds
// time: in a page, whose clock is wall time, the best is what the piece costs); "softmax/GEMM"
// compares engines with their own GEMM speed taken out.
import { relaxedSimdAvailable } from '../../web/lib/internal.js';
import { benchModule, buildForensics, cpuClock, now } from './bench_modules.mjs';

const SHAPES = {
  attention: { slot: 0, heads: 1, n_q: 512, n_k: 512, d: 64, causal: 1, times: 1 },
  full: { slot: 2, heads: 1, n_q: 512, n_k: 512, d: 64, causal: 0, times: 1 },
  decode: { slot: 1, heads: 4, n_q: 1, n_k: 4096, d: 128, causal: 0, times: 8 },
};
const PIECES = { scores: 1, softmax: 2, values: 4, exp: 8, online: 16, forward: 32 };
const TARGET_MS = 15; // per measurement: long enough for a 1 ms clock, short on a busy machine

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

// factory: an Emscripten factory of rows_probe_{simd,relaxed}; wasmBinary its bytes.
export async function measureRows({ factory, wasmBinary, rounds = 7 }) {
  const m = await factory({ wasmBinary });
  const result = {};
  for (const [name, s] of Object.entries(SHAPES)) {
    m._rp_setup(s.slot, s.heads, s.n_q, s.n_k, s.d, s.causal);
    for (let i = 0; i < 5; ++i) m._rp_run(s.slot, PIECES.online, 1); // warm: the optimizing tier
    const t0 = performance.now();
    m._rp_run(s.slot, PIECES.online, 3);
    const reps = Math.max(1, Math.ceil(TARGET_MS / ((performance.now() - t0) / 3)));
    const pieces = Object.entries(PIECES).filter(([p]) => p !== 'forward' || s.heads === 1);
    for (let i = 0; i < 5; ++i) if (s.heads === 1) m._rp_run(s.slot, PIECES.forward, 1);
    const times = Object.fromEntries(pieces.map(([p]) => [p, []]));
    for (let r = 0; r < rounds; ++r)
      for (const [piece, bit] of pieces) {
        const t = now();
        m._rp_run(s.slot, bit, reps);
        times[piece].push(((now() - t) / reps) * s.times);
      }
    result[name] = {
      median: Object.fromEntries(Object.entries(times).map(([p, ts]) => [p, median(ts)])),
      best: Object.fromEntries(Object.entries(times).map(([p, ts]) => [p, Math.min(...ts)])),
    };
  }
  return { clock: cpuClock ? 'CPU time' : 'wall time', ...result };
}

// One engine's results -> text lines.
export function formatRows(engine, results, load) {
  const clock = Object.values(results)[0]?.clock;
  const lines = [
    `${engine}${load ? `, load ${load}` : ''}: ms per call (${clock}), median [best]; shares and ratios of the bests`,
  ];
  for (const [isa, { clock: _, ...shapes }] of Object.entries(results))
    for (const [name, { median: t, best: b }] of Object.entries(shapes)) {
      const sum = b.scores + b.softmax + b.values;
      const pct = (x) => `${((100 * x) / sum).toFixed(0)} %`;
      const ms = (piece) => `${t[piece].toFixed(3)} [${b[piece].toFixed(3)}]`;
      lines.push(
        `  ${isa.padEnd(8)} ${name.padEnd(9)} online ${ms('online')}  scores ${ms('scores')} (${pct(b.scores)})` +
          `  softmax ${ms('softmax')} (${pct(b.softmax)}; exp alone ${ms('exp')})  values ${ms('values')} (${pct(b.values)})` +
          `  softmax/GEMM ${(b.softmax / (b.scores + b.values)).toFixed(2)}  online/sum ${(b.online / sum).toFixed(2)}` +
          (t.forward === undefined ? '' : `  forward ${ms('forward')} (online + ${(b.forward - b.online).toFixed(3)})`),
      );
    }
  return lines.join('\n');
}

// The probe modules (bench_modules.mjs: from build/wasm/bench/, in a page or here) -> results.
export async function measureRowsOfBuild(rounds) {
  const results = {};
  for (const [isa, name, exportName] of [
    ['simd128', 'rows_probe_simd128', 'createRowsProbeSimd128'],
    ['relaxed', 'rows_probe_relaxed_simd', 'createRowsProbeRelaxedSimd'],
  ]) {
    if (isa === 'relaxed' && !relaxedSimdAvailable()) continue;
    results[isa] = await measureRows({ ...(await benchModule(name, exportName)), rounds });
  }
  return results;
}

async function main() {
  (await import('../bench/spawn.mjs')).rerunWithRelaxedSimd();
  await buildForensics();
  const { argument, measureAndPrint } = await import('./in_page.mjs');
  await measureAndPrint({
    moduleUrl: '/scripts/forensics/rows_probe.mjs',
    exportName: 'measureRowsOfBuild',
    measureHere: measureRowsOfBuild,
    format: formatRows,
    options: Number(argument('--rounds', 7)),
  });
}

if (typeof process === 'object' && process.argv?.[1] && new URL(import.meta.url).pathname === process.argv[1])
  await main();
