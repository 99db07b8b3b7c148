// Checks of index.d.ts against behaviour: each line marked EXPECT-ERROR is a call the library
// refuses at run time (or a misuse of a type), and tsc must refuse it too; every other line
// must type-check. Run by tests/js/package/hostile/types.mjs.
import {
  createAttention,
  tensor,
  seededRandom,
  xavierUniform,
  type KvCacheRows,
  type AsyncKvCache,
  type KvCache,
  type KvCacheDtype,
  type HalfTensor,
  type Tensor,
} from 'wasm-attention';

const attn = await createAttention({ threads: 1 });
const w = await createAttention({ worker: true });
const q: Tensor = tensor(new Float32Array(4), [1, 1, 1, 4]);
const h: HalfTensor = tensor(new Uint16Array(4), [1, 1, 1, 4], { dtype: 'float16' });

// caches: direct
const c: KvCache = attn.kvCache({ batch: 1, kvHeads: 1, dK: 4, dV: 4, capacity: 8, dtype: 'int8' });
const rows: KvCacheRows = c.read();
const kd: Float32Array = rows.key.data;
const dt: KvCacheDtype = c.dtype;
const n: number = c.length;
c.truncate(0);
c.reset();
attn.attention(q, q, q, { cache: c, causal: true, sinks: new Float32Array(1), out: new Float32Array(4) });
attn.attention(h, q, q, { cache: c, out: new Uint16Array(4) });
// caches: worker
const wc: AsyncKvCache = await w.kvCache({ batch: 1, kvHeads: 1, dK: 4, dV: 4, capacity: 8, dtype: 'float16' });
const wrows: KvCacheRows = await wc.read();
const wn: number = await wc.length;
await wc.truncate(0);
await w.attention(q, q, q, { cache: wc, out: new Float32Array(4), transfer: true });
const wdt: KvCacheDtype = wc.dtype;
// layers
const layer = attn.multiHeadAttention({ dModel: 8, heads: 2, seed: 1, sinks: true });
layer.forward(tensor(new Float32Array(8), [1, 8]), { cache: c });
const wl = await w.multiHeadAttention({ dModel: 8, heads: 2, seed: 1, transfer: true });
await wl.forward(tensor(new Float32Array(8), [1, 8]), { cache: wc, transfer: true });
await wl.backward(tensor(new Float32Array(8), [1, 8]), { transfer: true });
// random
const next: () => number = seededRandom(1);
const wx: Float32Array = xavierUniform(2, 3, next);
// masks
attn.attention(q, q, q, { mask: { data: new Uint16Array(1), shape: [1, 1, 1, 1], dtype: 'float16' } });
const half = attn.attention(h, h, h);
const hdt: 'float16' = half.output.dtype;
// layers: weights without seed, forward with context and trace, a cache with trace false,
// float16 masks on half-precision data
const lw = attn.multiHeadAttention({ dModel: 1, heads: 1, weights: { wq: q, wk: q, wv: q, wo: q } });
layer.forward(tensor(new Float32Array(8), [1, 8]), { context: tensor(new Float32Array(8), [1, 8]), trace: true });
layer.forward(tensor(new Float32Array(8), [1, 8]), { cache: c, trace: false, causal: true });
await wl.forward(tensor(new Float32Array(8), [1, 8]), { context: tensor(new Float32Array(8), [1, 8]), trace: true });
attn.attention(q, q, q, { mask: { data: new Float32Array(1), shape: [1, 1], dtype: 'float32' } });
attn.attention(q, q, q, { mask: { data: new Uint16Array(1), shape: [1, 1], dtype: 'float16' } });
// a boolean[] mask, in 2-D calls too (web/docs/api.md)
attn.attention(q, q, q, { mask: { data: [true, false], shape: [1, 2] } });
layer.forward(tensor(new Float32Array(8), [1, 8]), { mask: { data: [true], shape: [1, 1] } });
attn.attentionBackward(q, q, q, q, { mask: { data: [true], shape: [1, 1] }, trace: true });
void [kd, dt, n, wrows, wn, wdt, wx, hdt, rows, lw];

// ---- refused ----
// EXPECT-ERROR kvCache dtype bfloat16
attn.kvCache({ batch: 1, kvHeads: 1, dK: 4, dV: 4, capacity: 8, dtype: 'bfloat16' });
// EXPECT-ERROR a worker cache passed to the direct form
attn.attention(q, q, q, { cache: wc });
// EXPECT-ERROR a direct cache passed to the worker form
await w.attention(q, q, q, { cache: c });
// EXPECT-ERROR a direct cache passed to a worker layer
await wl.forward(tensor(new Float32Array(8), [1, 8]), { cache: c });
// EXPECT-ERROR transfer in the direct form
attn.attention(q, q, q, { transfer: true });
// EXPECT-ERROR attentionBackward with a cache
attn.attentionBackward(q, q, q, q, { cache: c });
// EXPECT-ERROR attentionBackward on heads with trace
attn.attentionBackward(q, q, q, q, { heads: { q: 1, kv: 1 }, trace: true });
// EXPECT-ERROR attentionBackward with out
attn.attentionBackward(q, q, q, q, { out: new Float32Array(4) });
// EXPECT-ERROR a Float32Array out for a float16 q
attn.attention(h, q, q, { out: new Float32Array(4) });
// EXPECT-ERROR a Uint16Array out for a float32 q
attn.attention(q, q, q, { out: new Uint16Array(4) });
// EXPECT-ERROR a Float64Array out
attn.attention(q, q, q, { out: new Float64Array(4) });
// EXPECT-ERROR read() rows as Uint16Array
const bad1: Uint16Array = c.read().key.data;
// EXPECT-ERROR the worker cache's read() used without await
const bad2: KvCacheRows = wc.read();
// EXPECT-ERROR the worker cache's length used as a number
const bad3: number = wc.length;
// EXPECT-ERROR cache.length assigned
c.length = 3;
// EXPECT-ERROR cache.dtype assigned
c.dtype = 'float32';
// EXPECT-ERROR a mask dtype 'bogus'
attn.attention(q, q, q, { mask: { data: new Float32Array(1), shape: [1, 1, 1, 1], dtype: 'bogus' } });
// EXPECT-ERROR a mask dtype 'int8'
attn.attention(q, q, q, { mask: { data: new Float32Array(1), shape: [1, 1, 1, 1], dtype: 'int8' } });
// EXPECT-ERROR a tensor dtype 'int8'
attn.attention({ data: new Float32Array(4), shape: [1, 1, 1, 4], dtype: 'int8' }, q, q);
// EXPECT-ERROR a Uint16Array tensor without dtype
attn.attention({ data: new Uint16Array(4), shape: [1, 1, 1, 4] }, q, q);
// EXPECT-ERROR seededRandom('7')
seededRandom('7');
// EXPECT-ERROR xavierUniform without next
xavierUniform(2, 2);
// EXPECT-ERROR xavierUniform(2, 2, null)
xavierUniform(2, 2, null);
// EXPECT-ERROR kvCache without capacity
attn.kvCache({ batch: 1, kvHeads: 1, dK: 4, dV: 4 });
// EXPECT-ERROR an unknown kvCache option
attn.kvCache({ batch: 1, kvHeads: 1, dK: 4, dV: 4, capacity: 8, extra: 1 });
// EXPECT-ERROR sinks as a number
attn.attention(q, q, q, { sinks: 0.5 });
// EXPECT-ERROR a layer with seed and weights (a TypeError at run time)
attn.multiHeadAttention({ dModel: 2, heads: 1, seed: 1, weights: { wq: q, wk: q, wv: q, wo: q } });
// EXPECT-ERROR a layer forward with a cache and trace (a TypeError at run time)
layer.forward(tensor(new Float32Array(8), [1, 8]), { cache: c, trace: true });
// EXPECT-ERROR a layer forward with a cache and context (a TypeError at run time)
layer.forward(tensor(new Float32Array(8), [1, 8]), { cache: c, context: tensor(new Float32Array(8), [1, 8]) });
// EXPECT-ERROR a mask dtype 'float16' on a Uint8Array (silently read as a keep mask)
attn.attention(q, q, q, { mask: { data: new Uint8Array(1), shape: [1, 1, 1, 1], dtype: 'float16' } });
// EXPECT-ERROR a mask dtype 'float16' on a Float32Array (silently read as float32)
attn.attention(q, q, q, { mask: { data: new Float32Array(1), shape: [1, 1, 1, 1], dtype: 'float16' } });
// EXPECT-ERROR a worker layer with seed and weights (a TypeError at run time)
await w.multiHeadAttention({ dModel: 2, heads: 1, seed: 1, weights: { wq: q, wk: q, wv: q, wo: q } });
// EXPECT-ERROR a worker layer forward with a cache and trace (a TypeError at run time)
await wl.forward(tensor(new Float32Array(8), [1, 8]), { cache: wc, trace: true });
// EXPECT-ERROR a worker layer forward with a cache and context (a TypeError at run time)
await wl.forward(tensor(new Float32Array(8), [1, 8]), { cache: wc, context: tensor(new Float32Array(8), [1, 8]) });
// EXPECT-ERROR a worker mask dtype 'float16' on a Float32Array (silently read as float32)
await w.attention(q, q, q, { mask: { data: new Float32Array(1), shape: [1, 1, 1, 1], dtype: 'float16' } });
// EXPECT-ERROR a 2-D mask of numbers in an Array
attn.attention(q, q, q, { mask: { data: [1, 0], shape: [1, 2] } });
void [bad1, bad2, bad3];
