// createAttention({ worker: true }) in Chromium, Firefox and WebKitGTK: a module Worker runs
// the package, with threads where the page is cross-origin isolated and the engine can run
// them (ENGINE_GETS) and without elsewhere, and computes the same numbers as the synchronous
// form on the page's main thread, bit for bit.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { ENGINES, launchBrowser, openPage, serveBlankPage } from '../../../scripts/lib/browser.mjs';
import { describeEngines, WEBKIT_AS_SAFARI } from '../helpers/engines.mjs';
import { buildOf } from '../helpers/backend_build.mjs';

const servers = {};
before(async () => {
  servers.isolated = await serveBlankPage({ port: 9341, isolation: true });
  servers.plain = await serveBlankPage({ port: 9361, isolation: false });
}, [...ENGINES, WEBKIT_AS_SAFARI]);
after(async () => {
  for (const s of Object.values(servers)) await s.close();
}, [...ENGINES, WEBKIT_AS_SAFARI]);

// In the page: the same calls on both forms -> the worker's backend, the names of results
// whose bits differ, an error from each form, and what transfer left of an input.
async function runInPage(page) {
  return page.evaluate(async () => {
    const { createAttention, tensor } = await import('/lib/index.js');
    const [local, remote] = await Promise.all([
      createAttention({ threads: 2 }),
      createAttention({ threads: 2, worker: true }),
    ]);
    let seed = 1;
    const random = (shape) =>
      tensor(
        Float32Array.from({ length: shape[0] * shape[1] }, () => {
          seed = (seed * 16807) % 2147483647;
          return seed / 2147483647 - 0.5;
        }),
        shape,
      );
    const differ = [];
    // Keys, shapes and float32 bits of two results; a difference is recorded under its path.
    const compare = (path, a, b) => {
      if (ArrayBuffer.isView(b)) {
        const x = new Uint32Array(a.buffer, a.byteOffset, a.length),
          y = new Uint32Array(b.buffer, b.byteOffset, b.length);
        if (x.length !== y.length || x.some((v, i) => v !== y[i])) differ.push(path);
      } else if (b !== null && typeof b === 'object') {
        if (Object.keys(a).sort().join() !== Object.keys(b).sort().join()) differ.push(`${path} (keys)`);
        else for (const key of Object.keys(b)) compare(`${path}.${key}`, a[key], b[key]);
      } else if (a !== b) {
        differ.push(path);
      }
    };

    const q = random([150, 24]),
      k = random([170, 24]),
      v = random([170, 16]),
      dOut = random([150, 16]);
    compare(
      'attention',
      await remote.attention(q, k, v, { causal: true, trace: true }),
      local.attention(q, k, v, { causal: true, trace: true }),
    );
    compare('attentionBackward', await remote.attentionBackward(q, k, v, dOut), local.attentionBackward(q, k, v, dOut));
    compare('matmul', await remote.matmul(q, k, { transposeB: true }), local.matmul(q, k, { transposeB: true }));

    const config = { dModel: 24, heads: 4, bias: true, seed: 3 };
    const [mine, theirs] = [local.multiHeadAttention(config), await remote.multiHeadAttention(config)];
    for (let i = 0; i < 2; ++i) {
      const forward = mine.forward(q, { causal: true });
      compare(`forward ${i}`, await theirs.forward(q, { causal: true }), forward);
      const grads = mine.backward(forward.output);
      compare(`backward ${i}`, await theirs.backward(forward.output), grads);
      mine.step(grads, 0.1);
      await theirs.step(grads, 0.1);
    }
    compare('weights', await theirs.weights, mine.weights);

    // Decoding over a cache in the worker: a prefill of 3 tokens, then one at a time.
    const cacheConfig = { batch: 1, kvHeads: 4, dK: 6, dV: 6, capacity: 8 };
    const [cache, theirCache] = [local.kvCache(cacheConfig), await remote.kvCache(cacheConfig)];
    for (const [i, n] of [3, 1, 1].entries()) {
      const x = random([n, 24]);
      compare(
        `decode ${i}`,
        await theirs.forward(x, { cache: theirCache, causal: true }),
        mine.forward(x, { cache, causal: true }),
      );
    }
    // q [1,4,1,6], k = v [1,4,1,6]: one more token, by attention() on heads
    const [q4, keys] = [random([4, 6]), random([4, 6])].map((t) => ({ data: t.data, shape: [1, 4, 1, 6] }));
    compare(
      'decode by attention',
      await remote.attention(q4, keys, keys, { cache: theirCache }),
      local.attention(q4, keys, keys, { cache }),
    );
    compare('cache length', await theirCache.length, cache.length);
    cache.dispose();
    await theirCache.dispose();

    const errorOf = async (fn) => {
      try {
        await fn();
        return null;
      } catch (e) {
        return `${e.constructor.name}: ${e.message}`;
      }
    };
    const bad = (a) => a.attention(q, v, v);
    const errors = [await errorOf(() => bad(local)), await errorOf(() => bad(remote))];

    // A call that rejects changed nothing: an out on a buffer transfer would send is refused up
    // front; an out detached while the call runs undoes the call before the next request runs.
    const undoCache = await remote.kvCache({ batch: 1, kvHeads: 1, dK: 4, dV: 4, capacity: 8, dtype: 'int8' });
    const token = (data) => ({ data, shape: [1, 1, 1, 4] });
    const zeros = () => token(new Float32Array(4));
    const q1 = new Float32Array([1, 2, 3, 4]);
    const refused = await errorOf(() =>
      remote.attention(token(q1), zeros(), zeros(), { cache: undoCache, out: q1, transfer: true }),
    );
    const out1 = new Float32Array(4);
    const undone = remote.attention(token(q1.slice()), zeros(), zeros(), { cache: undoCache, out: out1 });
    structuredClone(out1.buffer, { transfer: [out1.buffer] });
    const lengthThen = undoCache.length; // sent before the worker answered
    const rollback = { refused, undone: await errorOf(() => undone), length: await lengthThen };
    await undoCache.dispose();

    // The page's thread keeps running (timers fire) while the worker computes.
    const [a, b] = [random([600, 600]), random([600, 600])];
    let ticks = 0,
      done = false;
    const tick = () => {
      if (!done) {
        ++ticks;
        setTimeout(tick, 0);
      }
    };
    tick();
    await Promise.all(Array.from({ length: 8 }, () => remote.matmul(a, b)));
    done = true;

    const moved = random([4, 24]);
    await remote.attention(moved, random([5, 24]), random([5, 16]), { transfer: true });
    const result = {
      isolated: globalThis.crossOriginIsolated,
      backend: remote.backend,
      differ,
      errors,
      rollback,
      movedBytes: moved.data.byteLength,
      ticks,
      keptBytes: q.data.byteLength,
    };
    mine.dispose();
    local.dispose();
    await remote.dispose();
    return result;
  });
}

describeEngines(
  'the worker form',
  ({ engine, launch, gets }) => {
    let browser;
    before(async () => {
      browser = await launchBrowser(engine, launch);
    });
    after(() => browser?.close());

    for (const [name, isolated] of [
      ['isolated', true],
      ['plain', false],
    ]) {
      const threads = isolated && gets.threads ? 2 : 1;
      test(`in a ${isolated ? 'cross-origin isolated' : 'plain static'} page (${gets.isa}, ${threads === 1 ? '1 thread' : `${threads} threads`}) it equals the synchronous form bitwise`, async () => {
        const { page, errors } = await openPage(browser, servers[name].url);
        const r = await runInPage(page);
        assert.equal(r.isolated, isolated);
        assert.deepEqual(buildOf(r.backend), { threads, isa: gets.isa });
        assert.deepEqual(r.differ, []);
        assert.ok(
          r.ticks >= 3,
          `only ${r.ticks} timer turns in the page while the worker ran 8 products [600,600]·[600,600]`,
        );
        assert.match(r.errors[0], /^RangeError: attention: k is \[170,16\] but q is \[150,24\]/);
        assert.equal(r.errors[1], r.errors[0]);
        assert.match(r.rollback.refused, /^TypeError: attention: out shares its buffer with an argument that transfer/);
        assert.equal(r.rollback.undone, "TypeError: attention: out's buffer was detached or shrunk while the call ran");
        assert.equal(r.rollback.length, 0, 'the rejected call appended to the cache');
        assert.equal(r.movedBytes, 0, 'transfer: true left the input attached');
        assert.equal(r.keptBytes, 150 * 24 * 4, 'an input was detached without transfer');
        assert.deepEqual(errors(), []);
        await page.close();
      });
    }
  },
  [...ENGINES, WEBKIT_AS_SAFARI],
);
