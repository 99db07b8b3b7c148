// What a call spends outside the kernels, per engine: the package's matmul 512³,
// multiHeadAttention forward (n 512, dModel 512, h 8) and single-head attention (q, k, v
// (512,64), plain and causal), with the heap's methods (web/lib/heap.js)
// and the binding call (Runtime.call: everything wasm does) timed inside real calls, and the
// ways to read a result back out of wasm memory timed side by side.
//
//   node scripts/forensics/call_overhead.mjs [--threads N] [--rounds N] [--json]
//   node_modules/.bin/bun scripts/forensics/call_overhead.mjs ...
//   node scripts/forensics/call_overhead.mjs --browser chromium|firefox|webkit ...
//
// Per call, exclusive times (a method's own, its callees' taken out), medians of rounds:
//   put      copying an input into wasm memory (Uint8Array.set), its malloc included
//   check    the finiteness check of an input (putFinite) or a result (readFinite), in wasm
//   alloc    malloc of outputs and scratch;  free  their free
//   read     a result copied out (Float32Array.slice of a wasm view, or the copy into out)
//   wasm     the binding call itself: the kernels, threads included
//   js       the rest: argument checks, views, the layer's bookkeeping
// The same calls with the result read another way:
//   "new + set"          new Float32Array(n), then set(view), instead of slice()
//   "into out"           the package's out option: the result copied into an array made once
// Then, for one 1 MB result (512² floats) in this instance's memory (a SharedArrayBuffer in the
// threaded build): slice(); new Float32Array(n) alone; new + set(view); set(view) into an array
// made beforehand; the same four on a plain ArrayBuffer. Medians of interleaved rounds.
import { Heap, Runtime } from '../../web/lib/internal.js';
import { createAttention, tensor } from '../../web/lib/index.js';

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const N = 512;

// The Heap the calls went through (the instance's: the package's heap is internal).
let seenHeap = null;

// Wraps the methods of classes so that each adds its exclusive time to spent[name].
function instrument(spent) {
  const stack = [];
  const wrap = (proto, method, name) => {
    const original = proto[method];
    proto[method] = function (...args) {
      if (this instanceof Heap) seenHeap = this;
      stack.push(0);
      const t0 = performance.now();
      try {
        return original.apply(this, args);
      } finally {
        const elapsed = performance.now() - t0;
        const children = stack.pop();
        spent[name] = (spent[name] ?? 0) + elapsed - children;
        if (stack.length) stack[stack.length - 1] += elapsed;
      }
    };
    return () => (proto[method] = original);
  };
  const undo = [
    wrap(Heap.prototype, 'put', 'put'),
    wrap(Heap.prototype, 'putFinite', 'check'),
    wrap(Heap.prototype, 'readFinite', 'check'),
    wrap(Heap.prototype, 'alloc', 'alloc'),
    wrap(Heap.prototype, 'free', 'free'),
    wrap(Heap.prototype, 'read', 'read'),
    wrap(Heap.prototype, 'readInto', 'read'),
    wrap(Runtime.prototype, 'call', 'wasm'),
  ];
  return () => undo.forEach((u) => u());
}

function values(n, seed) {
  const x = new Float32Array(n);
  for (let i = 0; i < n; ++i) x[i] = (((i * 7919 + seed) % 1009) / 1009 - 0.5) * 0.5;
  return x;
}

// Each case's calls in one round, spent split by name (ms per call, 'total' the call's).
function round({ run, read = null }, calls) {
  const spent = {};
  const unreuse = read ? readOtherwise(read) : () => {};
  const undo = instrument(spent);
  const t0 = performance.now();
  try {
    for (let i = 0; i < calls; ++i) run();
  } finally {
    undo();
    unreuse();
  }
  const total = (performance.now() - t0) / calls;
  const out = { total };
  for (const [k, v] of Object.entries(spent)) out[k] = v / calls;
  out.js = total - Object.values(spent).reduce((a, b) => a + b, 0) / calls;
  return out;
}

function medians(rounds) {
  const keys = [...new Set(rounds.flatMap(Object.keys))];
  return Object.fromEntries(keys.map((k) => [k, median(rounds.map((r) => r[k] ?? 0))]));
}

// Heap.read done another way for a round: 'new + set', or 'reused' (one array per length, made
// once, as out does: for thread_scaling.mjs --read reused, whose baselines may be package
// copies without out). Installs that read(); returns what puts the package's back.
const reused = new Map();
const READS = {
  'new + set': function (ptr, length) {
    const out = new Float32Array(length);
    out.set(this.f32(ptr, length));
    return out;
  },
  reused: function (ptr, length) {
    if (!reused.has(length)) reused.set(length, new Float32Array(length));
    const out = reused.get(length);
    out.set(this.f32(ptr, length));
    return out;
  },
};
export function readOtherwise(way) {
  const read = Heap.prototype.read;
  Heap.prototype.read = READS[way];
  return () => (Heap.prototype.read = read);
}

// The read-back alternatives on a view of n floats.
function readWays(view) {
  const n = view.length;
  const made = new Float32Array(n);
  return {
    slice: () => view.slice(),
    'new Float32Array': () => new Float32Array(n),
    'new + set': () => {
      const x = new Float32Array(n);
      x.set(view);
      return x;
    },
    'set into made': () => {
      made.set(view);
      return made;
    },
  };
}

export async function measureCallOverhead({ threads = 1, rounds = 7, isa = 'auto' } = {}) {
  const attn = await createAttention({ threads, isa });
  const a = tensor(values(N * N, 1), [N, N]);
  const b = tensor(values(N * N, 2), [N, N]);
  const layer = attn.multiHeadAttention({ dModel: 512, heads: 8, seed: 1 });
  const x = tensor(values(N * 512, 3), [N, 512]);
  const [q, k, v] = [4, 5, 6].map((seed) => tensor(values(N * 64, seed), [N, 64])); // one head, d 64
  // out: the arrays each call's result goes into, made once
  const product = new Float32Array(N * N);
  const output = new Float32Array(N * 512);
  const headOutput = new Float32Array(N * 64);
  const cases = {
    'matmul 512³': { run: () => attn.matmul(a, b) },
    'matmul 512³, new + set': { run: () => attn.matmul(a, b), read: 'new + set' },
    'matmul 512³, into out': { run: () => attn.matmul(a, b, { out: product }) },
    'mha n 512 forward': { run: () => layer.forward(x) },
    'mha n 512 forward, new + set': { run: () => layer.forward(x), read: 'new + set' },
    'mha n 512 forward, into out': { run: () => layer.forward(x, { out: output }) },
    'attention n 512 d 64': { run: () => attn.attention(q, k, v) },
    'attention n 512 d 64, causal': { run: () => attn.attention(q, k, v, { causal: true }) },
    'attention n 512 d 64, into out': { run: () => attn.attention(q, k, v, { out: headOutput }) },
  };
  for (const c of Object.values(cases)) round(c, 3); // warm
  const per = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
  for (let r = 0; r < rounds; ++r) for (const [name, run] of Object.entries(cases)) per[name].push(round(run, 4));
  const calls = Object.fromEntries(Object.entries(per).map(([k, v]) => [k, medians(v)]));

  // reading 1 MB back: a block of this instance's memory, then a plain ArrayBuffer
  const n = N * N;
  const heap = seenHeap;
  const ptr = heap.alloc(4 * n, 'the read-back probe');
  heap.f32(ptr, n).fill(1);
  const shared = typeof SharedArrayBuffer === 'function' && heap.buffer() instanceof SharedArrayBuffer;
  const buffers = {
    [`wasm memory (${shared ? 'SharedArrayBuffer' : 'ArrayBuffer'})`]: heap.f32(ptr, n),
    'plain ArrayBuffer': new Float32Array(new ArrayBuffer(4 * n)).fill(1),
  };
  const reads = {};
  for (const [where, view] of Object.entries(buffers)) {
    const ways = readWays(view);
    const times = Object.fromEntries(Object.keys(ways).map((k) => [k, []]));
    for (let r = 0; r < rounds * 3; ++r)
      for (const [way, fn] of Object.entries(ways)) {
        const t0 = performance.now();
        for (let i = 0; i < 20; ++i) fn();
        times[way].push((performance.now() - t0) / 20);
      }
    reads[where] = Object.fromEntries(Object.entries(times).map(([k, v]) => [k, median(v)]));
  }
  heap.free(ptr);
  const backend = `${attn.backend.threads} thread(s), ${attn.backend.isa}`;
  layer.dispose();
  attn.dispose();
  return { backend, calls, reads };
}

export function formatCallOverhead(engine, { backend, calls, reads }, load) {
  const lines = [`${engine}, ${backend}${load ? `, load ${load}` : ''}: ms per call, medians`];
  for (const [name, t] of Object.entries(calls)) {
    const parts = Object.entries(t)
      .filter(([k]) => k !== 'total')
      .map(([k, v]) => `${k} ${v.toFixed(3)} (${((100 * v) / t.total).toFixed(1)} %)`);
    lines.push(`  ${name}: ${t.total.toFixed(2)} = ${parts.join(', ')}`);
  }
  for (const [where, t] of Object.entries(reads))
    lines.push(
      `  1 MB out of ${where}: ${Object.entries(t)
        .map(([k, v]) => `${k} ${v.toFixed(3)}`)
        .join(', ')}`,
    );
  return lines.join('\n');
}

async function main() {
  const { argument, measureAndPrint } = await import('./in_page.mjs');
  await measureAndPrint({
    moduleUrl: '/scripts/forensics/call_overhead.mjs',
    exportName: 'measureCallOverhead',
    measureHere: measureCallOverhead,
    format: formatCallOverhead,
    options: {
      threads: Number(argument('--threads', 1)),
      rounds: Number(argument('--rounds', 7)),
      isa: argument('--isa', 'auto'),
    },
  });
}

if (typeof process === 'object' && process.argv?.[1] && new URL(import.meta.url).pathname === process.argv[1])
  await main();
