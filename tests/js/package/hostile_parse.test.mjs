// Arguments built to break the read-once parsing: buffers detached or shrunk by a later
// argument's getter, masks whose Arrays claim billions of elements, getters that dispose or
// use the instance in the worker form. Each gets a clear TypeError or RangeError naming the
// argument (or the snapshot it read computes the right numbers), quickly, and leaves the
// instance working with nothing more allocated.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';

import { createAttention } from '../../../web/lib/index.js';
import { rawTensor as tensor } from '../helpers/assertions.mjs';
import { rejectsWith, throwsWith } from '../helpers/assertions.mjs';
import { randomTensor, rng } from '../../../scripts/lib/reference.mjs';

const detach = (typedArray) => structuredClone(typedArray.buffer, { transfer: [typedArray.buffer] });

describe('2-D attention: a getter read after the mask or v detaches them', () => {
  let attn, baseline;
  const next = rng(11);
  const [q, k, v] = [randomTensor(next, [2, 4]), randomTensor(next, [3, 4]), randomTensor(next, [3, 4])];
  before(async () => {
    attn = await createAttention({ threads: 1 });
    attn.attention(q, k, v);
    baseline = attn.memory().allocatedBytes;
  });
  after(() => attn.dispose());

  // rotary's and window's getters run after the mask was read: the mask is used as it was read.
  for (const Mask of [Uint8Array, Float32Array]) {
    test(`a ${Mask.name} mask detached or shrunk by a later option's getter: the mask as read`, () => {
      const values = Mask.from([1, 0, 1, 1, 1, 0]); // keep (1 = keep) or bias (0 = none, 1 added)
      const expected = attn.attention(q, k, v, { mask: values.slice() }).output.data;
      const detached = values.slice();
      const byRotary = attn.attention(q, k, v, {
        mask: detached,
        rotary: {
          get offset() {
            detach(detached);
            return 0;
          },
        },
      });
      assert.deepEqual(byRotary.output.data, attn.attention(q, k, v, { mask: values, rotary: true }).output.data);
      const buffer = new ArrayBuffer(values.byteLength, { maxByteLength: values.byteLength });
      const shrunk = new Mask(buffer);
      shrunk.set(values);
      const byWindow = attn.attention(q, k, v, {
        mask: shrunk,
        window: {
          get left() {
            buffer.resize(0);
            return -1;
          },
        },
      });
      assert.deepEqual(byWindow.output.data, expected);
      assert.equal(attn.memory().allocatedBytes, baseline);
    });
  }

  test("a mask detached by a getter of its own shape's elements: the mask as read", () => {
    const values = Uint8Array.from([1, 0, 1, 1, 1, 0]);
    const data = values.slice();
    const shape = [2, 3];
    Object.defineProperty(shape, 1, {
      get() {
        detach(data);
        return 3;
      },
    });
    const got = attn.attention(q, k, v, { mask: tensor(data, shape) }).output.data;
    assert.deepEqual(got, attn.attention(q, k, v, { mask: values }).output.data);
    assert.equal(attn.memory().allocatedBytes, baseline);
  });

  test('v detached by a getter read after it (an option, pastKey): the TypeError naming v.data', () => {
    for (const when of ['causal', 'rotary']) {
      const data = v.data.slice();
      const options =
        when === 'causal'
          ? {
              get causal() {
                detach(data);
                return false;
              },
            }
          : {
              rotary: {
                get offset() {
                  detach(data);
                  return 0;
                },
              },
            };
      throwsWith(
        () => attn.attention(q, k, tensor(data, v.shape), options),
        TypeError,
        /^attention: v\.data: its buffer was detached or shrunk after it was checked$/,
      );
    }
    // on heads: pastKey is read after v
    const next4 = rng(12);
    const [q4, k4, v4] = [1, 2, 2].map((n) => randomTensor(next4, [1, 1, n, 4]));
    const pastValue = randomTensor(next4, [1, 1, 3, 4]);
    const pastKey = {
      shape: [1, 1, 3, 4],
      get data() {
        detach(v4.data);
        return randomTensor(next4, [1, 1, 3, 4]).data;
      },
    };
    throwsWith(
      () => attn.attention(q4, k4, v4, { pastKey, pastValue }),
      TypeError,
      /^attention: v\.data: its buffer was detached or shrunk after it was checked$/,
    );
    assert.equal(attn.memory().allocatedBytes, baseline);
  });
});

// The getters of a tensor's own shape (its elements) run before its data is looked at: one
// that transfers the data's buffer gets the TypeError of a detached buffer, not a RangeError
// about the values' count.
test("a getter of a tensor's shape that detaches its data: the TypeError naming the data", async () => {
  const attn = await createAttention({ threads: 1 });
  const next = rng(18);
  const [q, k, v] = [randomTensor(next, [2, 4]), randomTensor(next, [2, 4]), randomTensor(next, [2, 4])];
  const data = q.data.slice();
  const shape = [2, 4];
  Object.defineProperty(shape, 0, {
    get() {
      detach(data);
      return 2;
    },
  });
  throwsWith(
    () => attn.attention(tensor(data, shape), k, v),
    TypeError,
    /^attention: q\.data's buffer is detached \(transferred or released\); pass a Float32Array whose memory is still there$/,
  );
  attn.dispose();
});

// An Array whose length claims 2^32 - 1 elements: sparse, or a Proxy counting what is read
// (and failing the test once it reads far past where the answer is known).
const HUGE = 2 ** 32 - 1;
function huge(first) {
  const array = [first];
  array.length = HUGE;
  return array;
}
function counted(array, limit = 1000) {
  const counter = { reads: 0 };
  const proxy = new Proxy(array, {
    get(target, key) {
      if (typeof key === 'string' && /^\d+$/.test(key) && ++counter.reads > limit)
        throw new Error(`read ${limit} elements of an Array of ${target.length}`);
      return target[key];
    },
  });
  return { proxy, counter };
}

describe('a mask on heads whose Arrays claim 2^32 - 1 elements', () => {
  let attn, baseline;
  const next = rng(13);
  const [q, k, v] = [
    randomTensor(next, [1, 1, 2, 4]),
    randomTensor(next, [1, 1, 2, 4]),
    randomTensor(next, [1, 1, 2, 4]),
  ];
  before(async () => {
    attn = await createAttention({ threads: 1 });
    attn.attention(q, k, v);
    baseline = attn.memory().allocatedBytes;
  });
  after(() => attn.dispose());

  test('a boolean[] with a hole after its first element: the TypeError naming the hole, elements read up to it', () => {
    const message = /^attention: mask\.data\[1\] is undefined: a boolean\[\] mask holds true \(keep\) or false$/;
    throwsWith(() => attn.attention(q, k, v, { mask: { data: huge(true), shape: [2, 2] } }), TypeError, message);
    const { proxy, counter } = counted(huge(true));
    throwsWith(() => attn.attention(q, k, v, { mask: { data: proxy, shape: [2, 2] } }), TypeError, message);
    assert.ok(counter.reads <= 2, `${counter.reads} elements read`);
    assert.equal(attn.memory().allocatedBytes, baseline);
  });

  test('a shape of 2^32 - 1 sizes: a RangeError, its sizes never copied', () => {
    const message = /^attention: mask\.shape has 4294967295 dimensions/;
    const mask = (shape) => ({ data: new Uint8Array(4).fill(1), shape });
    throwsWith(() => attn.attention(q, k, v, { mask: mask(huge(2)) }), RangeError, message);
    const { proxy, counter } = counted(huge(2));
    throwsWith(() => attn.attention(q, k, v, { mask: mask(proxy) }), RangeError, message);
    assert.equal(counter.reads, 0);
    assert.equal(attn.memory().allocatedBytes, baseline);
  });

  test('a size that is no number: a TypeError, as for a tensor', () => {
    throwsWith(
      () => attn.attention(q, k, v, { mask: { data: new Uint8Array(4).fill(1), shape: ['2', 2] } }),
      TypeError,
      /^attention: mask\.shape\[0\] is a string \("2"\): sizes must be numbers$/,
    );
  });
});

describe("attention on heads: a mask's Uint8Array or kvLength's Int32Array detached or shrunk", () => {
  let attn, baseline;
  const next = rng(15);
  const [q, k, v] = [
    randomTensor(next, [1, 1, 2, 4]),
    randomTensor(next, [1, 1, 2, 4]),
    randomTensor(next, [1, 1, 2, 4]),
  ];
  before(async () => {
    attn = await createAttention({ threads: 1 });
    attn.attention(q, k, v);
    baseline = attn.memory().allocatedBytes;
  });
  after(() => attn.dispose());
  // a view of n elements whose resizable buffer was then shrunk under it
  const shrunk = (Type, n) => {
    const buffer = new ArrayBuffer(n * Type.BYTES_PER_ELEMENT, { maxByteLength: 64 });
    const view = new Type(buffer, 0, n).fill(1);
    buffer.resize(0);
    return view;
  };

  test('detached: the TypeError naming the argument', () => {
    const keep = new Uint8Array(4).fill(1);
    detach(keep);
    throwsWith(
      () => attn.attention(q, k, v, { mask: { data: keep, shape: [2, 2] } }),
      TypeError,
      /^attention: mask\.data's buffer is detached \(transferred or released\); pass a Uint8Array whose memory is still there$/,
    );
    const kvLength = Int32Array.of(2);
    detach(kvLength);
    throwsWith(
      () => attn.attention(q, k, v, { kvLength }),
      TypeError,
      /^attention: kvLength's buffer is detached \(transferred or released\); pass an Int32Array whose memory is still there$/,
    );
    assert.equal(attn.memory().allocatedBytes, baseline);
  });

  test('shrunk out of its buffer: the RangeError of an argument holding no values', () => {
    throwsWith(
      () => attn.attention(q, k, v, { mask: { data: shrunk(Uint8Array, 4), shape: [2, 2] } }),
      RangeError,
      /^attention: mask\.data has 0 values but shape \[2,2\] needs 4$/,
    );
    throwsWith(
      () => attn.attention(q, k, v, { kvLength: shrunk(Int32Array, 1) }),
      RangeError,
      /^attention: kvLength has 0 values but there are 1 sequences \(B\)$/,
    );
    assert.equal(attn.memory().allocatedBytes, baseline);
  });
});

// A layer's forward that fails on its inputs' values or its results (NaN in x, an output that
// overflows float32), over a cache or not: backward() still differentiates the forward before.
test("a layer's failed forward leaves the saved forward as it was", async () => {
  const attn = await createAttention({ threads: 1 });
  const next = rng(16);
  const layer = attn.multiHeadAttention({ dModel: 8, heads: 2, seed: 1 });
  const cache = attn.kvCache({ batch: 1, kvHeads: 2, dK: 4, dV: 4, capacity: 8 });
  const x = randomTensor(next, [3, 8]);
  const dOutput = randomTensor(next, [3, 8]);
  layer.forward(x);
  const expected = layer.backward(dOutput);
  const memory = attn.memory().allocatedBytes;
  const nan = tensor(new Float32Array(24).fill(NaN), [3, 8]);
  const huge = tensor(new Float32Array(24).fill(3e38), [3, 8]);
  const failing = {
    'NaN in x': () => layer.forward(nan),
    'an output that overflows': () => layer.forward(huge),
    'NaN in x over a cache': () => layer.forward(tensor(nan.data.subarray(0, 8), [1, 8]), { cache }),
  };
  for (const [name, call] of Object.entries(failing)) {
    assert.throws(call, RangeError, name);
    assert.deepEqual(layer.backward(dOutput), expected, `backward after a forward failing on ${name}`);
    assert.equal(attn.memory().allocatedBytes, memory, `memory after ${name}`);
  }
  assert.equal(cache.length, 0);
  attn.dispose();
});

// A revoked Proxy wherever an object goes: the TypeError naming the argument, as for any
// other wrong kind of value, in both forms (V8's own "Cannot perform 'IsArray' on a proxy
// that has been revoked" named nothing).
function revoked(target = {}) {
  const { proxy, revoke } = Proxy.revocable(target, {});
  revoke();
  return proxy;
}
const revokedCases = (attn, layer) => {
  const next = rng(17);
  const [q, k, v] = [randomTensor(next, [2, 4]), randomTensor(next, [2, 4]), randomTensor(next, [2, 4])];
  const h = () => randomTensor(next, [1, 1, 2, 4]);
  return {
    'attention: q must be a tensor .*, got a revoked Proxy': () => attn.attention(revoked(), k, v),
    'attention: q\\.shape must be an array of sizes, got a revoked Proxy': () =>
      attn.attention(tensor(q.data, revoked([])), k, v),
    'attention: q\\.data must be a Float32Array, got a revoked Proxy': () =>
      attn.attention(tensor(revoked(q.data), [2, 4]), k, v),
    'attention: options must be an object, got a revoked Proxy': () => attn.attention(q, k, v, revoked()),
    'attention: mask must be .*; got a revoked Proxy': () => attn.attention(q, k, v, { mask: revoked() }),
    'attention: window must be an object, got a revoked Proxy': () => attn.attention(q, k, v, { window: revoked() }),
    'attention: mask must be .*; mask\\.data is a revoked Proxy': () =>
      attn.attention(h(), h(), h(), { mask: { data: revoked([]), shape: [2, 2] } }),
    'attention: kvLength must be .*, got a revoked Proxy': () =>
      attn.attention(h(), h(), h(), { kvLength: revoked([]) }),
    'kvCache: options must be an object, got a revoked Proxy': () => attn.kvCache(revoked()),
    'multiHeadAttention\\.step: options must be an object, got a revoked Proxy': () => layer.step(revoked(), 0.1),
  };
};

test('a revoked Proxy as any argument: the TypeError naming it', async () => {
  const attn = await createAttention({ threads: 1 });
  const layer = attn.multiHeadAttention({ dModel: 4, heads: 1 });
  const baseline = attn.memory().allocatedBytes;
  for (const [message, call] of Object.entries(revokedCases(attn, layer)))
    throwsWith(call, TypeError, new RegExp(`^${message}$`));
  assert.equal(attn.memory().allocatedBytes, baseline);
  attn.dispose();
});

test('a revoked Proxy as any argument of the worker form: the same TypeError', async () => {
  const attn = await createAttention({ worker: true, threads: 1 });
  const layer = await attn.multiHeadAttention({ dModel: 4, heads: 1 });
  for (const [message, call] of Object.entries(revokedCases(attn, layer))) {
    let error;
    try {
      await call();
    } catch (e) {
      error = e;
    }
    assert.equal(error?.constructor, TypeError, message);
    assert.match(error.message, new RegExp(`^${message}$`));
  }
  await attn.dispose();
});

// Typed arrays with no bytes left (a detached buffer, or a resizable one shrunk under the view)
// cannot be cloned for postMessage; the worker form's errors are still the synchronous form's.
test("a detached or shrunk typed array in the worker form: the synchronous form's error", async () => {
  const local = await createAttention({ threads: 1 });
  const remote = await createAttention({ worker: true, threads: 1 });
  const next = rng(20);
  const [q, k, v] = [randomTensor(next, [2, 4]), randomTensor(next, [2, 4]), randomTensor(next, [2, 4])];
  const detached = (data) => {
    const copy = data.slice();
    detach(copy);
    return copy;
  };
  const shrunk = (data) => {
    const buffer = new ArrayBuffer(data.byteLength, { maxByteLength: data.byteLength });
    const view = new data.constructor(buffer, 0, data.length);
    buffer.resize(0);
    return view;
  };
  const calls = {
    'q.data detached': (a) => a.attention(tensor(detached(q.data), q.shape), k, v),
    'q.data shrunk': (a) => a.attention(tensor(shrunk(q.data), q.shape), k, v),
    'a mask detached': (a) => a.attention(q, k, v, { mask: detached(new Uint8Array(4).fill(1)) }),
    'kvLength detached': (a) =>
      a.attention(tensor(q.data, [1, 1, 2, 4]), tensor(k.data, [1, 1, 2, 4]), tensor(v.data, [1, 1, 2, 4]), {
        kvLength: detached(Int32Array.of(2)),
      }),
  };
  for (const [name, call] of Object.entries(calls)) {
    const errors = [];
    for (const form of [local, remote]) {
      try {
        await call(form);
        errors.push('no error');
      } catch (e) {
        errors.push(`${e.constructor.name}: ${e.message}`);
      }
    }
    assert.equal(errors[1], errors[0], name);
  }
  local.dispose();
  await remote.dispose();
});

// The worker form, where a call's arguments are read on the calling side by the direct form's
// parser: a getter that disposes what the call is about gets the direct form's error, as a
// rejection, and never a Promise that settles neither way.
describe('the worker form: a getter that disposes the instance, the layer or the cache', () => {
  const next = rng(14);
  const [q, k, v] = [randomTensor(next, [2, 4]), randomTensor(next, [2, 4]), randomTensor(next, [2, 4])];
  const NEVER = 'never settled';
  // promise's rejection message, or NEVER when it does not settle within 5 s
  async function rejection(promise) {
    let timer;
    const never = new Promise((resolve) => {
      timer = setTimeout(() => resolve(NEVER), 5000);
    });
    const settled = promise.then(
      () => 'resolved',
      (e) => `${e.constructor.name}: ${e.message}`,
    );
    const first = await Promise.race([settled, never]);
    clearTimeout(timer);
    return first;
  }
  const disposing = (dispose, option = 'causal', value = false) => ({
    get [option]() {
      dispose();
      return value;
    },
  });

  test('the instance, during attention (repeated: the worker may answer before it ends)', async () => {
    for (let i = 0; i < 4; ++i) {
      const attn = await createAttention({ worker: true, threads: 1 });
      const called = attn.attention(
        q,
        k,
        v,
        disposing(() => attn.dispose()),
      );
      assert.equal(
        await rejection(called),
        'TypeError: attention: this attention instance was disposed; create a new one with createAttention()',
      );
      await attn.dispose();
    }
  });

  test("a getter deeper than the parser reads never runs: the direct form's error, the instance alive", async () => {
    const local = await createAttention({ threads: 1 });
    const attn = await createAttention({ worker: true, threads: 1 });
    const root = {};
    let deep = root;
    for (let depth = 0; depth < 12; ++depth) deep = deep.x = {};
    let ran = false;
    Object.defineProperty(deep, 'y', {
      enumerable: true,
      get: () => {
        ran = true;
        attn.dispose();
        return 1;
      },
    });
    let direct;
    try {
      local.attention(q, k, v, { window: root });
    } catch (e) {
      direct = `${e.constructor.name}: ${e.message}`;
    }
    assert.equal(direct, 'TypeError: attention: window: unknown option "x" (known: left, right)');
    assert.equal(await rejection(attn.attention(q, k, v, { window: root })), direct);
    assert.equal(ran, false);
    assert.equal((await attn.memory()).wasmBytes > 0, true);
    local.dispose();
    await attn.dispose();
  });

  test("a layer, during its forward; a cache's truncate reads no getter of n", async () => {
    const attn = await createAttention({ worker: true, threads: 1 });
    const layer = await attn.multiHeadAttention({ dModel: 4, heads: 1 });
    const forward = layer.forward(
      q,
      disposing(() => layer.dispose()),
    );
    assert.equal(await rejection(forward), 'TypeError: multiHeadAttention.forward: this layer was disposed');
    const cache = await attn.kvCache({ batch: 1, kvHeads: 1, dK: 4, dV: 4, capacity: 4 });
    let ran = false;
    const n = {
      get valueOf() {
        ran = true;
        cache.dispose();
        return () => 0;
      },
    };
    assert.equal(await rejection(cache.truncate(n)), 'TypeError: kvCache.truncate: n must be a number, got an Object');
    assert.equal(ran, false);
    const c = await attn.kvCache({ batch: 1, kvHeads: 1, dK: 4, dV: 4, capacity: 4 });
    assert.equal(
      await rejection(
        c.truncate(
          disposing(
            () => c.dispose(),
            'valueOf',
            () => 0,
          ),
        ),
      ),
      'TypeError: kvCache.truncate: n must be a number, got an Object',
    );
    await attn.dispose();
  });

  test('a getter that throws: a rejection with its own error, never a throw', async () => {
    const attn = await createAttention({ worker: true, threads: 1 });
    const cache = await attn.kvCache({ batch: 1, kvHeads: 1, dK: 4, dV: 4, capacity: 4 });
    const thrown = new RangeError('from the getter');
    const throwing = {
      get batch() {
        throw thrown;
      },
    };
    let made;
    assert.doesNotThrow(() => {
      made = attn.kvCache(throwing);
    });
    assert.equal(await made.catch((e) => e), thrown);
    const layer = await attn.multiHeadAttention({ dModel: 4, heads: 1 });
    let forward;
    assert.doesNotThrow(() => {
      forward = layer.forward(tensor(new Float32Array(4), [1, 4]), {
        cache,
        get causal() {
          throw thrown;
        },
      });
    });
    assert.equal(await forward.catch((e) => e), thrown);
    assert.equal(await cache.length, 0);
    await attn.dispose();
  });
});

// A cache whose instance was disposed went with it: its length reads 0 (as once the cache
// itself is disposed), in both forms, instead of reading the disposed module's memory.
test("a cache's length once its instance was disposed: 0, in both forms", async () => {
  const config = { batch: 1, kvHeads: 1, dK: 4, dV: 4, capacity: 4 };
  const x = randomTensor(rng(19), [1, 1, 2, 4]);
  const attn = await createAttention({ threads: 1 });
  const cache = attn.kvCache(config);
  attn.attention(x, x, x, { cache });
  assert.equal(cache.length, 2);
  attn.dispose();
  assert.equal(cache.length, 0);
  const remote = await createAttention({ worker: true, threads: 1 });
  const remoteCache = await remote.kvCache(config);
  await remote.attention(x, x, x, { cache: remoteCache });
  assert.equal(await remoteCache.length, 2);
  await remote.dispose();
  assert.equal(await remoteCache.length, 0);
});

// wasmBinary with no bytes: the error names it, before the loader aborts on them (a
// RuntimeError 'Aborted(TypeError: Cannot perform Construct on a detached ArrayBuffer)', with
// the glue's lines on the console).
test('createAttention: a wasmBinary detached or empty names it', async () => {
  const view = new Uint8Array(8);
  detach(view);
  for (const wasmBinary of [view.buffer, view]) {
    await rejectsWith(
      createAttention({ threads: 1, wasmBinary }),
      TypeError,
      /^createAttention: wasmBinary's buffer is detached \(transferred or released\); pass the \.wasm file's bytes$/,
    );
  }
  await rejectsWith(
    createAttention({ threads: 1, wasmBinary: new Uint8Array(0) }),
    RangeError,
    /^createAttention: wasmBinary is empty; pass the \.wasm file's bytes$/,
  );
});

// null is no size: kvHeads, dK and dV given as null get the TypeError of a wrong kind, as
// every other option does, instead of silently taking their defaults.
test('a layer config with kvHeads, dK or dV null: the TypeError naming it', async () => {
  const attn = await createAttention({ threads: 1 });
  for (const name of ['kvHeads', 'dK', 'dV']) {
    throwsWith(
      () => attn.multiHeadAttention({ dModel: 8, heads: 2, [name]: null }),
      TypeError,
      new RegExp(`^multiHeadAttention: ${name} must be a number, got null$`),
    );
  }
  attn.dispose();
});
