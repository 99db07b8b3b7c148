// A differential hostile round on the JS refactor of 31c2a8d..e61e11f (a 2-D call run as heads,
// every check in validate.js, the worker form from one table): each case makes the same hostile
// call on the library before it (a checkout of 31c2a8d, built) and on this one, in the direct
// and the worker form, and compares what came back: the result's bits, the error's class, the
// state after the call (the case's cache: length and rows; its layer: weights; its out array)
// and memory().allocatedBytes before and after. Prints one row per divergence (message wording
// aside), then a count. Not a test suite: a report, run by hand.
//
//   node tests/js/package/hostile/round3.mjs [--old /tmp/old31] [--only SUBSTRING] [--all]
//   --all also prints the cases that agree, with what both gave; --messages each reworded
//   error message, old and new.
import { createHash } from 'node:crypto';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const args = process.argv.slice(2);
const opt = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const oldRoot = resolve(opt('--old', '/tmp/old31'));
const only = opt('--only', null);
const all = args.includes('--all');
const messages = args.includes('--messages'); // also each reworded error message, old then new

const newLib = await import('../../../../web/lib/index.js');
const oldLib = await import(pathToFileURL(`${oldRoot}/web/lib/index.js`).href);

// ---- inputs, made fresh for every call (some cases detach or revoke them) ----
function rand(seed, n, scale = 1) {
  let s = seed >>> 0;
  return Float32Array.from({ length: n }, () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return ((s / 2 ** 32) * 2 - 1) * scale;
  });
}
const T = (shape, seed = 1, data) => ({
  data:
    data ??
    rand(
      seed,
      shape.reduce((a, b) => a * b, 1),
    ),
  shape,
});
const detached = (n = 4) => {
  const a = new Float32Array(n);
  structuredClone(a.buffer, { transfer: [a.buffer] });
  return a;
};
const revoked = () => {
  const { proxy, revoke } = Proxy.revocable({}, {});
  revoke();
  return proxy;
};
const throwing = (base, key) => {
  const o = { ...base };
  Object.defineProperty(o, key, {
    enumerable: true,
    get() {
      throw new SyntaxError(`getter ${key} throws`);
    },
  });
  return o;
};
// a getter that gives a then b: a check reading it twice sees two values
const flipping = (base, key, a, b) => {
  const o = { ...base };
  let n = 0;
  Object.defineProperty(o, key, { enumerable: true, get: () => (n++ === 0 ? a : b) });
  return o;
};
const q2 = () => T([3, 4], 1),
  k2 = () => T([5, 4], 2),
  v2 = () => T([5, 4], 3),
  d2 = () => T([3, 4], 4);
const q4 = () => T([1, 2, 3, 4], 5),
  k4 = () => T([1, 1, 5, 4], 6),
  v4 = () => T([1, 1, 5, 4], 7),
  d4 = () => T([1, 2, 3, 4], 8);
const q4c = () => T([1, 2, 1, 4], 9),
  k4c = () => T([1, 1, 1, 4], 10); // one new row for the case's cache (kvHeads 1, d 4)
const x2 = () => T([3, 4], 11),
  x3 = () => T([2, 3, 4], 12);
const half = (shape, seed = 1) => ({
  data: Uint16Array.from(
    rand(
      seed,
      shape.reduce((a, b) => a * b, 1),
    ),
    (x) => 0x3c00 + Math.round(x * 200),
  ),
  shape,
  dtype: 'float16',
});

// ---- the cases: name -> async (x) => the call; x: { attn, cache (kvHeads 1, dK = dV = 4,
// capacity 4, one row in), layer (dModel 4, heads 2, seed 3), lcache (the layer's, capacity
// 4), out (a Float32Array(12) of 7s) } ----
const A = (x, o, q = q2(), k = k2(), v = v2()) => x.attn.attention(q, k, v, o);
const A4 = (x, o, q = q4(), k = k4(), v = v4()) => x.attn.attention(q, k, v, o);
const B = (x, o, q = q2(), k = k2(), v = v2(), d = d2()) => x.attn.attentionBackward(q, k, v, d, o);
const B4 = (x, o, q = q4(), k = k4(), v = v4(), d = d4()) => x.attn.attentionBackward(q, k, v, d, o);
const C = (x, o, q = q4c(), k = k4c(), v = k4c()) => x.attn.attention(q, k, v, { cache: x.cache, ...o });
const F = (x, o, xx = x2()) => x.layer.forward(xx, o);
const M = (x, o, a = T([3, 4], 1), b = T([4, 5], 2)) => x.attn.matmul(a, b, o);
// a cache or layer a case makes is disposed with the case's own
const own = async (x, made) => {
  const o = await made;
  x.owned.push(o);
  return o;
};
const KV = (x, c) => own(x, x.attn.kvCache(c));
const kvc = (o) => ({ batch: 1, kvHeads: 1, dK: 4, dV: 4, capacity: 4, ...o });
const L = (x, c) => own(x, x.attn.multiHeadAttention(c));
const lc = (o) => ({ dModel: 4, heads: 2, ...o });
const mask2 = (data, shape = [3, 5], extra = {}) => ({ data, shape, ...extra });
const keep15 = () => Uint8Array.from({ length: 15 }, (_, i) => (i % 5 <= i / 5 + 1 ? 1 : 0));

const cases = {
  // attention 2-D: options
  'attn2 plain': (x) => A(x),
  'attn2 causal trace': (x) => A(x, { causal: true, trace: true }),
  'attn2 scale .5 softcap 2 window': (x) => A(x, { scale: 0.5, softcap: 2, window: { left: 1, right: 0 } }),
  'attn2 sinks': (x) => A(x, { sinks: new Float32Array([0.3]) }),
  'attn2 sinks -Inf': (x) => A(x, { sinks: new Float32Array([-Infinity]) }),
  'attn2 sinks NaN': (x) => A(x, { sinks: new Float32Array([NaN]) }),
  'attn2 sinks Inf': (x) => A(x, { sinks: new Float32Array([Infinity]) }),
  'attn2 sinks [2]': (x) => A(x, { sinks: new Float32Array(2) }),
  'attn2 sinks tensor': (x) => A(x, { sinks: T([1], 1) }),
  'attn2 sinks array': (x) => A(x, { sinks: [0.5] }),
  'attn2 sinks number': (x) => A(x, { sinks: 0.5 }),
  'attn2 rotary true': (x) => A(x, { rotary: true }),
  'attn2 rotary opts': (x) => A(x, { rotary: { dims: 2, interleaved: true, offset: 3, base: 100 } }),
  'attn2 rotary dims 3': (x) => A(x, { rotary: { dims: 3 } }),
  'attn2 rotary dims 6': (x) => A(x, { rotary: { dims: 6 } }),
  'attn2 rotary base 0': (x) => A(x, { rotary: { base: 0 } }),
  'attn2 rotary base NaN': (x) => A(x, { rotary: { base: NaN } }),
  'attn2 rotary offset -1': (x) => A(x, { rotary: { offset: -1 } }),
  'attn2 rotary offset 1.5': (x) => A(x, { rotary: { offset: 1.5 } }),
  'attn2 rotary unknown': (x) => A(x, { rotary: { foo: 1 } }),
  'attn2 rotary "yes"': (x) => A(x, { rotary: 'yes' }),
  'attn2 rotary odd dK': (x) => A(x, { rotary: true }, T([3, 3]), T([5, 3]), v2()),
  'attn2 scale NaN': (x) => A(x, { scale: NaN }),
  'attn2 scale Inf': (x) => A(x, { scale: Infinity }),
  'attn2 scale 0': (x) => A(x, { scale: 0 }),
  'attn2 scale -1': (x) => A(x, { scale: -1 }),
  'attn2 scale 1e39': (x) => A(x, { scale: 1e39 }),
  'attn2 scale "0.5"': (x) => A(x, { scale: '0.5' }),
  'attn2 scale null': (x) => A(x, { scale: null }),
  'attn2 softcap NaN': (x) => A(x, { softcap: NaN }),
  'attn2 softcap -1': (x) => A(x, { softcap: -1 }),
  'attn2 softcap Inf': (x) => A(x, { softcap: Infinity }),
  'attn2 causal "yes"': (x) => A(x, { causal: 'yes' }),
  'attn2 causal 1': (x) => A(x, { causal: 1 }),
  'attn2 causal null': (x) => A(x, { causal: null }),
  'attn2 trace 1': (x) => A(x, { trace: 1 }),
  'attn2 window left -2': (x) => A(x, { window: { left: -2 } }),
  'attn2 window left -1': (x) => A(x, { window: { left: -1 } }),
  'attn2 window left 1.5': (x) => A(x, { window: { left: 1.5 } }),
  'attn2 window left NaN': (x) => A(x, { window: { left: NaN } }),
  'attn2 window unknown': (x) => A(x, { window: { up: 1 } }),
  'attn2 window null': (x) => A(x, { window: null }),
  'attn2 window 3': (x) => A(x, { window: 3 }),
  'attn2 unknown option': (x) => A(x, { foo: 1 }),
  'attn2 options null': (x) => A(x, null),
  'attn2 options 5': (x) => A(x, 5),
  'attn2 options array': (x) => A(x, []),
  'attn2 options revoked': (x) => A(x, revoked()),
  'attn2 options getter throws': (x) => A(x, throwing({}, 'causal')),
  'attn2 options scale flips': (x) => A(x, flipping({}, 'scale', 0.5, NaN)),
  'attn2 heads': (x) => A(x, { heads: { q: 1, kv: 1 } }),
  'attn2 pastKey': (x) => A(x, { pastKey: T([1, 1, 1, 4]), pastValue: T([1, 1, 1, 4]) }),
  'attn2 kvLength': (x) => A(x, { kvLength: [5] }),
  'attn2 qkOutput': (x) => A(x, { qkOutput: 'weights' }),
  'attn2 qkOutput scaled': (x) => A(x, { qkOutput: 'scaled' }),
  'attn2 cache': (x) => A(x, { cache: x.cache }, q2(), k2(), v2()),
  'attn2 transfer': (x) => A(x, { transfer: true }),
  'attn2 transfer "yes"': (x) => A(x, { transfer: 'yes' }),
  // attention 2-D: masks
  'mask keep tensor': (x) => A(x, { mask: mask2(keep15()) }),
  'mask keep bare': (x) => A(x, { mask: keep15() }),
  'mask additive': (x) => A(x, { mask: mask2(rand(3, 15)) }),
  'mask additive bare': (x) => A(x, { mask: rand(3, 15) }),
  'mask boolean[]': (x) => A(x, { mask: mask2(Array.from(keep15(), Boolean)) }),
  'mask boolean[] no shape': (x) => A(x, { mask: { data: Array.from(keep15(), Boolean) } }),
  'mask boolean[] bad element': (x) => A(x, { mask: mask2([...Array(14).fill(true), 1]) }),
  'mask no shape': (x) => A(x, { mask: { data: keep15() } }),
  'mask f16 bits': (x) => A(x, { mask: mask2(new Uint16Array(15), [3, 5], { dtype: 'float16' }) }),
  'mask Uint16 without dtype': (x) => A(x, { mask: mask2(new Uint16Array(15)) }),
  'mask f16 on Uint8': (x) => A(x, { mask: mask2(keep15(), [3, 5], { dtype: 'float16' }) }),
  'mask f16 on Float32': (x) => A(x, { mask: mask2(rand(3, 15), [3, 5], { dtype: 'float16' }) }),
  'mask float32 on Float32': (x) => A(x, { mask: mask2(rand(3, 15), [3, 5], { dtype: 'float32' }) }),
  'mask dtype bogus': (x) => A(x, { mask: mask2(keep15(), [3, 5], { dtype: 'bogus' }) }),
  'mask wrong length': (x) => A(x, { mask: mask2(new Uint8Array(14)) }),
  'mask bare wrong length': (x) => A(x, { mask: new Uint8Array(14) }),
  'mask shape [5]': (x) => A(x, { mask: mask2(new Uint8Array(5).fill(1), [5]) }),
  'mask shape [1,5]': (x) => A(x, { mask: mask2(new Uint8Array(5).fill(1), [1, 5]) }),
  'mask shape [3,4]': (x) => A(x, { mask: mask2(new Uint8Array(12).fill(1), [3, 4]) }),
  'mask shape [1,1,3,5]': (x) => A(x, { mask: mask2(keep15(), [1, 1, 3, 5]) }),
  'mask shape [5,3]': (x) => A(x, { mask: mask2(keep15(), [5, 3]) }),
  'mask all masked row': (x) => A(x, { mask: mask2(new Uint8Array(15).fill(1).fill(0, 0, 5)) }),
  'mask all -Inf': (x) => A(x, { mask: mask2(new Float32Array(15).fill(-Infinity)) }),
  'mask NaN': (x) => A(x, { mask: mask2(new Float32Array(15).fill(NaN)) }),
  'mask +Inf': (x) => A(x, { mask: mask2(new Float32Array(15).fill(Infinity)) }),
  'mask Float64': (x) => A(x, { mask: mask2(new Float64Array(15)) }),
  'mask Int8': (x) => A(x, { mask: mask2(new Int8Array(15)) }),
  'mask number': (x) => A(x, { mask: 1 }),
  'mask null': (x) => A(x, { mask: null }),
  'mask revoked': (x) => A(x, { mask: revoked() }),
  'mask data getter throws': (x) => A(x, { mask: throwing({ shape: [3, 5] }, 'data') }),
  'mask shape flips': (x) => A(x, { mask: flipping({ data: keep15() }, 'shape', [3, 5], [15, 1]) }),
  'mask detached': (x) => A(x, { mask: mask2(new Uint8Array(detached(4).buffer)) }),
  'mask keep values 2': (x) => A(x, { mask: mask2(new Uint8Array(15).fill(2)) }),
  'mask causal and mask': (x) => A(x, { causal: true, mask: mask2(keep15()) }),
  // attention 2-D: tensors
  'q null': (x) => A(x, {}, null),
  'q number': (x) => A(x, {}, 3),
  'q array data': (x) => A(x, {}, { data: [...q2().data], shape: [3, 4] }),
  'q Float64 data': (x) => A(x, {}, { data: new Float64Array(12), shape: [3, 4] }),
  'q shape product': (x) => A(x, {}, T([3, 4], 1, new Float32Array(11))),
  'q shape NaN': (x) => A(x, {}, { data: new Float32Array(12), shape: [NaN, 4] }),
  'q shape -3': (x) => A(x, {}, { data: new Float32Array(12), shape: [-3, -4] }),
  'q shape 1.5': (x) => A(x, {}, { data: new Float32Array(12), shape: [1.5, 8] }),
  'q shape strings': (x) => A(x, {}, { data: new Float32Array(12), shape: ['3', '4'] }),
  'q shape missing': (x) => A(x, {}, { data: new Float32Array(12) }),
  'q 1-D': (x) => A(x, {}, T([4])),
  'q 5-D': (x) => A(x, {}, T([1, 1, 1, 3, 4])),
  'q nQ 0': (x) => A(x, {}, T([0, 4])),
  'k nK 0': (x) => A(x, {}, q2(), T([0, 4]), T([0, 4])),
  'q dK 0': (x) => A(x, {}, T([3, 0]), T([5, 0]), v2()),
  'k cols mismatch': (x) => A(x, {}, q2(), T([5, 3]), v2()),
  'v rows mismatch': (x) => A(x, {}, q2(), k2(), T([4, 4])),
  'q NaN': (x) => A(x, {}, T([3, 4], 1, new Float32Array(12).fill(NaN))),
  'q Inf': (x) => A(x, {}, T([3, 4], 1, new Float32Array(12).fill(Infinity))),
  'k huge': (x) => A(x, {}, q2(), T([5, 4], 1, new Float32Array(20).fill(3e38)), v2()),
  'v -Inf': (x) => A(x, {}, q2(), k2(), T([5, 4], 1, new Float32Array(20).fill(-Infinity))),
  'q detached': (x) => A(x, {}, { data: detached(12), shape: [3, 4] }),
  'q revoked': (x) => A(x, {}, revoked()),
  'q data getter throws': (x) => A(x, {}, throwing({ shape: [3, 4] }, 'data')),
  'q shape flips': (x) => A(x, {}, flipping({ data: q2().data }, 'shape', [3, 4], [2, 6])),
  'q data flips': (x) => A(x, {}, flipping({ shape: [3, 4] }, 'data', q2().data, new Float32Array(4))),
  'q subarray': (x) => A(x, {}, { data: new Float32Array(20).fill(0.5).subarray(4, 16), shape: [3, 4] }),
  'q dtype float32': (x) => A(x, {}, { ...q2(), dtype: 'float32' }),
  'q dtype int8': (x) => A(x, {}, { ...q2(), dtype: 'int8' }),
  'q half': (x) => A(x, {}, half([3, 4])),
  'q half k half': (x) => A(x, {}, half([3, 4]), half([5, 4], 2), half([5, 4], 3)),
  'q Uint16 no dtype': (x) => A(x, {}, { data: new Uint16Array(12), shape: [3, 4] }),
  'q f16 dtype on Float32': (x) => A(x, {}, { ...q2(), dtype: 'float16' }),
  'q 2-D k 4-D': (x) => A(x, {}, q2(), k4(), v4()),
  // out
  'out ok': (x) => A(x, { out: x.out }),
  'out Float32(13)': (x) => A(x, { out: new Float32Array(13) }),
  'out Uint16': (x) => A(x, { out: new Uint16Array(12) }),
  'out Float64': (x) => A(x, { out: new Float64Array(12) }),
  'out detached': (x) => A(x, { out: detached(12) }),
  'out array': (x) => A(x, { out: new Array(12).fill(0) }),
  'out is q.data': (x) => {
    const q = q2();
    return A(x, { out: q.data }, q);
  },
  'out subarray of k.data': (x) => {
    const k = T([5, 4], 2);
    return A(x, { out: k.data.subarray(0, 12) }, q2(), k);
  },
  'out with bad scale': (x) => A(x, { out: x.out, scale: NaN }),
  'out with bad mask': (x) => A(x, { out: x.out, mask: mask2(new Uint8Array(3)) }),
  'out with NaN q': (x) => A(x, { out: x.out }, T([3, 4], 1, new Float32Array(12).fill(NaN))),
  'out with trace': (x) => A(x, { out: x.out, trace: true }),
  'out null': (x) => A(x, { out: null }),
  'out half for half q': (x) => A(x, { out: new Uint16Array(12) }, half([3, 4])),
  'out f32 for half q': (x) => A(x, { out: x.out }, half([3, 4])),
  'out getter throws': (x) => A(x, throwing({}, 'out')),
  // attention on heads
  'attn4 plain': (x) => A4(x),
  'attn4 causal window softcap': (x) => A4(x, { causal: true, window: { left: 1 }, softcap: 3 }),
  'attn4 trace': (x) => A4(x, { trace: true }),
  'attn4 sinks [2]': (x) => A4(x, { sinks: new Float32Array([0.1, -1]) }),
  'attn4 sinks [1]': (x) => A4(x, { sinks: new Float32Array([0.1]) }),
  'attn4 past': (x) => A4(x, { pastKey: T([1, 1, 2, 4], 20), pastValue: T([1, 1, 2, 4], 21), causal: true }),
  'attn4 past key only': (x) => A4(x, { pastKey: T([1, 1, 2, 4], 20) }),
  'attn4 past wrong width': (x) => A4(x, { pastKey: T([1, 1, 2, 3]), pastValue: T([1, 1, 2, 4]) }),
  'attn4 past half': (x) => A4(x, { pastKey: half([1, 1, 2, 4]), pastValue: half([1, 1, 2, 4]) }),
  'attn4 kvLength [3]': (x) => A4(x, { kvLength: [3] }),
  'attn4 kvLength Int32': (x) => A4(x, { kvLength: new Int32Array([0]) }),
  'attn4 kvLength [6]': (x) => A4(x, { kvLength: [6] }),
  'attn4 kvLength [-1]': (x) => A4(x, { kvLength: [-1] }),
  'attn4 kvLength [1,2]': (x) => A4(x, { kvLength: [1, 2] }),
  'attn4 kvLength [NaN]': (x) => A4(x, { kvLength: [NaN] }),
  'attn4 kvLength Float32': (x) => A4(x, { kvLength: new Float32Array([3]) }),
  'attn4 qk scaled': (x) => A4(x, { qkOutput: 'scaled' }),
  'attn4 qk softcapped': (x) => A4(x, { qkOutput: 'softcapped', softcap: 2 }),
  'attn4 qk masked': (x) => A4(x, { qkOutput: 'masked', causal: true }),
  'attn4 qk weights': (x) => A4(x, { qkOutput: 'weights' }),
  'attn4 qk bogus': (x) => A4(x, { qkOutput: 'bogus' }),
  'attn4 mask rank1': (x) => A4(x, { mask: { data: [true, false, true, true, true], shape: [5] } }),
  'attn4 mask rank2': (x) => A4(x, { mask: { data: keep15(), shape: [3, 5] } }),
  'attn4 mask rank4 full': (x) => A4(x, { mask: { data: new Uint8Array(30).fill(1), shape: [1, 2, 3, 5] } }),
  'attn4 mask rank5': (x) => A4(x, { mask: { data: keep15(), shape: [1, 1, 1, 3, 5] } }),
  'attn4 mask short last': (x) => A4(x, { mask: { data: new Uint8Array(9).fill(1), shape: [3, 3] } }),
  'attn4 mask long last': (x) => A4(x, { mask: { data: new Uint8Array(18).fill(1), shape: [3, 6] } }),
  'attn4 mask bare': (x) => A4(x, { mask: keep15() }),
  'attn4 mask heads 3': (x) => A4(x, { mask: { data: new Uint8Array(45).fill(1), shape: [3, 3, 5] } }),
  'attn4 mask f16': (x) => A4(x, { mask: { data: new Uint16Array(15), shape: [3, 5], dtype: 'float16' } }),
  'attn4 mask NaN': (x) => A4(x, { mask: { data: new Float32Array(15).fill(NaN), shape: [3, 5] } }),
  'attn4 rotary': (x) => A4(x, { rotary: { dims: 2, offset: 1 } }),
  'attn3 heads': (x) => A(x, { heads: { q: 2, kv: 1 } }, T([1, 3, 8], 1), T([1, 5, 4], 2), T([1, 5, 4], 3)),
  'attn3 no heads': (x) => A(x, {}, T([1, 3, 8], 1), T([1, 5, 4], 2), T([1, 5, 4], 3)),
  'attn3 heads 3 of 8': (x) => A(x, { heads: { q: 3, kv: 1 } }, T([1, 3, 8], 1), T([1, 5, 4], 2), T([1, 5, 4], 3)),
  'attn3 heads q 0': (x) => A(x, { heads: { q: 0, kv: 1 } }, T([1, 3, 8], 1), T([1, 5, 4], 2), T([1, 5, 4], 3)),
  'attn4 heads mismatch': (x) => A4(x, { heads: { q: 1, kv: 1 } }),
  'attn4 GQA not dividing': (x) => A4(x, {}, T([1, 3, 3, 4]), T([1, 2, 5, 4]), T([1, 2, 5, 4])),
  'attn4 batch mismatch': (x) => A4(x, {}, T([2, 2, 3, 4]), k4(), v4()),
  'attn4 out': (x) => A4(x, { out: new Float32Array(24) }),
  'attn4 out wrong': (x) => A4(x, { out: new Float32Array(12) }),
  // caches
  'cache append': (x) => C(x),
  'cache causal rotary': (x) => C(x, { causal: true, rotary: true }),
  'cache qk weights': (x) => C(x, { qkOutput: 'weights' }),
  'cache trace': (x) => C(x, { trace: true }),
  'cache to capacity': async (x) => {
    for (let i = 0; i < 3; ++i) await C(x);
    await x.mark();
    return C(x);
  },
  'cache two rows at 3 of 4': async (x) => {
    await C(x);
    await C(x);
    await x.mark();
    return C(x, {}, T([1, 2, 2, 4]), T([1, 1, 2, 4]), T([1, 1, 2, 4]));
  },
  'cache with past': (x) => C(x, { pastKey: T([1, 1, 1, 4]), pastValue: T([1, 1, 1, 4]) }),
  'cache with kvLength': (x) => C(x, { kvLength: [1] }),
  'cache with mask': (x) => C(x, { mask: { data: [true, false], shape: [2] } }),
  'cache mask too long': (x) => C(x, { mask: { data: [true, false, true], shape: [3] } }),
  'cache bad scale': (x) => C(x, { scale: NaN }),
  'cache bad out': (x) => C(x, { out: new Float32Array(7) }),
  'cache NaN k': (x) => C(x, {}, q4c(), T([1, 1, 1, 4], 1, new Float32Array(4).fill(NaN))),
  'cache wrong dK': (x) => C(x, {}, T([1, 2, 1, 3]), T([1, 1, 1, 3]), k4c()),
  'cache wrong kvHeads': (x) => C(x, {}, q4c(), T([1, 2, 1, 4]), T([1, 2, 1, 4])),
  'cache disposed': async (x) => {
    await x.cache.dispose();
    await x.mark();
    return C(x);
  },
  'cache a plain object': (x) => A4(x, { cache: { length: 0 } }),
  'cache null': (x) => A4(x, { cache: null }),
  'cache of a layer shape': (x) => A4(x, { cache: x.lcache }),
  'cache getter throws': (x) => A4(x, throwing({}, 'cache')),
  'cache out ok': (x) => C(x, { out: new Float32Array(8) }),
  'cache out detached': (x) => C(x, { out: detached(8) }),
  'cache 3-D': (x) => C(x, { heads: { q: 2, kv: 1 } }, T([1, 1, 8]), T([1, 1, 4]), T([1, 1, 4])),
  'cache 2-D': (x) => C(x, {}, T([1, 4]), T([1, 4]), T([1, 4])),
  'cache half k': (x) => C(x, {}, q4c(), half([1, 1, 1, 4]), half([1, 1, 1, 4])),
  'truncate 0': (x) => x.cache.truncate(0),
  'truncate 2': (x) => x.cache.truncate(2),
  'truncate -1': (x) => x.cache.truncate(-1),
  'truncate NaN': (x) => x.cache.truncate(NaN),
  'truncate "1"': (x) => x.cache.truncate('1'),
  'truncate 0.5': (x) => x.cache.truncate(0.5),
  'truncate none': (x) => x.cache.truncate(),
  reset: (x) => x.cache.reset(),
  read: (x) => x.cache.read(),
  'read disposed': async (x) => {
    await x.cache.dispose();
    await x.mark();
    return x.cache.read();
  },
  'length disposed': async (x) => {
    await x.cache.dispose();
    await x.mark();
    return x.cache.length;
  },
  'dispose twice': async (x) => {
    await x.cache.dispose();
    await x.mark();
    return x.cache.dispose();
  },
  'truncate disposed': async (x) => {
    await x.cache.dispose();
    await x.mark();
    return x.cache.truncate(0);
  },
  // kvCache configs
  'kv f32': async (x) => (await KV(x, kvc())).read(),
  'kv f16': async (x) => (await KV(x, kvc({ dtype: 'float16' }))).read(),
  'kv int8': async (x) => (await KV(x, kvc({ dtype: 'int8' }))).read(),
  'kv bfloat16': (x) => KV(x, kvc({ dtype: 'bfloat16' })),
  'kv capacity 0': (x) => KV(x, kvc({ capacity: 0 })),
  'kv capacity -1': (x) => KV(x, kvc({ capacity: -1 })),
  'kv capacity 1.5': (x) => KV(x, kvc({ capacity: 1.5 })),
  'kv capacity 2^31': (x) => KV(x, kvc({ capacity: 2 ** 31 })),
  'kv capacity 1e6 dK 1e3': (x) => KV(x, kvc({ capacity: 1e6, dK: 1000 })),
  'kv capacity "4"': (x) => KV(x, kvc({ capacity: '4' })),
  'kv no dK': (x) => KV(x, { batch: 1, kvHeads: 1, dV: 4, capacity: 4 }),
  'kv extra key': (x) => KV(x, kvc({ extra: 1 })),
  'kv null': (x) => KV(x, null),
  'kv revoked': (x) => KV(x, revoked()),
  'kv getter throws': (x) => KV(x, throwing(kvc(), 'dK')),
  'kv dK flips': (x) => KV(x, flipping(kvc(), 'dK', 4, 2 ** 40)),
  // matmul
  'mm plain': (x) => M(x),
  'mm transposeA': (x) => M(x, { transposeA: true }, T([4, 3])),
  'mm transposeB': (x) => M(x, { transposeB: true }, T([3, 4]), T([5, 4])),
  'mm transposeB "1"': (x) => M(x, { transposeB: 1 }, T([3, 4]), T([5, 4])),
  'mm mismatch': (x) => M(x, {}, T([3, 4]), T([5, 4])),
  'mm 3-D': (x) => M(x, {}, T([1, 3, 4])),
  'mm half a': (x) => M(x, {}, half([3, 4])),
  'mm NaN': (x) => M(x, {}, T([3, 4], 1, new Float32Array(12).fill(NaN))),
  'mm Inf': (x) => M(x, {}, T([3, 4], 1, new Float32Array(12).fill(Infinity))),
  'mm overflow': (x) =>
    M(x, {}, T([3, 4], 1, new Float32Array(12).fill(3e38)), T([4, 5], 1, new Float32Array(20).fill(3e38))),
  'mm out': (x) => M(x, { out: new Float32Array(15) }),
  'mm out wrong length': (x) => M(x, { out: x.out }),
  'mm out is a.data': (x) => {
    const a = T([3, 3]);
    return M(x, { out: a.data }, a, T([3, 3]));
  },
  'mm unknown option': (x) => M(x, { causal: true }),
  'mm options 1': (x) => M(x, 1),
  'mm b null': (x) => M(x, {}, T([3, 4]), null),
  'mm empty': (x) => M(x, {}, T([0, 4]), T([4, 5])),
  'mm k 0': (x) => M(x, {}, T([3, 0]), T([0, 5])),
  // attentionBackward
  'bw2 plain': (x) => B(x),
  'bw2 trace causal': (x) => B(x, { trace: true, causal: true }),
  'bw2 mask sinks': (x) => B(x, { mask: mask2(keep15()), sinks: new Float32Array([0.2]) }),
  'bw2 softcap window rotary': (x) => B(x, { softcap: 2, window: { left: 1 }, rotary: true }),
  'bw2 dO wrong shape': (x) => B(x, {}, q2(), k2(), v2(), T([3, 3])),
  'bw2 dO NaN': (x) => B(x, {}, q2(), k2(), v2(), T([3, 4], 1, new Float32Array(12).fill(NaN))),
  'bw2 dO null': (x) => B(x, {}, q2(), k2(), v2(), null),
  'bw2 out': (x) => B(x, { out: x.out }),
  'bw2 cache': (x) => B(x, { cache: x.cache }),
  'bw2 qkOutput': (x) => B(x, { qkOutput: 'weights' }),
  'bw2 pastKey': (x) => B(x, { pastKey: T([1, 1, 1, 4]) }),
  'bw2 kvLength': (x) => B(x, { kvLength: [5] }),
  'bw2 heads': (x) => B(x, { heads: { q: 1, kv: 1 } }),
  'bw2 half': (x) => B(x, {}, half([3, 4]), half([5, 4], 2), v2(), d2()),
  'bw2 mask f16 on Uint8': (x) => B(x, { mask: mask2(keep15(), [3, 5], { dtype: 'float16' }) }),
  'bw2 scale NaN': (x) => B(x, { scale: NaN }),
  'bw2 unknown': (x) => B(x, { foo: 1 }),
  'bw4 plain': (x) => B4(x),
  'bw4 trace': (x) => B4(x, { trace: true }),
  'bw4 kvLength': (x) => B4(x, { kvLength: [2], causal: true }),
  'bw4 sinks': (x) => B4(x, { sinks: new Float32Array([1, 2]) }),
  'bw4 dO wrong': (x) => B4(x, {}, q4(), k4(), v4(), T([1, 2, 3, 3])),
  'bw3 heads': (x) =>
    x.attn.attentionBackward(T([1, 3, 8]), T([1, 5, 4]), T([1, 5, 4]), T([1, 3, 8]), { heads: { q: 2, kv: 1 } }),
  // layers
  'layer config': (x) => x.layer.config,
  'layer weights': (x) => x.layer.weights,
  'mha seed 1': async (x) => (await L(x, lc({ seed: 1 }))).weights,
  'mha seed -1': (x) => L(x, lc({ seed: -1 })),
  'mha seed 2^32': (x) => L(x, lc({ seed: 2 ** 32 })),
  'mha seed 1.5': (x) => L(x, lc({ seed: 1.5 })),
  'mha seed and weights': (x) =>
    L(x, lc({ seed: 1, weights: { wq: T([4, 4]), wk: T([4, 4]), wv: T([4, 4]), wo: T([4, 4]) } })),
  'mha weights': async (x) =>
    (await L(x, lc({ weights: { wq: T([4, 4], 1), wk: T([4, 4], 2), wv: T([4, 4], 3), wo: T([4, 4], 4) } }))).weights,
  'mha weights wrong shape': (x) =>
    L(x, lc({ weights: { wq: T([4, 3]), wk: T([4, 4]), wv: T([4, 4]), wo: T([4, 4]) } })),
  'mha weights NaN': (x) =>
    L(
      x,
      lc({
        weights: { wq: T([4, 4], 1, new Float32Array(16).fill(NaN)), wk: T([4, 4]), wv: T([4, 4]), wo: T([4, 4]) },
      }),
    ),
  'mha weights missing wo': (x) => L(x, lc({ weights: { wq: T([4, 4]), wk: T([4, 4]), wv: T([4, 4]) } })),
  'mha weights unknown': (x) =>
    L(x, lc({ weights: { wq: T([4, 4]), wk: T([4, 4]), wv: T([4, 4]), wo: T([4, 4]), wz: T([4, 4]) } })),
  'mha weights bias without bias': (x) =>
    L(x, lc({ weights: { wq: T([4, 4]), wk: T([4, 4]), wv: T([4, 4]), wo: T([4, 4]), bq: T([4]) } })),
  'mha heads 3': (x) => L(x, lc({ heads: 3 })),
  'mha kvHeads 3': (x) => L(x, lc({ heads: 2, kvHeads: 3 })),
  'mha kvHeads 1 dK 3 dV 5': async (x) => (await L(x, lc({ kvHeads: 1, dK: 3, dV: 5 }))).config,
  'mha dModel 0': (x) => L(x, lc({ dModel: 0 })),
  'mha dModel "4"': (x) => L(x, lc({ dModel: '4' })),
  'mha bias sinks rotary window softcap': async (x) =>
    (await L(x, lc({ bias: true, sinks: true, rotary: { base: 50 }, window: { left: 2 }, softcap: 5 }))).config,
  'mha sinks Float32 [2]': async (x) => (await L(x, lc({ sinks: new Float32Array([0.5, -0.5]) }))).weights,
  'mha sinks Float32 [3]': (x) => L(x, lc({ sinks: new Float32Array(3) })),
  'mha sinks NaN': (x) => L(x, lc({ sinks: new Float32Array([NaN, 0]) })),
  'mha softcap NaN': (x) => L(x, lc({ softcap: NaN })),
  'mha rotary odd dK': (x) => L(x, lc({ dK: 3, rotary: true })),
  'mha unknown key': (x) => L(x, lc({ foo: 1 })),
  'mha null': (x) => L(x, null),
  'mha revoked': (x) => L(x, revoked()),
  'mha getter throws': (x) => L(x, throwing(lc(), 'heads')),
  'mha transfer': async (x) =>
    (await L(x, lc({ transfer: true, weights: { wq: T([4, 4], 1), wk: T([4, 4]), wv: T([4, 4]), wo: T([4, 4]) } })))
      .weights,
  // forward
  'fw plain': (x) => F(x),
  'fw 3-D': (x) => F(x, {}, x3()),
  'fw trace causal': (x) => F(x, { trace: true, causal: true }),
  'fw context': (x) => F(x, { context: T([5, 4], 2) }),
  'fw context wrong width': (x) => F(x, { context: T([5, 3], 2) }),
  'fw context 3-D for 2-D': (x) => F(x, { context: T([1, 5, 4], 2) }),
  'fw mask': (x) => F(x, { mask: { data: new Uint8Array(9).fill(1), shape: [3, 3] } }),
  'fw mask bare': (x) => F(x, { mask: new Uint8Array(9).fill(1) }),
  'fw mask heads shape': (x) => F(x, { mask: { data: new Uint8Array(9).fill(1), shape: [1, 3, 3] } }),
  'fw mask f16 on Uint8': (x) => F(x, { mask: { data: new Uint8Array(9), shape: [3, 3], dtype: 'float16' } }),
  'fw mask boolean[]': (x) => F(x, { mask: { data: Array(9).fill(true), shape: [3, 3] } }),
  'fw x width 3': (x) => F(x, {}, T([3, 3])),
  'fw x NaN': (x) => F(x, {}, T([3, 4], 1, new Float32Array(12).fill(NaN))),
  'fw x half': (x) => F(x, {}, half([3, 4])),
  'fw x 4-D': (x) => F(x, {}, T([1, 1, 3, 4])),
  'fw out': (x) => F(x, { out: x.out }),
  'fw out wrong': (x) => F(x, { out: new Float32Array(11) }),
  'fw out with bad mask': (x) => F(x, { out: x.out, mask: new Uint8Array(2) }),
  'fw scale NaN': (x) => F(x, { scale: NaN }),
  'fw unknown': (x) => F(x, { heads: 2 }),
  'fw sinks option': (x) => F(x, { sinks: new Float32Array(2) }),
  'fw cache': (x) => F(x, { cache: x.lcache }),
  'fw cache causal then one': async (x) => {
    await F(x, { cache: x.lcache, causal: true });
    await x.mark();
    return F(x, { cache: x.lcache, causal: true }, T([1, 4]));
  },
  'fw cache to capacity': async (x) => {
    await F(x, { cache: x.lcache });
    await x.mark();
    return F(x, { cache: x.lcache }, T([2, 4]));
  },
  'fw cache trace': (x) => F(x, { cache: x.lcache, trace: true }),
  'fw cache trace false': (x) => F(x, { cache: x.lcache, trace: false }),
  'fw cache context': (x) => F(x, { cache: x.lcache, context: T([5, 4]) }),
  'fw cache wrong heads': (x) => F(x, { cache: x.cache }),
  'fw cache mask': (x) => F(x, { cache: x.lcache, mask: new Uint8Array(9).fill(1) }),
  'fw cache mask wrong': (x) => F(x, { cache: x.lcache, mask: new Uint8Array(6).fill(1) }),
  'fw cache out wrong': (x) => F(x, { cache: x.lcache, out: new Float32Array(3) }),
  'fw cache 3-D': (x) => F(x, { cache: x.lcache }, x3()),
  'fw cache disposed': async (x) => {
    await x.lcache.dispose();
    await x.mark();
    return F(x, { cache: x.lcache });
  },
  'fw disposed layer': async (x) => {
    await x.layer.dispose();
    await x.mark();
    return F(x);
  },
  'fw transfer': (x) => F(x, { transfer: true }),
  // backward and step
  'bw without forward': (x) => x.layer.backward(x2()),
  'bw after forward': async (x) => {
    await F(x);
    await x.mark();
    return x.layer.backward(x2());
  },
  'bw after context forward': async (x) => {
    await F(x, { context: T([5, 4], 2) });
    await x.mark();
    return x.layer.backward(x2());
  },
  'bw after trace forward': async (x) => {
    await F(x, { trace: true });
    await x.mark();
    return x.layer.backward(x2());
  },
  'bw after cached forward': async (x) => {
    await F(x, { cache: x.lcache });
    await x.mark();
    return x.layer.backward(x2());
  },
  'bw after failed forward': async (x) => {
    await F(x);
    await settle(() => F(x, { scale: NaN }));
    await x.mark();
    return x.layer.backward(x2());
  },
  'bw after failed cached forward': async (x) => {
    await F(x);
    await settle(() => F(x, { cache: x.lcache, trace: true }));
    await x.mark();
    return x.layer.backward(x2());
  },
  'bw dO wrong shape': async (x) => {
    await F(x);
    await x.mark();
    return x.layer.backward(T([3, 3]));
  },
  'bw dO NaN': async (x) => {
    await F(x);
    await x.mark();
    return x.layer.backward(T([3, 4], 1, new Float32Array(12).fill(NaN)));
  },
  'bw dO half': async (x) => {
    await F(x, {}, half([3, 4]));
    await x.mark();
    return x.layer.backward(half([3, 4], 3));
  },
  'bw twice': async (x) => {
    await F(x);
    await x.layer.backward(x2());
    await x.mark();
    return x.layer.backward(x2());
  },
  'bw extra arg': async (x) => {
    await F(x);
    await x.mark();
    return x.layer.backward(x2(), { causal: true });
  },
  'step ok': async (x) => {
    await F(x);
    const g = await x.layer.backward(x2());
    await x.layer.step(g, 0.1);
    await x.mark();
    return x.layer.weights;
  },
  'step lr NaN': async (x) => {
    await F(x);
    const g = await x.layer.backward(x2());
    await x.mark();
    return x.layer.step(g, NaN);
  },
  'step lr "0.1"': async (x) => {
    await F(x);
    const g = await x.layer.backward(x2());
    await x.mark();
    return x.layer.step(g, '0.1');
  },
  'step lr Inf': (x) => x.layer.step({ dwq: T([4, 4]) }, Infinity),
  'step lr 0': (x) => x.layer.step({ dwq: T([4, 4]) }, 0),
  'step lr -1': (x) => x.layer.step({ dwq: T([4, 4]) }, -1),
  'step grads {}': (x) => x.layer.step({}, 0.1),
  'step grads null': (x) => x.layer.step(null, 0.1),
  'step dwq wrong shape': (x) => x.layer.step({ dwq: T([4, 3]) }, 0.1),
  'step dwq NaN': (x) => x.layer.step({ dwq: T([4, 4], 1, new Float32Array(16).fill(NaN)) }, 0.1),
  'step dwq and bad dwo': (x) => x.layer.step({ dwq: T([4, 4]), dwo: T([4, 3]) }, 0.1),
  'step dwq and NaN dwo': (x) =>
    x.layer.step({ dwq: T([4, 4]), dwo: T([4, 4], 1, new Float32Array(16).fill(NaN)) }, 0.1),
  'step unknown key': (x) => x.layer.step({ dwz: T([4, 4]) }, 0.1),
  'step dx given': (x) => x.layer.step({ dx: T([3, 4]), dwq: T([4, 4]) }, 0.1),
  'step dbq without bias': (x) => x.layer.step({ dbq: T([4]) }, 0.1),
  'step dsinks without sinks': (x) => x.layer.step({ dsinks: T([2]) }, 0.1),
  'step dwq half': (x) => x.layer.step({ dwq: half([4, 4]) }, 0.1),
  'step overflow': (x) => x.layer.step({ dwq: T([4, 4], 1, new Float32Array(16).fill(3e38)) }, -3e38),
  'step grads getter throws': (x) => x.layer.step(throwing({ dwq: T([4, 4]) }, 'dwo'), 0.1),
  'step grads revoked': (x) => x.layer.step(revoked(), 0.1),
  'step then backward': async (x) => {
    await F(x);
    await x.layer.step({ dwq: T([4, 4]) }, 0.1);
    await x.mark();
    return x.layer.backward(x2());
  },
  'step transfer': (x) => x.layer.step({ dwq: T([4, 4]) }, 0.1, { transfer: true }),
  // more hostile inputs: transfer, shapes as other things, caches of other dtypes at their limits
  'transfer out is q.data': (x) => {
    const q = q2();
    return A(x, { out: q.data, transfer: true }, q);
  },
  'transfer q detached': (x) => A(x, { transfer: true }, { data: detached(12), shape: [3, 4] }),
  'transfer twice same buffer': (x) => {
    const q = q2();
    return A(x, { transfer: true }, q, k2(), { data: new Float32Array(q.data.buffer, 0, 0), shape: [0, 4] });
  },
  'transfer shared k v': (x) => {
    const k = k2();
    return A(x, { transfer: true }, q2(), k, k);
  },
  'bw transfer': (x) => B(x, { transfer: true }),
  'mm transfer out': (x) => M(x, { transfer: true, out: new Float32Array(15) }),
  'q shape Int32Array': (x) => A(x, {}, { data: q2().data, shape: new Int32Array([3, 4]) }),
  'q shape revoked': (x) => A(x, {}, { data: q2().data, shape: revoked() }),
  'q shape frozen': (x) => A(x, {}, { data: q2().data, shape: Object.freeze([3, 4]) }),
  'q shape getter element': (x) => {
    const shape = [3, 4];
    Object.defineProperty(shape, 0, { get: () => 3 });
    return A(x, {}, { data: q2().data, shape });
  },
  'q extra key': (x) => A(x, {}, { ...q2(), name: 'q' }),
  'q Float32Array subclass': (x) => A(x, {}, { data: new (class extends Float32Array {})(12), shape: [3, 4] }),
  'q data a proxy of Float32Array': (x) => A(x, {}, { data: new Proxy(new Float32Array(12), {}), shape: [3, 4] }),
  'q data SharedArrayBuffer': (x) => A(x, {}, { data: new Float32Array(new SharedArrayBuffer(48)), shape: [3, 4] }),
  'q data resizable': (x) =>
    A(x, {}, { data: new Float32Array(new ArrayBuffer(48, { maxByteLength: 96 })), shape: [3, 4] }),
  'q data length-tracking': (x) => {
    const buf = new ArrayBuffer(48, { maxByteLength: 96 });
    const data = new Float32Array(buf);
    return A(x, {}, flipping({ data }, 'shape', [3, 4], [3, 4]));
  },
  'sinks detached': (x) => A(x, { sinks: detached(1) }),
  'sinks Float64': (x) => A(x, { sinks: new Float64Array(1) }),
  'sinks tensor [1,1]': (x) => A(x, { sinks: T([1, 1]) }),
  'kvLength array of strings': (x) => A4(x, { kvLength: ['3'] }),
  'kvLength detached': (x) => A4(x, { kvLength: new Int32Array(detached(1).buffer) }),
  'heads strings': (x) => A(x, { heads: { q: '2', kv: 1 } }, T([1, 3, 8], 1), T([1, 5, 4], 2), T([1, 5, 4], 3)),
  'heads unknown key': (x) => A(x, { heads: { q: 2, kv: 1, x: 1 } }, T([1, 3, 8], 1), T([1, 5, 4], 2), T([1, 5, 4], 3)),
  'heads kv missing': (x) => A(x, { heads: { q: 2 } }, T([1, 3, 8], 1), T([1, 5, 4], 2), T([1, 5, 4], 3)),
  'cache f16 1e5': async (x) => {
    const c = await KV(x, kvc({ dtype: 'float16' }));
    await x.attn.attention(q4c(), k4c(), k4c(), { cache: c });
    await x.mark();
    const r = await settle(() =>
      x.attn.attention(q4c(), T([1, 1, 1, 4], 1, new Float32Array(4).fill(1e5)), k4c(), { cache: c }),
    );
    const after = [await c.length, digest(await c.read())];
    if (!r.ok) throw r.error;
    return after;
  },
  'cache f16 1e5 reports length': async (x) => {
    const c = await KV(x, kvc({ dtype: 'float16' }));
    await settle(() => x.attn.attention(q4c(), T([1, 1, 1, 4], 1, new Float32Array(4).fill(1e5)), k4c(), { cache: c }));
    const after = [await c.length, digest(await c.read())];
    return after;
  },
  'cache int8 Inf reports length': async (x) => {
    const c = await KV(x, kvc({ dtype: 'int8' }));
    await settle(() =>
      x.attn.attention(q4c(), T([1, 1, 1, 4], 1, new Float32Array(4).fill(Infinity)), k4c(), { cache: c }),
    );
    const after = [await c.length, digest(await c.read())];
    return after;
  },
  'cache int8 to capacity': async (x) => {
    const c = await KV(x, kvc({ dtype: 'int8', capacity: 1 }));
    await x.attn.attention(q4c(), k4c(), k4c(), { cache: c });
    const r = await settle(() => x.attn.attention(q4c(), k4c(), k4c(), { cache: c }));
    const after = [await c.length, digest(await c.read()), r.ok ? 'ok' : r.error.constructor.name];
    return after;
  },
  'cache wrong dtype q half': (x) => C(x, {}, half([1, 2, 1, 4])),
  'fw cache with extra x batch': (x) => F(x, { cache: x.lcache }, T([2, 1, 4])),
  'fw context half': (x) => F(x, { context: half([5, 4]) }),
  'fw context NaN': (x) => F(x, { context: T([5, 4], 1, new Float32Array(20).fill(NaN)) }),
  'fw out for half x': (x) => F(x, { out: new Uint16Array(12) }, half([3, 4])),
  'fw out is x.data': (x) => {
    const xx = x2();
    return F(x, { out: xx.data }, xx);
  },
  'fw options revoked': (x) => F(x, revoked()),
  'fw options getter throws': (x) => F(x, throwing({}, 'mask')),
  'fw cache getter throws after read': (x) => F(x, throwing({ cache: x.lcache }, 'out')),
  'mha weights getter throws': (x) =>
    L(x, lc({ weights: throwing({ wq: T([4, 4]), wk: T([4, 4]), wv: T([4, 4]) }, 'wo') })),
  'mha weights detached': (x) =>
    L(x, lc({ weights: { wq: { data: detached(16), shape: [4, 4] }, wk: T([4, 4]), wv: T([4, 4]), wo: T([4, 4]) } })),
  'mha weights half': async (x) =>
    (await L(x, lc({ weights: { wq: half([4, 4]), wk: T([4, 4]), wv: T([4, 4]), wo: T([4, 4]) } }))).weights,
  'mha sinks true with weights.sinks': async (x) =>
    (
      await L(
        x,
        lc({ sinks: true, weights: { wq: T([4, 4]), wk: T([4, 4]), wv: T([4, 4]), wo: T([4, 4]), sinks: T([2]) } }),
      )
    ).weights,
  'mha weights.sinks without sinks': (x) =>
    L(x, lc({ weights: { wq: T([4, 4]), wk: T([4, 4]), wv: T([4, 4]), wo: T([4, 4]), sinks: T([2]) } })),
  'mha huge': (x) => L(x, lc({ dModel: 2 ** 16, heads: 1 })),
  'bw2 trace heads option': (x) => B(x, { trace: true, heads: { q: 1, kv: 1 } }),
  'bw2 mask boolean[]': (x) => B(x, { mask: mask2(Array.from(keep15(), Boolean)) }),
  'bw2 dO half for f32 q': (x) => B(x, {}, q2(), k2(), v2(), half([3, 4])),
  'bw2 all masked row': (x) => B(x, { mask: mask2(new Uint8Array(15).fill(1).fill(0, 0, 5)), trace: true }),
  'bw2 options getter throws': (x) => B(x, throwing({}, 'mask')),
  'mm a detached': (x) => M(x, {}, { data: detached(12), shape: [3, 4] }),
  'mm out Uint16': (x) => M(x, { out: new Uint16Array(15) }),
  'mm out half for half a': (x) => M(x, { out: new Uint16Array(15) }, half([3, 4])),
  'mm b half a f32': (x) => M(x, {}, T([3, 4]), half([4, 5])),
  'mm options getter throws': (x) => M(x, throwing({}, 'transposeA')),
  // caches and layers of another instance, or of the other form
  'cache of another instance': async (x) => {
    const other = await own(x, x.lib.createAttention({ threads: 1, worker: x.worker }));
    const c = await other.kvCache(kvc());
    return C(x, { cache: c });
  },
  'cache of the other form': async (x) => {
    const other = await own(x, x.lib.createAttention({ threads: 1, worker: !x.worker }));
    const c = await other.kvCache(kvc());
    return C(x, { cache: c });
  },
  'fw cache of another instance': async (x) => {
    const other = await own(x, x.lib.createAttention({ threads: 1, worker: x.worker }));
    const c = await other.kvCache({ batch: 1, kvHeads: 2, dK: 2, dV: 2, capacity: 4 });
    return F(x, { cache: c });
  },
  'fw cache of the other form': async (x) => {
    const other = await own(x, x.lib.createAttention({ threads: 1, worker: !x.worker }));
    const c = await other.kvCache({ batch: 1, kvHeads: 2, dK: 2, dV: 2, capacity: 4 });
    return F(x, { cache: c });
  },
  'cache as mask': (x) => A4(x, { mask: x.cache }),
  'layer as q': (x) => A(x, {}, x.layer),
  'cache as pastKey': (x) => A4(x, { pastKey: x.cache, pastValue: x.cache }),
  // two faults in one call: which is named first (its class) may have moved with the checks
  'two: q NaN, k cols': (x) => A(x, {}, T([3, 4], 1, new Float32Array(12).fill(NaN)), T([5, 3])),
  'two: scale NaN, mask number': (x) => A(x, { scale: NaN, mask: 1 }),
  'two: unknown option, q null': (x) => A(x, { foo: 1 }, null),
  'two: out Float64, q shape': (x) => A(x, { out: new Float64Array(12) }, T([3, 4], 1, new Float32Array(11))),
  'two: out short, v NaN': (x) =>
    A(x, { out: new Float32Array(2) }, q2(), k2(), T([5, 4], 1, new Float32Array(20).fill(NaN))),
  'two: mask short, sinks NaN': (x) => A(x, { mask: mask2(new Uint8Array(3)), sinks: new Float32Array([NaN]) }),
  'two: window bad, softcap bad': (x) => A(x, { window: { left: -3 }, softcap: -1 }),
  'two: rotary dims odd, scale string': (x) => A(x, { rotary: { dims: 3 }, scale: '1' }),
  'two: heads mismatch, kvLength bad': (x) => A4(x, { heads: { q: 3, kv: 1 }, kvLength: [-1] }),
  'two: past shape, qkOutput bogus': (x) =>
    A4(x, { pastKey: T([1, 1, 2, 3]), pastValue: T([1, 1, 2, 4]), qkOutput: 'x' }),
  'two: cache full, mask bad': async (x) => {
    for (let i = 0; i < 3; ++i) await C(x);
    await x.mark();
    return C(x, { mask: 5 });
  },
  'two: cache full, out short': async (x) => {
    for (let i = 0; i < 3; ++i) await C(x);
    await x.mark();
    return C(x, { out: new Float32Array(1) });
  },
  'two: cache wrong dK, q NaN': (x) =>
    C(x, {}, T([1, 2, 1, 3], 1, new Float32Array(6).fill(NaN)), T([1, 1, 1, 3]), k4c()),
  'two: bw dO wrong, mask wrong': (x) => B(x, { mask: mask2(new Uint8Array(2)) }, q2(), k2(), v2(), T([2, 2])),
  'two: bw dO NaN, trace 1': (x) => B(x, { trace: 1 }, q2(), k2(), v2(), T([3, 4], 1, new Float32Array(12).fill(NaN))),
  'two: mm shapes, out type': (x) => M(x, { out: new Uint16Array(15) }, T([3, 4]), T([5, 5])),
  'two: fw x NaN, mask wrong': (x) => F(x, { mask: new Uint8Array(2) }, T([3, 4], 1, new Float32Array(12).fill(NaN))),
  'two: fw cache, context bad': (x) => F(x, { cache: x.lcache, context: 5 }),
  'two: fw cache, trace "yes"': (x) => F(x, { cache: x.lcache, trace: 'yes' }),
  'two: mha heads 3, seed -1': (x) => L(x, lc({ heads: 3, seed: -1 })),
  'two: mha seed and weights bad': (x) => L(x, lc({ seed: 1, weights: 5 })),
  'two: kv capacity 0, dtype bad': (x) => KV(x, kvc({ capacity: 0, dtype: 'x' })),
  'two: step lr NaN, dwq bad': (x) => x.layer.step({ dwq: T([4, 3]) }, NaN),
  // arguments past those a member takes, and transfer where a member has no options
  'kv transfer': (x) => KV(x, kvc({ transfer: true })),
  'truncate extra': (x) => x.cache.truncate(0, { transfer: true }),
  'read extra': (x) => x.cache.read({ transfer: true }),
  'memory extra': async (x) => typeof (await x.attn.memory(1)).allocatedBytes,
  'backward transfer "yes"': async (x) => {
    await F(x);
    await x.mark();
    return x.layer.backward(x2(), { transfer: 'yes' });
  },
  'backward options unknown': async (x) => {
    await F(x);
    await x.mark();
    return x.layer.backward(x2(), { causal: true });
  },
  'step transfer detaches': async (x) => {
    const g = { dwq: T([4, 4]) };
    await x.layer.step(g, 0.1, { transfer: true });
    return g.dwq.data.length;
  },
  'attention transfer detaches': async (x) => {
    const q = q2();
    await A(x, { transfer: true }, q);
    return q.data.length;
  },
};

// ---- running a case and describing what it did ----
function digest(v, seen = new Set()) {
  if (v === undefined) return 'undefined';
  if (v === null || typeof v !== 'object') return typeof v === 'number' && Object.is(v, -0) ? '-0' : JSON.stringify(v);
  if (ArrayBuffer.isView(v)) {
    if (v.buffer.byteLength === 0 && v.byteLength === 0) return `${v.constructor.name}(detached or empty)`;
    const h = createHash('sha1')
      .update(new Uint8Array(v.buffer, v.byteOffset, v.byteLength))
      .digest('hex');
    return `${v.constructor.name}(${v.length}):${h.slice(0, 10)}`;
  }
  if (seen.has(v)) return '<cycle>'; // seen: v's ancestors
  const inner = new Set(seen).add(v);
  if (Array.isArray(v)) return `[${v.map((e) => digest(e, inner)).join(',')}]`;
  const keys = Object.keys(v).sort();
  return `{${keys.map((k) => `${k}:${digest(v[k], inner)}`).join(',')}}`;
}
// where two results' bits differ: the keys (or the first element) that differ
function resultDiff(a, b) {
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object' || ArrayBuffer.isView(a))
    return `old ${digest(a).slice(0, 100)} | new ${digest(b).slice(0, 100)}`;
  const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
  return keys
    .filter((k) => digest(a[k]) !== digest(b[k]))
    .map((k) => {
      const x = a[k]?.data ?? a[k],
        y = b[k]?.data ?? b[k];
      if (!ArrayBuffer.isView(x) || !ArrayBuffer.isView(y) || x.length !== y.length)
        return `${k}: old ${digest(a[k]).slice(0, 80)} | new ${digest(b[k]).slice(0, 80)}`;
      const i = x.findIndex((v, j) => !Object.is(v, y[j]));
      return `${k}[${i}]: old ${x[i]} | new ${y[i]}`;
    })
    .join('; ');
}
// the paths of a result's float arrays that hold a NaN (a silent NaN, in both versions or one)
function nanPaths(v, path = '', seen = new Set()) {
  if (v === null || typeof v !== 'object' || seen.has(v)) return [];
  if (v instanceof Float32Array || v instanceof Float64Array) return v.some(Number.isNaN) ? [path] : [];
  if (ArrayBuffer.isView(v)) return [];
  seen.add(v);
  return Object.keys(v).flatMap((k) => nanPaths(v[k], path ? `${path}.${k}` : k, seen));
}
// the arrays (shapes, data) a result holds at more than one place: changing one changes the other
function sharedPaths(v) {
  const at = new Map();
  const walk = (o, path) => {
    if (o === null || typeof o !== 'object') return;
    if (at.has(o)) return void at.get(o).push(path);
    at.set(o, [path]);
    if (!ArrayBuffer.isView(o)) for (const k of Object.keys(o)) walk(o[k], path ? `${path}.${k}` : k);
  };
  walk(v, '');
  return [...at.values()]
    .filter((paths) => paths.length > 1)
    .map((paths) => paths.join('='))
    .join(' ');
}
const settle = async (fn) => {
  try {
    return { ok: true, value: await fn() };
  } catch (e) {
    return { ok: false, error: e };
  }
};
const what = (r) =>
  r.ok
    ? 'ok'
    : r.error instanceof Error
      ? `${r.error.constructor.name}: ${r.error.message}`
      : `threw ${String(r.error)}`;

async function state(x) {
  const cacheLength = await settle(async () => x.cache.length);
  const cacheRows = await settle(async () => digest(await x.cache.read()));
  const lcacheLength = await settle(async () => x.lcache.length);
  const weights = await settle(async () => digest(await x.layer.weights));
  return {
    cache: `${cacheLength.ok ? cacheLength.value : 'gone'} ${cacheRows.ok ? cacheRows.value : 'unreadable'}`,
    lcache: lcacheLength.ok ? lcacheLength.value : 'gone',
    weights: weights.ok ? weights.value : 'unreadable',
    out: digest(x.out),
  };
}

async function runCase(attn, name, fn, lib, worker) {
  const start = (await attn.memory()).allocatedBytes;
  const x = { attn, owned: [], lib, worker };
  x.cache = await attn.kvCache({ batch: 1, kvHeads: 1, dK: 4, dV: 4, capacity: 4 });
  await attn.attention(q4c(), k4c(), k4c(), { cache: x.cache });
  x.layer = await attn.multiHeadAttention({ dModel: 4, heads: 2, seed: 3 });
  x.lcache = await attn.kvCache({ batch: 1, kvHeads: 2, dK: 2, dV: 2, capacity: 4 });
  x.out = new Float32Array(12).fill(7);
  // state and memory as the case's last call finds them (a case of several calls marks it)
  let before, mem0;
  x.mark = async () => {
    before = await state(x);
    mem0 = (await attn.memory()).allocatedBytes;
  };
  await x.mark();
  const r = await settle(() => fn(x));
  const after = await state(x);
  const mem1 = (await attn.memory()).allocatedBytes;
  for (const o of [x.cache, x.lcache, x.layer, ...x.owned]) await settle(async () => o.dispose());
  const end = (await attn.memory()).allocatedBytes;
  const changed = Object.keys(after).filter((k) => after[k] !== before[k]);
  return {
    outcome: r.ok ? 'ok' : (r.error?.constructor?.name ?? typeof r.error),
    text: what(r),
    result: r.ok ? digest(r.value) : null,
    value: r.ok ? r.value : null,
    nan: r.ok ? nanPaths(r.value).join(',') : '',
    shared: r.ok ? sharedPaths(r.value) : '',
    changed: changed.map((k) => `${k}=${after[k]}`).join(' '),
    leaked: mem1 - mem0, // over the case's last call
    net: end - start, // over the whole case, its objects disposed
  };
}

const instances = {
  old: {
    direct: await oldLib.createAttention({ threads: 1 }),
    worker: await oldLib.createAttention({ threads: 1, worker: true }),
  },
  new: {
    direct: await newLib.createAttention({ threads: 1 }),
    worker: await newLib.createAttention({ threads: 1, worker: true }),
  },
};

let divergences = 0,
  compared = 0;
const rowsOut = [];
for (const [name, fn] of Object.entries(cases)) {
  if (only && !name.includes(only)) continue;
  for (const form of ['direct', 'worker']) {
    const w = form === 'worker';
    let o = await runCase(instances.old[form], name, fn, oldLib, w);
    let n = await runCase(instances.new[form], name, fn, newLib, w);
    const suspect = (o, n) => (n.outcome !== 'ok' && (o.leaked !== n.leaked || n.leaked)) || o.net !== n.net || n.net;
    if (suspect(o, n)) {
      // memory freed by a finalizer of an earlier case's objects shows here; once more, to
      // tell it from this case's own
      o = await runCase(instances.old[form], name, fn, oldLib, w);
      n = await runCase(instances.new[form], name, fn, newLib, w);
    }
    ++compared;
    const diffs = [];
    if (o.outcome !== n.outcome) diffs.push(`outcome: old ${o.text} | new ${n.text}`);
    else if (o.result !== n.result) diffs.push(`result: ${resultDiff(o.value, n.value)}`);
    if (o.changed !== n.changed) diffs.push(`state: old [${o.changed}] | new [${n.changed}]`);
    if (n.outcome !== 'ok' && o.leaked !== n.leaked) diffs.push(`memory: old ${o.leaked} | new ${n.leaked}`);
    if (o.net !== n.net) diffs.push(`memory once disposed: old ${o.net} | new ${n.net}`);
    if (n.net) diffs.push(`new: ${n.net} bytes still allocated once the case's objects were disposed`);
    if (n.shared && o.shared !== n.shared)
      diffs.push(`arrays shared within the result: old [${o.shared}] | new [${n.shared}]`);
    if (n.nan) diffs.push(`new gave NaN in ${n.nan}${o.nan ? ' (old too)' : ''}`);
    if (n.outcome !== 'ok' && n.changed) diffs.push(`new changed state after an error: ${n.changed}`);
    if (n.outcome !== 'ok' && n.leaked) diffs.push(`new leaked ${n.leaked} bytes after an error`);
    if (messages && o.outcome === n.outcome && o.text !== n.text)
      rowsOut.push(`words | ${form} | ${name}\n  old: ${o.text}\n  new: ${n.text}`);
    if (diffs.length) {
      ++divergences;
      rowsOut.push(`DIFF | ${form} | ${name} | ${diffs.join(' || ')}`);
    } else if (all)
      rowsOut.push(`same | ${form} | ${name} | ${n.text.slice(0, 160)}${n.changed ? ` [${n.changed}]` : ''}`);
  }
}
// ---- a disposed instance, and objects outliving it: every member, old against new ----
const afterDispose = {
  attention: (a) => a.attention(q2(), k2(), v2()),
  attentionBackward: (a) => a.attentionBackward(q2(), k2(), v2(), d2()),
  matmul: (a) => a.matmul(T([3, 4]), T([4, 5])),
  kvCache: (a) => a.kvCache(kvc()),
  multiHeadAttention: (a) => a.multiHeadAttention(lc()),
  memory: (a) => a.memory(),
  'dispose again': (a) => a.dispose(),
  backend: (a) => a.backend,
  'cache.length': (a, o) => o.cache.length,
  'cache.read': (a, o) => o.cache.read(),
  'cache.truncate': (a, o) => o.cache.truncate(0),
  'cache.dtype': (a, o) => o.cache.dtype,
  'cache.dispose': (a, o) => o.cache.dispose(),
  'layer.forward': (a, o) => o.layer.forward(x2()),
  'layer.weights': (a, o) => o.layer.weights,
  'layer.config': (a, o) => o.layer.config,
  'layer.step': (a, o) => o.layer.step({ dwq: T([4, 4]) }, 0.1),
  'layer.dispose': (a, o) => o.layer.dispose(),
};
if (!only || 'disposed instance'.includes(only))
  for (const form of ['direct', 'worker'])
    for (const [name, fn] of Object.entries(afterDispose)) {
      const got = {};
      for (const [which, lib] of [
        ['old', oldLib],
        ['new', newLib],
      ]) {
        const a = await lib.createAttention({ threads: 1, worker: form === 'worker' });
        const o = { cache: await a.kvCache(kvc()), layer: await a.multiHeadAttention(lc()) };
        await a.dispose();
        const r = await settle(() => fn(a, o));
        got[which] = r.ok ? `ok ${digest(r.value).slice(0, 60)}` : r.error?.constructor?.name;
        got[`${which}Text`] = what(r);
      }
      ++compared;
      if (got.old !== got.new) {
        ++divergences;
        rowsOut.push(`DIFF | ${form} | disposed instance: ${name} | old ${got.oldText} | new ${got.newText}`);
      } else if (all) rowsOut.push(`same | ${form} | disposed instance: ${name} | ${got.newText.slice(0, 160)}`);
    }

// ---- the surface: each member's kind, arity and attributes, on the instance, a cache, a layer ----
function surface(o) {
  const out = [];
  for (let p = o, depth = 0; p && p !== Object.prototype; p = Object.getPrototypeOf(p), ++depth)
    for (const k of Reflect.ownKeys(p)) {
      if (k === 'constructor') continue;
      const d = Object.getOwnPropertyDescriptor(p, k);
      const kind = d.get ? 'getter' : typeof d.value === 'function' ? `method(${d.value.length})` : typeof d.value;
      const attrs = `${d.enumerable ? 'e' : ''}${d.writable ? 'w' : ''}${d.configurable ? 'c' : ''}`;
      out.push(`${depth ? 'proto' : 'own'} ${String(k)} ${kind} ${attrs}`);
    }
  return out.sort();
}
if (!only || 'surface'.includes(only))
  for (const form of ['direct', 'worker']) {
    const got = {};
    for (const [which, lib] of [
      ['old', oldLib],
      ['new', newLib],
    ]) {
      const a = await lib.createAttention({ threads: 1, worker: form === 'worker' });
      const c = await a.kvCache(kvc());
      const l = await a.multiHeadAttention(lc());
      got[which] = { attention: surface(a), cache: surface(c), layer: surface(l), config: surface(l.config) };
      await a.dispose();
    }
    for (const on of Object.keys(got.new)) {
      ++compared;
      const gone = got.old[on].filter((m) => !got.new[on].includes(m));
      const added = got.new[on].filter((m) => !got.old[on].includes(m));
      if (gone.length || added.length) {
        ++divergences;
        rowsOut.push(
          `DIFF | ${form} | surface of ${on} | old only: ${gone.join(', ')} | new only: ${added.join(', ')}`,
        );
      } else if (all) rowsOut.push(`same | ${form} | surface of ${on} | ${got.new[on].join(', ')}`);
    }
  }

// ---- reads: how often each property of the arguments is read (a getter read twice may give
// two values), old against new, every argument of every entry behind a logging Proxy ----
function spy(log, name, o) {
  return new Proxy(o, {
    get(t, k, r) {
      if (typeof k === 'string') log.push(`${name}.${k}`);
      return Reflect.get(t, k, r);
    },
  });
}
const S = (log, name, shape) => spy(log, name, T(shape));
const readCalls = {
  attention: (a, L) =>
    a.attention(
      S(L, 'q', [3, 4]),
      S(L, 'k', [5, 4]),
      S(L, 'v', [5, 4]),
      spy(L, 'options', {
        causal: true,
        scale: 0.5,
        softcap: 2,
        trace: true,
        window: spy(L, 'window', { left: 2 }),
        rotary: spy(L, 'rotary', { dims: 2 }),
        sinks: S(L, 'sinks', [1]),
        mask: spy(L, 'mask', { data: new Uint8Array(15).fill(1), shape: [3, 5] }),
        out: new Float32Array(12),
      }),
    ),
  'attention on heads': (a, L) =>
    a.attention(
      S(L, 'q', [1, 2, 3, 4]),
      S(L, 'k', [1, 1, 5, 4]),
      S(L, 'v', [1, 1, 5, 4]),
      spy(L, 'options', {
        causal: true,
        qkOutput: 'weights',
        pastKey: S(L, 'pastKey', [1, 1, 1, 4]),
        pastValue: S(L, 'pastValue', [1, 1, 1, 4]),
        mask: spy(L, 'mask', { data: Array(6).fill(true), shape: [6] }),
      }),
    ),
  attentionBackward: (a, L) =>
    a.attentionBackward(
      S(L, 'q', [3, 4]),
      S(L, 'k', [5, 4]),
      S(L, 'v', [5, 4]),
      S(L, 'dOutput', [3, 4]),
      spy(L, 'options', {
        causal: true,
        trace: true,
        sinks: new Float32Array(1),
        mask: spy(L, 'mask', { data: new Float32Array(15), shape: [3, 5] }),
      }),
    ),
  matmul: (a, L) =>
    a.matmul(S(L, 'a', [3, 4]), S(L, 'b', [5, 4]), spy(L, 'options', { transposeB: true, out: new Float32Array(15) })),
  kvCache: (a, L) => a.kvCache(spy(L, 'config', kvc({ dtype: 'int8' }))),
  multiHeadAttention: (a, L) =>
    a.multiHeadAttention(
      spy(L, 'config', {
        ...lc({ bias: true, sinks: true }),
        rotary: spy(L, 'rotary', { base: 10 }),
        window: spy(L, 'window', { left: 1 }),
        weights: spy(L, 'weights', {
          wq: S(L, 'wq', [4, 4]),
          wk: S(L, 'wk', [4, 4]),
          wv: S(L, 'wv', [4, 4]),
          wo: S(L, 'wo', [4, 4]),
        }),
      }),
    ),
  forward: async (a, L) =>
    (await a.multiHeadAttention(lc())).forward(
      S(L, 'x', [3, 4]),
      spy(L, 'options', {
        context: S(L, 'context', [5, 4]),
        trace: true,
        mask: spy(L, 'mask', { data: new Uint8Array(15).fill(1), shape: [3, 5] }),
      }),
    ),
  'forward over a cache': async (a, L) => {
    const cache = await a.kvCache({ batch: 1, kvHeads: 2, dK: 2, dV: 2, capacity: 4 });
    const layer = await a.multiHeadAttention(lc());
    return layer.forward(S(L, 'x', [3, 4]), spy(L, 'options', { cache, causal: true, out: new Float32Array(12) }));
  },
  backward: async (a, L) => {
    const layer = await a.multiHeadAttention(lc());
    await layer.forward(x2());
    return layer.backward(S(L, 'dOutput', [3, 4]));
  },
  step: async (a, L) =>
    (await a.multiHeadAttention(lc())).step(
      spy(L, 'grads', { dwq: S(L, 'dwq', [4, 4]), dwo: S(L, 'dwo', [4, 4]) }),
      0.1,
    ),
};
if (!only || 'reads'.includes(only))
  for (const form of ['direct', 'worker'])
    for (const [name, fn] of Object.entries(readCalls)) {
      const counts = {};
      for (const [which, lib] of [
        ['old', oldLib],
        ['new', newLib],
      ]) {
        const a = await lib.createAttention({ threads: 1, worker: form === 'worker' });
        const log = [];
        const r = await settle(() => fn(a, log));
        if (!r.ok) log.push(`threw ${what(r)}`);
        counts[which] = {};
        for (const k of log) counts[which][k] = (counts[which][k] ?? 0) + 1;
        await a.dispose();
      }
      ++compared;
      const keys = [...new Set([...Object.keys(counts.old), ...Object.keys(counts.new)])];
      const moved = keys.filter((k) => counts.old[k] !== counts.new[k]);
      const twice = keys.filter((k) => counts.new[k] > 1);
      if (moved.length || twice.length) {
        ++divergences;
        rowsOut.push(
          `DIFF | ${form} | reads of ${name} | ${moved.map((k) => `${k} ${counts.old[k] ?? 0} -> ${counts.new[k] ?? 0}`).join(', ')}${twice.length ? ` | new reads twice: ${twice.join(', ')}` : ''}`,
        );
      } else if (all) rowsOut.push(`same | ${form} | reads of ${name} | ${keys.length} properties, each read once`);
    }

console.log(rowsOut.join('\n'));
console.log(
  `\n${compared} comparisons (${Object.keys(cases).length} cases, ${Object.keys(afterDispose).length} members of a disposed instance; × direct, worker), ${divergences} divergences`,
);
for (const v of Object.values(instances)) for (const a of Object.values(v)) await a.dispose();
