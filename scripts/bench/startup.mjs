// Time to a ready module, each configuration in fresh child processes (a warm process
// would have the wasm compiled and cached already); the median of a few processes.
import { runChild } from './spawn.mjs';

export const STARTUP_CONFIGS = [
  { impl: 'ours', threads: 1, label: 'wasm-attention, createAttention({ threads: 1 })' },
  { impl: 'ours', threads: 2, label: 'wasm-attention, createAttention({ threads: 2 })' },
  { impl: 'tfjs', threads: 1, label: "tfjs-wasm, tf.setBackend('wasm') + tf.ready() (SIMD binary)" },
  { impl: 'tfjs', threads: 2, label: 'tfjs-wasm, the same, threaded binary (patched for Node)' },
  { impl: 'ort', threads: 1, label: 'onnxruntime-web, first InferenceSession.create(), 1 thread' },
  { impl: 'ort', threads: 2, label: 'onnxruntime-web, the same, numThreads 2' },
];

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

export async function measureStartup({ quick, peersOk, log }) {
  const reps = quick ? 1 : 5;
  const out = [];
  for (const c of STARTUP_CONFIGS) {
    const entry = { impl: c.impl, threads: c.threads, label: c.label, processes: reps };
    if (c.impl !== 'ours' && !peersOk) {
      out.push({ ...entry, error: 'peers not installed' });
      continue;
    }
    const samples = [];
    for (let i = 0; i < reps; ++i) {
      const r = await runChild({ mode: 'startup', impl: c.impl, threads: c.threads }, { timeoutMs: 120000 });
      if (r.error) {
        entry.error = r.error;
        break;
      }
      samples.push(r);
    }
    if (samples.length) {
      for (const key of ['importMs', 'initMs', 'totalMs', 'sinceProcessStartMs']) entry[key] = median(samples.map((s) => s[key]));
    }
    log(`startup ${c.impl}-${c.threads}: ${entry.error ?? `${entry.totalMs.toFixed(0)} ms`}`);
    out.push(entry);
  }
  return out;
}
