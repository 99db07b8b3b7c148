// Arguments are read once, as the engine sees them, and only that snapshot is checked and
// copied: objects that lie about their size, change between reads, or wrap a Float32Array
// get either the right numbers or a clear TypeError/RangeError naming the argument; never a
// read or write past a block of wasm memory. After each, the instance works and wasm memory
// holds what it held before. Also: scratch a large call needed goes back when it ends.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';

import { createAttention } from '../../../web/lib/index.js';
import { rawTensor as tensor } from '../helpers/assertions.mjs';
import { throwsWith } from '../helpers/assertions.mjs';
import { attentionRef, maxAbsDiff, randomTensor, rng } from '../../../scripts/lib/reference.mjs';

const TOL = 1e-5;

for (const threads of [1, 2]) {
  describe(`hostile inputs (threads: ${threads})`, () => {
    let attn, baseline;
    const next = rng(7);
    const q = randomTensor(next, [4, 8]);
    const k = randomTensor(next, [6, 8]);
    const v = randomTensor(next, [6, 3]);
    const ref = attentionRef(q, k, v).output;
    // A second, unrelated call whose numbers must never show up in the first's output.
    const other = {
      q: randomTensor(next, [4, 8], 50, 60),
      k: randomTensor(next, [6, 8]),
      v: randomTensor(next, [6, 3], 1000, 2000),
    };

    before(async () => {
      attn = await createAttention({ threads });
      attn.attention(other.q, other.k, other.v);
      baseline = attn.memory().allocatedBytes;
    });
    after(() => attn.dispose());

    // After each test: right numbers from a plain call, and nothing left allocated. With one
    // thread exactly; with two, which thread ran a block (and so grew its small kept scratch)
    // varies from run to run, so up to 64 KB of scratch may differ.
    const intact = (expected = baseline) => {
      const d = maxAbsDiff(attn.attention(q, k, v).output.data, ref);
      assert.ok(d <= TOL, `a plain call afterwards: max abs diff ${d}`);
      const bytes = attn.memory().allocatedBytes;
      if (threads === 1) assert.equal(bytes, expected, 'wasm memory allocated afterwards');
      else assert.ok(Math.abs(bytes - expected) <= 65536, `wasm memory allocated: ${expected} -> ${bytes}`);
    };
    const right = (out) => {
      const d = maxAbsDiff(out.output.data, ref);
      assert.ok(d <= TOL, `max abs diff ${d}`);
    };

    test('a Float32Array subclass that lies about byteLength and length: its real contents are used', () => {
      class Liar extends Float32Array {
        get byteLength() {
          return 4;
        }
        get length() {
          return 1e6;
        }
      }
      // Before, byteLength sized the block (4 bytes) while 32 floats were copied into it.
      right(attn.attention(tensor(Liar.from(q.data), q.shape), k, v));
      intact();
      // A real length shorter than the shape, behind a length that claims otherwise.
      class Short extends Float32Array {
        get length() {
          return 32;
        }
      }
      throwsWith(
        () => attn.attention(tensor(Short.from(q.data.subarray(0, 2)), q.shape), k, v),
        RangeError,
        /^attention: q\.data has 2 values but shape \[4,8\] needs 32$/,
      );
      intact();
    });

    test('a shape that changes between reads is read once', () => {
      let reads = 0;
      const shifty = {
        data: v.data,
        get shape() {
          return ++reads === 1 ? [6, 3] : [6000, 3];
        },
      };
      right(attn.attention(q, k, shifty));
      assert.equal(reads, 1);
      // A Proxy whose elements change on every read.
      let elementReads = 0;
      const shape = new Proxy([6, 8], {
        get: (t, key) => (key === '0' ? (++elementReads === 1 ? 6 : 600000) : t[key]),
      });
      right(attn.attention(q, tensor(k.data, shape), v));
      assert.equal(elementReads, 1);
      intact();
    });

    test('a Proxy around a Float32Array: a TypeError naming the argument', () => {
      throwsWith(
        () => attn.attention(q, tensor(new Proxy(k.data, {}), k.shape), v),
        TypeError,
        /^attention: k\.data must be a Float32Array, got an object that only looks like one \(a Proxy, or an object inheriting from Float32Array\.prototype\); pass the Float32Array itself$/,
      );
      throwsWith(
        () => attn.attention(q, k, tensor(Object.create(Float32Array.prototype), v.shape)),
        TypeError,
        /^attention: v\.data must be a Float32Array, got an object that only looks like one/,
      );
      const { proxy, revoke } = Proxy.revocable(q.data, {});
      revoke();
      throwsWith(
        () => attn.attention(tensor(proxy, q.shape), k, v),
        TypeError,
        /^attention: q\.data must be a Float32Array, got a revoked Proxy$/,
      );
      intact();
    });

    test('a detached buffer: a TypeError naming the argument', () => {
      const data = q.data.slice();
      structuredClone(data.buffer, { transfer: [data.buffer] });
      throwsWith(
        () => attn.attention(tensor(data, q.shape), k, v),
        TypeError,
        /^attention: q\.data's buffer is detached \(transferred or released\); pass a Float32Array whose memory is still there$/,
      );
      const mask = new Uint8Array(24).fill(1);
      structuredClone(mask.buffer, { transfer: [mask.buffer] });
      throwsWith(() => attn.attention(q, k, v, { mask }), TypeError, /^attention: mask's buffer is detached/);
      intact();
    });

    test("a buffer detached by a later argument's getter, after it was checked: a TypeError", () => {
      const data = q.data.slice();
      const sneaky = {
        data: k.data,
        get shape() {
          structuredClone(data.buffer, { transfer: [data.buffer] });
          return k.shape;
        },
      };
      throwsWith(
        () => attn.attention(tensor(data, q.shape), sneaky, v),
        TypeError,
        /^attention: q\.data: its buffer was detached or shrunk after it was checked$/,
      );
      intact();
    });

    test("a resizable buffer shrunk by a later argument's getter: a TypeError, no read past it", () => {
      const buffer = new ArrayBuffer(q.data.byteLength, { maxByteLength: q.data.byteLength });
      const data = new Float32Array(buffer);
      data.set(q.data);
      const sneaky = {
        data: k.data,
        get shape() {
          buffer.resize(8);
          return k.shape;
        },
      };
      throwsWith(
        () => attn.attention(tensor(data, q.shape), sneaky, v),
        TypeError,
        /^attention: q\.data: its buffer was detached or shrunk after it was checked$/,
      );
      intact();
    });

    test('views into a SharedArrayBuffer, and views with offsets, give the right numbers', () => {
      const shared = new Float32Array(new SharedArrayBuffer(4 * (q.data.length + 10)), 4 * 5, q.data.length);
      shared.set(q.data);
      right(attn.attention(tensor(shared, q.shape), k, v));
      // k in the middle of a buffer whose other values would change the result if read.
      const big = new Float32Array(k.data.length + 20).fill(1e3);
      big.set(k.data, 7);
      right(attn.attention(q, tensor(big.subarray(7, 7 + k.data.length), k.shape), v));
      const keep = new Uint8Array(4 * 6 + 3).fill(0);
      const mask = keep.subarray(3);
      mask.fill(1);
      right(attn.attention(q, k, v, { mask }));
      intact();
    });

    test('options getters run once', () => {
      let reads = 0;
      const options = {
        get causal() {
          return ++reads > 1;
        },
      };
      right(attn.attention(q, k, v, options));
      assert.equal(reads, 1);
      intact();
    });

    test('a layer copies its weights and inputs from snapshots too', () => {
      const x = randomTensor(rng(1), [5, 8]);
      const warm = attn.multiHeadAttention({ dModel: 8, heads: 2, seed: 3 });
      const expected = warm.forward(x).output.data;
      warm.dispose();
      attn.attention(q, k, v);
      const warmBytes = attn.memory().allocatedBytes; // with the layer's scratch kept
      const layer = attn.multiHeadAttention({ dModel: 8, heads: 2, seed: 3 });
      class Liar extends Float32Array {
        get byteLength() {
          return 4;
        }
      }
      const got = layer.forward(tensor(Liar.from(x.data), x.shape)).output.data;
      assert.deepEqual(got, expected);
      layer.dispose();
      intact(warmBytes);
    });
  });
}

describe('scratch after a large call', () => {
  for (const threads of [1, 2]) {
    test(`q [1,64] against k, v [200000,64] leaves allocatedBytes near where it was (threads: ${threads})`, async () => {
      const attn = await createAttention({ threads });
      const next = rng(3);
      const small = randomTensor(next, [64, 64]);
      const q = randomTensor(next, [1, 64]);
      attn.attention(q, small, small);
      const before = attn.memory().allocatedBytes;
      const kv = randomTensor(next, [200000, 64]);
      const out = attn.attention(q, kv, kv).output;
      assert.equal(out.shape[1], 64);
      const afterBytes = attn.memory().allocatedBytes;
      // Before the fix the packed k and v (100 MB) stayed allocated as scratch.
      assert.ok(afterBytes - before < 2 ** 21, `allocatedBytes ${before} -> ${afterBytes}`);
      attn.dispose();
    });
  }
});
