// 2 threads over 1 on matmul 512³, per engine, side by side in one process or page:
//
//   node scripts/forensics/thread_scaling.mjs [--rounds N] [--isa simd128|relaxed-simd] [--json]
//   node scripts/forensics/thread_scaling.mjs --browser chromium|firefox [--rounds N] ...
//
// Four instances: 1 and 2 threads, each with the kernel the engine gets (gemm_select.cpp) and
// with the 4x8 kernel pinned (useGemmKernel). A GEMM's tasks are kMC / MR · MR rows of c
// (tuning.h): 64 rows with 4x8 tiles, 8 even tasks at 512 rows; 60 rows with 6x8 tiles, 8 tasks
// and a ninth of 32 rows, so 2 threads can split the work at best 4.53 : 4. Pinning 4x8 tells
// the split's share from the engine's (the pool's wake-ups and waits). Every round runs each
// instance `calls` times in turn; per call: the whole call, and the wasm call alone
// (Runtime.call), medians and bests of the rounds.
import { Runtime } from '../../web/lib/runtime.js';
import { createAttention, tensor } from '../../web/lib/index.js';

const N = 512;
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

function values(n, seed) {
  const x = new Float32Array(n);
  for (let i = 0; i < n; ++i) x[i] = (((i * 7919 + seed) % 1009) / 1009 - 0.5) * 0.5;
  return x;
}

// Runtime.call timed: wasm[] gets each binding call's ms; the last runtime called is kept.
const wasm = [];
let lastRuntime = null;
const originalCall = Runtime.prototype.call;
function instrument() {
  Runtime.prototype.call = function (...args) {
    lastRuntime = this;
    const t0 = performance.now();
    try {
      return originalCall.apply(this, args);
    } finally {
      wasm.push(performance.now() - t0);
    }
  };
  return () => (Runtime.prototype.call = originalCall);
}

export async function measureThreadScaling({ rounds = 9, calls = 4, isa = 'auto' } = {}) {
  const undo = instrument();
  try {
    const a = tensor(values(N * N, 1), [N, N]);
    const b = tensor(values(N * N, 2), [N, N]);
    const instances = [];
    for (const pin of [false, true])
      for (const threads of [1, 2]) {
        const attn = await createAttention({ threads, isa });
        attn.matmul(a, b);
        const module = lastRuntime.module;
        const relaxed = attn.backend.isa === 'relaxed-simd';
        if (pin && !module.useGemmKernel(relaxed ? 'f32_gemm_4x8_relaxed' : 'f32_gemm_4x8_vec128'))
          throw new Error('no 4x8 kernel');
        instances.push({ attn, threads: attn.backend.threads, kernel: module.gemmKernel(), total: [], wasm: [] });
      }
    for (const i of instances) for (let c = 0; c < 3; ++c) i.attn.matmul(a, b); // warm
    for (let r = 0; r < rounds; ++r)
      for (const i of instances)
        for (let c = 0; c < calls; ++c) {
          wasm.length = 0;
          const t0 = performance.now();
          i.attn.matmul(a, b);
          i.total.push(performance.now() - t0);
          i.wasm.push(wasm.reduce((x, y) => x + y, 0));
        }
    const backend = instances[0].attn.backend;
    const rows = instances.map((i) => ({
      threads: i.threads,
      kernel: i.kernel,
      total: { median: median(i.total), best: Math.min(...i.total) },
      wasm: { median: median(i.wasm), best: Math.min(...i.wasm) },
    }));
    for (const i of instances) i.attn.dispose();
    return { isa: backend.isa, rows };
  } finally {
    undo();
  }
}

export function formatThreadScaling(engine, { isa, rows }, load) {
  const lines = [`${engine}, ${isa}${load ? `, load ${load}` : ''}: matmul 512³, ms per call, median [best]`];
  const ms = (t) => `${t.median.toFixed(2)} [${t.best.toFixed(2)}]`;
  for (const r of rows) lines.push(`  ${r.kernel}, ${r.threads} thread(s): call ${ms(r.total)}, wasm ${ms(r.wasm)}`);
  for (let k = 0; k < rows.length; k += 2) {
    const [one, two] = [rows[k], rows[k + 1]];
    const x = (f) => `${(one[f].median / two[f].median).toFixed(2)}× [${(one[f].best / two[f].best).toFixed(2)}×]`;
    lines.push(`  ${one.kernel}: 2 threads over 1, call ${x('total')}, wasm ${x('wasm')}`);
  }
  return lines.join('\n');
}

async function main() {
  const args = process.argv.slice(2);
  const arg = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
  const options = { rounds: Number(arg('--rounds', 9)), isa: arg('--isa', 'auto') };
  const { loadavg } = await import('node:os');
  const load = () =>
    loadavg()
      .map((x) => x.toFixed(1))
      .join(' ');
  const before = load();
  const browserName = arg('--browser', null);
  let engine, result;
  if (browserName) {
    const { inPage } = await import('./in_page.mjs');
    ({ engine, result } = await inPage(
      browserName,
      '/scripts/forensics/thread_scaling.mjs',
      'measureThreadScaling',
      options,
    ));
  } else {
    engine = process.versions.bun ? `Bun ${process.versions.bun} (JavaScriptCore)` : `Node ${process.version} (V8)`;
    result = await measureThreadScaling(options);
  }
  console.log(formatThreadScaling(engine, result, `${before} -> ${load()}`));
  if (args.includes('--json')) console.log(JSON.stringify({ engine, ...result }));
}

if (typeof process === 'object' && process.argv?.[1] && new URL(import.meta.url).pathname === process.argv[1])
  await main();
