// Wall-clock timing: warm-up runs (JIT tier-up, first touch of wasm memory, lazy kernel
// setup in the peers), then the median of many runs, the median because the machine may be
// shared and outliers only go one way. On 2 cores with 2 busy threads V8's background
// TurboFan compiles take ~0.6-0.8 s to land (multi-head attention on 2 threads runs ~30%
// slower until then), hence a full second of warm-up. Warm-up lasts at least `warmup` runs and
// `warmupMs`, and at most `warmupMaxRuns` runs (200 for the rows: a call under 5 ms warms up for
// less than the second): V8 first runs wasm from its baseline compiler (Liftoff) and swaps in
// TurboFan code for hot functions later, so a fast call needs many runs to get there. Runs
// that take over a second get fewer repetitions (the note says so), to keep a full run within
// about 6 minutes (scripts/bench.mjs).

// runs: at least that many; fast calls get more, up to maxRuns or runsMs of timed runs, for
// a steadier median on a shared machine. A call over slowMs gets slowRuns runs, one over
// verySlowMs verySlowRuns.
const LIMITS = { warmupMaxRuns: 200, slowMs: 1000, verySlowMs: 5000 };
export const FULL = {
  ...LIMITS,
  warmup: 3,
  warmupMs: 1000,
  runs: 20,
  maxRuns: 100,
  runsMs: 1000,
  slowRuns: 5,
  verySlowRuns: 3,
};
export const QUICK = { ...LIMITS, warmup: 1, warmupMs: 100, runs: 5, slowRuns: 2, verySlowRuns: 1 };
// Long sequences: one warm-up and a few runs; a single run past 5 s, to bound the section.
export const LONG = { ...LIMITS, warmup: 1, warmupMs: 300, runs: 5, slowRuns: 3, verySlowRuns: 1 };
// The GQA prefill row: as LONG, but a first call over 20 s is the measurement (no second one):
// tfjs needs over a minute per call on a busy 2-core machine.
export const PREFILL = { ...LONG, singleOverMs: 20000 };
export const LONG_QUICK = { ...LIMITS, warmup: 1, warmupMs: 100, runs: 2, slowRuns: 1, verySlowRuns: 1 };

export async function once(run) {
  const t0 = performance.now();
  const out = await run();
  return { ms: performance.now() - t0, out };
}

export function median(xs) {
  const sorted = [...xs].sort((a, b) => a - b);
  const m = sorted.length >> 1;
  return sorted.length % 2 ? sorted[m] : (sorted[m - 1] + sorted[m]) / 2;
}

// The scaling section (scaling.mjs): as FULL, with warm-up lasting 1.5 s whatever the call's
// length, past V8's tier-up even for a call of a millisecond (its runs-only cap lifted).
export const SCALING = { ...FULL, warmupMs: 1500, warmupMaxRuns: Infinity };

// run: () => outputs | Promise<outputs>. -> { ms (median), minMs, maxMs, runs, times, note, out,
// firstMs (the first call's time) }; out is the last run's outputs (for the correctness sample).
export async function measure(run, settings) {
  const start = performance.now();
  let last = await once(run);
  const firstMs = last.ms;
  if (settings.singleOverMs && last.ms > settings.singleOverMs) {
    const note = `1 call only, its first (${(last.ms / 1000).toFixed(1)} s)`;
    return { ms: last.ms, minMs: last.ms, maxMs: last.ms, runs: 1, times: [last.ms], note, out: last.out, firstMs };
  }
  // One warm-up run only for slow ones: its time already tells us they are slow.
  if (last.ms <= settings.slowMs) {
    for (
      let i = 1;
      i < settings.warmupMaxRuns && (i < settings.warmup || performance.now() - start < settings.warmupMs);
      ++i
    ) {
      last = await once(run);
    }
  }
  let runs = settings.maxRuns
    ? Math.max(settings.runs, Math.min(settings.maxRuns, Math.floor(settings.runsMs / last.ms)))
    : settings.runs;
  let note = '';
  if (last.ms > settings.verySlowMs) {
    runs = settings.verySlowRuns;
    note = `${runs} run${runs > 1 ? 's' : ''} only (${(last.ms / 1000).toFixed(1)} s each)`;
  } else if (last.ms > settings.slowMs) {
    runs = settings.slowRuns;
    note = `${runs} runs only (${(last.ms / 1000).toFixed(1)} s each)`;
  }
  const times = [];
  for (let i = 0; i < runs; ++i) {
    last = await once(run);
    times.push(last.ms);
  }
  const sorted = [...times].sort((a, b) => a - b);
  return {
    ms: median(times),
    minMs: sorted[0],
    maxMs: sorted[sorted.length - 1],
    runs,
    times,
    note,
    out: last.out,
    firstMs,
  };
}

// A quick look at each variant of a formulation (1 warm-up + up to 3 runs, the slow ones
// dropped after one look) -> the index of the fastest, and what each took (ms, and firstMs:
// its first call).
export async function pickFastest(variants) {
  if (variants.length === 1) return { index: 0, probes: [] };
  const probes = [];
  let best = Infinity;
  for (const v of variants) {
    try {
      let ms = (await once(v.run)).ms;
      const firstMs = ms;
      if (ms < 3 * best) {
        const times = [];
        for (let i = 0; i < 3 && (ms < 1000 || i === 0); ++i) times.push((await once(v.run)).ms);
        ms = Math.min(...times);
      }
      probes.push({ name: v.name, ms, firstMs });
      best = Math.min(best, ms);
    } catch (e) {
      probes.push({ name: v.name, ms: Infinity, error: String(e?.message ?? e) });
    }
  }
  let index = 0;
  for (let i = 1; i < probes.length; ++i) if (probes[i].ms < probes[index].ms) index = i;
  if (!Number.isFinite(probes[index].ms))
    throw new Error(`every formulation failed: ${probes.map((p) => `${p.name}: ${p.error}`).join('; ')}`);
  return { index, probes };
}
