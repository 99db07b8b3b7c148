// 2 threads over 1, per engine, side by side in one process or page: what the second thread
// gains on a call, and how much of what it does not gain is the split's and how much the pool's.
//   node scripts/forensics/thread_scaling.mjs [--case matmul|mha|attention|causal] [--queries R]
//     [--rounds N] [--isa simd128|relaxed-simd] [--read reused] [--baseline DIR] [--json]
//   node scripts/forensics/thread_scaling.mjs --browser chromium|firefox [--case C] [--rounds N] ...
// matmul and mha also run with the 4x8 kernel pinned (useGemmKernel), whose split is 1 : 1, to
// tell the split's share from the engine's. A round's first call on an instance is reported
// apart: it pays the sleeping workers' wake-up. --read reused: results into an array made
// once; --baseline DIR: another build's 1- and 2-thread instances in the same rounds.

const N = 512;
const quantile = (xs, q) => [...xs].sort((a, b) => a - b)[Math.floor(q * (xs.length - 1))];
const summary = (xs) => ({ median: quantile(xs, 0.5), p10: quantile(xs, 0.1), best: Math.min(...xs) });

function values(n, seed) {
  const x = new Float32Array(n);
  for (let i = 0; i < n; ++i) x[i] = (((i * 7919 + seed) % 1009) / 1009 - 0.5) * 0.5;
  return x;
}
// a, b (512,512): plain tensors, which every package copy takes
const a = { data: values(N * N, 1), shape: [N, N] };
const b = { data: values(N * N, 2), shape: [N, N] };
// k, v (512,64) of the single-head cases; q (queries,64)
const D = 64;
const [k, v] = [4, 5].map((seed) => ({ data: values(N * D, seed), shape: [N, D] }));
const single = { attention: { causal: false }, causal: { causal: true } };
const titles = {
  matmul: 'matmul 512³',
  mha: 'multi-head attention forward n 512',
  attention: 'single-head attention n 512 d 64',
  causal: 'causal single-head attention n 512 d 64',
};

// Runtime.call timed: wasm[] gets each binding call's ms; the last runtime called is kept.
const wasm = [];
let lastRuntime = null;
function instrument(Runtime) {
  const originalCall = Runtime.prototype.call;
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

// lib: the package's folder (a URL or path ending in '/'); baseline: another one, or null.
export async function measureThreadScaling({
  rounds = 9,
  calls = 4,
  isa = 'auto',
  lib = null,
  baseline = null,
  op = 'matmul',
  queries = N,
  read = null,
} = {}) {
  lib ??= new URL('../../web/lib/', import.meta.url).href;
  if (!titles[op]) throw new Error(`--case ${op}: one of ${Object.keys(titles).join(', ')}`);
  const q = { data: values(queries * D, 3), shape: [queries, D] };
  const undo = [];
  if (read) undo.push((await import('./call_overhead.mjs')).readOtherwise(read));
  try {
    const instances = [];
    for (const [dir, pins, label] of [
      [lib, [false, true], ''],
      ...(baseline ? [[baseline, [false], ' (baseline)']] : []),
    ]) {
      const { createAttention } = await import(`${dir}index.js`);
      undo.push(instrument((await import(`${dir}runtime.js`)).Runtime));
      for (const pin of single[op] ? [false] : pins)
        for (const threads of [1, 2]) {
          const attn = await createAttention({ threads, isa });
          const layer = attn.multiHeadAttention({ dModel: N, heads: 8, seed: 1 });
          const run = single[op]
            ? () => attn.attention(q, k, v, single[op])
            : op === 'mha'
              ? () => layer.forward(a)
              : () => attn.matmul(a, b);
          run();
          const module = lastRuntime.module;
          const relaxed = attn.backend.isa === 'relaxed-simd';
          if (pin && !module.useGemmKernel(relaxed ? 'f32_gemm_4x8_relaxed_simd' : 'f32_gemm_4x8_simd128'))
            throw new Error('no 4x8 kernel');
          const kernel = `${module.gemmKernel()}${pin ? ' pinned' : ''}${label}`;
          instances.push({ attn, run, threads: attn.backend.threads, kernel, total: [], wasm: [], first: [] });
        }
    }
    for (const i of instances) for (let c = 0; c < 3; ++c) i.run(); // warm
    for (let r = 0; r < rounds; ++r)
      for (const i of instances)
        for (let c = 0; c < calls; ++c) {
          wasm.length = 0;
          const t0 = performance.now();
          i.run();
          i.total.push(performance.now() - t0);
          // the round's first call finds the workers asleep (the other instances ran meanwhile)
          (c === 0 ? i.first : i.wasm).push(wasm.reduce((x, y) => x + y, 0));
        }
    const backend = instances[0].attn.backend;
    const rows = instances.map((i) => ({
      threads: i.threads,
      kernel: i.kernel,
      total: summary(i.total),
      wasm: summary(i.wasm),
      first: summary(i.first),
    }));
    for (const i of instances) i.attn.dispose();
    return { isa: backend.isa, op, queries: single[op] ? queries : N, read, rows };
  } finally {
    undo.forEach((u) => u());
  }
}

export function formatThreadScaling(engine, { isa, op, queries, read, rows }, load) {
  const lines = [
    `${engine}, ${isa}${load ? `, load ${load}` : ''}: ${titles[op]}${queries !== N ? `, ${queries} queries` : ''}${read ? `, read: ${read}` : ''}, ms per call, median / 10th percentile / best`,
  ];
  const ms = (t) => `${t.median.toFixed(3)} / ${t.p10.toFixed(3)} / ${t.best.toFixed(3)}`;
  for (const r of rows)
    lines.push(
      `  ${r.kernel}, ${r.threads} thread(s): call ${ms(r.total)}, wasm ${ms(r.wasm)}, wasm of a round's first call ${ms(r.first)}`,
    );
  for (let k = 0; k < rows.length; k += 2) {
    const [one, two] = [rows[k], rows[k + 1]];
    const x = (f) => ['median', 'p10', 'best'].map((q) => `${(one[f][q] / two[f][q]).toFixed(2)}×`).join(' / ');
    lines.push(`  ${one.kernel}: 2 threads over 1, call ${x('total')}, wasm ${x('wasm')}`);
  }
  return lines.join('\n');
}

async function main() {
  const { argument, measureAndPrint } = await import('./in_page.mjs');
  const options = {
    rounds: Number(argument('--rounds', 9)),
    isa: argument('--isa', 'auto'),
    op: argument('--case', 'matmul'),
    read: argument('--read', null),
    queries: Number(argument('--queries', N)),
  };
  const baselineDir = argument('--baseline', null); // a folder inside the repository
  if (baselineDir) {
    // the page imports it from the server, which serves the repository; Node from the file
    const { resolve, relative } = await import('node:path');
    const { pathToFileURL, fileURLToPath } = await import('node:url');
    const root = fileURLToPath(new URL('../../', import.meta.url));
    const dir = resolve(baselineDir);
    options.baseline = argument('--browser', null) ? `/${relative(root, dir)}/` : `${pathToFileURL(dir).href}/`;
  }
  await measureAndPrint({
    moduleUrl: '/scripts/forensics/thread_scaling.mjs',
    exportName: 'measureThreadScaling',
    measureHere: measureThreadScaling,
    format: formatThreadScaling,
    options,
  });
}

if (typeof process === 'object' && process.argv?.[1] && new URL(import.meta.url).pathname === process.argv[1])
  await main();
