// One decode step over a float32 kv cache (batch 1, Hq 32, Hkv 8, d 128, past 4096 keys) for
// several builds of the package side by side in one process, CPU time, interleaved rounds
// (the order reversed every other round), medians, and each build's output checked bitwise
// against the first's:
//
//   node scripts/forensics/decode_builds.mjs DIR/index.js [DIR/index.js ...]
//   env: PAST (keys in the cache, 4096), ROUNDS (301), ISA (simd128), THREADS (1),
//        EXTRA (the cache's capacity past PAST, 1: another value moves where each head's
//        panels lie relative to the others)
//
// Each DIR is a copy of web/lib/ with its wasm/ (e.g. one per commit: check it out, build
// wasm_attention_simd128, copy web/lib). The same build loaded twice differs by up to 5-7 % here
// (where its instance's memory lies): list the first build again last to see that spread.
const paths = process.argv.slice(2);
if (paths.length === 0) throw new Error('decode_builds: name at least one index.js');
const past = Number(process.env.PAST || 4096);
const rounds = Number(process.env.ROUNDS || 301);
const isa = process.env.ISA || 'simd128';
const threads = Number(process.env.THREADS || 1);
const cpuMs = () => process.cpuUsage().user / 1000;

// n values uniform in [-1, 1), from a linear congruential generator seeded by seed
function random(n, seed) {
  let s = seed >>> 0;
  const a = new Float32Array(n);
  for (let i = 0; i < n; ++i) {
    s = (s * 1664525 + 1013904223) >>> 0;
    a[i] = (s / 2 ** 32) * 2 - 1;
  }
  return a;
}

// A cache of `past` keys, then a step that appends one and takes it back out: its output.
function decodeStep(attn, tensor) {
  const heads = 32,
    kvHeads = 8,
    d = 128;
  const cache = attn.kvCache({ batch: 1, kvHeads, dK: d, dV: d, capacity: past + Number(process.env.EXTRA || 1) });
  const keys = tensor(random(kvHeads * past * d, 30), [1, kvHeads, past, d]);
  const values = tensor(random(kvHeads * past * d, 31), [1, kvHeads, past, d]);
  const zeros = tensor(new Float32Array(heads * past * d), [1, heads, past, d]);
  attn.attention(zeros, keys, values, { cache });
  const q = tensor(random(heads * d, 32), [1, heads, 1, d]);
  const k = tensor(random(kvHeads * d, 33), [1, kvHeads, 1, d]);
  const v = tensor(random(kvHeads * d, 34), [1, kvHeads, 1, d]);
  return () => {
    const out = attn.attention(q, k, v, { cache }).output.data;
    cache.truncate(past);
    return out;
  };
}

const steps = [];
for (const path of paths) {
  const lib = await import(path);
  steps.push(decodeStep(await lib.createAttention({ threads, isa }), lib.tensor));
}
const outputs = steps.map((step) => {
  step();
  step();
  return step();
});
const times = steps.map(() => []);
for (let r = 0; r < rounds; ++r) {
  const order = steps.map((_, i) => i);
  if (r % 2) order.reverse();
  for (const i of order) {
    const t0 = cpuMs();
    steps[i]();
    times[i].push(cpuMs() - t0);
  }
}
const median = (a) => [...a].sort((x, y) => x - y)[a.length >> 1];
const first = median(times[0]);
paths.forEach((path, i) => {
  const same = outputs[i].every((x, j) => Object.is(x, outputs[0][j]));
  const ms = median(times[i]);
  console.log(
    `${isa} ${threads}T past ${past}  ${path.padEnd(40)} median ${ms.toFixed(3)} ms  ` +
      `${(ms / first).toFixed(3)}x the first  bitwise ${same ? 'equal' : 'DIFFERENT'}`,
  );
});
