// The shipped model (web/page/data/model/) decoding its held-out windows a token at a time over
// kv caches of each compressed dtype: its held-out loss and its attention layers' outputs (over
// the model's own keys and values) held to what a float32 cache gives; the float32 cache's loss
// is the manifest's (the full causal forward's).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { loadCorpus } from '../../../scripts/train/corpus.mjs';
import { createAttention } from '../../../web/lib/index.js';
import { crossEntropy, headParams } from '../../../web/page/model/lm.js';
import { headForward, makeBatch, windowsOf } from '../../../web/page/model/train.js';
import { layerWeights } from '../../../web/page/model/weights.js';
import { relativeRms } from '../../../scripts/lib/reference.mjs';
import { loadShippedModel } from '../helpers/shipped_model.mjs';

// Each compressed dtype against a float32 cache: the held-out loss's relative difference, and the
// attention layers' outputs' relative RMS over every decoded token.
const KV_DTYPES = [
  { dtype: 'int8', loss: 0.005, output: 0.01 },
  { dtype: 'float16', loss: 0.001, output: 0.001 },
];

describe('the shipped model decoding over compressed kv caches', () => {
  let attn, model, windows;
  before(async () => {
    attn = await createAttention({ threads: 1 });
    const { manifest, vocab, tensors, tokenizer } = loadShippedModel();
    const { dModel, heads, n, positionScale } = manifest.model;
    const layers = Array.from({ length: manifest.model.layers }, (_, L) =>
      attn.multiHeadAttention({ dModel, heads, weights: layerWeights(tensors, L) }),
    );
    const p = headParams(tensors);
    const { heldOut } = loadCorpus({ only: 'heldOut' });
    const ids = heldOut.map((text) => Int32Array.from(tokenizer.encode(text), (t) => t.id));
    windows = windowsOf(ids, n, manifest.heldOut.windows);
    model = { manifest, vocab, layers, p, d: dModel, n, positionScale };
  });
  after(() => {
    for (const l of model?.layers ?? []) l.dispose();
    attn.dispose();
  });

  // The held-out windows, B at a time, token by token through both layers over a cache of
  // `dtype` per layer -> { loss (mean over tokens), inputs and outputs: per layer, every step's
  // input and attention output, in order }. With `given` (another run's inputs), each layer
  // takes those inputs instead of the previous layer's output here.
  function decodeHeldOut(dtype, given = null, B = 16) {
    const { layers, p, d, n, positionScale, vocab } = model;
    const V = vocab.length;
    const outputs = layers.map(() => []),
      inputs = layers.map(() => []);
    const taken = layers.map(() => 0); // floats of given[L] used so far
    let loss = 0,
      count = 0;
    for (let s = 0; s < windows.length; s += B) {
      const { x, targets } = makeBatch(windows.slice(s, s + B), n, d, p.embed, positionScale);
      const b = x.shape[0];
      const caches = layers.map(({ config: { kvHeads, dK, dV } }) =>
        attn.kvCache({ batch: b, kvHeads, dK, dV, capacity: n, dtype }),
      );
      try {
        for (let i = 0; i < n; ++i) {
          // token i of each window: (b, 1, d)
          let h = new Float32Array(b * d);
          for (let w = 0; w < b; ++w) h.set(x.data.subarray((w * n + i) * d, (w * n + i + 1) * d), w * d);
          layers.forEach((layer, L) => {
            if (given) h = given[L].subarray(taken[L], (taken[L] += b * d));
            inputs[L].push(h);
            const { output } = layer.forward({ data: h, shape: [b, 1, d] }, { cache: caches[L], causal: true });
            outputs[L].push(output.data);
            h = h.map((e, j) => e + output.data[j]);
          });
          const { logits } = headForward(attn, p, h, b, d, V);
          const step = Int32Array.from({ length: b }, (_, w) => targets[w * n + i]);
          loss += crossEntropy(logits, step, b, V).loss * b;
          count += b;
        }
      } finally {
        for (const c of caches) c.dispose();
      }
    }
    const join = (list) => {
      const all = new Float32Array(list.reduce((m, a) => m + a.length, 0));
      list.reduce((at, a) => (all.set(a, at), at + a.length), 0);
      return all;
    };
    return { loss: loss / count, inputs: inputs.map(join), outputs: outputs.map(join) };
  }

  let f32;
  test('decoding over a float32 cache gives the held-out loss of the full forward', () => {
    f32 = decodeHeldOut('float32');
    const want = model.manifest.heldOut.loss;
    assert.ok(Math.abs(f32.loss - want) < 1e-3, `decoded loss ${f32.loss}, manifest (full forward) ${want}`);
  });

  for (const { dtype, loss, output } of KV_DTYPES) {
    test(`${dtype === 'int8' ? 'an' : 'a'} ${dtype} cache: the held-out loss within ${loss * 100} % of a float32 cache's`, () => {
      f32 ??= decodeHeldOut('float32');
      const got = decodeHeldOut(dtype).loss;
      const change = Math.abs(got - f32.loss) / f32.loss;
      assert.ok(change <= loss, `held-out loss ${got} over ${dtype}, ${f32.loss} over float32: ${change}`);
    });

    test(`${dtype === 'int8' ? 'an' : 'a'} ${dtype} cache: each layer's decoded output within ${output * 100} % relative RMS of a float32 cache's, on the model's keys`, () => {
      f32 ??= decodeHeldOut('float32');
      // each layer on the float32 run's inputs, so that its own cache's rounding is measured
      const got = decodeHeldOut(dtype, f32.inputs);
      got.outputs.forEach((o, L) => {
        const e = relativeRms(o, f32.outputs[L]);
        assert.ok(e > 0 && e <= output, `layer ${L + 1}: relative RMS ${e}`);
      });
    });
  }
});
