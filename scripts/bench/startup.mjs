// What a user's fresh instance costs, each configuration in fresh child processes (a warm
// process would have the wasm compiled and cached already); the median of a few processes.
//
// Time to a ready module, through each implementation's load(threads) -> { start() }
// (impl_*.mjs), the same path its rows take:
//   importMs  load(): loading the library's JS (for us, nothing else yet)
//   initMs    start(): from there to ready: compiling and instantiating the wasm, starting threads
//             ours:  await createAttention({ threads })
//             tfjs:  tf.setBackend('wasm'); await tf.ready()
//             ort:   the first InferenceSession.create() (a 2×2 MatMul model): ORT sets its
//                    wasm up on the first session
//   totalMs   both; sinceProcessStartMs: ready, counted from the process's start (Node's boot included)
//
// The first call: right after the instance is ready, one attention call on the
// tutorial's input (FIRST_CALL, 19×100), timed alone, then the second, then the steady state:
// the median of later calls after the rows' warm-up (timing.mjs), here for its full second
// whatever the number of calls (after the rows' 200 warm-up runs this call is still twice as
// slow as after a second). The gap is what a page pays on its first call.
import { FIRST_CALL } from './cases.mjs';
import { createImpl, IMPLS } from './impls.mjs';
import { makeInputs } from './inputs.mjs';
import { runChild } from './spawn.mjs';
import { FULL, median, measure, once, QUICK } from './timing.mjs';

const STARTUP_CONFIGS = [
  { impl: 'ours', threads: 1, label: 'wasm-attention, createAttention({ threads: 1 })' },
  { impl: 'ours', threads: 2, label: 'wasm-attention, createAttention({ threads: 2 })' },
  { impl: 'tfjs', threads: 1, label: "tfjs-wasm, tf.setBackend('wasm') + tf.ready() (SIMD binary)" },
  { impl: 'tfjs', threads: 2, label: 'tfjs-wasm, the same, threaded binary (patched for Node)' },
  { impl: 'ort', threads: 1, label: 'onnxruntime-web, first InferenceSession.create(), 1 thread' },
  { impl: 'ort', threads: 2, label: 'onnxruntime-web, the same, numThreads 2' },
];

const FIRST_CALL_CONFIGS = [
  { impl: 'ours', threads: 1, label: 'wasm-attention, 1 thread' },
  { impl: 'ours', threads: 2, label: 'wasm-attention, 2 threads' },
];

// In a child process (child.mjs): -> { importMs, initMs, totalMs, sinceProcessStartMs }
export async function startupOf(impl, threads) {
  const { load } = await IMPLS[impl](); // the bench's own module: not timed
  if (!load) throw new Error(`no startup probe for ${impl}`);
  const t0 = performance.now();
  const { start } = await load(threads);
  const t1 = performance.now();
  await start();
  const t2 = performance.now();
  return { importMs: t1 - t0, initMs: t2 - t1, totalMs: t2 - t0, sinceProcessStartMs: t2 };
}

// In a child process (child.mjs): -> { firstMs, secondMs, steadyMs }
export async function firstCallOf(impl, threads, quick) {
  const instance = await createImpl(impl, { threads });
  const { variants } = await instance.prepare(FIRST_CALL, makeInputs(FIRST_CALL));
  const { run } = variants[0];
  const first = await once(run);
  const second = await once(run);
  const steady = await measure(run, { ...(quick ? QUICK : FULL), warmupMaxRuns: Infinity });
  return { firstMs: first.ms, secondMs: second.ms, steadyMs: steady.ms };
}

// Each config in `reps` fresh processes running `mode`; the median of each of `keys`.
async function inFreshProcesses({ configs, mode, keys, reps, quick, peersOk, log }) {
  const out = [];
  for (const c of configs) {
    const entry = { impl: c.impl, threads: c.threads, label: c.label, processes: reps };
    if (c.impl !== 'ours' && !peersOk) {
      out.push({ ...entry, error: 'peers not installed' });
      continue;
    }
    const samples = [];
    for (let i = 0; i < reps; ++i) {
      const r = await runChild({ mode, impl: c.impl, threads: c.threads, quick }, { timeoutMs: 120000 });
      if (r.error) {
        entry.error = r.error;
        break;
      }
      samples.push(r);
    }
    if (samples.length) for (const key of keys) entry[key] = median(samples.map((s) => s[key]));
    log(`${mode} ${c.impl}-${c.threads}: ${entry.error ?? keys.map((k) => `${k} ${entry[k].toFixed(2)}`).join(', ')}`);
    out.push(entry);
  }
  return out;
}

export function measureStartup({ quick, peersOk, log }) {
  return inFreshProcesses({
    configs: STARTUP_CONFIGS,
    mode: 'startup',
    keys: ['importMs', 'initMs', 'totalMs', 'sinceProcessStartMs'],
    reps: quick ? 1 : 5,
    quick,
    peersOk,
    log,
  });
}

export function measureFirstCall({ quick, peersOk, log }) {
  return inFreshProcesses({
    configs: FIRST_CALL_CONFIGS,
    mode: 'firstcall',
    keys: ['firstMs', 'secondMs', 'steadyMs'],
    reps: quick ? 1 : 5,
    quick,
    peersOk,
    log,
  });
}
