// Decode over caches of each dtype side by side: one token over a cache of n (Hq 32, Hkv 8,
// d 128, the bench's decode shape), the dtypes' caches taking turns token by token (so a busy
// neighbour slows them alike), medians of wall and CPU time (process.cpuUsage, all threads: a
// neighbour's time slices do not count there), and each dtype's time over the first's.
//   node scripts/bench/decode_dtypes.mjs [--lengths 512,...] [--threads 1,2] [--steps 25]
//                                         [--dtypes float32,int8] [--lib path/to/index.js]
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';

const o = { lengths: '512,1024,2048,4096,8192', threads: '1,2', steps: '25', dtypes: 'float32,int8', lib: '' };
for (let i = 2; i < process.argv.length; i += 2) {
  const name = process.argv[i].replace(/^--/, '');
  if (!(name in o) || process.argv[i + 1] === undefined) {
    console.error(
      'usage: node scripts/bench/decode_dtypes.mjs [--lengths ...] [--threads 1,2] [--steps N] [--dtypes ...] [--lib index.js]',
    );
    process.exit(2);
  }
  o[name] = process.argv[i + 1];
}
const { createAttention, tensor } = await import(
  o.lib ? pathToFileURL(o.lib).href : new URL('../../web/lib/index.js', import.meta.url).href
);
const [Hq, Hkv, d] = [32, 8, 128];
const list = (s) => s.split(',');
const dtypes = list(o.dtypes),
  steps = Number(o.steps);

let seed = 1; // a small LCG: uniform in [-a, a)
const uniform = (n, a = 1) => {
  const x = new Float32Array(n);
  for (let i = 0; i < n; ++i) {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    x[i] = ((seed / 4294967296) * 2 - 1) * a;
  }
  return x;
};
const median = (a) => a.slice().sort((x, y) => x - y)[a.length >> 1];

console.log(
  `${os.cpus()[0].model}, ${os.cpus().length} cores; load average ${os
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')}`,
);
for (const threads of list(o.threads).map(Number)) {
  const attn = await createAttention({ threads });
  for (const n of list(o.lengths).map(Number)) {
    // every dtype's cache filled with the same n keys and values, room for one more
    const k = tensor(uniform(Hkv * n * d, 2), [1, Hkv, n, d]),
      v = tensor(uniform(Hkv * n * d), [1, Hkv, n, d]);
    const none = tensor(new Float32Array(Hq * d), [1, Hq, 1, d]);
    const caches = dtypes.map((dtype) => {
      const cache = attn.kvCache({ batch: 1, kvHeads: Hkv, dK: d, dV: d, capacity: n + 1, dtype });
      attn.attention(none, k, v, { cache, causal: true });
      return cache;
    });
    const q = tensor(uniform(Hq * d, 2), [1, Hq, 1, d]),
      k1 = tensor(uniform(Hkv * d, 2), [1, Hkv, 1, d]),
      v1 = tensor(uniform(Hkv * d), [1, Hkv, 1, d]);
    const wall = caches.map(() => []),
      cpu = caches.map(() => []);
    for (let step = -3; step < steps; ++step)
      // 3 warm-up tokens each
      caches.forEach((cache, i) => {
        const c0 = process.cpuUsage(),
          t0 = performance.now();
        attn.attention(q, k1, v1, { cache, causal: true });
        const t = performance.now() - t0,
          c = process.cpuUsage(c0);
        cache.truncate(n);
        if (step >= 0) (wall[i].push(t), cpu[i].push((c.user + c.system) / 1000));
      });
    const cells = caches.map((_, i) => {
      const ratio = i
        ? `, ${dtypes[0]}/${dtypes[i]} ${(median(wall[0]) / median(wall[i])).toFixed(2)}× (CPU ${(median(cpu[0]) / median(cpu[i])).toFixed(2)}×)`
        : '';
      return `${dtypes[i]} ${median(wall[i]).toFixed(2)} ms (CPU ${median(cpu[i]).toFixed(2)})${ratio}`;
    });
    console.log(`${threads} thread${threads > 1 ? 's' : ''}, cache ${n}: ${cells.join('; ')}`);
    for (const cache of caches) cache.dispose();
  }
  attn.dispose();
}
console.log(
  `load average ${os
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')}`,
);
