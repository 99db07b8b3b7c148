// The machine's wasm SIMD peak: what one core can do with f32x4 multiplies and adds when
// nothing else is in the way, to put the kernels' GFLOP/s in proportion. A module written in
// the wasm text format (assembled by wabt, one instruction per instruction written, nothing a
// compiler added or removed) runs CHAINS independent chains x = x·m + a: the chains are
// independent so the CPU can overlap their latencies, and there are just enough (14 + 2
// constants) to fill the 16 x86 vector registers (on this EPYC: 8 chains give ~70% of the
// rate, 14 ~100%, 16 no more). x = 0.5·x + 0.5 converges to 1: no overflow, no denormals.
// FLOPs: each f32x4.mul and f32x4.add counts 4 (one per lane); the engines do not fuse them into
// FMAs (wasm has no fused op without relaxed SIMD), so this is the peak for code like ours.
// probeModule({ fma: true }) is the same with x = relaxed_madd(m, a, x) (f32x4.relaxed_madd, 8
// FLOPs; x grows by 0.25 a step, finite in any call): the peak of the relaxed-SIMD kernel, where
// the engine fuses it. Their ratio says what FMA can buy on this CPU: ~2 where multiplies, adds
// and FMAs share ports (Intel), ~1 where separate add pipes run beside the FMA pipes (AMD Zen).
//
// The same chains in three loops, the step unrolled 4×, 2× and 1×, and the probe is the fastest
// of them: engines differ in which loop they run at full rate, and by more than noise only
// SpiderMonkey so far (on a Zen 5, 2026-11-24: its mul+add loop unrolled 4× at half the rate of
// the 2× and 1× ones; V8 and JavaScriptCore run all three alike; scripts/forensics/peak_forms.mjs
// times these and other forms).
//
// Per core: best of several timed calls on one thread. All cores: the same on one worker
// thread per core at once, summed (what the 2-thread rows are compared to): peak.mjs in Node
// (worker_threads), web/bench/page.js in a browser (Web Workers).
const CHAINS = 14;
export const UNROLLS = [4, 2, 1];
export const FLOPS_PER_STEP = CHAINS * 2 * 4; // one multiply-add of every chain
let wabt = null; // one instance: each would hold a wasm memory of its own

// A module exporting run_unroll{u}(steps: i32) -> f32 for each u of unrolls: steps (a positive
// multiple of 4) multiply-adds of every chain, the loop's body u of them; the sum of the chains'
// first lanes (so nothing is dead code).
// fma: the chains use f32x4.relaxed_madd (needs relaxed SIMD in the engine), x = x + m·a like the
// kernels' c = c + a·b (fmaAddend 'x'; 'a': x = x·m + a, which SpiderMonkey runs at 0.7×).
// chains, constants (m and a as v128.const operands, not locals), fmaAddend: other forms, for
// scripts/forensics/peak_forms.mjs.
export async function probeModule({
  fma = false,
  chains = CHAINS,
  unrolls = UNROLLS,
  constants = false,
  fmaAddend = 'x',
} = {}) {
  const x = Array.from({ length: chains }, (_, c) => `$x${c}`);
  const splat = (v) => `(v128.const f32x4 ${v} ${v} ${v} ${v})`;
  const m = constants ? splat(0.5) : '(local.get $m)';
  const a = constants ? splat(0.5) : '(local.get $a)';
  const step = x.map((xc) =>
    fma
      ? fmaAddend === 'x'
        ? `(local.set ${xc} (f32x4.relaxed_madd ${m} ${a} (local.get ${xc})))`
        : `(local.set ${xc} (f32x4.relaxed_madd (local.get ${xc}) ${m} ${a}))`
      : `(local.set ${xc} (f32x4.add (f32x4.mul (local.get ${xc}) ${m}) ${a}))`,
  );
  const firstLanes = x.map((xc) => `(f32x4.extract_lane 0 (local.get ${xc}))`);
  const run = (unroll) => `
    (func (export "run_unroll${unroll}") (param $steps i32) (result f32)
      ${x.map((xc) => `(local ${xc} v128)`).join(' ')} (local $m v128) (local $a v128) (local $iterations i32)
      ${x.map((xc, c) => `(local.set ${xc} ${splat(1 + c / 16)})`).join('\n      ')}
      (local.set $m ${splat(0.5)})
      (local.set $a ${splat(0.5)})
      (local.set $iterations (i32.div_u (local.get $steps) (i32.const ${unroll})))
      (block (loop
        ${Array(unroll).fill(step.join('\n        ')).join('\n        ')}
        (br_if 0 (local.tee $iterations (i32.sub (local.get $iterations) (i32.const 1))))))
      ${firstLanes.slice(1).reduce((sum, lane) => `(f32.add ${sum} ${lane})`, firstLanes[0])})`;
  const text = `(module ${unrolls.map(run).join('')})`;
  wabt ??= import('wabt').then((m) => m.default()); // only here: a worker measuring needs no wabt
  return (await wabt).parseWat('peak.wat', text, { simd: true, relaxed_simd: fma }).toBinary({}).buffer;
}

// probeModule()'s bytes -> { run_unroll4: run(steps), ... }
export function probeRuns(bytes) {
  const { exports } = new WebAssembly.Instance(new WebAssembly.Module(bytes));
  return Object.fromEntries(Object.entries(exports).filter(([name]) => name.startsWith('run_')));
}

// runs: { name: run(steps) }, flopsPerStep -> { name: GFLOP/s }. Each run is warmed up (the
// engines compile with a baseline tier first and optimize after some calls) and sized to a
// ~50 ms call; then `calls` rounds call each once, so a neighbour that takes the core for a
// while slows them alike; each keeps its best call.
export function measureRuns(runs, flopsPerStep, calls = 15) {
  const sized = Object.entries(runs).map(([name, run]) => {
    for (let i = 0; i < 50; ++i) run(20000);
    let steps = 100000;
    for (;;) {
      const t0 = performance.now();
      run(steps);
      const ms = performance.now() - t0;
      if (ms > 20 || steps > 1e9 / 2) {
        steps = 4 * Math.round(Math.min(2 ** 31 - 4, steps * (50 / ms)) / 4);
        break;
      }
      steps *= 4;
    }
    return { name, run, steps };
  });
  const best = Object.fromEntries(sized.map(({ name }) => [name, 0]));
  for (let i = 0; i < calls; ++i)
    for (const { name, run, steps } of sized) {
      const t0 = performance.now();
      run(steps);
      best[name] = Math.max(best[name], (steps * flopsPerStep) / (performance.now() - t0) / 1e6);
    }
  return best;
}

// GFLOP/s of one thread: the fastest loop's best call. bytes: probeModule()'s.
export function measureOneThread(bytes, calls = 15) {
  return Math.max(...Object.values(measureRuns(probeRuns(bytes), FLOPS_PER_STEP, calls)));
}

export const METHOD = `${CHAINS} independent f32x4 mul+add chains, hand-written wasm text, the fastest of the loop unrolled ${UNROLLS.join('×, ')}×; best call of ~50 ms`;
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
