// A caller's code that runs while the package reads an argument (a getter) and disposes or uses
// the very objects the call is about to use: a clear error, never a write into freed memory or
// a result computed from stale state.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { createAttention, tensor } from '../../web/lib/index.js';
import { throwsWith } from './assertions.mjs';
import { randomTensor, rng } from './reference.mjs';

const attn = await createAttention({ threads: 1 });
test.after(() => attn.dispose());
const heads4 = (next, n) => randomTensor(next, [1, 1, n, 4]);

test('a cache disposed or appended to by a getter of the same call is refused', () => {
  const next = rng(3);
  const before = attn.memory().allocatedBytes;
  for (const meddle of ['dispose', 'append']) {
    const cache = attn.kvCache({ batch: 1, kvHeads: 1, dK: 4, dV: 4, capacity: 8 });
    const [q, k, v] = [heads4(next, 1), heads4(next, 1), heads4(next, 1)];
    const window = {
      get left() {
        if (meddle === 'dispose') cache.dispose();
        else attn.attention(q, k, v, { cache });
        return -1;
      },
    };
    throwsWith(
      () => attn.attention(q, k, v, { cache, window }),
      TypeError,
      /^attention: the cache was disposed or changed while this call read its options$/,
    );
    if (meddle === 'append') assert.equal(cache.length, 1, 'only the nested call appended');
    cache.dispose();
  }
  // the instance still works, and nothing stayed allocated
  const fresh = attn.kvCache({ batch: 1, kvHeads: 1, dK: 4, dV: 4, capacity: 8 });
  attn.attention(heads4(next, 2), heads4(next, 2), heads4(next, 2), { cache: fresh, causal: true });
  assert.equal(fresh.length, 2);
  fresh.dispose();
  assert.equal(attn.memory().allocatedBytes, before);
});

test("a layer's backward refuses a forward or step run by a getter of dOutput", () => {
  const next = rng(4);
  const layer = attn.multiHeadAttention({ dModel: 8, heads: 2, seed: 1 });
  const x = randomTensor(next, [3, 8]);
  for (const meddle of ['step', 'forward']) {
    layer.forward(x);
    const data = randomTensor(next, [3, 8]).data;
    const dOutput = {
      shape: [3, 8],
      get data() {
        if (meddle === 'step') layer.step({}, 0);
        else layer.forward(x);
        return data;
      },
    };
    throwsWith(
      () => layer.backward(dOutput),
      TypeError,
      /^multiHeadAttention\.backward: the layer ran or changed while this call read dOutput/,
    );
  }
  layer.forward(x);
  const grads = layer.backward(tensor(new Float32Array(24).fill(0.5), [3, 8]));
  assert.ok(grads.dwq.data.every(Number.isFinite));
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
