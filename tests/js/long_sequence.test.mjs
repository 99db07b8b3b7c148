// Long sequences: without a trace attention runs fused (keys in blocks, online softmax), so
// n = 16384 fits in 64 MB of wasm memory, where the (n,n) weights alone would take 1 GiB.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { createAttention } from '../../web/lib/index.js';
import { maxAbsDiff, randomTensor, rng } from './reference.mjs';

// Row i of causal attention in float64: softmax over keys 0..i of q_i·k_j·scale, then ·v.
function referenceRow(q, k, v, i, d, scale) {
  const x = new Float64Array(i + 1);
  let max = -Infinity;
  for (let j = 0; j <= i; ++j) {
    let s = 0;
    for (let c = 0; c < d; ++c) s += q.data[i * d + c] * k.data[j * d + c];
    x[j] = s * scale;
    max = Math.max(max, x[j]);
  }
  const out = new Float64Array(d);
  let sum = 0;
  for (let j = 0; j <= i; ++j) {
    const e = Math.exp(x[j] - max);
    sum += e;
    for (let c = 0; c < d; ++c) out[c] += e * v.data[j * d + c];
  }
  return out.map((o) => o / sum);
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
    const diff = maxAbsDiff(output.data.subarray(i * d, (i + 1) * d), referenceRow(q, k, v, i, d, 1 / Math.sqrt(d)));
    assert.ok(diff < 1e-5, `row ${i}: largest difference ${diff}`);
  }
  attn.dispose();
});
