#!/usr/bin/env node
// What float16 tensors cost: the JS conversions of half.js on one 512×512 tensor, each way,
// against one attention call on float32 and on float16 inputs of the same sizes
// (q, k, v [512,64]; output [512,64]), on 1 and 2 threads; medians (timing.mjs FULL).
//   node scripts/bench/half.mjs
// The call on float16 inputs widens q, k and v (3·512·64 values) and narrows the output;
// 512×512 is the largest tensor such a call converts (the scores with qkOutput).
import { createAttention, tensor } from '../../web/lib/index.js';
import { float32ToHalfInto, halfToFloat32 } from '../../web/lib/internal.js';
import { FULL, measure } from './timing.mjs';

const next = (() => {
  let s = 1;
  return () => ((s = (s * 1103515245 + 12345) >>> 0) / 2 ** 32) * 2 - 1;
})();
const values = Float32Array.from({ length: 512 * 512 }, next);
const bits = new Uint16Array(values.length);
const row = (name, r) =>
  console.log(`${name.padEnd(44)} ${r.ms.toFixed(3).padStart(8)} ms (min ${r.minMs.toFixed(3)})`);

row('512×512 float32 -> float16 (narrow)', await measure(() => float32ToHalfInto(values, bits), FULL));
row('512×512 float16 -> float32 (widen)', await measure(() => halfToFloat32(bits), FULL));
for (const threads of [1, 2]) {
  const attn = await createAttention({ threads });
  const make = (n, d) => tensor(Float32Array.from({ length: n * d }, next), [n, d]);
  const [q, k, v] = [make(512, 64), make(512, 64), make(512, 64)];
  const half = (t) => {
    const b = new Uint16Array(t.data.length);
    float32ToHalfInto(t.data, b);
    return tensor(b, t.shape, { dtype: 'float16' });
  };
  const [qh, kh, vh] = [q, k, v].map(half);
  row(
    `attention [512,64]³ float32, ${threads} thread${threads > 1 ? 's' : ''}`,
    await measure(() => attn.attention(q, k, v), FULL),
  );
  row(
    `attention [512,64]³ float16, ${threads} thread${threads > 1 ? 's' : ''}`,
    await measure(() => attn.attention(qh, kh, vh), FULL),
  );
  attn.dispose();
}
