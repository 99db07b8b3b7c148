// Run by relaxed.test.mjs in a child Node, with or without --experimental-wasm-relaxed-simd
// (a V8 flag, fixed when the process starts): prints as JSON what the package picks and what
// it computes. Results travel as their float32 bits, so the parent can compare them bitwise.
import { readFile } from 'node:fs/promises';

import { relaxedSimdAvailable } from '../../../web/lib/features.js';
import { createAttention } from '../../../web/lib/index.js';
import { randomTensor, rng } from '../../../scripts/lib/reference.mjs';

// The same seeded inputs as the parent: odd sizes, so the GEMM's tail tiles run too.
export function inputs() {
  const next = rng(11);
  return {
    q: randomTensor(next, [67, 33]),
    k: randomTensor(next, [45, 33]),
    v: randomTensor(next, [45, 19]),
    a: randomTensor(next, [129, 67]),
    b: randomTensor(next, [67, 65]),
  };
}

// a (1,2) · b (2,1) = -(1 + 2^-11)·1 + (1 + 2^-12)² = 2^-24 exactly. The kernel adds the
// second product to the first: a fused multiply-add keeps the 2^-24; a rounded product
// (1 + 2^-11, the tie rounded to even) cancels to 0.
export const FMA_PROBE = {
  a: { data: new Float32Array([-(1 + 2 ** -11), 1 + 2 ** -12]), shape: [1, 2] },
  b: { data: new Float32Array([1, 1 + 2 ** -12]), shape: [2, 1] },
};

const bits = (f32) => Array.from(new Uint32Array(f32.buffer, f32.byteOffset, f32.length));

async function describe(options) {
  const attn = await createAttention(options);
  const x = inputs();
  const result = {
    backend: attn.backend,
    fmaProbe: attn.matmul(FMA_PROBE.a, FMA_PROBE.b).data[0],
    attention: bits(attn.attention(x.q, x.k, x.v, { causal: true }).output.data),
    matmul: bits(attn.matmul(x.a, x.b).data),
  };
  attn.dispose();
  return result;
}

async function attempt(options) {
  try {
    return { backend: (await describe(options)).backend };
  } catch (e) {
    return { error: { name: e.name, message: e.message } };
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const st = await readFile(new URL('../../../web/lib/wasm/wasm_attention_simd128.wasm', import.meta.url));
  const out = {
    available: relaxedSimdAvailable(),
    auto: { 1: await describe({ threads: 1 }), 2: await describe({ threads: 2 }) },
    simd128: await describe({ threads: 1, isa: 'simd128' }),
    askedRelaxed: await attempt({ threads: 1, isa: 'relaxed-simd' }),
    withBinary: await attempt({ threads: 1, wasmBinary: st }),
  };
  process.stdout.write(JSON.stringify(out));
}
