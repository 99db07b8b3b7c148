// The long-context demo: one Llama-style layer's int8 kv cache (Hq 32, Hkv 8, d 128) of 131072
// tokens in one wasm module, filled by appends of random keys and values, then decoded over a
// token at a time. Prints the module's memory, the cache's bytes per token and the time per
// decoded token, on 1 and 2 threads.
//   npm run long-context [-- --tokens 131072 --chunk 8192 --steps 16 --threads 1,2]
// tests/js/tools/long_context.test.mjs runs the same fill and checks a step against float64.
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';

import { createAttention, seededRandom, tensor } from '../web/lib/index.js';

// The layer's attention shape: batch 1, 32 query heads reading 8 kv heads, d 128 (Llama 3 8B).
export const LAYER = { qHeads: 32, kvHeads: 8, d: 128 };

// Rows of one head: q (kind 0), k (1) or v (2) of head h, tokens [t0, t0 + n) -> (n, d), the
// same numbers for a token however the tokens are chunked. q and k uniform in [-2, 2), so that
// a score's softmax is not flat (its logits' spread is about 1.5 at scale 1/√d); v in [-1, 1).
export function headRows(seed, kind, h, t0, n, d = LAYER.d) {
  const out = new Float32Array(n * d);
  const half = kind === 2 ? 1 : 2;
  for (let t = 0; t < n; ++t) {
    const next = seededRandom((seed * 0x9e3779b1 + (kind * 64 + h) * 0x85ebca6b + (t0 + t) * 0xc2b2ae35) >>> 0);
    for (let e = 0; e < d; ++e) out[t * d + e] = (2 * next() - 1) * half;
  }
  return out;
}

// Tokens [t0, t0 + n) of every head of a kind -> a [1, heads, n, d] tensor.
function rows(seed, kind, heads, t0, n) {
  const { d } = LAYER;
  const data = new Float32Array(heads * n * d);
  for (let h = 0; h < heads; ++h) data.set(headRows(seed, kind, h, t0, n), h * n * d);
  return tensor(data, [1, heads, n, d]);
}

// Appends tokens [0, tokens) to cache, chunk at a time: each chunk a call of attention with one
// query (its output unused), the way a prompt is appended without its queries' outputs.
export function fill(attn, cache, { seed, tokens, chunk }) {
  const { qHeads, kvHeads, d } = LAYER;
  const q = tensor(new Float32Array(qHeads * d), [1, qHeads, 1, d]);
  for (let t0 = cache.length; t0 < tokens; t0 += chunk) {
    const n = Math.min(chunk, tokens - t0);
    attn.attention(q, rows(seed, 1, kvHeads, t0, n), rows(seed, 2, kvHeads, t0, n), { cache, causal: true });
  }
}

// Decodes token t (its q, k, v) over the cache -> the output [1, Hq, 1, d].
export function decode(attn, cache, { seed }, t) {
  const { qHeads, kvHeads } = LAYER;
  return attn.attention(rows(seed, 0, qHeads, t, 1), rows(seed, 1, kvHeads, t, 1), rows(seed, 2, kvHeads, t, 1), {
    cache,
    causal: true,
  }).output;
}

// Query head h's output for token t over tokens [0, t] in float64, the keys and values as
// generated (not as the cache rounds them), a chunk of keys at a time with an online softmax.
export function referenceHead(seed, h, t, chunk = 8192) {
  const { qHeads, kvHeads, d } = LAYER;
  const g = Math.floor(h / (qHeads / kvHeads));
  const q = headRows(seed, 0, h, t, 1);
  const scale = 1 / Math.sqrt(d);
  let max = -Infinity,
    sum = 0;
  const acc = new Float64Array(d);
  for (let t0 = 0; t0 <= t; t0 += chunk) {
    const n = Math.min(chunk, t + 1 - t0);
    const k = headRows(seed, 1, g, t0, n),
      v = headRows(seed, 2, g, t0, n);
    for (let j = 0; j < n; ++j) {
      let x = 0;
      for (let e = 0; e < d; ++e) x += q[e] * k[j * d + e];
      x *= scale;
      if (x > max) {
        const r = Math.exp(max - x);
        sum *= r;
        for (let e = 0; e < d; ++e) acc[e] *= r;
        max = x;
      }
      const p = Math.exp(x - max);
      sum += p;
      for (let e = 0; e < d; ++e) acc[e] += p * v[j * d + e];
    }
  }
  return acc.map((a) => a / sum);
}

// A cache of `tokens` rows for LAYER: its bytes, and the instance's memory once filled to
// `filled` tokens.
export function createCache(attn, tokens, dtype = 'int8') {
  const before = attn.memory().allocatedBytes;
  const cache = attn.kvCache({ batch: 1, kvHeads: LAYER.kvHeads, dK: LAYER.d, dV: LAYER.d, capacity: tokens, dtype });
  return { cache, bytes: attn.memory().allocatedBytes - before };
}

function parseArgs(argv) {
  const o = { tokens: 131072, chunk: 8192, steps: 16, threads: [1, 2], seed: 1 };
  for (let i = 0; i < argv.length; i += 2) {
    const [name, value] = [argv[i].replace(/^--/, ''), argv[i + 1]];
    if (!(name in o) || value === undefined) {
      console.error(
        'usage: node scripts/long_context.mjs [--tokens N] [--chunk N] [--steps N] [--threads 1,2] [--seed N]',
      );
      process.exit(2);
    }
    o[name] = name === 'threads' ? value.split(',').map(Number) : Number(value);
  }
  return o;
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const MiB = 2 ** 20;
  console.log(
    `int8 kv cache of one layer (Hq ${LAYER.qHeads}, Hkv ${LAYER.kvHeads}, d ${LAYER.d}), ${o.tokens} tokens; ` +
      `${os.cpus()[0].model}, ${os.cpus().length} cores, load average ${os.loadavg()[0].toFixed(2)}`,
  );
  for (const threads of o.threads) {
    const attn = await createAttention({ threads });
    const { cache, bytes } = createCache(attn, o.tokens);
    const start = performance.now();
    fill(attn, cache, { seed: o.seed, tokens: o.tokens - o.steps, chunk: o.chunk });
    const fillMs = performance.now() - start;
    // wall time per token, and this process's CPU time (all its threads: on a busy machine a
    // neighbour's time slices do not count there)
    const times = [],
      cpu = [];
    for (let t = cache.length; t < o.tokens; ++t) {
      const c0 = process.cpuUsage(),
        t0 = performance.now();
      decode(attn, cache, o, t);
      times.push(performance.now() - t0);
      const c = process.cpuUsage(c0);
      cpu.push((c.user + c.system) / 1000);
    }
    times.sort((a, b) => a - b);
    cpu.sort((a, b) => a - b);
    const { wasmBytes } = attn.memory();
    console.log(
      `${threads} thread${threads > 1 ? 's' : ''}: cache ${(bytes / MiB).toFixed(1)} MiB ` +
        `(${(bytes / o.tokens).toFixed(0)} bytes per token, ${(bytes / o.tokens / LAYER.kvHeads).toFixed(0)} per kv head), ` +
        `module memory ${(wasmBytes / MiB).toFixed(1)} MiB; filled ${o.tokens - o.steps} tokens in ${(fillMs / 1000).toFixed(1)} s; ` +
        `decode at ${o.tokens - o.steps}..${o.tokens}: median ${times[times.length >> 1].toFixed(2)} ms per token ` +
        `(best ${times[0].toFixed(2)}; CPU ${cpu[cpu.length >> 1].toFixed(2)} ms), load average ${os.loadavg()[0].toFixed(2)}`,
    );
    cache.dispose();
    attn.dispose();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) await main();
