// Compressed kv caches (attn.kvCache({ dtype })): decoding over an int8 cache stays within 1 %
// relative RMS of the float32 cache's output on random keys and a float16 cache within 0.1 %;
// they keep 0.27× and 0.5× its bytes in wasm memory, and serve the layer's decoding too. A
// float16 cache rounds to nearest even and refuses what a half cannot hold.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';

import { createAttention, tensor } from '../../web/lib/index.js';
import { rng, uniform } from '../../scripts/lib/reference.mjs';

// ||a − b|| / ||b||
function relativeRms(a, b) {
  let num = 0,
    den = 0;
  for (let i = 0; i < a.length; ++i) ((num += (a[i] - b[i]) ** 2), (den += b[i] ** 2));
  return Math.sqrt(num / den);
}

describe('kv cache dtypes', () => {
  let attn;
  before(async () => {
    attn = await createAttention({ threads: 1 });
  });
  after(() => attn.dispose());

  // The outputs of a prefill of 300 tokens then 8 single-token steps over a cache of dtype: GQA
  // 4:1, d 64 (two int8 blocks); the same inputs for every dtype.
  const decodeSteps = (dtype) => {
    const [B, Hq, Hkv, d, prefill, steps] = [1, 8, 2, 64, 300, 8];
    const T = prefill + steps;
    const next = rng(5);
    const q = uniform(next, B * Hq * T * d, -2, 2),
      k = uniform(next, B * Hkv * T * d, -2, 2),
      v = uniform(next, B * Hkv * T * d);
    const rows = (x, H, from, to) => {
      const out = new Float32Array(B * H * (to - from) * d);
      for (let h = 0; h < B * H; ++h) out.set(x.subarray((h * T + from) * d, (h * T + to) * d), h * (to - from) * d);
      return out;
    };
    const cache = attn.kvCache({ batch: B, kvHeads: Hkv, dK: d, dV: d, capacity: T, dtype });
    assert.equal(cache.dtype, dtype);
    const outputs = [];
    try {
      for (let t = 0; t < T;) {
        const n = t === 0 ? prefill : 1;
        const { output } = attn.attention(
          tensor(rows(q, Hq, t, t + n), [B, Hq, n, d]),
          tensor(rows(k, Hkv, t, t + n), [B, Hkv, n, d]),
          tensor(rows(v, Hkv, t, t + n), [B, Hkv, n, d]),
          { cache, causal: true },
        );
        outputs.push(output.data);
        t += n;
      }
    } finally {
      cache.dispose();
    }
    return outputs;
  };

  // dtype, what is said of it, the bound on its outputs' relative RMS against float32's: int8's
  // 1 % (the issue's); float16 rounds each value by at most 2^-11 of it, 1e-3 leaves room
  const compressed = [
    ['int8', 'an int8', 0.01],
    ['float16', 'a float16', 1e-3],
  ];
  for (const [dtype, named, bound] of compressed)
    test(`${named} cache decodes within ${bound * 100} % relative RMS of a float32 cache`, () => {
      const f32 = decodeSteps('float32'),
        got = decodeSteps(dtype);
      for (let i = 0; i < f32.length; ++i) {
        const e = relativeRms(got[i], f32[i]);
        assert.ok(e > 0 && e <= bound, `step ${i}: relative RMS ${e}`);
      }
    });

  test('a float16 cache holds each value rounded to the nearest half, ties to even, subnormals too', () => {
    // one key: the output is its value (weight 1), as the cache holds it
    const v = [0.1, 1 + 2 ** -11, 1 + 3 * 2 ** -11, 3 * 2 ** -25, 1e-8, 65504, -2.5 * 2 ** -24, 1e-5];
    const want = [0.0999755859375, 1, 1 + 2 ** -9, 2 ** -23, 0, 65504, -(2 ** -23), 1.0013580322265625e-5];
    const d = v.length;
    const cache = attn.kvCache({ batch: 1, kvHeads: 1, dK: d, dV: d, capacity: 4, dtype: 'float16' });
    try {
      const { output } = attn.attention(
        tensor(new Float32Array(d).fill(1), [1, 1, 1, d]),
        tensor(new Float32Array(d).fill(0.5), [1, 1, 1, d]),
        tensor(Float32Array.from(v), [1, 1, 1, d]),
        { cache },
      );
      assert.deepEqual([...output.data], want);
    } finally {
      cache.dispose();
    }
  });

  test('a float16 cache refuses a value past ±65504 with a RangeError naming it, and keeps what it had', () => {
    const cache = attn.kvCache({ batch: 1, kvHeads: 1, dK: 2, dV: 2, capacity: 4, dtype: 'float16' });
    const t = (...x) => tensor(Float32Array.from(x), [1, 1, 1, 2]);
    try {
      attn.attention(t(1, 1), t(1, 2), t(3, 4), { cache });
      assert.throws(
        () => attn.attention(t(1, 1), t(0.5, 1), t(-65520, 4), { cache }),
        (e) =>
          e instanceof RangeError &&
          /^attention: kv cache: the new value 0 of sequence 0, kv head 0 holds -65520 at 0, beyond the f16 cache's range ±65504, so nothing was appended$/.test(
            e.message,
          ),
      );
      assert.equal(cache.length, 1);
      // the cache is as it was: a next step gives what it gives after the first step alone
      const next = attn.attention(t(1, 1), t(0.5, 1), t(-65504, 4), { cache }).output.data;
      const fresh = attn.kvCache({ batch: 1, kvHeads: 1, dK: 2, dV: 2, capacity: 4, dtype: 'float16' });
      try {
        attn.attention(t(1, 1), t(1, 2), t(3, 4), { cache: fresh });
        assert.deepEqual(attn.attention(t(1, 1), t(0.5, 1), t(-65504, 4), { cache: fresh }).output.data, next);
      } finally {
        fresh.dispose();
      }
    } finally {
      cache.dispose();
    }
  });

  for (const [dtype, named, bound] of compressed)
    test(`the layer decodes over ${named} cache within ${bound * 100} % relative RMS of its full forward`, () => {
      const layer = attn.multiHeadAttention({ dModel: 64, heads: 4, kvHeads: 2, rotary: true, seed: 3 });
      const { kvHeads, dK, dV, dModel } = layer.config;
      const n = 40;
      const x = uniform(rng(7), n * dModel);
      const cache = attn.kvCache({ batch: 1, kvHeads, dK, dV, capacity: n, dtype });
      try {
        const full = layer.forward(tensor(x, [n, dModel]), { causal: true }).output.data;
        const prefill = layer.forward(tensor(x.subarray(0, 32 * dModel), [32, dModel]), { cache, causal: true });
        const e = relativeRms(prefill.output.data, full.subarray(0, 32 * dModel));
        assert.ok(e > 0 && e <= bound, `prefill: relative RMS ${e}`);
        for (let t = 32; t < n; ++t) {
          const step = layer.forward(tensor(x.subarray(t * dModel, (t + 1) * dModel), [1, dModel]), {
            cache,
            causal: true,
          });
          const et = relativeRms(step.output.data, full.subarray(t * dModel, (t + 1) * dModel));
          assert.ok(et > 0 && et <= bound, `token ${t}: relative RMS ${et}`);
        }
      } finally {
        cache.dispose();
        layer.dispose();
      }
    });

  test('an int8 cache keeps at most 0.27× and a float16 cache 0.5× the bytes of a float32 cache, measured in wasm memory', () => {
    const config = { batch: 1, kvHeads: 8, dK: 128, dV: 128 };
    const bytes = (dtype, capacity) => {
      const before = attn.memory().allocatedBytes;
      const cache = attn.kvCache({ ...config, capacity, dtype });
      const used = attn.memory().allocatedBytes - before;
      cache.dispose();
      return used;
    };
    // a whole cache, and what a token adds (without the cache's fixed bytes: float16's panels
    // are exactly half of float32's, the whole cache a few bytes over)
    const whole = (dtype) => bytes(dtype, 4096);
    const perToken = (dtype) => (bytes(dtype, 8192) - bytes(dtype, 4096)) / 4096;
    const f32 = whole('float32'),
      i8 = whole('int8');
    assert.ok(f32 >= 4 * 8 * 4096 * 256, `float32: ${f32} bytes`);
    assert.ok(i8 / f32 <= 0.27, `int8 / float32 = ${i8} / ${f32} = ${(i8 / f32).toFixed(4)}`);
    const [t32, t16] = [perToken('float32'), perToken('float16')];
    assert.equal(t32, 4 * 8 * 256);
    assert.ok(t16 / t32 <= 0.5, `float16 / float32 per token = ${t16} / ${t32}`);
    const f16 = whole('float16');
    assert.ok(f16 / f32 <= 0.5 + 1e-5, `float16 / float32 = ${f16} / ${f32} = ${(f16 / f32).toFixed(6)}`);
  });
});
