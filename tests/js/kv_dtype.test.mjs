// Compressed kv caches (attn.kvCache({ dtype })): decoding over an int8 cache stays within 1 %
// relative RMS of the float32 cache's output on random keys, keeps 0.27× its bytes in wasm
// memory, and serves the layer's decoding too.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';

import { createAttention, tensor } from '../../web/lib/index.js';
import { rng, uniform } from './reference.mjs';

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

  test('an int8 cache decodes within 1 % relative RMS of a float32 cache', () => {
    // GQA 4:1, d 64 (two int8 blocks), a prefill of 300 tokens then 8 single-token steps
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
    const run = (dtype) => {
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
    const f32 = run('float32'),
      i8 = run('int8');
    for (let i = 0; i < f32.length; ++i) {
      const e = relativeRms(i8[i], f32[i]);
      assert.ok(e > 0 && e <= 0.01, `step ${i}: relative RMS ${e}`);
    }
  });

  test('the layer decodes over an int8 cache within 1 % relative RMS of its full forward', () => {
    const layer = attn.multiHeadAttention({ dModel: 64, heads: 4, kvHeads: 2, rotary: true, seed: 3 });
    const { kvHeads, dK, dV, dModel } = layer.config;
    const n = 40;
    const x = uniform(rng(7), n * dModel);
    const cache = attn.kvCache({ batch: 1, kvHeads, dK, dV, capacity: n, dtype: 'int8' });
    try {
      const full = layer.forward(tensor(x, [n, dModel]), { causal: true }).output.data;
      const prefill = layer.forward(tensor(x.subarray(0, 32 * dModel), [32, dModel]), { cache, causal: true });
      const e = relativeRms(prefill.output.data, full.subarray(0, 32 * dModel));
      assert.ok(e > 0 && e <= 0.01, `prefill: relative RMS ${e}`);
      for (let t = 32; t < n; ++t) {
        const step = layer.forward(tensor(x.subarray(t * dModel, (t + 1) * dModel), [1, dModel]), {
          cache,
          causal: true,
        });
        const et = relativeRms(step.output.data, full.subarray(t * dModel, (t + 1) * dModel));
        assert.ok(et > 0 && et <= 0.01, `token ${t}: relative RMS ${et}`);
      }
    } finally {
      cache.dispose();
      layer.dispose();
    }
  });

  test('an int8 cache keeps at most 0.27× the bytes of a float32 cache, measured in wasm memory', () => {
    const config = { batch: 1, kvHeads: 8, dK: 128, dV: 128, capacity: 4096 };
    const bytes = (dtype) => {
      const before = attn.memory().allocatedBytes;
      const cache = attn.kvCache({ ...config, dtype });
      const used = attn.memory().allocatedBytes - before;
      cache.dispose();
      return used;
    };
    const f32 = bytes('float32'),
      i8 = bytes('int8');
    assert.ok(f32 >= 4 * 8 * 4096 * 256, `float32: ${f32} bytes`);
    assert.ok(i8 / f32 <= 0.27, `int8 / float32 = ${i8} / ${f32} = ${(i8 / f32).toFixed(4)}`);
  });
});
