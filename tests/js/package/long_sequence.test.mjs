// Long sequences: without a trace attention runs fused (keys in blocks, online softmax), so
// n = 16384 fits in 64 MB of wasm memory, where the (n,n) weights alone would take 1 GiB.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { createAttention } from '../../../web/lib/index.js';
import { attentionRef, maxAbsDiff, randomTensor, rng } from '../../../scripts/lib/reference.mjs';

// Row i of causal attention in float64 by the reference: query i alone against keys 0..i (the
// whole (n,n) problem would not fit), q, k, v [n,d] of which only .data is read.
function referenceRow(q, k, v, i, d) {
  const rows = (t, r0, r1) => ({ data: t.data.subarray(r0 * d, r1 * d), shape: [r1 - r0, d] });
  return attentionRef(rows(q, i, i + 1), rows(k, 0, i + 1), rows(v, 0, i + 1)).output;
}

test('causal attention at n = 16384, d = 64 runs inside 64 MB and matches the reference', async () => {
  const [n, d] = [16384, 64];
  const attn = await createAttention({ threads: 2 });
  const next = rng(16384);
  const q = randomTensor(next, [n, d]),
    k = randomTensor(next, [n, d]),
    v = randomTensor(next, [n, d]);
  const { output } = attn.attention(q, k, v, { causal: true });
  const { wasmBytes } = attn.memory();
  assert.ok(wasmBytes <= 64 * 2 ** 20, `wasm memory grew to ${(wasmBytes / 2 ** 20).toFixed(1)} MB`);
  for (const i of [0, 1, 255, 256, 257, 4095, 9000, n - 1]) {
    const diff = maxAbsDiff(output.data.subarray(i * d, (i + 1) * d), referenceRow(q, k, v, i, d));
    assert.ok(diff < 1e-5, `row ${i}: largest difference ${diff}`);
  }
  attn.dispose();
});

// A causal GQA prefill packs each kv head's k and v a run of keys at a time (at most 4 MiB),
// never the whole head: at n = 8192, d = 512 a whole head's packed k and v would take 32 MB.
// What a call needs beyond its inputs and output: one packed run, a max and a sum per query
// row of the group, and each thread's small blocks — so the bound does not grow with n.
test('a long causal GQA prefill needs at most 16 MB of wasm memory beyond its inputs and output', async () => {
  const [batch, qHeads, kvHeads, n, d] = [1, 2, 1, 8192, 512];
  const attn = await createAttention({ threads: 2 });
  const next = rng(8192);
  const q = randomTensor(next, [batch, qHeads, n, d]),
    k = randomTensor(next, [batch, kvHeads, n, d]),
    v = randomTensor(next, [batch, kvHeads, n, d]);
  const before = attn.memory().wasmBytes;
  const { output } = attn.attention(q, k, v, { causal: true });
  const grown = attn.memory().wasmBytes - before;
  const ioBytes = 4 * (q.data.length + k.data.length + v.data.length + output.data.length);
  const beyond = (grown - ioBytes) / 2 ** 20;
  assert.ok(beyond <= 16, `wasm memory grew ${beyond.toFixed(1)} MB beyond the inputs and output`);
  // query head 1 reads kv head 0: its rows are head 1's of q against the only k and v
  const head = (t, h) => ({ data: t.data.subarray(h * n * d, (h + 1) * n * d) });
  for (const h of [0, 1])
    for (const i of [0, 1023, 1024, 1025, n - 1]) {
      const at = (h * n + i) * d;
      const want = referenceRow(head(q, h), head(k, 0), head(v, 0), i, d);
      const diff = maxAbsDiff(output.data.subarray(at, at + d), want);
      assert.ok(diff < 1e-5, `head ${h}, row ${i}: largest difference ${diff}`);
    }
  attn.dispose();
});
