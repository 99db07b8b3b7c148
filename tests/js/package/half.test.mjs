// Half-precision tensors (web/lib/half.js and its hooks in tensor.js): the conversions against
// a reference that picks the nearest float16 by search, every public entry taking float16
// data (a Uint16Array of bits with dtype 'float16'; a Float16Array where the engine has one:
// Deno and Bun run this file, runtimes.test.mjs) and giving results in the format of the input
// each follows, bit-equal to the float32 call on the widened inputs, rounded once; and the
// errors: non-finite halves, overflowing results, wrong dtypes.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';

import { createAttention, fromFloat16Bits, tensor, toFloat16Bits } from '../../../web/lib/index.js';
import { float32ToHalfInto, halfToFloat32 } from '../../../web/lib/half.js';
import { rng, uniform } from '../../../scripts/lib/reference.mjs';
import { rawTensor } from '../helpers/assertions.mjs';
import { POSITIVE_HALVES as POSITIVE, halfValue, nearestHalfBits as nearestHalf } from '../helpers/float16.mjs';

const NO_F16 =
  typeof globalThis.Float16Array !== 'function' && 'this engine has no Float16Array (Node 20): Deno and Bun run it';

const f32 = (values) => Float32Array.from(values);
function toHalf(values) {
  const bits = new Uint16Array(values.length);
  assert.equal(float32ToHalfInto(f32(values), bits), -1);
  return bits;
}
// a float16 tensor of the bits of values (rounded), and the float32 tensor of the same values
const half = (values, shape) => tensor(toHalf(values), shape, { dtype: 'float16' });
const widened = (t) => tensor(halfToFloat32(t.data), t.shape);
function assertBitsEqual(actual, expected, what) {
  assert.equal(actual.dtype, 'float16', `${what}: dtype`);
  assert.ok(actual.data instanceof Uint16Array, `${what}: a Uint16Array, got ${actual.data?.constructor?.name}`);
  assert.deepEqual(actual.shape, expected.shape, `${what}: shape`);
  const want = new Uint16Array(expected.data.length);
  float32ToHalfInto(expected.data, want);
  const i = actual.data.findIndex((b, j) => b !== want[j]);
  assert.equal(i, -1, `${what}[${i}]: bits ${actual.data[i]?.toString(16)}, expected ${want[i]?.toString(16)}`);
}

describe('float16 conversions (half.js)', () => {
  test('every float16 widens to its value and narrows back to its own bits', () => {
    const all = Uint16Array.from({ length: 65536 }, (_, i) => i);
    const values = halfToFloat32(all);
    const back = new Uint16Array(65536);
    assert.equal(float32ToHalfInto(values, back), -1);
    for (let h = 0; h < 65536; ++h) {
      const v = halfValue(h);
      if (Number.isNaN(v)) {
        assert.ok(Number.isNaN(values[h]) && (back[h] & 0x7c00) === 0x7c00 && back[h] & 0x3ff, `NaN ${h}`);
        continue;
      }
      assert.ok(Object.is(values[h], v), `bits ${h.toString(16)} widen to ${values[h]}, expected ${v}`);
      assert.equal(back[h], h, `bits ${h.toString(16)} come back as ${back[h].toString(16)}`);
    }
  });

  test('narrowing rounds to nearest, ties to even, at every midpoint and a float32 ulp either side', () => {
    const samples = [];
    for (let h = 0; h < 0x7c00; ++h) {
      const mid = Math.fround((POSITIVE[h] + POSITIVE[h + 1]) / 2); // exact: 12 significant bits
      samples.push(POSITIVE[h], mid);
      const bits = new Uint32Array(f32([mid]).buffer);
      samples.push(new Float32Array(Uint32Array.of(bits[0] + 1).buffer)[0]);
      if (mid > 0) samples.push(new Float32Array(Uint32Array.of(bits[0] - 1).buffer)[0]);
    }
    samples.push(2 ** -26, 2 ** -25, 1e-30, 1.401298464324817e-45, 3.4028234663852886e38);
    const values = f32([...samples, ...samples.map((x) => -x)]);
    const bits = new Uint16Array(values.length);
    float32ToHalfInto(values, bits);
    for (let i = 0; i < values.length; ++i) {
      const want = nearestHalf(values[i]);
      assert.equal(bits[i], want, `${values[i]} -> ${bits[i].toString(16)}, expected ${want.toString(16)}`);
    }
  });

  test('narrowing reports the first finite value that overflows: 65520 and up (65504 + half an ulp)', () => {
    const bits = new Uint16Array(6);
    assert.equal(float32ToHalfInto(f32([65504, 65519.99, -Infinity, NaN, 65520, -1e6]), bits), 4);
    assert.deepEqual(Array.from(bits.subarray(0, 3)), [0x7bff, 0x7bff, 0xfc00]);
    assert.equal(bits[3] & 0x7c00, 0x7c00);
    assert.deepEqual(Array.from(bits.subarray(4)), [0x7c00, 0xfc00]);
    assert.equal(float32ToHalfInto(f32([-65520]), bits.subarray(0, 1)), 0);
  });

  test('narrowing agrees with the engine on a million float32 values', { skip: NO_F16 }, () => {
    const next = rng(7);
    const values = new Float32Array(1 << 20);
    const raw = new Uint32Array(values.buffer);
    for (let i = 0; i < raw.length; ++i) raw[i] = (next() * 2 ** 32) >>> 0;
    const bits = new Uint16Array(values.length);
    float32ToHalfInto(values, bits);
    const engine = new Uint16Array(new globalThis.Float16Array(values).buffer);
    const i = bits.findIndex((b, j) => b !== engine[j] && !Number.isNaN(values[j]));
    assert.equal(i, -1, `${values[i]}: ${bits[i]?.toString(16)}, the engine's ${engine[i]?.toString(16)}`);
  });
});

// The package's public converters, for engines without Float16Array (Node 20): every half
// and every rounding midpoint against the reference, ±Infinity past the range (as a
// Float16Array stores them), fresh arrays, and the argument checked.
describe('toFloat16Bits and fromFloat16Bits', () => {
  test('fromFloat16Bits gives every half its value; toFloat16Bits gives the bits back', () => {
    const every = Uint16Array.from({ length: 65536 }, (_, h) => h);
    const values = fromFloat16Bits(every);
    assert.ok(values instanceof Float32Array && values.length === 65536);
    const back = toFloat16Bits(values);
    for (let h = 0; h < 65536; ++h) {
      const want = halfValue(h);
      if (Number.isNaN(want)) {
        assert.ok(Number.isNaN(values[h]) && (back[h] & 0x7c00) === 0x7c00 && (back[h] & 0x3ff) !== 0, `${h}`);
        continue;
      }
      assert.ok(Object.is(values[h], want), `${h.toString(16)} -> ${values[h]}, expected ${want}`);
      assert.equal(back[h], h, `${want} -> ${back[h].toString(16)}, expected ${h.toString(16)}`);
    }
  });

  test('toFloat16Bits rounds to nearest, ties to even, and past 65504 gives ±Infinity as a Float16Array does', () => {
    const values = f32([0.1, -0.1, 1 / 3, 2 ** -25, 2 ** -25 * 1.0001, 65519.99, 65520, -1e6, 1e-8, -0]);
    const bits = toFloat16Bits(values);
    assert.deepEqual(
      Array.from(bits),
      Array.from(values, (x) => nearestHalf(x)),
    );
    assert.deepEqual(Array.from(bits.subarray(6, 8)), [0x7c00, 0xfc00]);
    assert.notEqual(toFloat16Bits(values).buffer, bits.buffer, 'a fresh array each call');
    if (!NO_F16)
      assert.deepEqual(Array.from(bits), Array.from(new Uint16Array(new globalThis.Float16Array(values).buffer)));
  });

  test('their arguments are checked', () => {
    assert.throws(() => toFloat16Bits([1, 2]), {
      name: 'TypeError',
      message: 'toFloat16Bits: values must be a Float32Array, got an Array',
    });
    assert.throws(() => fromFloat16Bits(new Float32Array(2)), {
      name: 'TypeError',
      message: 'fromFloat16Bits: bits must be a Uint16Array, got a Float32Array',
    });
  });
});

describe('float16 tensors through the API', () => {
  let attn;
  before(async () => {
    attn = await createAttention({ threads: 2 });
  });
  after(() => attn.dispose());

  const next = rng(22);
  const data = (n, scale = 1) => uniform(next, n).map((x) => x * scale);

  test('tensor(data, shape, { dtype }) keeps the dtype; without one it builds { data, shape }', () => {
    const bits = new Uint16Array(4);
    assert.deepEqual(Object.keys(tensor(bits, [2, 2], { dtype: 'float16' })), ['data', 'shape', 'dtype']);
    assert.deepEqual(Object.keys(tensor(new Float32Array(4), [2, 2])), ['data', 'shape']);
  });

  test('2-D attention and its backward: results in their input formats, bit-equal to the float32 call rounded', () => {
    const q = half(data(5 * 8), [5, 8]),
      k = half(data(7 * 8), [7, 8]),
      v = half(data(7 * 6), [7, 6]);
    const options = { causal: true, softcap: 4 };
    const want = attn.attention(widened(q), widened(k), widened(v), options);
    assertBitsEqual(attn.attention(q, k, v, options).output, want.output, 'output');
    // mixed: q float32 gives a float32 output
    assert.deepEqual(attn.attention(widened(q), k, v, options).output, want.output);
    const dOut = half(data(5 * 6), [5, 6]);
    const grads = attn.attentionBackward(q, widened(k), v, dOut, options);
    const wantGrads = attn.attentionBackward(widened(q), widened(k), widened(v), widened(dOut), options);
    assertBitsEqual(grads.dq, wantGrads.dq, 'dq');
    assert.deepEqual(grads.dk, wantGrads.dk); // k was float32
    assertBitsEqual(grads.dv, wantGrads.dv, 'dv');
  });

  test("float16 data is read when its argument is: a later argument's getter that rewrites or detaches it changes nothing", () => {
    const q = half(data(5 * 8), [5, 8]),
      k = half(data(7 * 8), [7, 8]),
      v = half(data(7 * 6), [7, 6]);
    const want = attn.attention(widened(q), widened(k), widened(v)).output;
    for (const spoil of [
      (bits) => bits.fill(0x7c00),
      (bits) => structuredClone(bits.buffer, { transfer: [bits.buffer] }),
    ]) {
      const qBits = q.data.slice();
      const options = {
        get causal() {
          spoil(qBits); // q was read before the options
          return false;
        },
      };
      assertBitsEqual(
        attn.attention(tensor(qBits, q.shape, { dtype: 'float16' }), k, v, options).output,
        want,
        'output',
      );
    }
  });

  test("4-D attention with a past, a float16 mask and qk: output and qk in q's format, present in the past's", () => {
    const [B, Hq, Hkv, nQ, nNew, nPast, d] = [2, 4, 2, 3, 2, 5, 8];
    const q = half(data(B * Hq * nQ * d), [B, Hq, nQ, d]);
    const k = half(data(B * Hkv * nNew * d), [B, Hkv, nNew, d]);
    const v = half(data(B * Hkv * nNew * d), [B, Hkv, nNew, d]);
    const pastKey = half(data(B * Hkv * nPast * d), [B, Hkv, nPast, d]);
    const pastValue = tensor(data(B * Hkv * nPast * d), [B, Hkv, nPast, d]); // float32
    const maskValues = data(nQ * (nPast + nNew)).map((x, i) => (i % 4 === 1 ? -Infinity : x));
    const mask = half(maskValues, [nQ, nPast + nNew]);
    const options = { pastKey, pastValue, mask, causal: true, qkOutput: 'masked' };
    const r = attn.attention(q, k, v, options);
    const want = attn.attention(widened(q), widened(k), widened(v), {
      ...options,
      pastKey: widened(pastKey),
      mask: widened(mask),
    });
    assertBitsEqual(r.output, want.output, 'output');
    assertBitsEqual(r.qk, want.qk, 'qk'); // with -Infinity where masked
    assert.ok(halfToFloat32(r.qk.data).includes(-Infinity));
    assertBitsEqual(r.presentKey, want.presentKey, 'presentKey');
    assert.deepEqual(r.presentValue, want.presentValue);
  });

  test('3-D attention over a kv cache appends float16 keys and values', () => {
    const cache = attn.kvCache({ batch: 1, kvHeads: 2, dK: 4, dV: 4, capacity: 8 });
    const reference = attn.kvCache({ batch: 1, kvHeads: 2, dK: 4, dV: 4, capacity: 8 });
    try {
      for (const n of [3, 1]) {
        const q = half(data(n * 16), [1, n, 16]),
          k = half(data(n * 8), [1, n, 8]),
          v = half(data(n * 8), [1, n, 8]);
        const o = { heads: { q: 4, kv: 2 }, causal: true };
        const got = attn.attention(q, k, v, { ...o, cache }).output;
        const want = attn.attention(widened(q), widened(k), widened(v), { ...o, cache: reference }).output;
        assertBitsEqual(got, want, `output after ${n} tokens`);
      }
    } finally {
      cache.dispose();
      reference.dispose();
    }
  });

  test("a layer: float16 weights, x and dOutput; output and dx in x's format, weight gradients float32", () => {
    const dModel = 8;
    const w = (r, c) => half(data(r * c, 0.5), [r, c]);
    const weights = { wq: w(8, 8), wk: w(8, 4), wv: w(8, 4), wo: w(8, 8) };
    const widenedWeights = Object.fromEntries(Object.entries(weights).map(([n, t]) => [n, widened(t)]));
    const mha = attn.multiHeadAttention({ dModel, heads: 2, kvHeads: 1, weights });
    const ref = attn.multiHeadAttention({ dModel, heads: 2, kvHeads: 1, weights: widenedWeights });
    try {
      assert.deepEqual(mha.weights, ref.weights); // kept in float32
      const x = half(data(2 * 3 * dModel), [2, 3, dModel]);
      assertBitsEqual(
        mha.forward(x, { causal: true }).output,
        ref.forward(widened(x), { causal: true }).output,
        'output',
      );
      const dOut = half(data(2 * 3 * dModel), [2, 3, dModel]);
      const g = mha.backward(dOut);
      const want = ref.backward(widened(dOut));
      assertBitsEqual(g.dx, want.dx, 'dx');
      for (const name of ['dwq', 'dwk', 'dwv', 'dwo']) assert.deepEqual(g[name], want[name], name);
      mha.step({ dwq: half(Array.from(want.dwq.data), want.dwq.shape) }, 0.1);
      assert.equal(mha.weights.wq.data.constructor, Float32Array);
    } finally {
      mha.dispose();
      ref.dispose();
    }
  });

  test('a Float16Array in gives a Float16Array out, dtype float16', { skip: NO_F16 }, () => {
    const F16 = globalThis.Float16Array;
    const q = tensor(new F16(data(4 * 8)), [4, 8]),
      k = tensor(new F16(data(6 * 8)), [6, 8]),
      v = tensor(new F16(data(6 * 8)), [6, 8]);
    const r = attn.attention(q, k, v);
    assert.ok(r.output.data instanceof F16);
    assert.equal(r.output.dtype, 'float16');
    const want = attn.attention(...[q, k, v].map((t) => tensor(Float32Array.from(t.data), t.shape))).output;
    assert.deepEqual(Array.from(r.output.data), Array.from(new F16(want.data)));
    // bits in a Uint16Array give bits back
    const bits = (t) => tensor(new Uint16Array(t.data.buffer), t.shape, { dtype: 'float16' });
    assert.ok(attn.attention(bits(q), k, v).output.data instanceof Uint16Array);
  });

  test(
    'out for a Float16Array input is a Float16Array: the output rounded into it; bits are refused',
    { skip: NO_F16 },
    () => {
      const F16 = globalThis.Float16Array;
      const q = tensor(new F16(data(4 * 8)), [4, 8]);
      const out = new F16(32);
      const r = attn.attention(q, q, q, { causal: true, out });
      assert.equal(r.output.data, out);
      assert.equal(r.output.dtype, 'float16');
      assert.deepEqual(Array.from(out), Array.from(attn.attention(q, q, q, { causal: true }).output.data));
      assert.throws(
        () => attn.attention(q, q, q, { out: new Uint16Array(32) }),
        /^TypeError: attention: out must be a Float16Array for the output \[4,8\] \(the format of q\.data\), got a Uint16Array$/,
      );
    },
  );

  test('the worker form takes and gives float16 tensors, and refuses bits without a dtype', async () => {
    const worker = await createAttention({ worker: true, threads: 1 });
    try {
      const q = half(data(4 * 8), [4, 8]),
        k = half(data(6 * 8), [6, 8]),
        v = half(data(6 * 8), [6, 8]);
      const want = attn.attention(widened(q), widened(k), widened(v), { causal: true }).output;
      assertBitsEqual((await worker.attention(q, k, v, { causal: true })).output, want, 'output');
      await assert.rejects(worker.attention(rawTensor(q.data, q.shape), k, v), TypeError);
    } finally {
      await worker.dispose();
    }
  });

  test('non-finite float16 inputs are refused, naming the element; nothing is left allocated', () => {
    const before = attn.memory().allocatedBytes;
    const k = half(data(6 * 8), [6, 8]),
      v = half(data(6 * 8), [6, 8]);
    for (const [bits, value] of [
      [0x7c00, 'Infinity'],
      [0xfc00, '-Infinity'],
      [0x7e01, 'NaN'],
    ]) {
      const q = half(data(4 * 8), [4, 8]);
      q.data[13] = bits;
      assert.throws(
        () => attn.attention(q, k, v),
        (e) =>
          e instanceof RangeError && e.message === `attention: q.data[13] is ${value}: inputs must be finite numbers`,
      );
    }
    assert.equal(attn.memory().allocatedBytes, before);
  });

  test("a result beyond float16's range is a RangeError naming it, not a silent Infinity", () => {
    const before = attn.memory().allocatedBytes;
    const a = half([300, 300, 300, 300], [2, 2]);
    assert.throws(
      () => attn.matmul(a, a),
      /^RangeError: matmul: the product\[0\] is 180000, beyond float16's largest value 65504: it would become Infinity; pass float32 inputs for float32 results$/,
    );
    const q = half(new Array(8).fill(200), [1, 1, 2, 4]); // scores 4·200² = 160000
    assert.throws(
      () => attn.attention(q, q, q, { qkOutput: 'scaled', scale: 1 }),
      /^RangeError: attention: qk\[0\] is 160000, beyond float16's largest value 65504/,
    );
    assert.ok(attn.matmul(widened(a), widened(a)).data.every((x) => x === 180000)); // float32 is fine
    // over a cache: the failed step's keys and values are taken back out
    const cache = attn.kvCache({ batch: 1, kvHeads: 1, dK: 4, dV: 4, capacity: 4 });
    const kv = tensor(new Float32Array(4).fill(70000), [1, 1, 1, 4]);
    assert.throws(
      () => attn.attention(half([1, 2, 3, 4], [1, 1, 1, 4]), kv, kv, { cache }),
      /^RangeError: attention: output\[0\] is 70000, beyond float16's largest value 65504/,
    );
    assert.equal(cache.length, 0);
    cache.dispose();
    assert.equal(attn.memory().allocatedBytes, before);
  });

  test('dtypes: a Uint16Array needs dtype float16; float16 needs 16-bit data; others are refused', () => {
    const k = tensor(new Float32Array(8), [2, 4]);
    const cases = [
      [
        rawTensor(new Uint16Array(8), [2, 4]),
        TypeError,
        /q\.data is a Uint16Array: if it holds half-precision bits, give the tensor dtype: 'float16'/,
      ],
      [
        rawTensor(new Float32Array(8), [2, 4], { dtype: 'float16' }),
        TypeError,
        /q\.data must be a Float16Array, or a Uint16Array holding the bits, for dtype 'float16'; got a Float32Array/,
      ],
      [
        rawTensor(new Uint16Array(8), [2, 4], { dtype: 'float32' }),
        TypeError,
        /q\.data must be a Float32Array, got a Uint16Array/,
      ],
      [
        rawTensor(new Uint16Array(8), [2, 4], { dtype: 'bfloat16' }),
        RangeError,
        /q\.dtype must be one of float32, float16, got 'bfloat16'/,
      ],
      [
        rawTensor(new Uint16Array(8), [2, 4], { dtype: 16 }),
        TypeError,
        /q\.dtype must be one of float32, float16, got the number 16/,
      ],
      [
        rawTensor(new Uint16Array(6), [2, 4], { dtype: 'float16' }),
        RangeError,
        /q\.data has 6 values but shape \[2,4\] needs 8/,
      ],
    ];
    for (const [q, type, message] of cases) {
      assert.throws(
        () => attn.attention(q, k, k),
        (e) => e instanceof type && message.test(e.message),
        message,
      );
    }
    // a bare Uint16Array mask cannot carry a dtype: refused; with a dtype as a tensor it is added
    const q = tensor(new Float32Array(8), [2, 4]);
    assert.throws(() => attn.attention(q, k, k, { mask: new Uint16Array(4) }), TypeError);
    const masked = attn.attention(q, k, k, { mask: half([0, -Infinity, 0, 0], [2, 2]) });
    assert.ok(masked.output.data.every(Number.isFinite));
  });
});
