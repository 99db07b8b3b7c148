// A caller's code that runs while the package reads an argument (a getter) and disposes or uses
// the very objects the call is about to use: a clear error, never a write into freed memory or
// a result computed from stale state.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { createAttention, tensor } from '../../../web/lib/index.js';
import { throwsWith } from '../helpers/assertions.mjs';
import { randomTensor, rng } from '../../../scripts/lib/reference.mjs';

const attn = await createAttention({ threads: 1 });
test.after(() => attn.dispose());
const heads4 = (next, n) => randomTensor(next, [1, 1, n, 4]);

// Every argument is read before the call looks at the cache: a getter that disposes it gets
// the "disposed" error; one that appends to it leaves the call acting on the cache as it then
// is, as if the getter's call had come first.
test('a cache disposed or appended to by a getter of the same call: the call sees the cache as the getter left it', () => {
  const next = rng(3);
  const before = attn.memory().allocatedBytes;
  for (const meddle of ['dispose', 'append']) {
    const cache = attn.kvCache({ batch: 1, kvHeads: 1, dK: 4, dV: 4, capacity: 8 });
    const [q, k, v] = [heads4(next, 1), heads4(next, 1), heads4(next, 1)];
    const [q0, k0, v0] = [heads4(next, 1), heads4(next, 1), heads4(next, 1)];
    const window = {
      get left() {
        if (meddle === 'dispose') cache.dispose();
        else attn.attention(q0, k0, v0, { cache });
        return -1;
      },
    };
    if (meddle === 'dispose') {
      throwsWith(() => attn.attention(q, k, v, { cache, window }), TypeError, /^attention: the cache was disposed$/);
      continue;
    }
    const { output } = attn.attention(q, k, v, { cache, window });
    assert.equal(cache.length, 2, 'the getter appended, then the call');
    const inOrder = attn.kvCache({ batch: 1, kvHeads: 1, dK: 4, dV: 4, capacity: 8 });
    attn.attention(q0, k0, v0, { cache: inOrder });
    assert.deepEqual(output.data, attn.attention(q, k, v, { cache: inOrder }).output.data);
    inOrder.dispose();
    cache.dispose();
  }
  // the instance still works, and nothing stayed allocated
  const fresh = attn.kvCache({ batch: 1, kvHeads: 1, dK: 4, dV: 4, capacity: 8 });
  attn.attention(heads4(next, 2), heads4(next, 2), heads4(next, 2), { cache: fresh, causal: true });
  assert.equal(fresh.length, 2);
  fresh.dispose();
  assert.equal(attn.memory().allocatedBytes, before);
});

test("a getter that appends to the cache during a layer's cached forward: the step follows it", () => {
  const next = rng(6);
  const layer = attn.multiHeadAttention({ dModel: 8, heads: 2, seed: 1 });
  const cache = attn.kvCache({ batch: 1, kvHeads: 2, dK: 4, dV: 4, capacity: 8 });
  const [x0, x] = [randomTensor(next, [2, 8]), randomTensor(next, [1, 8])];
  const keep = Uint8Array.from([1, 0, 1]); // [nQ, cache.length + nQ] once the getter appended
  const { output } = layer.forward(x, {
    cache,
    mask: {
      shape: [1, 3],
      get data() {
        layer.forward(x0, { cache, causal: true });
        return keep;
      },
    },
  });
  assert.equal(cache.length, 3);
  const inOrder = attn.kvCache({ batch: 1, kvHeads: 2, dK: 4, dV: 4, capacity: 8 });
  layer.forward(x0, { cache: inOrder, causal: true });
  assert.deepEqual(output.data, layer.forward(x, { cache: inOrder, mask: tensor(keep, [1, 3]) }).output.data);
  for (const c of [cache, inOrder]) c.dispose();
  layer.dispose();
});

// Each call's options or config with a getter that disposes the instance while it is read.
const disposingInstanceCalls = {
  attention: (a, options) => a.attention(t2(7), t2(8), t2(9), options({ causal: false })),
  'attention on heads': (a, options) =>
    a.attention(heads4(rng(7), 2), heads4(rng(8), 2), heads4(rng(9), 2), options({ causal: false })),
  attentionBackward: (a, options) => a.attentionBackward(t2(7), t2(8), t2(9), t2(10), options({ causal: false })),
  matmul: (a, options) => a.matmul(t2(7), t2(8), options({ transposeB: true })),
  kvCache: (a, options) => a.kvCache(options({ batch: 1, kvHeads: 1, dK: 4, dV: 4, capacity: 8 })),
  multiHeadAttention: (a, options) => a.multiHeadAttention(options({ dModel: 8, heads: 2 })),
};
const t2 = (seed) => randomTensor(rng(seed), [2, 4]);
for (const [name, call] of Object.entries(disposingInstanceCalls)) {
  test(`a getter that disposes the instance during ${name} gets the "disposed" error`, async () => {
    const own = await createAttention({ threads: 1 });
    // the values given, the last one read through a getter that disposes `own`
    const options = (values) => {
      const [last, value] = Object.entries(values).at(-1);
      const o = { ...values };
      Object.defineProperty(o, last, {
        enumerable: true,
        get() {
          own.dispose();
          return value;
        },
      });
      return o;
    };
    const where = name.split(' ')[0];
    throwsWith(() => call(own, options), TypeError, new RegExp(`^${where}: this attention instance was disposed`));
  });
}

// backward() reads dOutput first, then differentiates the forward saved at that point: a
// getter's step() leaves none (the "no forward" error), a getter's forward() is the one
// differentiated.
test("a layer's backward follows a forward or step run by a getter of dOutput", () => {
  const next = rng(4);
  const layer = attn.multiHeadAttention({ dModel: 8, heads: 2, seed: 1 });
  const x = randomTensor(next, [3, 8]);
  const x2 = randomTensor(next, [3, 8]);
  const data = randomTensor(next, [3, 8]).data;
  for (const meddle of ['step', 'forward']) {
    layer.forward(x);
    const dOutput = {
      shape: [3, 8],
      get data() {
        if (meddle === 'step') layer.step({}, 0);
        else layer.forward(x2);
        return data;
      },
    };
    if (meddle === 'step') {
      throwsWith(
        () => layer.backward(dOutput),
        TypeError,
        /^multiHeadAttention\.backward: there is no forward to differentiate/,
      );
      continue;
    }
    const grads = layer.backward(dOutput);
    layer.forward(x2);
    assert.deepEqual(grads, layer.backward(tensor(data, [3, 8])), 'the gradients of the forward the getter ran');
  }
  layer.dispose();
});

// A getter that disposes the layer while forward() or step() reads its arguments.
const disposingCalls = {
  forward: (layer, dispose, x) =>
    layer.forward(x, {
      get causal() {
        dispose();
        return true;
      },
    }),
  'forward, a mask getter': (layer, dispose, x) =>
    layer.forward(x, {
      mask: {
        shape: [3, 3],
        get data() {
          dispose();
          return new Uint8Array(9).fill(1);
        },
      },
    }),
  'forward over a cache': (layer, dispose, x, cache) =>
    layer.forward(x, {
      cache,
      get scale() {
        dispose();
        return 1;
      },
    }),
  step: (layer, dispose) =>
    layer.step(
      {
        get dwq() {
          dispose();
          return tensor(new Float32Array(64), [8, 8]);
        },
      },
      0.1,
    ),
  'step, the second gradient': (layer, dispose) =>
    layer.step(
      {
        dwq: tensor(new Float32Array(64), [8, 8]),
        get dwo() {
          dispose();
          return tensor(new Float32Array(64), [8, 8]);
        },
      },
      0.1,
    ),
};
for (const [name, call] of Object.entries(disposingCalls)) {
  test(`a getter that disposes the layer during ${name} gets the "disposed" error`, () => {
    const next = rng(5);
    const before = attn.memory().allocatedBytes;
    const layer = attn.multiHeadAttention({ dModel: 8, heads: 2, seed: 1 });
    const cache = attn.kvCache({ batch: 1, kvHeads: 2, dK: 4, dV: 4, capacity: 8 });
    const where = name.startsWith('step') ? 'step' : 'forward';
    throwsWith(
      () => call(layer, () => layer.dispose(), randomTensor(next, [3, 8]), cache),
      TypeError,
      new RegExp(`^multiHeadAttention\\.${where}: this layer was disposed$`),
    );
    assert.equal(cache.length, 0, 'the cache as it was');
    cache.dispose();
    assert.equal(attn.memory().allocatedBytes, before, 'nothing stayed allocated');
  });
}
