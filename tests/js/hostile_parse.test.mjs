// Arguments built to break the read-once parsing: buffers detached or shrunk by a later
// argument's getter, masks whose Arrays claim billions of elements, getters that dispose or
// use the instance in the worker form. Each gets a clear TypeError or RangeError naming the
// argument (or the snapshot it read computes the right numbers), quickly, and leaves the
// instance working with nothing more allocated.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';

import { createAttention, tensor } from '../../web/lib/index.js';
import { throwsWith } from './assertions.mjs';
import { randomTensor, rng } from './reference.mjs';

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
