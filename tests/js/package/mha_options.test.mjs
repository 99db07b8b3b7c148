// multiHeadAttention with the modern options: kvHeads (GQA, MQA), rotary, window, softcap, and
// decoding over a kv cache, against the float64 layer of scripts/lib/reference.mjs; errors
// with their messages; the cache left as it was after one; nothing leaked; the docs'
// decoding example run as written.
// run with: node --test tests/js/package/mha_options.test.mjs
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { createAttention, tensor } from '../../../web/lib/index.js';
import { rejectsWith, throwsWith } from '../helpers/assertions.mjs';
import { scratchProject } from '../helpers/docs_examples.mjs';
import { maxAbs, maxAbsDiff, mhaBackwardRef, mhaRef, randomTensor, rng } from '../../../scripts/lib/reference.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

// Rows [r0, r1) of each sequence of a [batch, n, d] array.
function rowsOf(data, batch, n, d, r0, r1) {
  const out = new Float32Array(batch * (r1 - r0) * d);
  for (let b = 0; b < batch; ++b) out.set(data.subarray((b * n + r0) * d, (b * n + r1) * d), b * (r1 - r0) * d);
  return out;
}

const close = (got, want, what, tol = 2e-5) => {
  const d = maxAbsDiff(got, want);
  assert.ok(d <= tol * Math.max(1, maxAbs(want)), `${what}: max abs diff ${d}`);
};

// layer configs: name, config, forward options
const CASES = [
  ['GQA 4 heads on 2, causal', { dModel: 12, heads: 4, kvHeads: 2, dK: 4, dV: 3 }, { causal: true }],
  ['MQA 6 heads on 1, bias, rotary', { dModel: 10, heads: 6, kvHeads: 1, dK: 4, bias: true, rotary: true }, {}],
  [
    'GQA, causal, rotary interleaved on 2 dims with an offset, window 3 left',
    {
      dModel: 16,
      heads: 4,
      kvHeads: 2,
      dK: 6,
      dV: 5,
      rotary: { offset: 4, base: 500, interleaved: true, dims: 2 },
      window: { left: 3 },
    },
    { causal: true },
  ],
  [
    'heads = kvHeads, window both sides, softcap',
    { dModel: 8, heads: 2, window: { left: 2, right: 1 }, softcap: 1.5 },
    {},
  ],
];

describe('multiHeadAttention: kvHeads, rotary, window, softcap', () => {
  let attn;
  before(async () => {
    attn = await createAttention({ threads: 2 });
  });
  after(() => attn.dispose());

  // the layer's config in the reference's terms
  const refLayer = (layer, batch, nQ, nK, options) => {
    const c = layer.config;
    return {
      batch,
      nQ,
      nK,
      dModel: c.dModel,
      heads: c.heads,
      kvHeads: c.kvHeads,
      dK: c.dK,
      dV: c.dV,
      causal: options.causal ?? false,
      softcap: c.softcap,
      left: c.window.left,
      right: c.window.right,
      rotary: c.rotary ?? undefined,
    };
  };
  const weightsOf = (layer) => Object.fromEntries(Object.entries(layer.weights).map(([n, t]) => [n, t.data]));

  for (const [name, config, options] of CASES)
    for (const cross of [false, true]) {
      test(`${name}${cross ? ', cross-attention' : ''}: forward and backward match the float64 layer`, () => {
        const next = rng(name.length + (cross ? 100 : 0));
        const batch = 2,
          nQ = 7,
          nK = cross ? 9 : nQ;
        const layer = attn.multiHeadAttention({ ...config, seed: 5 });
        try {
          const x = randomTensor(next, [batch, nQ, config.dModel]);
          const context = cross ? randomTensor(next, [batch, nK, config.dModel]) : undefined;
          const l = refLayer(layer, batch, nQ, nK, options);
          const w = weightsOf(layer);
          assert.deepEqual(layer.weights.wk.shape, [config.dModel, layer.config.kvHeads * layer.config.dK]);
          const r = layer.forward(x, { ...options, ...(cross && { context }) });
          close(r.output.data, mhaRef(x.data, w, { ...l, context: context?.data }).output, 'output');

          const dOut = randomTensor(next, r.output.shape);
          const g = layer.backward(dOut);
          const want = mhaBackwardRef(x.data, w, { ...l, context: context?.data }, dOut.data);
          for (const key of ['dx', 'dwq', 'dwk', 'dwv', 'dwo', ...(cross ? ['dContext'] : [])])
            close(g[key].data, want[key], key);
          if (config.bias) for (const key of ['dbq', 'dbk', 'dbv', 'dbo']) close(g[key].data, want[key], key);
          assert.deepEqual(g.dwk.shape, layer.weights.wk.shape);
          assert.deepEqual(g.dwv.shape, layer.weights.wv.shape);
        } finally {
          layer.dispose();
        }
      });
    }

  test('the trace gives each query head its kv head', () => {
    const layer = attn.multiHeadAttention({ dModel: 8, heads: 4, kvHeads: 2, dK: 2, seed: 3 });
    try {
      const x = randomTensor(rng(3), [5, 8]);
      const r = layer.forward(x, { trace: true });
      assert.equal(r.heads.length, 4);
      assert.deepEqual(r.heads[1].k.data, r.heads[0].k.data); // heads 0, 1 read kv head 0
      assert.deepEqual(r.heads[3].v.data, r.heads[2].v.data);
      assert.notDeepEqual(r.heads[2].k.data, r.heads[0].k.data);
    } finally {
      layer.dispose();
    }
  });

  test('defaults: kvHeads = heads, no rotary, no window; the same output as an explicit kvHeads, bitwise', () => {
    const a = attn.multiHeadAttention({ dModel: 16, heads: 4, seed: 9 });
    const b = attn.multiHeadAttention({ dModel: 16, heads: 4, kvHeads: 4, window: {}, rotary: false, seed: 9 });
    try {
      assert.deepEqual(
        { ...a.config },
        {
          dModel: 16,
          heads: 4,
          kvHeads: 4,
          dK: 4,
          dV: 4,
          bias: false,
          rotary: null,
          window: { left: -1, right: -1 },
          softcap: 0,
          sinks: false,
        },
      );
      const x = randomTensor(rng(9), [2, 6, 16]);
      assert.deepEqual(a.forward(x, { causal: true }).output.data, b.forward(x, { causal: true }).output.data);
      // the seeded init draws wk and wv with their own (smaller) shapes under GQA
      const g = attn.multiHeadAttention({ dModel: 16, heads: 4, kvHeads: 1, seed: 9 });
      assert.deepEqual(g.weights.wk.shape, [16, 4]);
      assert.deepEqual(g.weights.wq.data, a.weights.wq.data);
      g.dispose();
    } finally {
      a.dispose();
      b.dispose();
    }
  });
});

describe('multiHeadAttention: decoding over a kv cache', () => {
  let attn;
  before(async () => {
    attn = await createAttention({ threads: 2 });
  });
  after(() => attn.dispose());

  const configs = [
    ['GQA, rotary', { dModel: 12, heads: 4, kvHeads: 2, dK: 4, dV: 3, rotary: true, bias: true }],
    [
      'MQA, rotary with an offset, window 3 left',
      { dModel: 8, heads: 4, kvHeads: 1, rotary: { offset: 2 }, window: { left: 3 } },
    ],
    ['classic heads, no rotary', { dModel: 8, heads: 2 }],
  ];
  for (const [name, config] of configs)
    for (const batch of [1, 2]) {
      test(`${name}, batch ${batch}: prefill then one token at a time equals the full causal forward, row by row`, () => {
        const layer = attn.multiHeadAttention({ ...config, seed: 11 });
        const { kvHeads, dK, dV, dModel } = layer.config;
        const cache = attn.kvCache({ batch, kvHeads, dK, dV, capacity: 12 });
        try {
          const n = 10;
          const x = randomTensor(rng(batch + name.length), batch === 1 ? [n, dModel] : [batch, n, dModel]);
          const full = layer.forward(x, { causal: true }).output.data;
          for (let t0 = 0; t0 < n;) {
            const t1 = t0 === 0 ? 4 : t0 + 1;
            const shape = batch === 1 ? [t1 - t0, dModel] : [batch, t1 - t0, dModel];
            const step = layer.forward(tensor(rowsOf(x.data, batch, n, dModel, t0, t1), shape), {
              cache,
              causal: true,
            });
            assert.deepEqual(step.output.shape, shape);
            assert.equal(cache.length, t1);
            close(step.output.data, rowsOf(full, batch, n, dModel, t0, t1), `tokens ${t0}..${t1}`, 1e-5);
            t0 = t1;
          }
          // a mask over the whole cache: [nQ, cache.length + nQ]; masking key 9 (inside every
          // window) changes the answer
          const last = tensor(rowsOf(x.data, batch, n, dModel, 0, 1), batch === 1 ? [1, dModel] : [batch, 1, dModel]);
          const keep = new Uint8Array(11).fill(1);
          const open = layer.forward(last, { cache, causal: true, mask: keep }).output.data;
          cache.truncate(10);
          keep[9] = 0;
          const shut = layer.forward(last, { cache, causal: true, mask: keep }).output.data;
          assert.ok(maxAbsDiff(open, shut) > 0);
        } finally {
          cache.dispose();
          layer.dispose();
        }
      });
    }

  test('errors name the shapes and leave the cache as it was', () => {
    throwsWith(
      () => attn.multiHeadAttention({ dModel: 8, heads: 4, kvHeads: 3 }),
      RangeError,
      /^multiHeadAttention: kvHeads \(3\) does not divide heads \(4\)/,
    );
    throwsWith(
      () => attn.multiHeadAttention({ dModel: 8, heads: 4, kvHeads: 0 }),
      RangeError,
      /^multiHeadAttention: kvHeads must be/,
    );
    throwsWith(
      () => attn.multiHeadAttention({ dModel: 8, heads: 2, dK: 3, rotary: true }),
      RangeError,
      /^multiHeadAttention: rotary\.dims is 3: it must be even and at most dK = 3$/,
    );
    throwsWith(
      () => attn.multiHeadAttention({ dModel: 8, heads: 2, window: { left: -2 } }),
      RangeError,
      /window\.left/,
    );
    const layer = attn.multiHeadAttention({ dModel: 8, heads: 4, kvHeads: 2, rotary: true, seed: 1 });
    const cache = attn.kvCache({ batch: 1, kvHeads: 2, dK: 2, dV: 2, capacity: 5 });
    const other = attn.kvCache({ batch: 1, kvHeads: 4, dK: 2, dV: 2, capacity: 5 });
    try {
      const x3 = randomTensor(rng(1), [3, 8]);
      layer.forward(x3, { cache });
      assert.equal(cache.length, 3);
      throwsWith(
        () => layer.forward(x3, { cache }),
        RangeError,
        /^multiHeadAttention\.forward: x has 3 new tokens but the cache holds 3 of its capacity 5: 6 do not fit$/,
      );
      assert.equal(cache.length, 3, 'the cache is as it was');
      throwsWith(
        () => layer.forward(x3, { cache: other }),
        RangeError,
        /^multiHeadAttention\.forward: the cache is \[batch 1, kvHeads 4, dK 2, dV 2\] but this layer with x \[3,8\] needs batch 1, kvHeads 2, dK 2, dV 2$/,
      );
      throwsWith(
        () => layer.forward(randomTensor(rng(2), [2, 1, 8]), { cache }),
        RangeError,
        /the cache is \[batch 1, .* needs batch 2/,
      );
      throwsWith(
        () => layer.forward(x3, { cache, context: x3 }),
        TypeError,
        /^multiHeadAttention\.forward: context cannot be used with a cache/,
      );
      throwsWith(() => layer.forward(x3, { cache, trace: true }), TypeError, /trace cannot be used with a cache/);
      throwsWith(() => layer.forward(x3, { cache: {} }), TypeError, /cache must be a cache from attn\.kvCache/);
      throwsWith(
        () => layer.forward(randomTensor(rng(3), [1, 8]), { cache, mask: new Uint8Array(3) }),
        RangeError,
        /mask/,
      );
      assert.equal(cache.length, 3, 'still as it was');
      throwsWith(() => layer.backward(randomTensor(rng(4), [3, 8])), TypeError, /the last forward ran over a cache/);
      // still usable, and decoding goes on where it was
      layer.forward(randomTensor(rng(5), [2, 8]), { cache });
      assert.equal(cache.length, 5);
      other.dispose();
      throwsWith(() => layer.forward(x3, { cache: other }), TypeError, /the cache was disposed/);
    } finally {
      other.dispose();
      cache.dispose();
      layer.dispose();
    }
  });

  test('no leaks: 300 cached steps mixing successes and failures', async () => {
    const own = await createAttention({ threads: 1 });
    try {
      const layer = own.multiHeadAttention({ dModel: 16, heads: 4, kvHeads: 2, rotary: true, bias: true, seed: 2 });
      const cache = own.kvCache({ batch: 1, kvHeads: 2, dK: 4, dV: 4, capacity: 40 });
      const wrong = own.kvCache({ batch: 1, kvHeads: 1, dK: 4, dV: 4, capacity: 40 });
      const next = rng(8);
      const prompt = randomTensor(next, [30, 16]);
      const token = randomTensor(next, [1, 16]);
      const round = (i) => {
        if (i % 40 === 0) {
          cache.reset();
          return layer.forward(prompt, { cache, causal: true });
        }
        if (i % 5 === 1) return assert.throws(() => layer.forward(token, { cache: wrong }), RangeError);
        if (cache.length >= 40) return assert.throws(() => layer.forward(token, { cache }), RangeError);
        return layer.forward(token, { cache, causal: true });
      };
      for (let i = 0; i < 80; ++i) round(i);
      const baseline = own.memory().allocatedBytes;
      for (let i = 0; i < 300; ++i) round(i);
      assert.equal(own.memory().allocatedBytes, baseline);
      wrong.dispose();
      cache.dispose();
      layer.dispose();
    } finally {
      own.dispose();
    }
  });

  test("the worker form takes the new config and decodes over its own caches, refusing the direct form's", async () => {
    const remote = await createAttention({ worker: true, threads: 1 });
    try {
      const config = { dModel: 8, heads: 4, kvHeads: 2, rotary: { base: 300 }, window: { left: 2 }, seed: 4 };
      const theirs = await remote.multiHeadAttention(config);
      const mine = attn.multiHeadAttention(config);
      assert.deepEqual(theirs.config, { ...mine.config });
      const x = randomTensor(rng(6), [5, 8]);
      const want = mine.forward(x, { causal: true }).output.data;
      assert.deepEqual((await theirs.forward(x, { causal: true })).output.data, want);
      const cacheConfig = { batch: 1, kvHeads: 2, dK: 2, dV: 2, capacity: 8 };
      const cache = attn.kvCache(cacheConfig);
      await rejectsWith(
        theirs.forward(x, { cache }),
        TypeError,
        /^multiHeadAttention\.forward: cache is a cache of the direct form \(attn\.kvCache\(\) of an instance made without worker: true\)/,
      );
      assert.equal(cache.length, 0);
      const remoteCache = await remote.kvCache(cacheConfig);
      for (const rows of [x.data.subarray(0, 24), x.data.subarray(24)]) {
        const step = { data: rows, shape: [rows.length / 8, 8] };
        assert.deepEqual(
          (await theirs.forward(step, { cache: remoteCache, causal: true })).output.data,
          mine.forward(step, { cache, causal: true }).output.data,
        );
      }
      assert.equal(await remoteCache.length, 5);
      cache.dispose();
      await remoteCache.dispose();
      mine.dispose();
      await theirs.dispose();
    } finally {
      await remote.dispose();
    }
  });

  test("the docs' decoding example runs as written and matches the full causal forward", async () => {
    const doc = fs.readFileSync(path.join(root, 'web/docs/kv-caches-and-dtypes.md'), 'utf8');
    const marker = doc.indexOf('<!-- decoding-layer-example');
    assert.ok(marker >= 0, 'web/docs/kv-caches-and-dtypes.md marks the example');
    const block = doc.slice(marker).match(/```js\n([\s\S]*?)```/)[1];
    // the block as a program of its own, in a project that installed the package, exporting
    // its result
    const project = scratchProject();
    let sequence, output;
    try {
      const file = project.write('decoding.mjs', `${block}\nexport { sequence, output };\n`);
      ({ sequence, output } = await import(pathToFileURL(file).href));
    } finally {
      project.remove();
    }
    assert.equal(sequence.length, 26);
    assert.deepEqual(output.shape, [1, 64]);
    // the same layer over the whole sequence at once: its last row is the last step's output
    const layer = attn.multiHeadAttention({
      dModel: 64,
      heads: 8,
      kvHeads: 2,
      rotary: true,
      window: { left: 256 },
      seed: 1,
    });
    try {
      const data = Float32Array.from(
        sequence.flatMap((t) => Array.from({ length: 64 }, (_, c) => Math.sin((t + 1) * (c + 1)))),
      );
      const full = layer.forward(tensor(data, [sequence.length, 64]), { causal: true }).output.data;
      close(output.data, full.subarray(full.length - 64), 'last step', 1e-5);
    } finally {
      layer.dispose();
    }
  });
});
