// The out option: matmul, attention (2-D, 3-D, 4-D, over a past and a cache) and a layer's
// forward write their main result into the caller's typed array, which is then the result's
// data, bit for bit what a fresh array gets; float16 results go into the typed array their
// input is; the worker form takes the same option. Every wrong out is refused with the
// package's error classes, and a call that fails, at its arguments or after computing,
// leaves out as it was and the instance working.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { createAttention, tensor } from '../../../web/lib/index.js';
import { float32ToHalfInto } from '../../../web/lib/half.js';
import { randomTensor, rng } from '../../../scripts/lib/reference.mjs';
import { throwsWith } from '../helpers/assertions.mjs';

const next = rng(21);
const random = (...shape) => randomTensor(next, shape);
const SENTINEL = 7.25; // what out holds before a call that must leave it alone

// The float32 bits of a typed array's values (or a half array's own bits).
const bitsOf = (a) =>
  Array.from(a instanceof Float32Array ? new Uint32Array(a.buffer, a.byteOffset, a.length) : new Uint16Array(a));

function assertSameBits(got, want, what) {
  assert.deepEqual(bitsOf(got), bitsOf(want), what);
}

// A Float32Array of n values, each SENTINEL.
const filled = (n) => new Float32Array(n).fill(SENTINEL);
const untouched = (out) => out.every((x) => x === SENTINEL);

describe('out: the result in the caller’s array', () => {
  let attn;
  before(async () => {
    attn = await createAttention({ threads: 2 });
  });
  after(() => attn.dispose());

  test('matmul: out is the result’s data, bitwise the fresh result, transposed or not', () => {
    const a = random(5, 7),
      b = random(7, 3);
    for (const options of [{}, { transposeA: true }, { transposeB: true }]) {
      const aT = options.transposeA ? random(7, 5) : a;
      const bT = options.transposeB ? random(3, 7) : b;
      const fresh = attn.matmul(aT, bT, options);
      const out = filled(15);
      const r = attn.matmul(aT, bT, { ...options, out });
      assert.equal(r.data, out);
      assert.deepEqual(r.shape, [5, 3]);
      assert.deepEqual(Object.keys(r), ['data', 'shape']);
      assertSameBits(out, fresh.data, JSON.stringify(options));
    }
  });

  test('matmul: an out that is also an input gets the right product (inputs are copied first)', () => {
    const a = random(4, 4),
      b = random(4, 4);
    const want = attn.matmul(a, b).data;
    const r = attn.matmul(a, b, { out: a.data });
    assert.equal(r.data, a.data);
    assertSameBits(a.data, want, 'out = a.data');
    const c = random(4, 4);
    const square = attn.matmul(c, c).data;
    attn.matmul(c, c, { out: c.data });
    assertSameBits(c.data, square, 'out = a.data = b.data');
  });

  test('a view with an offset, over a SharedArrayBuffer, or a subclass: written in place, its neighbours kept', () => {
    const a = random(3, 2),
      b = random(2, 4);
    const want = attn.matmul(a, b).data;
    for (const Buffer of [ArrayBuffer, SharedArrayBuffer]) {
      const whole = new Float32Array(new Buffer(4 * 20)).fill(SENTINEL);
      const out = whole.subarray(3, 15);
      assert.equal(attn.matmul(a, b, { out }).data, out);
      assertSameBits(out, want, Buffer.name);
      assert.ok(untouched(whole.subarray(0, 3)) && untouched(whole.subarray(15)), `${Buffer.name}: neighbours`);
    }
    class Mine extends Float32Array {}
    const mine = new Mine(12);
    assert.equal(attn.matmul(a, b, { out: mine }).data, mine);
    assertSameBits(mine, want, 'a subclass');
  });

  test('attention 2-D: the output in out, traces fresh; null and undefined mean a fresh array', () => {
    const q = random(6, 8),
      k = random(9, 8),
      v = random(9, 5);
    const options = { causal: true, trace: true, softcap: 3 };
    const fresh = attn.attention(q, k, v, options);
    const out = filled(30);
    const r = attn.attention(q, k, v, { ...options, out });
    assert.equal(r.output.data, out);
    assert.deepEqual(Object.keys(r), Object.keys(fresh));
    for (const [name, t] of Object.entries(fresh)) assertSameBits(r[name].data, t.data, name);
    for (const none of [null, undefined]) assert.notEqual(attn.attention(q, k, v, { out: none }).output.data, out);
  });

  test('attention 4-D with a past and 3-D heads: the output in out, presentKey and presentValue fresh', () => {
    const q = random(2, 4, 3, 8),
      k = random(2, 2, 3, 8),
      v = random(2, 2, 3, 6);
    const options = { causal: true, pastKey: random(2, 2, 5, 8), pastValue: random(2, 2, 5, 6), qkOutput: 'weights' };
    const fresh = attn.attention(q, k, v, options);
    const out = filled(2 * 4 * 3 * 6);
    const r = attn.attention(q, k, v, { ...options, out });
    assert.equal(r.output.data, out);
    assert.deepEqual(r.output.shape, [2, 4, 3, 6]);
    for (const [name, t] of Object.entries(fresh)) assertSameBits(r[name].data, t.data, name);
    assert.notEqual(r.presentKey.data, out);

    const q3 = random(2, 3, 4 * 8),
      k3 = random(2, 5, 2 * 8),
      v3 = random(2, 5, 2 * 6);
    const heads = { q: 4, kv: 2 };
    const out3 = filled(2 * 3 * 4 * 6);
    assert.equal(attn.attention(q3, k3, v3, { heads, out: out3 }).output.data, out3);
    assertSameBits(out3, attn.attention(q3, k3, v3, { heads }).output.data, '3-D');
  });

  test('attention over a kv cache: out takes each step’s output, the cache grows as without it', () => {
    const config = { batch: 1, kvHeads: 2, dK: 8, dV: 8, capacity: 8 };
    const plain = attn.kvCache(config),
      into = attn.kvCache(config);
    const out = filled(4 * 8);
    for (let step = 0; step < 3; ++step) {
      const q = random(1, 4, 1, 8),
        k = random(1, 2, 1, 8),
        v = random(1, 2, 1, 8);
      const want = attn.attention(q, k, v, { cache: plain, rotary: true }).output.data;
      assert.equal(attn.attention(q, k, v, { cache: into, rotary: true, out }).output.data, out);
      assertSameBits(out, want, `step ${step}`);
    }
    assert.equal(into.length, 3);
    plain.dispose();
    into.dispose();
  });

  test('a layer’s forward: 2-D, batched, traced and over a cache; backward follows a forward into out', () => {
    const mha = attn.multiHeadAttention({ dModel: 16, heads: 4, kvHeads: 2, bias: true, rotary: true, seed: 3 });
    const x = random(2, 5, 16);
    const dOut = random(2, 5, 16);
    const fresh = mha.forward(x, { causal: true, trace: true });
    const freshGrads = mha.backward(dOut);
    const out = filled(2 * 5 * 16);
    const r = mha.forward(x, { causal: true, trace: true, out });
    assert.equal(r.output.data, out);
    assert.deepEqual(r.output.shape, [2, 5, 16]);
    assertSameBits(out, fresh.output.data, 'output');
    assertSameBits(r.concat.data, fresh.concat.data, 'concat');
    const grads = mha.backward(dOut);
    for (const [name, t] of Object.entries(freshGrads)) assertSameBits(grads[name].data, t.data, name);

    const x2 = random(5, 16);
    const out2 = filled(5 * 16);
    assert.equal(mha.forward(x2, { out: out2 }).output.data, out2);
    assertSameBits(out2, mha.forward(x2).output.data, '2-D');

    const config = { batch: 1, kvHeads: 2, dK: 4, dV: 4, capacity: 4 };
    const plain = attn.kvCache(config),
      into = attn.kvCache(config);
    const step = random(1, 1, 16);
    const want = mha.forward(step, { cache: plain }).output.data;
    const out3 = filled(16);
    assert.equal(mha.forward(step, { cache: into, out: out3 }).output.data, out3);
    assertSameBits(out3, want, 'over a cache');
    plain.dispose();
    into.dispose();
    mha.dispose();
  });

  test('float16 results go into the kind of array their input is: bits into a Uint16Array', () => {
    const halfOf = (t) => {
      const bits = new Uint16Array(t.data.length);
      float32ToHalfInto(t.data, bits);
      return tensor(bits, t.shape, { dtype: 'float16' });
    };
    const a = halfOf(random(3, 4)),
      b = random(4, 5);
    const fresh = attn.matmul(a, b);
    const out = new Uint16Array(15);
    const r = attn.matmul(a, b, { out });
    assert.equal(r.data, out);
    assert.equal(r.dtype, 'float16');
    assert.deepEqual(Array.from(out), Array.from(fresh.data));

    const mha = attn.multiHeadAttention({ dModel: 4, heads: 2, seed: 1 });
    const x = halfOf(random(3, 4));
    const outX = new Uint16Array(12);
    const rx = mha.forward(x, { out: outX });
    assert.equal(rx.output.data, outX);
    assert.deepEqual(Array.from(outX), Array.from(mha.forward(x).output.data));
    mha.dispose();
  });

  describe('errors: the class and message, out unchanged, the instance still working', () => {
    const a = random(3, 4),
      b = random(4, 5);
    const check = (call, Class, re, out) => {
      const before = attn.memory().allocatedBytes;
      throwsWith(call, Class, re);
      if (out) assert.ok(untouched(out), 'out was written');
      assert.equal(attn.memory().allocatedBytes, before);
      assertSameBits(attn.matmul(a, b).data, attn.matmul(a, b).data, 'after the error');
    };

    test('a wrong kind of value: TypeError naming the array the result needs', () => {
      for (const [out, got] of [
        [new Float64Array(15), 'a Float64Array'],
        [Array.from({ length: 15 }, () => 0), 'an Array'],
        [new Uint16Array(15), 'a Uint16Array'],
        [{ length: 15 }, 'an Object'],
        [15, 'the number 15'],
        [new Proxy(new Float32Array(15), {}), 'an object that only looks like one \\(a Proxy'],
      ]) {
        check(
          () => attn.matmul(a, b, { out }),
          TypeError,
          new RegExp(`^matmul: out must be a Float32Array for the product \\[3,5\\], got ${got}`),
        );
      }
      const bits = tensor(new Uint16Array(12), [3, 4], { dtype: 'float16' });
      check(
        () => attn.matmul(bits, b, { out: new Float32Array(15) }),
        TypeError,
        /^matmul: out must be a Uint16Array for the product \[3,5\] \(the format of a\.data\), got a Float32Array$/,
      );
    });

    test('a wrong size: RangeError naming both counts, for every entry', () => {
      const out = filled(14);
      check(
        () => attn.matmul(a, b, { out }),
        RangeError,
        /^matmul: out has 14 values but the product \[3,5\] has 15$/,
        out,
      );
      const q = random(2, 3, 4, 8);
      check(
        () => attn.attention(q, q, q, { out }),
        RangeError,
        /^attention: out has 14 values but the output \[2,3,4,8\] has 192$/,
        out,
      );
      const q3 = random(2, 4, 16);
      check(
        () => attn.attention(q3, q3, q3, { heads: { q: 2, kv: 2 }, out }),
        RangeError,
        /^attention: out has 14 values but the output \[2,4,16\] has 128$/,
        out,
      );
      check(
        () => attn.attention(a, a, random(3, 5), { out }),
        RangeError,
        /^attention: out has 14 values but the output \[3,5\] has 15$/,
        out,
      );
      const mha = attn.multiHeadAttention({ dModel: 4, heads: 2 });
      check(
        () => mha.forward(a, { out }),
        RangeError,
        /^multiHeadAttention\.forward: out has 14 values but the output \[3,4\] has 12$/,
        out,
      );
      mha.dispose();
    });

    test('a detached out: TypeError, also when a getter read before it detaches it', () => {
      const out = new Float32Array(15);
      structuredClone(out.buffer, { transfer: [out.buffer] });
      check(
        () => attn.matmul(a, b, { out }),
        TypeError,
        /^matmul: out's buffer is detached \(transferred or released\)/,
      );
      const later = filled(12);
      const mask = {
        get data() {
          structuredClone(later.buffer, { transfer: [later.buffer] });
          return new Uint8Array(9).fill(1);
        },
        shape: [3, 3],
      };
      check(
        () => attn.attention(random(3, 4), random(3, 4), random(3, 4), { mask, out: later }),
        TypeError,
        /^attention: out's buffer is detached/,
      );
    });

    test('attentionBackward takes no out', () => {
      const q = random(3, 4);
      check(
        () => attn.attentionBackward(q, q, q, q, { out: filled(12) }),
        TypeError,
        /^attentionBackward: unknown option "out" \(known: causal, mask, scale, trace, softcap, window, heads, pastKey, pastValue, kvLength, qkOutput, rotary, cache, sinks\)$/,
      );
      const q4 = random(1, 1, 3, 4);
      check(() => attn.attentionBackward(q4, q4, q4, q4, { out: filled(12) }), TypeError, /unknown option "out"/);
    });

    test('a result refused after computing leaves out as it was: overflow in float32, in float16, and in qk', () => {
      const big = tensor(new Float32Array(12).fill(1e20), [3, 4]);
      const out = filled(9);
      check(
        () => attn.matmul(big, tensor(new Float32Array(12).fill(1e20), [4, 3]), { out }),
        RangeError,
        /^matmul: the product\[0\] came out Infinity/,
        out,
      );
      // half bits of 300: 300·300·4 = 360000 overflows float16
      const h300 = tensor(new Uint16Array(16).fill(halfBitsOf(300)), [4, 4], { dtype: 'float16' });
      const bits = new Uint16Array(16).fill(0x1234);
      throwsWith(
        () => attn.matmul(h300, h300, { out: bits }),
        RangeError,
        /^matmul: the product\[0\] is 360000, beyond float16's largest value 65504/,
      );
      assert.ok(
        bits.every((x) => x === 0x1234),
        'out was written',
      );
      // the output fits float16 but qk (scores 4·200² = 160000) does not: out stays as it was
      const q = tensor(new Uint16Array(8).fill(halfBitsOf(200)), [1, 1, 2, 4], { dtype: 'float16' });
      const outQ = new Uint16Array(8).fill(0x1234);
      throwsWith(
        () => attn.attention(q, q, q, { qkOutput: 'scaled', scale: 1, out: outQ }),
        RangeError,
        /^attention: qk\[0\] is 160000/,
      );
      assert.ok(
        outQ.every((x) => x === 0x1234),
        'out was written',
      );
      // a layer whose output overflows keeps its saved forward and out
      const mha = attn.multiHeadAttention({ dModel: 4, heads: 1, seed: 2 });
      const x = random(3, 4);
      mha.forward(x);
      const grads = mha.backward(random(3, 4));
      const outX = filled(12);
      check(
        () => mha.forward(tensor(new Float32Array(12).fill(1e30), [3, 4]), { out: outX }),
        RangeError,
        /^multiHeadAttention\.forward: output\[0\] came out NaN/,
        outX,
      );
      assertSameBits(mha.backward(grads.dx).dx.data, mha.backward(grads.dx).dx.data, 'the saved forward');
      mha.dispose();
    });
  });
});

describe('out in the worker form', () => {
  let attn, sync;
  before(async () => {
    attn = await createAttention({ worker: true, threads: 1 });
    sync = await createAttention({ threads: 1 });
  });
  after(async () => {
    await attn.dispose();
    sync.dispose();
  });

  test('matmul, attention and a layer’s forward: out is the result’s data, bitwise the direct form’s', async () => {
    const a = random(5, 7),
      b = random(7, 3);
    const out = filled(15);
    const r = await attn.matmul(a, b, { out });
    assert.equal(r.data, out);
    assertSameBits(out, sync.matmul(a, b).data, 'matmul');

    const q = random(1, 2, 4, 8);
    const outQ = filled(64);
    const rq = await attn.attention(q, q, q, { causal: true, qkOutput: 'weights', out: outQ });
    assert.equal(rq.output.data, outQ);
    assertSameBits(outQ, sync.attention(q, q, q, { causal: true, qkOutput: 'weights' }).output.data, 'attention');
    assert.equal(rq.qk.shape.join(), '1,2,4,4');

    const config = { dModel: 8, heads: 2, seed: 4 };
    const mha = await attn.multiHeadAttention(config);
    const local = sync.multiHeadAttention(config);
    const x = random(3, 8);
    const outX = filled(24);
    assert.equal((await mha.forward(x, { out: outX })).output.data, outX);
    assertSameBits(outX, local.forward(x).output.data, 'forward');
    await mha.dispose();
    local.dispose();
  });

  test('out is never sent: with transfer: true the inputs go, out stays; errors are the direct form’s', async () => {
    const a = random(3, 4);
    let b = random(4, 5);
    const want = sync.matmul(a, b).data;
    const out = filled(15);
    const r = await attn.matmul(a, b, { transfer: true, out });
    assert.equal(a.data.length, 0, 'a was transferred');
    assert.equal(r.data, out);
    assertSameBits(out, want, 'transfer');

    const c = random(3, 4);
    b = random(4, 5); // the first b was transferred
    const short = filled(14);
    await assert.rejects(attn.matmul(c, b, { out: short }), {
      name: 'RangeError',
      message: 'matmul: out has 14 values but the product [3,5] has 15',
    });
    await assert.rejects(attn.matmul(c, b, { out: new Float64Array(15) }), {
      name: 'TypeError',
      message: 'matmul: out must be a Float32Array for the product [3,5], got a Float64Array',
    });
    const gone = new Float32Array(15);
    structuredClone(gone.buffer, { transfer: [gone.buffer] });
    await assert.rejects(attn.matmul(c, b, { out: gone }), {
      name: 'TypeError',
      message: /^matmul: out's buffer is detached/,
    });
    assert.ok(untouched(short));
  });

  test('an out detached while the call ran: the call rejects with a TypeError', async () => {
    const out = filled(15);
    const call = attn.matmul(random(3, 4), random(4, 5), { out });
    structuredClone(out.buffer, { transfer: [out.buffer] });
    await assert.rejects(call, {
      name: 'TypeError',
      message: "matmul: out's buffer was detached or shrunk while the call ran",
    });
  });
});

// The float16 bits nearest to x.
function halfBitsOf(x) {
  const bits = new Uint16Array(1);
  float32ToHalfInto(new Float32Array([x]), bits);
  return bits[0];
}
