// 1 and 2 threads, this checkout's package against another build's, side by side in one Node
// process: the issue-29 cases a 2-core machine can time (matmul 1024³, multi-head attention
// forward n 512 / dModel 512 / 8 heads and n 1024 / dModel 1024 / 16 heads, the causal GQA
// prefill n 1024, 32/8 heads, d 128). Every round runs each case on each instance in turn
// (interleaved: the machine's load falls on all of them alike); per instance the median and
// best of the rounds' medians of `calls` calls.
//
//   node scripts/forensics/split_scaling.mjs --baseline /path/to/other/web/lib/ [--rounds N]
//     [--calls N] [--isa simd128|relaxed-simd] [--case matmul,mha512,mha1024,prefill]
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';

const { values: args } = parseArgs({
  options: {
    baseline: { type: 'string' },
    rounds: { type: 'string', default: '5' },
    calls: { type: 'string', default: '3' },
    isa: { type: 'string', default: 'simd128' },
    case: { type: 'string', default: 'matmul,mha512,mha1024,prefill' },
  },
});

function values(n, seed) {
  const x = new Float32Array(n);
  for (let i = 0; i < n; ++i) x[i] = (((i * 7919 + seed) % 1009) / 1009 - 0.5) * 0.5;
  return x;
}
const tensor = (shape, seed) => ({
  data: values(
    shape.reduce((a, b) => a * b),
    seed,
  ),
  shape,
});

// name -> (attn) => { run, dispose }
const cases = {
  matmul: (attn) => {
    const a = tensor([1024, 1024], 1),
      b = tensor([1024, 1024], 2);
    return { run: () => attn.matmul(a, b) };
  },
  ...Object.fromEntries(
    [
      ['mha512', 512, 512, 8],
      ['mha1024', 1024, 1024, 16],
    ].map(([name, n, dm, heads]) => [
      name,
      (attn) => {
        const w = (seed) => tensor([dm, dm], seed);
        const layer = attn.multiHeadAttention({
          dModel: dm,
          heads,
          weights: { wq: w(3), wk: w(4), wv: w(5), wo: w(6) },
        });
        const x = tensor([n, dm], 7);
        return { run: () => layer.forward(x), dispose: () => layer.dispose() };
      },
    ]),
  ),
  prefill: (attn) => {
    const q = tensor([1, 32, 1024, 128], 8),
      k = tensor([1, 8, 1024, 128], 9),
      v = tensor([1, 8, 1024, 128], 10);
    return { run: () => attn.attention(q, k, v, { causal: true }) };
  },
};

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
const libs = [['ours', new URL('../../web/lib/', import.meta.url).href]];
if (args.baseline) libs.push(['base', pathToFileURL(args.baseline.replace(/\/?$/, '/')).href]);

const instances = [];
for (const [label, lib] of libs) {
  const { createAttention } = await import(new URL('index.js', lib).href);
  for (const threads of [1, 2]) {
    const attn = await createAttention({ threads, isa: args.isa });
    instances.push({ label: `${label} ${attn.backend.threads}t`, attn, threads: attn.backend.threads, label0: label });
  }
}
const names = args.case.split(',');
const times = {}; // case -> instance label -> round medians
for (const name of names) {
  times[name] = {};
  for (const inst of instances) times[name][inst.label] = [];
}
const rounds = Number(args.rounds),
  calls = Number(args.calls);
for (let r = 0; r < rounds; ++r) {
  for (const name of names) {
    for (const inst of instances) {
      const c = cases[name](inst.attn);
      c.run(); // warm: the workers awake, the scratch grown
      const ms = [];
      for (let i = 0; i < calls; ++i) {
        const t0 = performance.now();
        c.run();
        ms.push(performance.now() - t0);
      }
      c.dispose?.();
      times[name][inst.label].push(median(ms));
    }
  }
}
console.log(`rounds ${rounds} x calls ${calls}, isa ${args.isa}, Node ${process.version}`);
for (const name of names) {
  const row = {};
  for (const inst of instances) {
    const xs = times[name][inst.label];
    row[inst.label] = { median: median(xs), best: Math.min(...xs) };
  }
  const speedup = (lab) =>
    row[`${lab} 1t`] && row[`${lab} 2t`] ? row[`${lab} 1t`].median / row[`${lab} 2t`].median : NaN;
  const line = instances
    .map((i) => `${i.label} ${row[i.label].median.toFixed(1)} (best ${row[i.label].best.toFixed(1)})`)
    .join(' | ');
  const ups = libs.map(([l]) => `${l} 2t/1t ${speedup(l).toFixed(2)}x`).join(', ');
  console.log(`${name}: ${line} ms; ${ups}`);
}
for (const inst of instances) inst.attn.dispose();
