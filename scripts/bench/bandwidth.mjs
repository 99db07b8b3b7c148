// The memory bandwidth a wasm SIMD loop gets when it only reads: the yardstick for decoding,
// whose cost is reading the key/value cache once per token. A module in the wasm text format
// (as peak.mjs) sums a buffer of BYTES with v128.load + f32x4.add, four independent
// accumulators, 64 bytes per iteration; the buffer (64 MiB, what decoding reads at a cache of
// 8192 tokens of 8 kv heads, d 128, k and v) is far larger than the CPU's per-core caches.
// One thread reads it all; T threads (workers on one shared memory) each read their 1/T of it at
// once, started together, the pass timed from the start to the last one's end: what a decode on
// T threads can read. The buffer is written first, then the best of several passes after a few
// warm-up ones.
import { Worker } from 'node:worker_threads';

import wabt from 'wabt';

export const BYTES = 64 * 2 ** 20;
const PAGES = BYTES / 65536;

// -> the module's bytes: read(from, to) sums bytes [from, to); its memory its own, or (shared)
// imported as env.memory
export async function readModule({ shared = false } = {}) {
  const memory = shared
    ? `(import "env" "memory" (memory ${PAGES} ${PAGES} shared))`
    : `(memory (export "memory") ${PAGES})`;
  const text = `(module
    ${memory}
    (func (export "read") (param $p i32) (param $end i32) (result f32)
      (local $a v128) (local $b v128) (local $c v128) (local $d v128)
      (block (loop
        (local.set $a (f32x4.add (local.get $a) (v128.load offset=0 (local.get $p))))
        (local.set $b (f32x4.add (local.get $b) (v128.load offset=16 (local.get $p))))
        (local.set $c (f32x4.add (local.get $c) (v128.load offset=32 (local.get $p))))
        (local.set $d (f32x4.add (local.get $d) (v128.load offset=48 (local.get $p))))
        (local.set $p (i32.add (local.get $p) (i32.const 64)))
        (br_if 0 (i32.lt_u (local.get $p) (local.get $end)))))
      (f32x4.extract_lane 0 (f32x4.add (f32x4.add (local.get $a) (local.get $b))
                                       (f32x4.add (local.get $c) (local.get $d))))))`;
  return (await wabt()).parseWat('read.wat', text, { simd: true, threads: true }).toBinary({}).buffer;
}

// Each worker: instantiates the module on the shared memory, then for pass p = 1, 2, ... sleeps
// until control[0] reaches p, reads its slice and adds 1 to control[1]; control[0] = -1 ends it.
// Between passes every thread sleeps (Atomics.wait), the caller's too: none takes a core from
// the readers.
const WORKER = `
  const { workerData } = require('node:worker_threads');
  const { bytes, memory, control, from, to } = workerData;
  const ctl = new Int32Array(control);
  const { read } = new WebAssembly.Instance(new WebAssembly.Module(bytes), { env: { memory } }).exports;
  for (let p = 1; ; ++p) {
    let go;
    while ((go = Atomics.load(ctl, 0)) < p && go >= 0) Atomics.wait(ctl, 0, go);
    if (go < 0) break;
    read(from, to);
    Atomics.add(ctl, 1, 1);
    Atomics.notify(ctl, 1);
  }`;

async function measureThreads(threads, passes) {
  const bytes = await readModule({ shared: true });
  const memory = new WebAssembly.Memory({ initial: PAGES, maximum: PAGES, shared: true });
  // written first: untouched pages would all be the kernel's one zero page, which caches well
  new Float32Array(memory.buffer).fill(1);
  const control = new SharedArrayBuffer(8);
  const ctl = new Int32Array(control);
  const slice = BYTES / threads;
  const workers = Array.from(
    { length: threads },
    (_, t) =>
      new Worker(WORKER, { eval: true, workerData: { bytes, memory, control, from: t * slice, to: (t + 1) * slice } }),
  );
  await Promise.all(workers.map((w) => new Promise((resolve) => w.once('online', resolve))));
  let best = Infinity;
  for (let p = 1; p <= passes + 5; ++p) {
    const t0 = performance.now();
    Atomics.store(ctl, 0, p);
    Atomics.notify(ctl, 0);
    for (let done; (done = Atomics.load(ctl, 1)) < p * threads;) Atomics.wait(ctl, 1, done);
    if (p > 5) best = Math.min(best, performance.now() - t0);
  }
  Atomics.store(ctl, 0, -1);
  Atomics.notify(ctl, 0);
  await Promise.all(workers.map((w) => new Promise((resolve) => w.once('exit', resolve))));
  return best;
}

// -> { gbPerSecond, bytes, threads, method }: GB = 1e9 bytes
export async function measureReadBandwidth({ passes = 15, threads = 1 } = {}) {
  let best = Infinity;
  if (threads > 1) {
    best = await measureThreads(threads, passes);
  } else {
    const { read, memory } = new WebAssembly.Instance(new WebAssembly.Module(await readModule())).exports;
    new Float32Array(memory.buffer).fill(1);
    for (let i = 0; i < 5; ++i) read(0, BYTES);
    for (let i = 0; i < passes; ++i) {
      const t0 = performance.now();
      read(0, BYTES);
      best = Math.min(best, performance.now() - t0);
    }
  }
  const who = threads > 1 ? `${threads} threads reading 1/${threads} each at once` : '1 thread';
  return {
    gbPerSecond: BYTES / best / 1e6,
    bytes: BYTES,
    threads,
    method: `v128.load + f32x4.add over ${BYTES / 2 ** 20} MiB, 4 accumulators, ${who}; best of ${passes} passes`,
  };
}
