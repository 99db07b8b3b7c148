// The long-context demo (scripts/long_context.mjs): an int8 kv cache of one Llama-style layer
// (Hq 32, Hkv 8, d 128) reaches 131072 tokens in one wasm module, at 0.27× a float32 cache's
// bytes, and a decode step over all of them stays within 1 % relative RMS of float64 attention
// over the keys and values as generated, on a sample of query heads.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { createAttention } from '../../../web/lib/index.js';
import { LAYER, createCache, decode, fill, referenceHead } from '../../../scripts/long_context.mjs';
import { relativeRms } from '../../../scripts/lib/reference.mjs';

test('an int8 cache of one layer holds 131072 tokens in one module and decodes over them', async () => {
  const tokens = 131072,
    seed = 3;
  const { qHeads, kvHeads, d } = LAYER;
  const attn = await createAttention({ threads: 1 });
  try {
    const { cache, bytes } = createCache(attn, tokens);
    const f32Bytes = tokens * kvHeads * 2 * d * 4;
    assert.ok(bytes <= 0.27 * f32Bytes, `the cache takes ${bytes} bytes, float32 would take ${f32Bytes}`);
    // 131071 tokens in 8 appends, then the step of the last token
    fill(attn, cache, { seed, tokens: tokens - 1, chunk: 16384 });
    const { data } = decode(attn, cache, { seed }, tokens - 1);
    assert.equal(cache.length, tokens);
    const { wasmBytes } = attn.memory();
    assert.ok(wasmBytes < 2 ** 31, `wasm memory is ${wasmBytes} bytes`);
    // query heads of the first, a middle and the last kv head
    for (const h of [0, 13, qHeads - 1]) {
      const e = relativeRms(data.subarray(h * d, (h + 1) * d), referenceHead(seed, h, tokens - 1));
      assert.ok(e > 0 && e <= 0.01, `query head ${h}: relative RMS ${e}`);
    }
    cache.dispose();
  } finally {
    attn.dispose();
  }
});
