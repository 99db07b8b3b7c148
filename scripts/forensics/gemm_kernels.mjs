// The GEMM micro-kernels, per engine: which one the instance chooses for the engine, and what
// each kernel of the build does once the engine has optimized it, in one instance, side by
// side (the measurements behind gemm_select.cpp's table; run it on another CPU to check it). Runs in Node, Bun, Deno and a browser page (gemm_kernels_browser.mjs drives the
// page); nothing here is specific to one of them.
//
//   node [--experimental-wasm-relaxed-simd] scripts/forensics/gemm_kernels.mjs [--isa relaxed-simd]
//        [--rounds N] [--kernels NAME,NAME...] [--baseline DIR] [--json]
//   bun scripts/forensics/gemm_kernels.mjs ...
//
// The module: the package's single-thread one plus gemmKernelGflops, built for the bench only
// (build/wasm/bench/wasm_attention_forensics_{simd128,relaxed_simd}: gemm_kernel_gflops.cpp).
// For each kernel: its GFLOP/s on the choice's cache-resident panels (gemmKernelGflops), and
// matmul 512³ on 1 thread (the single-thread module), the best of `rounds` rounds, each
// running every kernel once in turn (so a neighbour slows them alike), in wall time and, where
// the host has process.cpuUsage, CPU time. The results of all kernels are compared bitwise.
// --baseline DIR adds a row for another build's module of the same variant (before and after).
// peak: the engine's mul+add (and FMA) probe (peak_probe.mjs), the same method as the bench's.
import { measureOneThread } from '../bench/peak_probe.mjs';

// c (M,N) = a (M,K) · b (K,N): 512³ unless a shape is given (shape: [m, n, k])
let M = 512,
  N = 512,
  K = 512;

// Reads the module's wasm memory as floats at byte offset p, n of them.
const floats = (module, p, n) => new Float32Array(module.HEAPF32.buffer, p, n);

// The hash of n floats' bits, to compare kernels' results.
function bitsHash(view) {
  const bits = new Uint32Array(view.buffer, view.byteOffset, view.length);
  let h = 0x811c9dc5;
  for (let i = 0; i < bits.length; ++i) h = Math.imul(h ^ bits[i], 0x01000193) >>> 0;
  return h;
}

// the matmul on one instance: (a, b) set, run() multiplies into c, result() reads c.
function matmulOn(module) {
  const a = module._malloc(M * K * 4),
    b = module._malloc(K * N * 4),
    c = module._malloc(M * N * 4);
  const av = floats(module, a, M * K),
    bv = floats(module, b, K * N);
  for (let i = 0; i < M * K; ++i) av[i] = (((i * 7919) % 1009) / 1009 - 0.5) * 2;
  for (let i = 0; i < K * N; ++i) bv[i] = (((i * 104729) % 1013) / 1013 - 0.5) * 2;
  return {
    run() {
      const status = module.gemm(false, false, M, N, K, a, K, b, N, c, N);
      if (status?.kind) throw new Error(`gemm failed: ${JSON.stringify(status)}`);
    },
    result: () => floats(module, c, M * N),
    free: () => [a, b, c].forEach((p) => module._free(p)),
  };
}

// factory: the Emscripten module factory of a single-thread variant; wasmBinary its bytes;
// peakBytes / fmaBytes: peak_probe.mjs's modules (fmaBytes null where relaxed SIMD is not run).
// only: the kernels to measure (names), or null for all of the build's. baseline: another
// build's { factory, wasmBinary } (one without a kernel choice: the code before it), timed in
// the same rounds as the row "baseline".
export async function measureGemmKernels({
  factory,
  wasmBinary,
  peakBytes,
  fmaBytes = null,
  rounds = 7,
  only = null,
  shape = null,
  baseline = null,
  log = () => {},
}) {
  if (shape) [M, N, K] = shape;
  const module = await factory({ wasmBinary });
  const cpu = typeof process === 'object' && typeof process.cpuUsage === 'function' ? () => process.cpuUsage() : null;
  const cpuMs = (start) => {
    const d = process.cpuUsage(start);
    return (d.user + d.system) / 1000;
  };

  // The instance's own choice, first thing, as a caller's first GEMM would make it.
  let t0 = performance.now();
  const chosen = module.gemmKernel();
  const choiceMs = performance.now() - t0;
  log(`chosen: ${chosen} (${choiceMs.toFixed(1)} ms)`);

  const names = module
    .gemmKernels()
    .split(',')
    .filter((name) => !only || only.includes(name));
  const ours = matmulOn(module);
  const rows = names.map((name) => ({
    name,
    probeGflops: 0,
    run: () => {
      module.useGemmKernel(name);
      ours.run();
    },
    result: ours.result,
  }));
  let before = null;
  if (baseline) {
    before = matmulOn(await baseline.factory({ wasmBinary: baseline.wasmBinary }));
    rows.push({ name: 'baseline', probeGflops: null, run: before.run, result: before.result });
  }
  for (const row of rows) Object.assign(row, { wallMs: Infinity, cpuMs: cpu ? Infinity : null, hash: 0 });

  // Warm-up: every kernel runs for a while, so the engine's optimizing tier has it.
  for (const row of rows) {
    t0 = performance.now();
    while (performance.now() - t0 < 150) row.run();
  }
  for (let round = 0; round < rounds; ++round) {
    for (const row of rows) {
      if (row.probeGflops !== null)
        row.probeGflops = Math.max(row.probeGflops, module.gemmKernelGflops(row.name, 1, 2));
      const start = cpu?.();
      t0 = performance.now();
      row.run();
      row.wallMs = Math.min(row.wallMs, performance.now() - t0);
      if (cpu) row.cpuMs = Math.min(row.cpuMs, cpuMs(start));
      row.hash = bitsHash(row.result());
    }
    log(`round ${round + 1}/${rounds}`);
  }
  const kernelRows = rows.filter((row) => row.probeGflops !== null);
  const fastest = kernelRows.reduce((best, row) =>
    (row.cpuMs ?? row.wallMs) < (best.cpuMs ?? best.wallMs) ? row : best,
  ).name;
  const bitwiseSame = kernelRows.every((row) => row.hash === kernelRows[0].hash);
  ours.free();
  before?.free();
  const flops = 2 * M * N * K;
  for (const row of rows) {
    row.wallGflops = flops / row.wallMs / 1e6;
    row.cpuGflops = row.cpuMs ? flops / row.cpuMs / 1e6 : null;
    delete row.run;
    delete row.result;
  }
  const peak = peakBytes ? measureOneThread(peakBytes, 7) : null;
  const fmaPeak = fmaBytes ? measureOneThread(fmaBytes, 7) : null;
  return {
    isa: module.simdIsa(),
    shape: M === N && N === K ? `${M}³` : `${M}×${N}×${K}`,
    chosen,
    choiceMs,
    fastest,
    bitwiseSame,
    peakGflops: peak,
    fmaPeakGflops: fmaPeak,
    rows,
  };
}

// The bench-only module of an ISA ('simd128' or 'relaxed-simd'): benchModule's name and export.
export const forensicsModule = (isa) =>
  isa === 'relaxed-simd'
    ? ['wasm_attention_forensics_relaxed_simd', 'createWasmAttentionForensicsRelaxedSimd']
    : ['wasm_attention_forensics_simd128', 'createWasmAttentionForensicsSimd128'];

// The report as text lines.
export function formatGemmKernels(engine, result) {
  const lines = [
    `${engine}, ${result.isa}: matmul ${result.shape} 1 thread; engine's probe ${result.peakGflops?.toFixed(1)} GFLOP/s mul+add` +
      (result.fmaPeakGflops ? `, ${result.fmaPeakGflops.toFixed(1)} FMA` : ''),
    `chosen for this engine: ${result.chosen} (${result.choiceMs.toFixed(1)} ms); fastest here: ${result.fastest}; results bitwise the same: ${result.bitwiseSame}`,
    '| kernel | probe GFLOP/s (L1/L2) | wall ms | CPU ms | GFLOP/s (CPU or wall) | % of probe |',
    '|---|---|---|---|---|---|',
  ];
  const peak = result.isa === 'relaxed-simd' ? result.fmaPeakGflops : result.peakGflops;
  for (const row of result.rows) {
    const g = row.cpuGflops ?? row.wallGflops;
    lines.push(
      `| ${row.name}${row.name === result.chosen ? ' (chosen)' : ''} | ${row.probeGflops?.toFixed(1) ?? '-'} | ${row.wallMs.toFixed(2)} | ${row.cpuMs?.toFixed(2) ?? '-'} | ${g.toFixed(1)} | ${peak ? ((100 * g) / peak).toFixed(0) : '-'} |`,
    );
  }
  return lines.join('\n');
}

/* global Bun, Deno */
// Node, Bun and Deno: the command line.
const isMain =
  typeof process === 'object' &&
  typeof process.argv?.[1] === 'string' &&
  import.meta.url.endsWith(process.argv[1].split('/').pop()) &&
  typeof window === 'undefined';
if (isMain) {
  const { readFile } = await import('node:fs/promises');
  const { probeModule } = await import('../bench/peak_probe.mjs');
  const args = process.argv.slice(2);
  const arg = (name, fallback) => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : fallback;
  };
  const { benchModule } = await import('./bench_modules.mjs');
  const isa = arg('--isa', 'simd128');
  const base = isa === 'relaxed-simd' ? 'wasm_attention_relaxed_simd' : 'wasm_attention_simd128';
  const { factory, wasmBinary } = await benchModule(...forensicsModule(isa));
  const { createRequire } = await import('node:module');
  const { fileURLToPath } = await import('node:url');
  const peakBytes = await probeModule();
  const fmaBytes = await probeModule({ fma: true });
  const engine =
    typeof Bun === 'object'
      ? `Bun ${Bun.version} (JavaScriptCore)`
      : typeof Deno === 'object'
        ? `Deno ${Deno.version.deno} (V8 ${Deno.version.v8})`
        : `Node ${process.version} (V8 ${process.versions.v8})`;
  // --baseline DIR: that folder's module of the same name (another checkout's web/lib/wasm/)
  const baselineDir = arg('--baseline', null);
  let baseline = null;
  if (baselineDir) {
    const dirUrl = new URL(`file://${baselineDir.replace(/\/?$/, '/')}`);
    const { default: wrappedBefore } = await import(new URL(`${base}.mjs`, dirUrl).href);
    baseline = {
      factory: wrappedBefore(createRequire(import.meta.url), fileURLToPath(dirUrl)),
      wasmBinary: await readFile(new URL(`${base}.wasm`, dirUrl)),
    };
  }
  const result = await measureGemmKernels({
    baseline,
    factory,
    wasmBinary,
    peakBytes,
    fmaBytes: WebAssembly.validate(fmaBytes) ? fmaBytes : null,
    rounds: Number(arg('--rounds', 7)),
    shape: arg('--shape', null)?.split(',').map(Number),
    only: arg('--kernels', null)?.split(','),
    log: (text) => console.error(text),
  });
  console.log(formatGemmKernels(engine, result));
  if (args.includes('--json')) console.log(JSON.stringify({ engine, ...result }));
}
