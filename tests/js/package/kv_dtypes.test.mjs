// The cache element types are one table: kv_cache.js's KV_DTYPES lists the core's KvTypes in
// their order and count, rowBytes gives each type's bytes per row as the core's
// wa::KvCache::head_bytes counts them (capacity and d whole panels of 8: no padding), and
// index.d.ts's KvCacheDtype names the same types. A type added on one side only, or two rows
// swapped, fails here.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

import { glue } from '../../../web/lib/glue.js';
import { KV_DTYPES, kvTypeIndex, rowBytes } from '../../../web/lib/kv_cache.js';
import { loadModule } from '../../../web/lib/loader.js';

describe('cache element types', () => {
  let module;
  before(async () => {
    ({ module } = await loadModule({ threads: 1, isa: 'simd128', glue }));
  });
  after(() => module?.setThreads?.(1));

  test("KV_DTYPES's length is the core's KvType count: the next index is refused", () => {
    for (let t = 0; t < KV_DTYPES.length; ++t) assert.ok(module.kvCacheHeadBytes(8, 32, 32, t) > 0, `type ${t}`);
    assert.equal(module.kvCacheHeadBytes(8, 32, 32, KV_DTYPES.length), -1);
  });

  test("rowBytes is the core's bytes per row, for each type at its index", () => {
    const capacity = 64;
    for (const dtype of KV_DTYPES)
      for (const d of [32, 64, 96]) {
        const head = module.kvCacheHeadBytes(capacity, d, d, kvTypeIndex(dtype));
        assert.equal(head, capacity * 2 * rowBytes(dtype, d), `${dtype}, d ${d}`);
      }
  });

  test("index.d.ts's KvCacheDtype names the same types", () => {
    const types = readFileSync(new URL('../../../web/lib/index.d.ts', import.meta.url), 'utf8');
    const line = types.match(/export type KvCacheDtype = ([^;]+);/);
    assert.ok(line, 'index.d.ts declares KvCacheDtype');
    const names = line[1].split('|').map((s) => s.trim().replace(/^'|'$/g, ''));
    assert.deepEqual([...names].sort(), [...KV_DTYPES].sort());
  });
});
