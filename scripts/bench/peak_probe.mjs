// The machine's wasm SIMD peak: what one core can do with f32x4 multiplies and adds when
// nothing else is in the way, to put the kernels' GFLOP/s in proportion. A module written in
// the wasm text format (assembled by wabt, one instruction per instruction written, nothing a
// compiler added or removed) runs CHAINS independent chains x = x·m + a per iteration,
// unrolled UNROLL times: the chains are independent so the CPU can overlap their latencies,
// and there are just enough (14 + 2 constants) to fill the 16 x86 vector registers (on this
// EPYC: 8 chains give ~75% of the rate, 14 ~100%, 16 no more). x = 0.5·x + 0.5 converges to
// 1: no overflow, no denormals. FLOPs: each f32x4.mul and f32x4.add counts 4 (one per lane);
// V8 does not fuse them into FMAs (wasm has no fused op without relaxed SIMD), so this is the
// peak for code like ours. probeModule({ fma: true }) is the same with x = relaxed_madd(x, m, a)
// (f32x4.relaxed_madd, 8 FLOPs): the peak of the relaxed-SIMD kernel, where the engine fuses it.
// Their ratio says what FMA can buy on this CPU: ~2 where multiplies, adds and FMAs share
// ports (Intel), ~1 where separate add pipes run beside the FMA pipes (AMD Zen).
//
// Per core: best of several timed calls on one thread. All cores: the same on one worker
// thread per core at once, summed (what the 2-thread rows are compared to): peak.mjs in Node
// (worker_threads), web/bench/page.js in a browser (Web Workers).
const CHAINS = 14;
const UNROLL = 4;
export const FLOPS_PER_ITERATION = CHAINS * UNROLL * 2 * 4;

// run(iterations: i32) -> f32, the sum of the chains' first lanes (so nothing is dead code).
// fma: the chains use f32x4.relaxed_madd (needs relaxed SIMD in the engine).
export async function probeModule({ fma = false } = {}) {
  const x = Array.from({ length: CHAINS }, (_, c) => `$x${c}`);
  const splat = (v) => `(v128.const f32x4 ${v} ${v} ${v} ${v})`;
  const step = x.map((xc) =>
    fma
      ? `(local.set ${xc} (f32x4.relaxed_madd (local.get ${xc}) (local.get $m) (local.get $a)))`
      : `(local.set ${xc} (f32x4.add (f32x4.mul (local.get ${xc}) (local.get $m)) (local.get $a)))`,
  );
  const firstLanes = x.map((xc) => `(f32x4.extract_lane 0 (local.get ${xc}))`);
  const text = `(module
    (func (export "run") (param $iterations i32) (result f32)
      ${x.map((xc) => `(local ${xc} v128)`).join(' ')} (local $m v128) (local $a v128)
      ${x.map((xc, c) => `(local.set ${xc} ${splat(1 + c / 16)})`).join('\n      ')}
      (local.set $m ${splat(0.5)})
      (local.set $a ${splat(0.5)})
      (block (loop
        ${Array(UNROLL).fill(step.join('\n        ')).join('\n        ')}
        (br_if 0 (local.tee $iterations (i32.sub (local.get $iterations) (i32.const 1))))))
      ${firstLanes.slice(1).reduce((sum, lane) => `(f32.add ${sum} ${lane})`, firstLanes[0])}))`;
  const { default: wabt } = await import('wabt'); // only here: a worker measuring needs no wabt
  return (await wabt()).parseWat('peak.wat', text, { simd: true, relaxed_simd: fma }).toBinary({}).buffer;
}

// GFLOP/s of one thread: warm up (V8 compiles with Liftoff first and tiers up to TurboFan
// after some calls), size a call to ~50 ms, then the best of `calls` calls. bytes: probeModule()'s.
export function measureOneThread(bytes, calls = 15) {
  const { run } = new WebAssembly.Instance(new WebAssembly.Module(bytes)).exports;
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

export const METHOD = `${CHAINS} independent f32x4 mul+add chains, unrolled ${UNROLL}×, hand-written wasm text; best call of ~50 ms`;
export const FMA_METHOD = `the same with f32x4.relaxed_madd chains`;

// The measured rates -> the peak record of a run. On a busy machine one probe can lose its
// core for a while: a core is credited with at least its share of the all-cores figure.
// forThreads(t): the peak for a row on t threads: t cores' worth, at most what all cores gave
// together. (A record that went through JSON gets it back from here.)
// fmaPerCoreGflops: the relaxed_madd probe on one core (null: not measured, no relaxed SIMD).
export function peakRecord({ perCoreGflops, allCoresGflops, cores, fmaPerCoreGflops = null }) {
  const perCore = Math.max(perCoreGflops, allCoresGflops / cores);
  const allCores = Math.max(allCoresGflops, perCore);
  return {
    method: METHOD,
    perCoreGflops: perCore,
    cores,
    allCoresGflops: allCores,
    forThreads: (t) => (t <= 1 ? perCore : t >= cores ? allCores : t * perCore),
    fmaMethod: FMA_METHOD,
    fmaPerCoreGflops,
  };
}
