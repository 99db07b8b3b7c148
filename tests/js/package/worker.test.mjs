// createAttention({ worker: true }) in Node: the same numbers as the synchronous form, bit for
// bit; the same error classes and messages; concurrent calls each get their own answer;
// inputs detached only when a call asks for transfer; dispose() ends the worker, and a process
// using the worker form exits on its own.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { createAttention, tensor, toFloat16Bits } from '../../../web/lib/index.js';
import { buffersOf, DIRECT_ONLY, OPERATION, operationsOn, postable } from '../../../web/lib/operations.js';
import { randomTensor, rng } from '../../../scripts/lib/reference.mjs';
import { evalArgs, garbageCollector, RUNTIME } from '../helpers/runtime.mjs';

const INDEX = new URL('../../../web/lib/index.js', import.meta.url).href;
const WASM = fileURLToPath(new URL('../../../web/lib/wasm/', import.meta.url));

// Two results of the same call hold the same keys, shapes and bits (float32 or float16, NaN included).
function assertSameBits(remote, local, path = 'result') {
  if (ArrayBuffer.isView(local)) {
    assert.ok(
      remote instanceof local.constructor,
      `${path} is ${remote?.constructor?.name}, expected ${local.constructor.name}`,
    );
    const Bits = { 1: Uint8Array, 2: Uint16Array, 4: Uint32Array }[local.BYTES_PER_ELEMENT]; // float16: its bits
    const a = new Bits(remote.buffer, remote.byteOffset, remote.length);
    const b = new Bits(local.buffer, local.byteOffset, local.length);
    assert.equal(a.length, b.length, `${path}: lengths differ`);
    const i = a.findIndex((x, j) => x !== b[j]);
    assert.equal(i, -1, `${path}[${i}]: worker ${remote[i]}, synchronous ${local[i]}`);
  } else if (local !== null && typeof local === 'object') {
    assert.deepEqual(Object.keys(remote).sort(), Object.keys(local).sort(), `${path}: keys differ`);
    for (const key of Object.keys(local)) assertSameBits(remote[key], local[key], `${path}.${key}`);
  } else {
    assert.equal(remote, local, path);
  }
}

// The error fn throws (or its Promise rejects with); fails if there is none.
async function errorOf(fn) {
  try {
    await fn();
  } catch (e) {
    return e;
  }
  assert.fail('expected an error, none came');
}

// Something the worker form `attn` holds above `baseline` bytes, whose proxy is unreachable:
// collecting garbage here frees it in the worker, back to baseline.
async function assertCollectedBackTo(attn, baseline) {
  assert.ok((await attn.memory()).allocatedBytes > baseline);
  const gc = garbageCollector();
  for (let i = 0; i < 20 && (await attn.memory()).allocatedBytes !== baseline; ++i) {
    gc();
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  assert.equal((await attn.memory()).allocatedBytes, baseline);
}

// Runs a script that imports the package as `createAttention` in a fresh process of this
// runtime, the runtime's flags first. timeout: a guard against a hang (the process is killed,
// and its status is then null), not a verdict on speed.
function runChild(body, timeout = 30000, flags = []) {
  const script = `import { createAttention } from ${JSON.stringify(INDEX)};\n${body}`;
  const started = Date.now();
  const r = spawnSync(process.execPath, [...flags, ...evalArgs(script)], { encoding: 'utf8', timeout });
  return { ...r, seconds: (Date.now() - started) / 1000 };
}

describe('the worker form', () => {
  let local, remote;
  before(async () => {
    [local, remote] = await Promise.all([
      createAttention({ threads: 2 }),
      createAttention({ threads: 2, worker: true }),
    ]);
  });
  after(async () => {
    local?.dispose();
    await remote?.dispose();
  });

  test('runs the threaded build in the worker, with the threads asked for', () => {
    assert.deepEqual(remote.backend, local.backend);
    assert.equal(remote.backend.threads, 2);
  });

  // The public members of an object: its own keys and its prototypes' names, less constructor.
  function membersOf(object) {
    const names = new Set(Object.keys(object));
    for (let p = Object.getPrototypeOf(object); p && p !== Object.prototype; p = Object.getPrototypeOf(p)) {
      for (const name of Object.getOwnPropertyNames(p)) if (name !== 'constructor') names.add(name);
    }
    return [...names].sort();
  }
  const isMethod = (object, name) => typeof object[name] === 'function';

  // A new method of the direct form is a row of the table (or a DIRECT_ONLY entry): the worker
  // form cannot miss it, nor keep a member the direct form lost.
  test('the table of operations and the direct form agree, member by member', async () => {
    const layerConfig = { dModel: 4, heads: 2, seed: 1 };
    const cacheConfig = { batch: 1, kvHeads: 2, dK: 2, dV: 2, capacity: 4, dtype: 'int8' };
    const forms = [
      ['attention', local, remote],
      ['layer', local.multiHeadAttention(layerConfig), await remote.multiHeadAttention(layerConfig)],
      ['cache', local.kvCache(cacheConfig), await remote.kvCache(cacheConfig)],
    ];
    for (const [on, direct, worker] of forms) {
      const rows = operationsOn(on);
      const directOnly = Object.keys(DIRECT_ONLY).flatMap((key) =>
        key.startsWith(`${on}.`) ? [key.slice(on.length + 1)] : [],
      );
      for (const name of directOnly) assert.ok(DIRECT_ONLY[`${on}.${name}`].length > 10, `${on}.${name}: say why`);
      const named = [...rows.map((row) => row.name), ...directOnly].sort();
      assert.deepEqual(
        membersOf(direct),
        named,
        `${on}: the direct form's members, and the table's rows with DIRECT_ONLY`,
      );
      assert.deepEqual(membersOf(worker), rows.map((row) => row.name).sort(), `${on}: the worker form's members`);
      for (const row of rows) {
        const what = `${on}.${row.name} (${row.form})`;
        const callable = row.form === 'method' || row.form === 'dispose';
        assert.equal(isMethod(direct, row.name), callable, `${what}: a method in the direct form`);
        assert.equal(isMethod(worker, row.name), callable, `${what}: a method in the worker form`);
        assert.equal(Object.hasOwn(worker, row.name), Object.hasOwn(direct, row.name), `${what}: an own property`);
        if (row.form === 'local') assert.deepEqual(worker[row.name], direct[row.name], `${what}: the same value`);
        if (callable) {
          // the parameters it declares: the direct form's, and a trailing { transfer } where the
          // worker form adds one
          const transfer = row.options === 'transfer' ? 1 : 0;
          assert.equal(worker[row.name].length, direct[row.name].length + transfer, `${what}: its length`);
        }
        if (row.form === 'getter') {
          const value = worker[row.name];
          assert.ok(value instanceof Promise, `${what}: a Promise in the worker form`);
          assertSameBits(await value, direct[row.name], what);
        }
      }
    }
    for (const [, direct, worker] of forms.slice(1)) {
      direct.dispose();
      await worker.dispose();
    }
  });

  test('the calling thread keeps running while the worker computes', async () => {
    const next = rng(10);
    const a = randomTensor(next, [600, 600]),
      b = randomTensor(next, [600, 600]);
    let ticks = 0,
      done = false;
    const tick = () => {
      if (!done) {
        ++ticks;
        setTimeout(tick, 0);
      }
    };
    tick();
    const pending = Array.from({ length: 8 }, () => remote.matmul(a, b));
    assert.ok(pending[0] instanceof Promise);
    await Promise.all(pending);
    done = true;
    assert.ok(ticks >= 3, `only ${ticks} timer turns while 8 products [600,600]·[600,600] ran`);
  });

  test('attention, with causal, a mask and trace, equals the synchronous form bitwise', async () => {
    const next = rng(11);
    for (const [nQ, nK, dK, dV] of [
      [1, 1, 1, 1],
      [7, 13, 5, 3],
      [33, 65, 17, 9],
    ]) {
      const q = randomTensor(next, [nQ, dK]),
        k = randomTensor(next, [nK, dK]),
        v = randomTensor(next, [nK, dV]);
      const keep = tensor(
        Uint8Array.from({ length: nQ * nK }, (_, i) => (i % 3 ? 1 : 0)),
        [nQ, nK],
      );
      const additive = Float32Array.from({ length: nQ * nK }, (_, i) => (i % 5 ? 0.5 : -Infinity));
      for (const options of [
        undefined,
        { causal: true, trace: true },
        { mask: keep, scale: 0.3, trace: true },
        { mask: additive, causal: true },
      ]) {
        assertSameBits(
          await remote.attention(q, k, v, options),
          local.attention(q, k, v, options),
          `attention [${nQ},${nK},${dK},${dV}]`,
        );
      }
    }
  });

  test('attentionBackward and matmul equal the synchronous form bitwise', async () => {
    const next = rng(12);
    const q = randomTensor(next, [19, 6]),
      k = randomTensor(next, [23, 6]),
      v = randomTensor(next, [23, 5]);
    const dOutput = randomTensor(next, [19, 5]);
    for (const options of [undefined, { causal: true, trace: true }]) {
      assertSameBits(
        await remote.attentionBackward(q, k, v, dOutput, options),
        local.attentionBackward(q, k, v, dOutput, options),
        'attentionBackward',
      );
    }
    const a = randomTensor(next, [37, 29]),
      b = randomTensor(next, [29, 41]),
      bT = randomTensor(next, [41, 29]);
    assertSameBits(await remote.matmul(a, b), local.matmul(a, b), 'matmul');
    assertSameBits(
      await remote.matmul(a, bT, { transposeB: true }),
      local.matmul(a, bT, { transposeB: true }),
      'matmul transposeB',
    );
    assertSameBits(
      await remote.matmul(b, a, { transposeA: true, transposeB: true }),
      local.matmul(b, a, { transposeA: true, transposeB: true }),
      'matmul transposed both',
    );
  });

  test('a layer trained by forward, backward, step stays bitwise equal to the synchronous one', async () => {
    const config = { dModel: 12, heads: 3, bias: true, seed: 4 };
    const mine = local.multiHeadAttention(config);
    const theirs = await remote.multiHeadAttention(config);
    assert.deepEqual(theirs.config, mine.config);
    const next = rng(13);
    const x = randomTensor(next, [2, 9, 12]),
      context = randomTensor(next, [2, 11, 12]);
    for (let i = 0; i < 3; ++i) {
      const options = i === 1 ? { context, trace: true } : { causal: true };
      const forward = mine.forward(x, options);
      assertSameBits(await theirs.forward(x, options), forward, `forward ${i}`);
      const dOutput = tensor(
        forward.output.data.map((y) => 2 * y),
        forward.output.shape,
      );
      const grads = mine.backward(dOutput);
      assertSameBits(await theirs.backward(dOutput), grads, `backward ${i}`);
      mine.step(grads, 0.05);
      assert.equal(await theirs.step(grads, 0.05), undefined);
      assertSameBits(await theirs.weights, mine.weights, `weights after step ${i}`);
    }
    mine.dispose();
    await theirs.dispose();
  });

  test('layers are released in the worker by dispose(), and when their proxy is collected', async () => {
    // One thread: which thread grows which scratch buffer is then always the same.
    const own = await createAttention({ threads: 1, worker: true });
    try {
      const x = randomTensor(rng(14), [32, 64]);
      const config = { dModel: 64, heads: 4, seed: 1 };
      const warm = await own.multiHeadAttention(config);
      await warm.forward(x); // grows the scratch buffers once
      await warm.dispose();
      const baseline = (await own.memory()).allocatedBytes;

      const layer = await own.multiHeadAttention(config);
      await layer.forward(x);
      assert.ok((await own.memory()).allocatedBytes >= baseline + 4 * 64 * 64 * 4, 'the layer holds its weights');
      await layer.dispose();
      await layer.dispose(); // twice is safe, as in the synchronous form
      assert.equal((await own.memory()).allocatedBytes, baseline);

      await (async () => {
        await (await own.multiHeadAttention(config)).forward(x);
      })(); // never disposed
      await assertCollectedBackTo(own, baseline);
    } finally {
      await own.dispose();
    }
  });

  test('decoding over a kvCache, by attention() and by a layer, equals the synchronous form bitwise', async () => {
    const next = rng(19);
    const config = { batch: 2, kvHeads: 2, dK: 8, dV: 6, capacity: 12 };
    const mine = local.kvCache(config);
    const theirs = await remote.kvCache(config);
    for (const name of ['batch', 'kvHeads', 'dK', 'dV', 'capacity']) assert.equal(theirs[name], mine[name], name);
    // A prefill of 3 tokens, then 1 token at a time: q [B,Hq,nQ,dK], k [B,Hkv,nQ,dK], v [B,Hkv,nQ,dV].
    for (const [i, nQ] of [3, 1, 1, 2].entries()) {
      const q = randomTensor(next, [2, 4, nQ, 8]),
        k = randomTensor(next, [2, 2, nQ, 8]),
        v = randomTensor(next, [2, 2, nQ, 6]);
      const options = { causal: true, rotary: i % 2 === 0, qkOutput: 'weights' };
      assertSameBits(
        await remote.attention(q, k, v, { ...options, cache: theirs }),
        local.attention(q, k, v, { ...options, cache: mine }),
        `attention step ${i}`,
      );
      assert.equal(await theirs.length, mine.length);
    }
    await theirs.truncate(4);
    mine.truncate(4);
    assert.equal(await theirs.length, 4);
    const q = randomTensor(next, [2, 4, 1, 8]),
      k = randomTensor(next, [2, 2, 1, 8]),
      v = randomTensor(next, [2, 2, 1, 6]);
    const expected = local.attention(q, k, v, { cache: mine });
    assertSameBits(
      await remote.attention(q, k, v, { cache: theirs, transfer: true }),
      expected,
      'attention after truncate, with transfer',
    );
    await theirs.reset();
    mine.reset();
    assert.equal(await theirs.length, 0);
    mine.dispose();
    await theirs.dispose();

    const layerConfig = { dModel: 16, heads: 4, kvHeads: 2, rotary: true, softcap: 20, seed: 5 };
    const [layer, remoteLayer] = [local.multiHeadAttention(layerConfig), await remote.multiHeadAttention(layerConfig)];
    const cacheConfig = { batch: 1, kvHeads: 2, dK: 4, dV: 4, capacity: 8 };
    const [cache, remoteCache] = [local.kvCache(cacheConfig), await remote.kvCache(cacheConfig)];
    for (const n of [3, 1, 1, 1]) {
      const x = randomTensor(next, [n, 16]);
      assertSameBits(
        await remoteLayer.forward(x, { cache: remoteCache, causal: true }),
        layer.forward(x, { cache, causal: true }),
        `layer step over ${cache.length} tokens`,
      );
    }
    assert.equal(await remoteCache.length, 6);
    layer.dispose();
    cache.dispose();
    await remoteLayer.dispose();
    await remoteCache.dispose();
  });

  test('a float16 kvCache in the worker says its dtype and decodes as the synchronous form does, bitwise', async () => {
    const next = rng(23);
    const config = { batch: 1, kvHeads: 2, dK: 8, dV: 6, capacity: 8, dtype: 'float16' };
    const [mine, theirs] = [local.kvCache(config), await remote.kvCache(config)];
    assert.equal(theirs.dtype, 'float16');
    for (const [i, nQ] of [3, 1, 1].entries()) {
      const q = randomTensor(next, [1, 4, nQ, 8]),
        k = randomTensor(next, [1, 2, nQ, 8]),
        v = randomTensor(next, [1, 2, nQ, 6]);
      assertSameBits(
        await remote.attention(q, k, v, { causal: true, cache: theirs }),
        local.attention(q, k, v, { causal: true, cache: mine }),
        `attention step ${i}`,
      );
    }
    mine.dispose();
    await theirs.dispose();
  });

  // What the calling thread posts for float16 inputs: a copy of their bits (2 bytes a value),
  // transferred, widened to float32 by the run in the worker, never here.
  test("float16 inputs go to the worker as their 16-bit data, and give the synchronous form's results bitwise", async () => {
    const next = rng(24);
    const half = (shape) => tensor(toFloat16Bits(randomTensor(next, shape).data), shape, { dtype: 'float16' });
    const posted = [];
    const { Worker } = await import('node:worker_threads');
    const postMessage = Worker.prototype.postMessage;
    Worker.prototype.postMessage = function (message, ...rest) {
      if (message?.op) posted.push(message);
      return Reflect.apply(postMessage, this, [message, ...rest]);
    };
    // every typed array a message holds -> [path, array]
    const arrays = (value, path = 'args') =>
      ArrayBuffer.isView(value)
        ? [[path, value]]
        : value !== null && typeof value === 'object'
          ? Object.entries(value).flatMap(([key, v]) => arrays(v, `${path}.${key}`))
          : [];
    const config = { dModel: 8, heads: 2, seed: 4 };
    const [direct, layer] = [local.multiHeadAttention(config), await remote.multiHeadAttention(config)];
    try {
      const [q, k, v] = [half([1, 2, 5, 8]), half([1, 2, 7, 8]), half([1, 2, 7, 8])];
      const [pastKey, pastValue] = [half([1, 2, 3, 8]), half([1, 2, 3, 8])];
      const [q4, k4, v4] = [half([1, 2, 5, 8]), half([1, 2, 2, 8]), half([1, 2, 2, 8])];
      const [x, w, dOut] = [half([5, 8]), half([8, 3]), half([1, 2, 5, 8])];
      const mask = half([1, 1, 5, 7]); // added to the scores
      const calls = [
        ['attention', (a) => a.attention(q, k, v, { causal: true })],
        ['attention with a past', (a) => a.attention(q4, k4, v4, { pastKey, pastValue })],
        ['attention with a float16 mask', (a) => a.attention(q, k, v, { mask })],
        ['attentionBackward', (a) => a.attentionBackward(q, k, v, dOut)],
        ['matmul', (a) => a.matmul(x, w)],
      ];
      for (const [name, call] of calls) {
        posted.length = 0;
        assertSameBits(await call(remote), call(local), name);
        const sent = arrays(posted.at(-1).args);
        assert.ok(sent.length >= 2, `${name}: its inputs were posted`);
        for (const [path, array] of sent) {
          assert.ok(array instanceof Uint16Array, `${name}: ${path} is posted as a ${array.constructor.name}`);
          assert.equal(array.buffer.byteLength, 0, `${name}: ${path}, the package's copy, is moved, not copied again`);
        }
      }
      posted.length = 0;
      const dOutput = half([5, 8]);
      assertSameBits(await layer.forward(x), direct.forward(x), 'forward');
      assertSameBits(await layer.backward(dOutput), direct.backward(dOutput), 'backward');
      for (const message of posted) {
        for (const [path, array] of arrays(message.args)) {
          assert.ok(array instanceof Uint16Array, `${message.op}: ${path} is posted as a ${array.constructor.name}`);
        }
      }
      assert.deepEqual(
        posted.map((m) => m.op),
        ['layer.forward', 'layer.backward'],
      );
    } finally {
      Worker.prototype.postMessage = postMessage;
      direct.dispose();
      await layer.dispose();
    }
  });

  test("errors over a kvCache reject with the synchronous form's class and message, leaving the cache as it was", async () => {
    const config = { batch: 1, kvHeads: 1, dK: 4, dV: 4, capacity: 4 };
    const other = [await createAttention({ threads: 1 }), await createAttention({ threads: 1, worker: true })];
    try {
      const forms = [local, remote];
      const caches = await Promise.all(forms.map((a) => a.kvCache(config)));
      const foreign = await Promise.all(other.map((a) => a.kvCache(config)));
      const gone = await Promise.all(forms.map((a) => a.kvCache(config)));
      for (const c of gone) await c.dispose();
      const layers = await Promise.all(forms.map((a) => a.multiHeadAttention({ dModel: 8, heads: 2, kvHeads: 1 })));
      const t = (shape, value = 0.5) => tensor(new Float32Array(shape.reduce((a, b) => a * b, 1)).fill(value), shape);
      const [q, k] = [t([1, 1, 2, 4]), t([1, 1, 2, 4])];
      for (const [i, c] of caches.entries()) await forms[i].attention(q, k, k, { cache: c }); // 2 of 4 rows
      const calls = {
        'keys wider than the cache': (a, c) =>
          a.attention(t([1, 1, 1, 6]), t([1, 1, 1, 6]), t([1, 1, 1, 4]), { cache: c }),
        'more keys than fit': (a, c) => a.attention(t([1, 1, 3, 4]), t([1, 1, 3, 4]), t([1, 1, 3, 4]), { cache: c }),
        'a cache and pastKey': (a, c) => a.attention(q, k, k, { cache: c, pastKey: k, pastValue: k }),
        'NaN in the new keys': (a, c) => a.attention(q, t([1, 1, 2, 4], NaN), k, { cache: c }),
        'a cache that is no cache': (a) => a.attention(q, k, k, { cache: { length: 0 } }),
        "another instance's cache": (a, c, i) => a.attention(q, k, k, { cache: foreign[i] }),
        'a disposed cache': (a, c, i) => a.attention(q, k, k, { cache: gone[i] }),
        'a layer step with context': (a, c, i) => layers[i].forward(t([1, 8]), { cache: c, context: t([1, 8]) }),
        'a layer step too wide for the cache': (a, c, i) => layers[i].forward(t([3, 8]), { cache: c }),
        'truncate past the length': (a, c) => c.truncate(3),
        'truncate by a string': (a, c) => c.truncate('1'),
        'truncate a disposed cache': (a, c, i) => gone[i].truncate(0),
        'reset a disposed cache': (a, c, i) => gone[i].reset(),
        'a cache without a config': (a) => a.kvCache(),
        'a cache with capacity 0': (a) => a.kvCache({ ...config, capacity: 0 }),
      };
      for (const [title, call] of Object.entries(calls)) {
        const expected = await errorOf(() => call(local, caches[0], 0));
        const got = await errorOf(() => call(remote, caches[1], 1));
        assert.equal(got.constructor, expected.constructor, `${title}: ${got.constructor.name}: ${got.message}`);
        assert.equal(got.message, expected.message, title);
        assert.ok(expected.constructor === TypeError || expected.constructor === RangeError, title);
        assert.equal(await caches[1].length, 2, `${title} changed the cache`);
        assert.equal(caches[0].length, 2);
      }
      assert.equal(await gone[1].length, 0);
      const q1 = t([1, 1, 1, 4], 0.25);
      assertSameBits(
        await remote.attention(q1, q1, q1, { cache: caches[1] }),
        local.attention(q1, q1, q1, { cache: caches[0] }),
        'the cache after the errors',
      );
      for (const l of layers) await l.dispose();
    } finally {
      other[0].dispose();
      await other[1].dispose();
    }
  });

  test('caches are released in the worker by dispose(), and when their proxy is collected', async () => {
    const own = await createAttention({ threads: 1, worker: true });
    try {
      const config = { batch: 1, kvHeads: 2, dK: 16, dV: 16, capacity: 64 };
      const x = randomTensor(rng(20), [1, 2, 1, 16]);
      const warm = await own.kvCache(config);
      await own.attention(x, x, x, { cache: warm }); // grows the scratch buffers once
      await warm.dispose();
      const baseline = (await own.memory()).allocatedBytes;

      const cache = await own.kvCache(config);
      await own.attention(x, x, x, { cache });
      assert.ok((await own.memory()).allocatedBytes >= baseline + 4 * 2 * 64 * 32, 'the cache holds its rows');
      await cache.dispose();
      await cache.dispose(); // twice is safe, as in the synchronous form
      assert.equal(await cache.length, 0);
      assert.equal((await own.memory()).allocatedBytes, baseline);

      await (async () => {
        await own.attention(x, x, x, { cache: await own.kvCache(config) });
      })(); // never disposed
      await assertCollectedBackTo(own, baseline);

      const kept = await own.kvCache(config);
      await own.dispose();
      const e = await errorOf(() => kept.truncate(0));
      assert.equal(
        e.message,
        'kvCache.truncate: this attention instance was disposed; create a new one with createAttention()',
      );
    } finally {
      await own.dispose();
    }
  });

  // Calls that must fail, each made on both forms.
  const q = tensor(new Float32Array(12).fill(0.5), [4, 3]);
  const bad = {
    'q of the wrong kind': (a) => a.attention([1, 2], q, q),
    'k with the wrong width': (a) => a.attention(q, tensor(new Float32Array(10), [5, 2]), q),
    'NaN in v': (a) => a.attention(q, q, tensor(new Float32Array(12).fill(NaN), [4, 3])),
    'an unknown option': (a) => a.attention(q, q, q, { causl: true }),
    'a function as causal': (a) => a.attention(q, q, q, { causal: () => true }),
    'a symbol as scale': (a) => a.attention(q, q, q, { scale: Symbol('s') }),
    'null options': (a) => a.matmul(q, q, null),
    'matmul inner sizes': (a) => a.matmul(q, q),
    'dOutput of the wrong shape': (a) => a.attentionBackward(q, q, q, tensor(new Float32Array(4), [2, 2])),
    'a layer without dModel': (a) => a.multiHeadAttention({ heads: 2 }),
    'no layer config at all': (a) => a.multiHeadAttention(),
    'heads that do not divide dModel': (a) => a.multiHeadAttention({ dModel: 10, heads: 3 }),
    'a string as transposeA': (a) =>
      a.matmul(tensor(new Float32Array(1), [1, 1]), tensor(new Float32Array(1), [1, 1]), { transposeA: 'yes' }),
    "a mask of dtype 'int8'": (a) =>
      a.attention(q, q, q, { mask: { data: new Uint8Array(16), shape: [4, 4], dtype: 'int8' } }),
    '2-D attentionBackward with a cache': (a) => a.attentionBackward(q, q, q, q, { cache: {} }),
    'a layer with both seed and weights': (a) =>
      a.multiHeadAttention({ dModel: 2, heads: 1, seed: 1, weights: { wq: tensor(new Float32Array(4), [2, 2]) } }),
  };
  for (const [title, call] of Object.entries(bad)) {
    test(`errors: ${title} rejects with the synchronous form's class and message`, async () => {
      const expected = await errorOf(() => call(local));
      const got = await errorOf(() => call(remote));
      assert.equal(got.constructor, expected.constructor, `${got.constructor.name}: ${got.message}`);
      assert.equal(got.message, expected.message);
      assert.ok(expected.constructor === TypeError || expected.constructor === RangeError);
    });
  }

  test('errors of a layer: backward before forward, a wrong step, a disposed layer', async () => {
    const config = { dModel: 4, heads: 2, seed: 2 };
    const layers = [local.multiHeadAttention(config), await remote.multiHeadAttention(config)];
    const calls = [
      (l) => l.backward(tensor(new Float32Array(8), [2, 4])),
      (l) => l.forward(tensor(new Float32Array(6), [2, 3])),
      (l) => l.step({ dwq: tensor(new Float32Array(4), [2, 2]) }, 0.1),
      (l) => l.step({ dbq: tensor(new Float32Array(4), [4]) }, 0.1),
      (l) => l.step({}, Infinity),
      (l) => {
        l.dispose();
        return l.forward(tensor(new Float32Array(8), [2, 4]));
      },
    ];
    for (const call of calls) {
      const [expected, got] = [await errorOf(() => call(layers[0])), await errorOf(() => call(layers[1]))];
      assert.equal(got.constructor, expected.constructor, `${got.constructor.name}: ${got.message}`);
      assert.equal(got.message, expected.message);
    }
  });

  // backward reads dOutput on the calling side, where the saved forward is not known: its
  // errors come after the worker's "no forward" (the direct form's order) and name the saved
  // forward's shape; a getter's own error is rejected with as it was thrown.
  test("errors of backward's dOutput: after the saved forward's, naming its shape", async () => {
    const config = { dModel: 4, heads: 2, seed: 2 };
    const layers = [local.multiHeadAttention(config), await remote.multiHeadAttention(config)];
    const thrown = new RangeError('from a getter');
    const bad = [
      null,
      () => 1,
      Symbol('d'),
      {
        get data() {
          throw thrown;
        },
      },
      { data: new Float32Array(8), shape: [2, 4] },
    ];
    const messages = async (layer) => {
      const seen = [];
      for (const d of bad) {
        const e = await errorOf(() => layer.backward(d));
        seen.push(e === thrown ? 'the getter' : `${e.constructor.name}: ${e.message}`);
      }
      return seen;
    };
    assert.deepEqual(await messages(layers[1]), await messages(layers[0]), 'before any forward');
    const x = randomTensor(rng(34), [3, 4]);
    layers[0].forward(x);
    await layers[1].forward(x);
    const after = await messages(layers[1]);
    assert.deepEqual(after, await messages(layers[0]), 'after a forward');
    assert.match(after[0], /dOutput must be a tensor .* \[3,4\], got null$/);
    assert.equal(after[3], 'the getter');
    layers[0].dispose();
    await layers[1].dispose();
  });

  // The calling side reads a layer's config; a seed's weights are drawn where the layer is made
  // (in the worker), so a page's main thread neither draws nor copies them.
  test("what dOutput's getter throws (a frozen Error, a string) comes back as the direct form throws it", async () => {
    const config = { dModel: 4, heads: 2, seed: 5 };
    const [direct, layer] = [local.multiHeadAttention(config), await remote.multiHeadAttention(config)];
    const x = randomTensor(rng(19), [3, 4]);
    direct.forward(x);
    await layer.forward(x);
    for (const thrown of [Object.freeze(new RangeError('frozen')), 'a string']) {
      const dOutput = () => ({
        get data() {
          throw thrown;
        },
        shape: [3, 4],
      });
      assert.equal(await errorOf(() => direct.backward(dOutput())), thrown);
      assert.equal(await errorOf(() => layer.backward(dOutput())), thrown);
    }
    direct.dispose();
    await layer.dispose();
  });

  test("a seeded layer's snapshot holds its config, not its weights", () => {
    const { parse } = OPERATION.get('attention.multiHeadAttention');
    const seeded = parse('multiHeadAttention', [{ dModel: 256, heads: 4, bias: true, seed: 3 }]);
    assert.equal(seeded.seed, 3);
    assert.equal(buffersOf(seeded).size, 0, 'a seeded config posts arrays');
    const wq = tensor(new Float32Array(16).fill(0.5), [4, 4]);
    const given = parse('multiHeadAttention', [{ dModel: 4, heads: 1, weights: { wq, wk: wq, wv: wq, wo: wq } }]);
    assert.equal(given.seed, null);
    assert.deepEqual([...buffersOf(given)], [wq.data.buffer], 'the given weights are read in place');
  });

  test('the worker option itself is checked', async () => {
    const e = await errorOf(() => createAttention({ worker: 'yes' }));
    assert.equal(e.constructor, TypeError);
    assert.equal(e.message, 'createAttention: worker must be true or false, got a string ("yes")');
  });

  test('concurrent calls each resolve to their own result, an error rejecting only its own', async () => {
    const next = rng(15);
    const cases = Array.from({ length: 24 }, (_, i) => {
      const n = 3 + i,
        d = 1 + (i % 7);
      const [a, b, c] = [randomTensor(next, [n, d]), randomTensor(next, [n + 2, d]), randomTensor(next, [n + 2, 4])];
      if (i % 3 === 0) return { call: (x) => x.matmul(a, b, { transposeB: true }) };
      if (i === 10) return { call: (x) => x.attention(a, b, a), fails: true }; // v has n rows, not n + 2
      return { call: (x) => x.attention(a, b, c, { causal: i % 2 === 0 }) };
    });
    const settled = await Promise.allSettled(cases.map(({ call }) => call(remote)));
    settled.forEach((s, i) => {
      if (cases[i].fails) {
        assert.equal(s.status, 'rejected');
        assert.equal(s.reason.constructor, RangeError);
      } else {
        assert.equal(s.status, 'fulfilled', `call ${i}: ${s.reason?.message}`);
        assertSameBits(s.value, cases[i].call(local), `call ${i}`);
      }
    });
  });

  test('inputs are copied by default and detached only with transfer: true', async () => {
    const next = rng(16);
    const q = randomTensor(next, [8, 4]),
      k = randomTensor(next, [10, 4]),
      v = randomTensor(next, [10, 3]);
    const expected = local.attention(q, k, v);
    const copied = remote.attention(q, k, v);
    assert.equal(q.data.byteLength, 32 * 4, 'q was detached without transfer');
    assertSameBits(await copied, expected, 'attention');
    const copies = [q, k, v].map((t) => tensor(t.data.slice(), t.shape));
    const moved = remote.attention(...copies, { transfer: true });
    for (const t of copies) assert.equal(t.data.byteLength, 0, 'an input was not detached by transfer: true');
    assertSameBits(await moved, expected, 'attention with transfer');

    // One buffer behind all three inputs (and a view on part of it) is transferred once.
    const x = randomTensor(next, [6, 4]);
    const shared = new Float32Array(48);
    shared.set(x.data, 24);
    const xs = tensor(shared.subarray(24), [6, 4]);
    const self = remote.attention(xs, xs, xs, { transfer: true, causal: true });
    assert.equal(shared.byteLength, 0);
    assertSameBits(await self, local.attention(x, x, x, { causal: true }), 'self-attention with transfer');

    const layer = await remote.multiHeadAttention({
      dModel: 4,
      heads: 1,
      weights: {
        wq: tensor(new Float32Array(16).fill(0.1), [4, 4]),
        wk: tensor(new Float32Array(16).fill(0.2), [4, 4]),
        wv: tensor(new Float32Array(16).fill(0.3), [4, 4]),
        wo: tensor(new Float32Array(16).fill(0.4), [4, 4]),
      },
    });
    const input = randomTensor(next, [6, 4]);
    const { output } = await layer.forward(input);
    assert.equal(input.data.byteLength, 6 * 4 * 4);
    assert.ok(output.data instanceof Float32Array && !(output.data.buffer instanceof SharedArrayBuffer));
    const grads = await layer.backward(output, { transfer: true });
    assert.equal(output.data.byteLength, 0, 'backward did not transfer dOutput');
    // step reads the gradients into copies of its own (as the direct form does): transfer
    // sends those, and the caller's gradients stay
    await layer.step(grads, 0.1, { transfer: true });
    assert.equal(grads.dwq.data.byteLength, 16 * 4, "step detached the caller's gradients");
    await layer.dispose();

    const e = await errorOf(() => remote.matmul(q, q, { transfer: 1 }));
    assert.equal(e.constructor, TypeError);
    assert.equal(e.message, 'matmul: transfer must be true or false, got the number 1');
  });

  test('an input on a SharedArrayBuffer is read when the call is made: writing it while the call waits changes nothing', async () => {
    const next = rng(17);
    const onShared = (t) => {
      const data = new Float32Array(new SharedArrayBuffer(t.data.byteLength));
      data.set(t.data);
      return { data, shape: t.shape };
    };
    const [q, k, v] = [
      [5, 4],
      [7, 4],
      [7, 3],
    ].map((shape) => onShared(randomTensor(next, shape)));
    const expected = [local.attention(q, k, v, { causal: true }), local.matmul(q, k, { transposeB: true })];
    const calls = [remote.attention(q, k, v, { causal: true }), remote.matmul(q, k, { transposeB: true })];
    for (const t of [q, k, v]) t.data.fill(7);
    assertSameBits(await calls[0], expected[0], 'attention');
    assertSameBits(await calls[1], expected[1], 'matmul');
    const config = { dModel: 4, heads: 2, seed: 3 };
    const [direct, layer] = [local.multiHeadAttention(config), await remote.multiHeadAttention(config)];
    const x = onShared(randomTensor(next, [6, 4]));
    const forward = [direct.forward(x), layer.forward(x)];
    x.data.fill(-3);
    assertSameBits(await forward[1], forward[0], 'forward');
    direct.dispose();
    await layer.dispose();
  });

  test('a view on part of a larger buffer posts a copy of its values, or with transfer: true the buffer', () => {
    const arena = new Float32Array(1 << 16);
    const view = arena.subarray(8, 12);
    const snapshot = { q: { data: view, shape: Object.freeze([2, 2]) }, list: [view] };
    const sent = postable(snapshot, false);
    assert.equal(sent.q.data.buffer.byteLength, 16, 'the whole buffer is posted');
    assert.deepEqual([...sent.list[0]], [...view]);
    assert.equal(postable(snapshot, true).q.data, view, 'transfer: true sends the buffer itself');
    const onShared = new Float32Array(new SharedArrayBuffer(16));
    assert.ok(postable({ onShared }, true).onShared.buffer instanceof ArrayBuffer, 'a SharedArrayBuffer is posted');
  });

  test("an input detached or shrunk by a later argument's getter: the direct form's error, nothing left in the worker", async () => {
    const next = rng(20);
    const config = { dModel: 4, heads: 2, seed: 6 };
    const [direct, layer] = [local.multiHeadAttention(config), await remote.multiHeadAttention(config)];
    const before = (await remote.memory()).allocatedBytes;
    const detach = (t) => structuredClone(t.data.buffer, { transfer: [t.data.buffer] });
    const shrink = (t) => t.data.buffer.resize(8);
    for (const [how, spoil] of [
      ['detached', detach],
      ['shrunk', shrink],
    ]) {
      // x [3,4] on a resizable buffer; the options' getter spoils it after x was read
      const input = () => {
        const data = new Float32Array(new ArrayBuffer(48, { maxByteLength: 96 }));
        data.set(randomTensor(next, [3, 4]).data);
        const x = { data, shape: [3, 4] };
        const options = {
          get causal() {
            spoil(x);
            return true;
          },
        };
        return [x, options];
      };
      const calls = [
        ['attention', (attn, [x, o]) => attn.attention(x, x, x, o)],
        ['forward', (attn, [x, o], l) => l.forward(x, o)],
      ];
      for (const [name, call] of calls) {
        const expected = await errorOf(() => call(local, input(), direct));
        const got = await errorOf(() => call(remote, input(), layer));
        assert.equal(expected.constructor, TypeError, `${name}, ${how}`);
        assert.equal(`${got.constructor.name}: ${got.message}`, `TypeError: ${expected.message}`, `${name}, ${how}`);
      }
    }
    assert.equal((await remote.memory()).allocatedBytes, before);
    direct.dispose();
    await layer.dispose();
  });

  test("options are read as the direct form reads them: their own keys; a Proxy's has trap is not asked", async () => {
    const next = rng(18);
    const [q, k, v] = [
      [5, 4],
      [7, 4],
      [7, 3],
    ].map((shape) => randomTensor(next, shape));
    const hasThrows = () => new Proxy({ causal: true }, { has: () => assert.fail('has asked') });
    assertSameBits(await remote.attention(q, k, v, hasThrows()), local.attention(q, k, v, hasThrows()), 'a Proxy');
    const inherited = Object.assign(Object.create({ transfer: true }), { causal: true });
    const moved = remote.attention(q, k, v, inherited);
    assert.equal(q.data.byteLength, 5 * 4 * 4, 'an inherited transfer key detached q');
    assertSameBits(await moved, local.attention(q, k, v, { causal: true }), 'inherited transfer');
  });

  test('values structured cloning cannot copy: extra fields are ignored and checks word them as the direct form', async () => {
    const next = rng(31);
    const extras = { weak: new WeakMap(), promise: Promise.resolve(1), set: new WeakSet(), ref: new WeakRef({}) };
    const [q, k, v] = [
      [5, 4],
      [6, 4],
      [6, 3],
    ].map((shape) => ({ ...randomTensor(next, shape), ...extras }));
    assertSameBits(
      await remote.attention(q, k, v, { causal: true }),
      local.attention(q, k, v, { causal: true }),
      'attention',
    );
    const layer = await remote.multiHeadAttention({ dModel: 4, heads: 2, seed: 2 });
    const mine = local.multiHeadAttention({ dModel: 4, heads: 2, seed: 2 });
    assertSameBits(await layer.forward({ ...q, note: extras }), mine.forward(q), 'a layer forward');
    await layer.dispose();
    mine.dispose();
    const calls = {
      'a WeakMap as causal': (a) => a.attention(q, k, v, { causal: new WeakMap() }),
      'a Promise as the mask': (a) => a.attention(q, k, v, { mask: Promise.resolve() }),
      'a WeakSet as q': (a) => a.attention(new WeakSet(), k, v),
    };
    for (const [title, call] of Object.entries(calls)) {
      const expected = await errorOf(() => call(local));
      const got = await errorOf(() => call(remote));
      assert.equal(got.constructor, expected.constructor, `${title}: ${got.message}`);
      assert.equal(got.message, expected.message, title);
    }
  });

  // The worker form reads a call with the direct form's parser where the call was made: what
  // postMessage cannot carry (functions, symbols, Proxies, objects with getters on their
  // prototype) is read as the direct form reads it, and an error rejects at once, before the
  // answers of calls sent earlier (which the worker would answer first).
  test("a call's arguments are read on the calling side: the direct form's errors, before any answer", async () => {
    const next = rng(33);
    const [q, k, v] = [randomTensor(next, [5, 4]), randomTensor(next, [6, 4]), randomTensor(next, [6, 3])];
    const detached = q.data.slice();
    structuredClone(detached.buffer, { transfer: [detached.buffer] });
    const { proxy: revoked, revoke } = Proxy.revocable({}, {});
    revoke();
    const thrown = new RangeError('from a getter');
    const calls = {
      'a function as causal': (a) => a.attention(q, k, v, { causal: () => true }),
      'a function as q': (a) => a.attention(() => q, k, v),
      'a symbol as the mask': (a) => a.attention(q, k, v, { mask: Symbol('mask') }),
      'a Proxy of a Float32Array as q.data': (a) => a.attention({ data: new Proxy(q.data, {}), shape: [5, 4] }, k, v),
      'an object inheriting from Float32Array.prototype as out': (a) =>
        a.attention(q, k, v, { out: Object.create(Float32Array.prototype) }),
      'a detached q.data': (a) => a.attention({ data: detached, shape: [5, 4] }, k, v),
      'a revoked Proxy as the options': (a) => a.attention(q, k, v, revoked),
      'a getter that throws': (a) =>
        a.attention(q, k, v, {
          get causal() {
            throw thrown;
          },
        }),
      'a function as a cache dimension': (a) => a.kvCache({ batch: 1, kvHeads: 1, dK: 4, dV: 4, capacity: () => 4 }),
      'a function as matmul transposeA': (a) => a.matmul(q, k, { transposeA: () => false }),
    };
    const allocated = (await remote.memory()).allocatedBytes;
    for (const [title, call] of Object.entries(calls)) {
      const expected = await errorOf(() => call(local));
      const order = [];
      const earlier = remote.attention(q, k, v).then(() => order.push('the earlier call'));
      const got = await errorOf(() => call(remote));
      order.push('the bad call');
      await earlier;
      assert.deepEqual(order, ['the bad call', 'the earlier call'], `${title}: rejected by the worker`);
      assert.equal(got.constructor, expected.constructor, `${title}: ${got.message}`);
      assert.equal(got.message, expected.message, title);
    }
    assert.equal(await errorOf(() => calls['a getter that throws'](remote)), thrown);
    assert.equal((await remote.memory()).allocatedBytes, allocated, 'the worker holds more memory');

    // a tensor whose data and shape are getters of its class: read as the direct form reads it
    class Lazy {
      constructor(t) {
        this.t = t;
      }
      get data() {
        return this.t.data;
      }
      get shape() {
        return this.t.shape;
      }
    }
    const args = [new Lazy(q), new Lazy(k), new Lazy(v)];
    assertSameBits(await remote.attention(...args), local.attention(...args), 'attention of class instances');
  });

  test('locateFile is asked up front and its answers are what the worker loads', async () => {
    const asked = [];
    const located = await createAttention({
      threads: 1,
      worker: true,
      locateFile: (f) => {
        asked.push(f);
        return WASM + f;
      },
    });
    assert.ok(asked.includes('wasm_attention_simd128.wasm'), asked.join(', '));
    assert.equal(located.backend.threads, 1);
    const q = randomTensor(rng(17), [5, 3]);
    assertSameBits(await located.attention(q, q, q), local.attention(q, q, q), 'attention');
    await located.dispose();

    const e = await errorOf(() => createAttention({ threads: 1, worker: true, locateFile: (f) => `/nowhere/${f}` }));
    assert.match(e.message, /nowhere/);
  });
});

// A call of the worker form that rejects changed nothing: what can be refused is refused before
// anything is sent, and a call whose out the caller detached while it ran is undone in the
// worker before the next request runs (worker_client.js, held requests).
describe('a worker-form call that rejects changed nothing', () => {
  let local, remote;
  before(async () => {
    [local, remote] = await Promise.all([
      createAttention({ threads: 1 }),
      createAttention({ threads: 1, worker: true }),
    ]);
  });
  after(async () => {
    local?.dispose();
    await remote?.dispose();
  });

  const cacheConfig = { batch: 1, kvHeads: 1, dK: 4, dV: 4, capacity: 8, dtype: 'int8' };
  const token = (values) => tensor(Float32Array.from(values), [1, 1, 1, 4]);
  // A fresh Float32Array of n values whose buffer is detached right after `call` was made with it.
  const detachedDuring = (n, call) => {
    const out = new Float32Array(n);
    const pending = call(out);
    structuredClone(out.buffer, { transfer: [out.buffer] });
    return pending;
  };
  const outDetached = { name: 'TypeError', message: /out's buffer was detached or shrunk while the call ran$/ };

  test('out on a buffer transfer: true would send is refused up front: the cache keeps its length', async () => {
    const cache = await remote.kvCache(cacheConfig);
    const q = new Float32Array([1, 2, 3, 4]);
    await assert.rejects(
      remote.attention(tensor(q, [1, 1, 1, 4]), token([0, 0, 0, 0]), token([0, 0, 0, 0]), {
        cache,
        out: q,
        transfer: true,
      }),
      {
        name: 'TypeError',
        message:
          'attention: out shares its buffer with an argument that transfer: true sends to the worker, which would detach it: give out a buffer of its own, or leave transfer out',
      },
    );
    assert.equal(await cache.length, 0);
    assert.equal(q.length, 4, 'q was sent');
    await cache.dispose();
  });

  test('an out detached mid-call over a cache: the append is undone before the next request runs', async () => {
    const [mine, theirs] = [local.kvCache(cacheConfig), await remote.kvCache(cacheConfig)];
    const [q, k, v] = [token([1, 2, 3, 4]), token([0.5, -1, 2, 0]), token([3, 1, -2, 0.25])];
    const rejected = detachedDuring(4, (out) => remote.attention(q, k, v, { cache: theirs, out }));
    // sent before the worker answered the first: it runs after the verdict
    const lengthThen = theirs.length;
    const next = remote.attention(q, k, v, { cache: theirs });
    await assert.rejects(rejected, outDetached);
    assert.equal(await lengthThen, 0, 'a request sent after the rejected one saw its append');
    // the retry appends once: the same output and length as one step of the direct form
    assertSameBits(await next, local.attention(q, k, v, { cache: mine }), 'the step after the rejected one');
    assert.equal(await theirs.length, 1);
    assert.equal(mine.length, 1);
    const out = new Float32Array(4);
    const kept = await remote.attention(q, k, v, { cache: theirs, out });
    assert.equal(kept.output.data, out);
    assertSameBits(kept, local.attention(q, k, v, { cache: mine }), 'a kept step with out');
    assert.equal(await theirs.length, 2);
    mine.dispose();
    await theirs.dispose();
  });

  // A length-tracking out over a resizable ArrayBuffer that grows while the call runs: said so.
  test('an out that grew mid-call over a cache is reported as grown, and the append is undone', async () => {
    const theirs = await remote.kvCache(cacheConfig);
    const [q, k, v] = [token([1, 2, 3, 4]), token([0.5, -1, 2, 0]), token([3, 1, -2, 0.25])];
    const buffer = new ArrayBuffer(16, { maxByteLength: 64 });
    const out = new Float32Array(buffer); // length-tracking: 4 values, then 8
    const pending = remote.attention(q, k, v, { cache: theirs, out });
    buffer.resize(32);
    await assert.rejects(pending, {
      name: 'TypeError',
      message:
        'attention: out grew from 4 to 8 values while the call ran (its resizable ArrayBuffer was resized); the result has 4: pass an out of fixed length',
    });
    assert.equal(await theirs.length, 0);
    await theirs.dispose();
  });

  // A cache lives in the form that made it: the other form's calls say whose it is.
  test('a cache of the other form is refused, naming the form it belongs to; neither cache changes', async () => {
    const [mine, theirs] = [local.kvCache(cacheConfig), await remote.kvCache(cacheConfig)];
    const [q, k, v] = [token([1, 2, 3, 4]), token([0.5, -1, 2, 0]), token([3, 1, -2, 0.25])];
    assert.throws(() => local.attention(q, k, v, { cache: theirs }), {
      name: 'TypeError',
      message:
        'attention: cache is a cache of the worker form (the kvCache() of createAttention({ worker: true })), which lives in its worker; this instance takes a cache from its own attn.kvCache()',
    });
    await assert.rejects(remote.attention(q, k, v, { cache: mine }), {
      name: 'TypeError',
      message:
        'attention: cache is a cache of the direct form (attn.kvCache() of an instance made without worker: true); the worker form takes a cache from its own kvCache(), which lives in its worker',
    });
    const layer = local.multiHeadAttention({ dModel: 4, heads: 1 });
    assert.throws(() => layer.forward(tensor(new Float32Array(4), [1, 4]), { cache: theirs }), {
      name: 'TypeError',
      message: /^multiHeadAttention\.forward: cache is a cache of the worker form/,
    });
    layer.dispose();
    assert.equal(mine.length, 0);
    assert.equal(await theirs.length, 0);
    mine.dispose();
    await theirs.dispose();
  });

  test("a layer's forward with out detached mid-call: backward differentiates the previous forward", async () => {
    const config = { dModel: 4, heads: 2, seed: 5 };
    const [mine, theirs] = [local.multiHeadAttention(config), await remote.multiHeadAttention(config)];
    const next = rng(29);
    const [x, other, dOut] = [randomTensor(next, [3, 4]), randomTensor(next, [2, 4]), randomTensor(next, [3, 4])];
    // no forward yet: the rejected one leaves none
    await assert.rejects(
      detachedDuring(8, (out) => theirs.forward(other, { out })),
      outDetached,
    );
    await assert.rejects(theirs.backward(dOut), {
      name: 'TypeError',
      message: /^multiHeadAttention.backward: there is no forward to differentiate/,
    });
    mine.forward(x);
    await theirs.forward(x);
    await assert.rejects(
      detachedDuring(8, (out) => theirs.forward(other, { out })),
      outDetached,
    );
    const sentBefore = theirs.backward(dOut); // queued behind the rejected forward's verdict
    assertSameBits(await sentBefore, mine.backward(dOut), 'backward after a rejected forward');

    // over a cache: the cache keeps its length and backward still follows the forward before
    const cacheOf = { batch: 1, kvHeads: 2, dK: 2, dV: 2, capacity: 4 };
    const cache = await remote.kvCache(cacheOf);
    await assert.rejects(
      detachedDuring(8, (out) => theirs.forward(other, { cache, out })),
      outDetached,
    );
    assert.equal(await cache.length, 0);
    assertSameBits(await theirs.backward(dOut), mine.backward(dOut), 'backward after a rejected step over a cache');
    await cache.dispose();
    mine.dispose();
    await theirs.dispose();
  });

  test('held forwards, kept or undone, leave no saved forward behind in wasm memory', async () => {
    const layer = await remote.multiHeadAttention({ dModel: 8, heads: 2, seed: 7 });
    const next = rng(32);
    const x = randomTensor(next, [5, 8]);
    const allocated = async () => (await remote.memory()).allocatedBytes;
    await layer.forward(x, { out: new Float32Array(40) });
    const baseline = await allocated();
    for (let i = 0; i < 3; ++i) {
      await layer.forward(x, { out: new Float32Array(40) });
      const kept = await allocated();
      // a saved forward is x, q, k, v and concat, 640 bytes here; the allocator may round one
      // chunk up by a few bytes, depending on where it lands
      assert.ok(Math.abs(kept - baseline) < 64, `a kept forward left ${kept - baseline} bytes more`);
      await assert.rejects(
        detachedDuring(40, (out) => layer.forward(x, { out })),
        outDetached,
      );
      assert.equal(await allocated(), kept, 'the undone forward left memory as the kept one did');
    }
    await layer.dispose();
  });

  test("a layer's forward with out: x.data and transfer: true is refused up front; backward follows the previous forward", async () => {
    const config = { dModel: 4, heads: 1, seed: 6 };
    const [mine, theirs] = [local.multiHeadAttention(config), await remote.multiHeadAttention(config)];
    const next = rng(30);
    const [x, dOut] = [randomTensor(next, [2, 4]), randomTensor(next, [2, 4])];
    mine.forward(x);
    await theirs.forward(x);
    const y = randomTensor(next, [2, 4]);
    await assert.rejects(theirs.forward(y, { out: y.data, transfer: true }), {
      name: 'TypeError',
      message: /^multiHeadAttention.forward: out shares its buffer with an argument that transfer: true sends/,
    });
    assert.equal(y.data.length, 8, 'x was sent');
    assertSameBits(await theirs.backward(dOut), mine.backward(dOut), 'backward after the refused forward');
    mine.dispose();
    await theirs.dispose();
  });
});

describe('dispose', () => {
  test('calls made before dispose() finish; later ones reject as the synchronous form throws', async () => {
    const remote = await createAttention({ threads: 2, worker: true });
    const layer = await remote.multiHeadAttention({ dModel: 4, heads: 2 });
    const q = randomTensor(rng(18), [3, 4]);
    const pending = remote.attention(q, q, q);
    const disposed = remote.dispose();
    assert.equal(remote.dispose(), disposed, "a second dispose() gives the first one's Promise");
    assert.equal((await pending).output.shape[1], 4);
    await disposed;

    const memory = await errorOf(() => remote.memory());
    assert.equal(memory.constructor, TypeError);
    assert.equal(
      memory.message,
      'memory: this attention instance was disposed; create a new one with createAttention()',
    );
    const forward = await errorOf(() => layer.forward(q));
    assert.equal(
      forward.message,
      'multiHeadAttention.forward: this attention instance was disposed; create a new one with createAttention()',
    );
    assert.throws(() => remote.backend, TypeError);
    await layer.dispose(); // a no-op once the instance is gone
  });

  test('a process that creates, uses and disposes the worker form exits by itself with code 0', () => {
    const r = runChild(`
      const attn = await createAttention({ worker: true, threads: 2 });
      const t = { data: new Float32Array([1, 0, 0, 1, 1, 1]), shape: [3, 2] };
      const { output } = await attn.attention(t, t, t);
      console.log(output.data.length);
      await attn.dispose();`);
    assert.equal(r.status, 0, `exit ${r.status} ${r.signal ?? ''} after ${r.seconds}s: ${r.stderr}`);
    assert.equal(r.stdout.trim(), '6');
  });

  // What Firefox sometimes does to the worker's first pthread worker (worker_client.js),
  // made certain: in the process's first worker thread (the first worker form's), a preload
  // makes worker_threads' Worker block its thread for good.
  const HANG_FIRST_POOL =
    'data:text/javascript,import wt from "node:worker_threads";' +
    'if (wt.threadId === 1) wt.Worker = function () { Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0); };';
  test(
    'a worker whose threads hang while starting is replaced by a new one',
    { skip: RUNTIME !== 'node' && 'the hang is made by a preload, a Node flag' },
    () => {
      const r = runChild(
        `
      const attn = await createAttention({ worker: true, threads: 2 });
      const t = { data: new Float32Array([1, 0, 0, 1, 1, 1]), shape: [3, 2] };
      const { output } = await attn.attention(t, t, t);
      console.log(attn.backend.threads, output.data.length);
      await attn.dispose();`,
        30000,
        ['--import', HANG_FIRST_POOL],
      );
      assert.equal(r.status, 0, `exit ${r.status} ${r.signal ?? ''} after ${r.seconds}s: ${r.stderr}`);
      assert.equal(r.stdout.trim(), '2 6');
    },
  );

  test('an idle worker that was never disposed does not keep Node running', () => {
    const r = runChild(`
      const attn = await createAttention({ worker: true, threads: 2 });
      const layer = await attn.multiHeadAttention({ dModel: 4, heads: 2 });
      console.log((await layer.weights).wq.shape.join('x'));`);
    assert.equal(r.status, 0, `exit ${r.status} ${r.signal ?? ''} after ${r.seconds}s: ${r.stderr}`);
    assert.equal(r.stdout.trim(), '4x4');
  });
});

// Found by the hostile round on issue 28's surface (tests/js/package/hostile_calls.test.mjs).
describe('the worker form, as documented (hostile round 2)', () => {
  test(
    'under --experimental-wasm-relaxed-simd the worker form starts, on the relaxed build',
    {
      skip: RUNTIME !== 'node' && 'a Node flag',
    },
    () => {
      const r = runChild(
        `const w = await createAttention({ worker: true, threads: 2 });
        console.log(w.backend.isa);
        await w.dispose();`,
        30000,
        ['--experimental-wasm-relaxed-simd'],
      );
      assert.equal(r.status, 0, `exit ${r.status} ${r.signal ?? ''}: ${r.stderr}`);
      assert.equal(r.stdout.trim(), 'relaxed-simd');
    },
  );

  test("a Proxy around a Float32Array: the worker form rejects with the direct form's message", async () => {
    const [local, remote] = await Promise.all([
      createAttention({ threads: 1 }),
      createAttention({ threads: 1, worker: true }),
    ]);
    try {
      const q = tensor(new Float32Array(12), [3, 4]);
      const proxied = { data: new Proxy(new Float32Array(12), {}), shape: [3, 4] };
      let direct;
      try {
        local.attention(proxied, q, q);
      } catch (e) {
        direct = e;
      }
      assert.ok(direct instanceof TypeError);
      await assert.rejects(remote.attention(proxied, q, q), (e) => {
        assert.ok(e instanceof TypeError);
        assert.equal(e.message, direct.message);
        return true;
      });
    } finally {
      local.dispose();
      await remote.dispose();
    }
  });
});
