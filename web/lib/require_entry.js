// The source of the CommonJS entry, index.cjs (require('wasm-attention')): scripts/build/build_cjs.mjs
// bundles it, so the synchronous functions come along as they are here, with no copy. Node 20's
// require() cannot load an ES module, but createAttention is async anyway: it loads index.js
// (an ES module, left outside the bundle) on first use. index.js exports the same names.
export { fromFloat16Bits, tensor, toFloat16Bits } from './tensor.js';
export { seededRandom, xavierUniform } from './seeded_random.js';

export async function createAttention(options) {
  const { createAttention: create } = await import('./index.js');
  return create(options);
}
