// The machine's wasm SIMD peak: what one core can do with f32x4 multiplies and adds when
// nothing else is in the way, to put the kernels' GFLOP/s in proportion. A hand-written
// module (wasm_bytes.mjs) runs CHAINS independent chains x = x·m + a per iteration, unrolled
// UNROLL times: the chains are independent so the CPU can overlap their latencies, and
// there are just enough (14 + 2 constants) to fill the 16 x86 vector registers (on this
// EPYC: 8 chains give ~75% of the rate, 14 ~100%, 16 no more). x = 0.5·x
// + 0.5 converges to 1: no overflow, no denormals. FLOPs: each f32x4.mul and f32x4.add
// counts 4 (one per lane); V8 does not fuse them into FMAs (wasm has no fused op without
// relaxed SIMD), so this is the peak for code like ours.
//
// Per core: best of several timed calls on one thread. All cores: the same on one worker
// thread per core at once, summed (what the 2-thread rows are compared to).
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { F32, I32, moduleWithOneFunction, op, V128 } from './wasm_bytes.mjs';

const CHAINS = 14;
const UNROLL = 4;
const FLOPS_PER_ITERATION = CHAINS * UNROLL * 2 * 4;

function f32x4(value) {
  const b = new Uint8Array(16);
  const view = new DataView(b.buffer);
  for (let i = 0; i < 4; ++i) view.setFloat32(4 * i, value, true);
  return [...op.v128_const, ...b];
}

// run(iterations: i32) -> f32, the sum of the chains' first lanes (so nothing is dead code)
export function probeModule() {
  const iterations = 0, first = 1, m = first + CHAINS, a = m + 1;  // local indices
  const code = [];
  for (let c = 0; c < CHAINS; ++c) code.push(...f32x4(1 + c / 16), op.local_set, first + c);
  code.push(...f32x4(0.5), op.local_set, m, ...f32x4(0.5), op.local_set, a);
  code.push(op.block, op.void, op.loop, op.void);
  for (let u = 0; u < UNROLL; ++u) {
    for (let c = 0; c < CHAINS; ++c) {
      code.push(op.local_get, first + c, op.local_get, m, ...op.f32x4_mul, op.local_get, a, ...op.f32x4_add, op.local_set, first + c);
    }
  }
  code.push(op.local_get, iterations, op.i32_const, 1, op.i32_sub, op.local_tee, iterations, op.br_if, 0);
  code.push(op.end, op.end);
  code.push(op.local_get, first, ...op.f32x4_extract_lane, 0);
  for (let c = 1; c < CHAINS; ++c) code.push(op.local_get, first + c, ...op.f32x4_extract_lane, 0, op.f32_add);
  return moduleWithOneFunction({
    exportName: 'run', params: [I32], results: [F32], locals: [[CHAINS + 2, V128]], code,
  });
}

// GFLOP/s of one thread: warm up (V8 compiles with Liftoff first and tiers up to TurboFan
// after some calls), size a call to ~50 ms, then the best of `calls` calls.
export function measureOneThread(calls = 15) {
  const { run } = new WebAssembly.Instance(new WebAssembly.Module(probeModule())).exports;
  for (let i = 0; i < 50; ++i) run(20000);
  let iterations = 100000;
  for (;;) {
    const t0 = performance.now();
    run(iterations);
    const ms = performance.now() - t0;
    if (ms > 20 || iterations > 1e9 / 2) {
      iterations = Math.min(2 ** 31 - 1, Math.round(iterations * (50 / ms)));
      break;
    }
    iterations *= 4;
  }
  let best = 0;
  for (let i = 0; i < calls; ++i) {
    const t0 = performance.now();
    run(iterations);
    best = Math.max(best, (iterations * FLOPS_PER_ITERATION) / (performance.now() - t0) / 1e6);
  }
  return best;
}

// One worker per core, all measuring at once: the sum of their rates.
async function measureAllCores(cores) {
  const source = `
    const { parentPort } = require('node:worker_threads');
    import(${JSON.stringify(import.meta.url)}).then((m) => parentPort.postMessage(m.measureOneThread(15)));`;
  const rates = await Promise.all(Array.from({ length: cores }, () => new Promise((resolve, reject) => {
    const w = new Worker(source, { eval: true });
    w.once('message', (rate) => { resolve(rate); w.terminate(); });
    w.once('error', reject);
  })));
  return rates.reduce((s, r) => s + r, 0);
}

export async function measurePeak() {
  const cores = availableParallelism();
  const allCores = cores > 1 ? await measureAllCores(cores) : 0;
  // On a busy machine one probe can lose its core for a while: a core is credited with at
  // least its share of the all-cores figure.
  const perCore = Math.max(measureOneThread(), allCores / cores);
  return {
    method: `${CHAINS} independent f32x4 mul+add chains, unrolled ${UNROLL}×, hand-written wasm; best call of ~50 ms`,
    perCoreGflops: perCore,
    cores,
    allCoresGflops: Math.max(allCores, perCore),
    // the peak for a row on t threads: t cores' worth, at most what all cores gave together
    forThreads: (t) => (t <= 1 ? perCore : t >= cores ? Math.max(allCores, perCore) : t * perCore),
  };
}
