// A cache's size is checked before the core allocates it, at its real size: the core's own
// bytes per (sequence, kv head), wa::KvCache::head_bytes, with capacity and dV rounded up to
// whole panels of 8 and the type's scales. A cache larger than wasm memory's 2 GB, or than what
// it has left, is a RangeError naming the cache's keys and values, their size and the limit;
// wasm memory neither grows nor holds anything more afterwards. Each case allocates nothing.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';

import { createAttention } from '../../../web/lib/index.js';
import { throwsWith } from '../helpers/assertions.mjs';

describe('kvCache sizes', () => {
  let attn;
  before(async () => {
    attn = await createAttention({ threads: 1 });
  });
  after(() => attn.dispose());

  // fn() throws a RangeError matching re, and wasm memory is as it was.
  const refused = (fn, re) => {
    const before = attn.memory();
    throwsWith(fn, RangeError, re);
    assert.deepEqual(attn.memory(), before, 'wasm memory: its size and what it holds');
  };

  // d 1: 4 bytes a row of keys and of values, but each key and value row takes a panel lane
  // of 8 floats (32 bytes): 64 bytes a row, not 8.
  test('a float32 cache of 2e8 one-wide rows counts its panels: 11.9 GB, not 1.5 GB', () =>
    refused(
      () => attn.kvCache({ batch: 2e8, kvHeads: 1, dK: 1, dV: 1, capacity: 1 }),
      /^kvCache: keys \[200000000,1,1,1\] and values \[200000000,1,1,1\] needs 11\.9 GB, more than wasm memory can hold \(2 GB\)$/,
    ));

  test('a float32 cache of 4e7 one-wide rows counts its panels: 2.4 GB, not 305 MB', () =>
    refused(
      () => attn.kvCache({ batch: 4e7, kvHeads: 1, dK: 1, dV: 1, capacity: 1 }),
      /^kvCache: keys \[40000000,1,1,1\] and values \[40000000,1,1,1\] needs 2\.4 GB, more than wasm memory can hold \(2 GB\)$/,
    ));

  test('int8 and float16 caches count their padding and scales too', () => {
    // int8, d 1: 6 bytes for 2 rows of keys and values and their bfloat16 scales, 600 MB in all,
    // but tens of bytes a head in panels of 8 keys and 8 columns (52 in the layout of
    // cpp/src/kv/kv_i8.cpp), 2.4 GB or more in all
    refused(
      () => attn.kvCache({ batch: 5e7, kvHeads: 1, dK: 1, dV: 1, capacity: 2, dtype: 'int8' }),
      /^kvCache: keys \[50000000,1,2,1\] and values \[50000000,1,2,1\] needs \d+\.\d GB, more than wasm memory can hold \(2 GB\)$/,
    );
    // float16, d 1: float32's panels in halves, 32 bytes a row
    refused(
      () => attn.kvCache({ batch: 7e7, kvHeads: 1, dK: 1, dV: 1, capacity: 1, dtype: 'float16' }),
      /^kvCache: keys \[70000000,1,1,1\] and values \[70000000,1,1,1\] needs 2\.1 GB, more than wasm memory can hold \(2 GB\)$/,
    );
  });

  // 2^25 − 1 rows of 8 + 8 floats: 2^31 − 64 bytes as rows, and kᵀ's panels of 8 keys add a
  // key's 32: under 2 GB, but more than wasm memory has left beside what it already holds.
  test('a cache under 2 GB but more than wasm memory has left is refused before the core allocates it', () =>
    refused(
      () => attn.kvCache({ batch: 1, kvHeads: 1, dK: 8, dV: 8, capacity: 2 ** 25 - 1 }),
      /^kvCache: keys \[1,1,33554431,8\] and values \[1,1,33554431,8\] needs 2147483616 bytes \(2\.0 GB\), and wasm memory has \d+ bytes \(\d+\.\d [KMG]B\) left of its 2 GB$/,
    ));

  test("sizes past the core's 32 bits are refused, never wrapped around", () => {
    refused(
      () => attn.kvCache({ batch: 1, kvHeads: 1, dK: 1, dV: 1, capacity: 2 ** 32 }),
      /^kvCache: keys \[1,1,4294967296,1\] and values \[1,1,4294967296,1\] needs more than 4 GB, more than wasm memory can hold \(2 GB\)$/,
    );
    refused(
      () => attn.kvCache({ batch: 1, kvHeads: 1, dK: 2 ** 31, dV: 1, capacity: 1 }),
      /^kvCache: keys \[1,1,1,2147483648\] and values \[1,1,1,1\] needs (more than 4 GB|\d+\.\d GB), more than wasm memory can hold \(2 GB\)$/,
    );
    refused(
      () => attn.kvCache({ batch: 2 ** 32 + 1, kvHeads: 1, dK: 1, dV: 1, capacity: 1 }),
      /^kvCache: keys \[4294967297,1,1,1\] and values \[4294967297,1,1,1\] needs 256\.0 GB, more than wasm memory can hold \(2 GB\)$/,
    );
  });

  test('a cache that fits is made after the check, and one beside it that does not fit is refused', async () => {
    const own = await createAttention({ threads: 1 });
    try {
      // 64 MB, then 2 GB less 32 MB: under 2 GB, more than is left beside the first
      const first = own.kvCache({ batch: 1, kvHeads: 1, dK: 8, dV: 8, capacity: 2 ** 20 });
      const before = own.memory();
      throwsWith(
        () => own.kvCache({ batch: 1, kvHeads: 1, dK: 8, dV: 8, capacity: 2 ** 25 - 2 ** 19 }),
        RangeError,
        /^kvCache: keys \[1,1,33030144,8\] and values \[1,1,33030144,8\] needs 2113929216 bytes \(2\.0 GB\), and wasm memory has \d+ bytes \(\d+\.\d [KMG]B\) left of its 2 GB$/,
      );
      assert.deepEqual(own.memory(), before, 'wasm memory: its size and what it holds');
      assert.equal(first.length, 0);
    } finally {
      own.dispose();
    }
  });
});

describe('kvCache sizes in the worker form', () => {
  test("a cache too large rejects with the synchronous form's RangeError, the worker's memory as it was", async () => {
    const [local, remote] = [
      await createAttention({ threads: 1 }),
      await createAttention({ threads: 1, worker: true }),
    ];
    const errorOf = async (call) => {
      try {
        (await call()).dispose();
      } catch (e) {
        return e;
      }
    };
    // the bytes wasm memory has left differ between the two instances
    const cut = (message) => message.replace(/ has \d+ bytes \([^)]*\) left/, ' has … left');
    try {
      for (const config of [
        { batch: 2e8, kvHeads: 1, dK: 1, dV: 1, capacity: 1 },
        { batch: 1, kvHeads: 1, dK: 8, dV: 8, capacity: 2 ** 25 - 1 },
      ]) {
        const expected = await errorOf(() => local.kvCache(config));
        assert.match(expected.message, /^kvCache: keys \[[\d,]+\] and values \[[\d,]+\] needs /);
        const before = await remote.memory();
        const got = await errorOf(() => remote.kvCache(config));
        assert.equal(got?.constructor, RangeError, got?.message);
        assert.equal(cut(got.message), cut(expected.message));
        assert.deepEqual(await remote.memory(), before, 'wasm memory: its size and what it holds');
      }
    } finally {
      local.dispose();
      await remote.dispose();
    }
  });
});
