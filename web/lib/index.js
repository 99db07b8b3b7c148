// wasm-attention: attention in WebAssembly (SIMD128 + threads), for Node and browsers.
//
//   import { createAttention } from 'wasm-attention';
//   const attn = await createAttention({ threads: 'auto' });
//   const { output } = attn.attention(q, k, v, { causal: true });
//
// Types and the full API: index.d.ts. Errors: TypeError for a wrong kind of value,
// RangeError for a wrong size or value; after any error the instance keeps working.
import { createAttentionWith } from './create.js';
import { glue } from './glue.js';
import { createWorkerAttention } from './worker_client.js';

export { fromFloat16Bits, tensor, toFloat16Bits } from './tensor.js';
export { seededRandom, xavierUniform } from './seeded_random.js';

// options (threads, locateFile, wasmBinary, worker, isa): create.js.
export function createAttention(options) {
  return createAttentionWith(options, { glue, startWorker: createWorkerAttention });
}
