// Attention sinks ({ sinks }: one logit per query head in every row's softmax denominator, with
// no value): attention() on 2-D, 3-D and 4-D tensors and over a cache, attentionBackward()'s
// dsinks checked against the reference and by finite differences, the layer's learned sinks
// (forward, backward, step, decoding), the worker form, and the errors (nothing changed after
// one).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { createAttention, tensor } from '../../../web/lib/index.js';
import {
  attentionBackwardRef,
  attentionRef,
  from4d,
  maxAbs,
  maxAbsDiff,
  mhaBackwardRef,
  mhaRef,
  onnxAttentionBackwardRef,
  onnxAttentionRef,
  randomTensor,
  rng,
} from '../../../scripts/lib/reference.mjs';

// a [B,H,rows,d] (4-D) -> the same heads in 3-D [B,rows,H·d]
const to3d = (a, [B, H, rows, d]) => tensor(Float32Array.from(from4d(a, true, B, H, rows, d)), [B, rows, H * d]);

// Σ dOut ⊙ attention(...).output, in float64 from the float32 output
const lossOf = (output, dOut) => output.reduce((acc, x, i) => acc + x * dOut[i], 0);

describe('attention sinks', () => {
  let attn;
  before(async () => {
    attn = await createAttention({ threads: 2 });
  });
  after(() => attn.dispose());

  test('2-D: one sink pulls weight off the keys, as the reference; -Infinity is no sink', () => {
    const next = rng(11);
    const q = randomTensor(next, [7, 5], -2, 2),
      k = randomTensor(next, [9, 5], -2, 2),
      v = randomTensor(next, [9, 3]);
    for (const causal of [false, true]) {
      const sinks = Float32Array.of(1.5);
      const want = attentionRef(q, k, v, { causal, sinks });
      const got = attn.attention(q, k, v, { causal, sinks, trace: true });
      assert.ok(maxAbsDiff(got.output.data, want.output) < 2e-6, `causal ${causal}: output`);
      assert.ok(maxAbsDiff(got.weights.data, want.weights) < 2e-6, `causal ${causal}: weights`);
      // each row's weights sum to 1 − p_sink < 1
      for (let i = 0; i < 7; ++i) {
        const sum = got.weights.data.subarray(i * 9, (i + 1) * 9).reduce((a, b) => a + b, 0);
        assert.ok(Math.abs(sum + want.sinkWeights[i] - 1) < 1e-5 && want.sinkWeights[i] > 0.01);
      }
      const none = attn.attention(q, k, v, { causal });
      const minusInf = attn.attention(q, k, v, { causal, sinks: Float32Array.of(-Infinity) });
      assert.deepEqual(minusInf.output.data, none.output.data);
      assert.ok(maxAbsDiff(got.output.data, none.output.data) > 1e-3, 'a sink changes the output');
      // a tensor of shape [1] is the same sinks
      const asTensor = attn.attention(q, k, v, { causal, sinks: tensor(Float32Array.of(1.5), [1]) });
      assert.deepEqual(asTensor.output.data, attn.attention(q, k, v, { causal, sinks }).output.data);
    }
  });

  test('a row whose keys are all masked gives a zero row with a sink, never NaN', () => {
    const next = rng(12);
    const q = randomTensor(next, [3, 4]),
      k = randomTensor(next, [5, 4]),
      v = randomTensor(next, [5, 2]);
    const keep = new Uint8Array(15).fill(1);
    keep.fill(0, 5, 10); // row 1 sees no key
    const { output } = attn.attention(q, k, v, { mask: tensor(keep, [3, 5]), sinks: Float32Array.of(4) });
    assert.deepEqual([...output.data.subarray(2, 4)], [0, 0]);
    assert.ok(output.data.every(Number.isFinite));
    const g = attn.attentionBackward(q, k, v, randomTensor(next, [3, 2]), {
      mask: tensor(keep, [3, 5]),
      sinks: Float32Array.of(4),
    });
    assert.deepEqual([...g.dq.data.subarray(4, 8)], [0, 0, 0, 0]);
    assert.ok(Number.isFinite(g.dsinks.data[0]));
  });

  test('3-D and 4-D, GQA: the reference, one sink per query head, -Infinity mixed in', () => {
    const next = rng(13);
    const [B, Hq, Hkv, nQ, nK, dK, dV] = [2, 4, 2, 5, 300, 8, 6];
    const q = randomTensor(next, [B, Hq, nQ, dK], -2, 2);
    const k = randomTensor(next, [B, Hkv, nK, dK], -2, 2);
    const v = randomTensor(next, [B, Hkv, nK, dV]);
    const sinks = Float32Array.of(0.5, 3, -Infinity, -1);
    const a = { batch: B, qHeads: Hq, kvHeads: Hkv, nQ, nNew: nK, dK, dV, q: q.data, k: k.data, v: v.data };
    for (const causal of [false, true]) {
      const want = onnxAttentionRef({ ...a, causal, sinks, kvLength: causal ? [nK, nK] : undefined });
      const four = attn.attention(q, k, v, { causal, sinks, kvLength: causal ? [nK, nK] : undefined });
      assert.ok(maxAbsDiff(four.output.data, want.y) < 2e-5, `4-D causal ${causal}`);
      const three = attn.attention(to3d(q.data, q.shape), to3d(k.data, k.shape), to3d(v.data, v.shape), {
        heads: { q: Hq, kv: Hkv },
        causal,
        sinks,
        kvLength: causal ? [nK, nK] : undefined,
      });
      assert.deepEqual(three.output.data, to3d(four.output.data, [B, Hq, nQ, dV]).data, `3-D causal ${causal}`);
    }
  });

  test('decoding over a cache with sinks equals attention over the whole sequence, each dtype', () => {
    const next = rng(14);
    const [Hq, Hkv, T, prefill, d] = [4, 2, 1100, 1090, 16]; // 1100 keys: the decode splits them into runs
    const q = randomTensor(next, [1, Hq, T, d], -2, 2);
    const k = randomTensor(next, [1, Hkv, T, d], -2, 2);
    const v = randomTensor(next, [1, Hkv, T, d]);
    const sinks = Float32Array.of(2, -0.5, 1, -Infinity);
    const rows = (x, H, from, to) => {
      const out = new Float32Array(H * (to - from) * d);
      for (let h = 0; h < H; ++h) out.set(x.data.subarray((h * T + from) * d, (h * T + to) * d), h * (to - from) * d);
      return tensor(out, [1, H, to - from, d]);
    };
    const want = attn.attention(q, k, v, { causal: true, sinks }).output.data;
    const a = { batch: 1, qHeads: Hq, kvHeads: Hkv, nQ: T, nNew: T, dK: d, dV: d, q: q.data, k: k.data, v: v.data };
    assert.ok(maxAbsDiff(want, onnxAttentionRef({ ...a, causal: true, sinks }).y) < 2e-5, 'the whole sequence');
    for (const dtype of ['float32', 'int8']) {
      const cache = attn.kvCache({ batch: 1, kvHeads: Hkv, dK: d, dV: d, capacity: T, dtype });
      try {
        for (let t = 0; t < T;) {
          const n = t === 0 ? prefill : 1;
          const { output } = attn.attention(rows(q, Hq, t, t + n), rows(k, Hkv, t, t + n), rows(v, Hkv, t, t + n), {
            cache,
            causal: true,
            sinks,
          });
          const expected = rows({ data: want }, Hq, t, t + n).data;
          const tol = dtype === 'float32' ? 2e-5 : 0.05;
          assert.ok(maxAbsDiff(output.data, expected) < tol, `${dtype}: rows ${t}..${t + n}`);
          t += n;
        }
      } finally {
        cache.dispose();
      }
    }
  });

  test('backward: dsinks as the reference and as finite differences of the loss, 2-D and 4-D', () => {
    const next = rng(15);
    // 2-D
    const q = randomTensor(next, [6, 4], -2, 2),
      k = randomTensor(next, [8, 4], -2, 2),
      v = randomTensor(next, [8, 3]),
      dOut = randomTensor(next, [6, 3]);
    const sinks = Float32Array.of(0.25);
    const g = attn.attentionBackward(q, k, v, dOut, { causal: true, sinks });
    const r = attentionBackwardRef(q, k, v, dOut, { causal: true, sinks });
    assert.deepEqual(g.dsinks.shape, [1]);
    for (const name of ['dq', 'dk', 'dv', 'dsinks']) assert.ok(maxAbsDiff(g[name].data, r[name]) < 1e-5, name);
    const h = 1e-2;
    const at = (s) => lossOf(attentionRef(q, k, v, { causal: true, sinks: [s] }).output, dOut.data);
    const fd = (at(0.25 + h) - at(0.25 - h)) / (2 * h);
    assert.ok(Math.abs(g.dsinks.data[0] - fd) < 1e-4 * Math.max(1, Math.abs(fd)), `${g.dsinks.data[0]} vs ${fd}`);

    // 4-D, GQA, two sequences: dsinks summed over both
    const [B, Hq, Hkv, nQ, nK, d] = [2, 4, 2, 3, 7, 5];
    const q4 = randomTensor(next, [B, Hq, nQ, d], -2, 2),
      k4 = randomTensor(next, [B, Hkv, nK, d], -2, 2),
      v4 = randomTensor(next, [B, Hkv, nK, d]),
      dOut4 = randomTensor(next, [B, Hq, nQ, d]);
    const sinks4 = Float32Array.of(0.5, -1, 2, -Infinity);
    const g4 = attn.attentionBackward(q4, k4, v4, dOut4, { sinks: sinks4 });
    const a = { batch: B, qHeads: Hq, kvHeads: Hkv, nQ, nNew: nK, dK: d, dV: d, q: q4.data, k: k4.data, v: v4.data };
    const r4 = onnxAttentionBackwardRef({ ...a, sinks: sinks4 }, dOut4.data);
    assert.deepEqual(g4.dsinks.shape, [Hq]);
    for (const name of ['dq', 'dk', 'dv', 'dsinks']) assert.ok(maxAbsDiff(g4[name].data, r4[name]) < 1e-5, name);
    assert.equal(g4.dsinks.data[3], 0); // no sink, no gradient
    for (let hd = 0; hd < 3; ++hd) {
      const loss = (s) => {
        const moved = Float64Array.from(sinks4);
        moved[hd] = s;
        return lossOf(onnxAttentionRef({ ...a, sinks: moved }).y, dOut4.data);
      };
      const fd4 = (loss(sinks4[hd] + h) - loss(sinks4[hd] - h)) / (2 * h);
      assert.ok(Math.abs(g4.dsinks.data[hd] - fd4) < 1e-4 * Math.max(1, Math.abs(fd4)), `head ${hd}`);
    }
    // without sinks, no dsinks key
    assert.equal('dsinks' in attn.attentionBackward(q4, k4, v4, dOut4), false);
    assert.ok(maxAbs(g4.dq.data) > 0);
  });

  test('bad sinks are refused with a clear error; a cache keeps its rows', () => {
    const next = rng(16);
    const q = randomTensor(next, [1, 2, 1, 4]),
      k = randomTensor(next, [1, 1, 1, 4]),
      v = randomTensor(next, [1, 1, 1, 4]);
    const cases = [
      [Float32Array.of(1), RangeError, /sinks has 1 values but there are 2 query heads \(Hq\)/],
      [Float32Array.of(1, NaN), RangeError, /sinks\[1\] is NaN: a sink is a finite logit, or -Infinity for none/],
      [Float32Array.of(Infinity, 0), RangeError, /sinks\[0\] is Infinity/],
      [[1, 2], TypeError, /sinks must be a Float32Array of Hq = 2 values/],
      [Float64Array.of(1, 2), TypeError, /sinks must be a Float32Array, got a Float64Array/],
      [tensor(Float32Array.of(1, 2), [1, 2]), RangeError, /sinks must have 1 dimensions/],
      [3, TypeError, /sinks must be a Float32Array/],
    ];
    const cache = attn.kvCache({ batch: 1, kvHeads: 1, dK: 4, dV: 4, capacity: 8 });
    try {
      attn.attention(q, k, v, { cache });
      for (const [sinks, ErrorClass, message] of cases) {
        assert.throws(() => attn.attention(q, k, v, { sinks }), { name: ErrorClass.name, message });
        assert.throws(() => attn.attention(q, k, v, { cache, sinks }), { name: ErrorClass.name, message });
        assert.throws(() => attn.attentionBackward(q, k, v, q, { sinks }), { name: ErrorClass.name, message });
        assert.equal(cache.length, 1);
      }
      // 2-D: Hq is 1
      const q2 = randomTensor(next, [2, 4]);
      assert.throws(() => attn.attention(q2, q2, q2, { sinks: Float32Array.of(1, 2) }), {
        name: 'RangeError',
        message: /sinks has 2 values but there is 1 query head/,
      });
    } finally {
      cache.dispose();
    }
  });
});

describe('a layer with sinks', () => {
  let attn;
  before(async () => {
    attn = await createAttention({ threads: 2 });
  });
  after(() => attn.dispose());

  const shape = { dModel: 8, heads: 4, kvHeads: 2, dK: 3, dV: 2, bias: true }; // for layers given weights
  const config = { ...shape, seed: 3 };
  const refOptions = (batch, nQ, causal) => ({ batch, nQ, dModel: 8, heads: 4, kvHeads: 2, dK: 3, dV: 2, causal });
  const weightsOf = (layer) => Object.fromEntries(Object.entries(layer.weights).map(([n, t]) => [n, t.data]));

  test('forward and backward match the float64 layer; dsinks by finite differences; step moves them', () => {
    const next = rng(21);
    const first = Float32Array.of(0.5, -1, 2, 0);
    const layer = attn.multiHeadAttention({ ...config, sinks: first });
    try {
      assert.equal(layer.config.sinks, true);
      assert.deepEqual(layer.weights.sinks.data, first);
      assert.deepEqual(layer.weights.sinks.shape, [4]);
      const x = randomTensor(next, [2, 5, 8], -2, 2);
      const { output } = layer.forward(x, { causal: true });
      const w = weightsOf(layer);
      const want = mhaRef(x.data, w, refOptions(2, 5, true)).output;
      assert.ok(maxAbsDiff(output.data, want) < 2e-5 * Math.max(1, maxAbs(want)), 'output');
      const dOut = randomTensor(next, [2, 5, 8]);
      const g = layer.backward(dOut);
      const r = mhaBackwardRef(x.data, w, refOptions(2, 5, true), dOut.data);
      assert.deepEqual(g.dsinks.shape, [4]);
      for (const key of ['dx', 'dwq', 'dwk', 'dwv', 'dwo', 'dbq', 'dbo', 'dsinks'])
        assert.ok(maxAbsDiff(g[key].data, r[key]) < 2e-5 * Math.max(1, maxAbs(r[key])), key);
      const h = 1e-3;
      for (let hd = 0; hd < 4; ++hd) {
        const loss = (s) => {
          const sinks = Float64Array.from(w.sinks);
          sinks[hd] = s;
          return lossOf(mhaRef(x.data, { ...w, sinks }, refOptions(2, 5, true)).output, dOut.data);
        };
        const fd = (loss(w.sinks[hd] + h) - loss(w.sinks[hd] - h)) / (2 * h);
        assert.ok(
          Math.abs(g.dsinks.data[hd] - fd) < 1e-4 * Math.max(1, Math.abs(fd)),
          `head ${hd}: ${g.dsinks.data[hd]} vs ${fd}`,
        );
      }
      // step: sinks -= learningRate·dsinks, in float32, and nothing else moves with only dsinks
      const before = layer.weights;
      layer.step({ dsinks: g.dsinks }, 0.5);
      const after = layer.weights;
      assert.deepEqual(
        after.sinks.data,
        before.sinks.data.map((s, i) => s - 0.5 * g.dsinks.data[i]),
      );
      assert.deepEqual(after.wq.data, before.wq.data);
      // a full step takes dsinks with the rest
      layer.forward(x, { causal: true });
      layer.step(layer.backward(dOut), 0.1);
      assert.notDeepEqual(layer.weights.sinks.data, after.sinks.data);
    } finally {
      layer.dispose();
    }
  });

  test('sinks: true starts at zero; weights.sinks gives them; a layer without sinks has none', () => {
    const layer = attn.multiHeadAttention({ ...config, sinks: true });
    const given = attn.multiHeadAttention({
      ...shape,
      sinks: true,
      weights: { ...layer.weights, sinks: tensor(Float32Array.of(1, 2, 3, 4), [4]) },
    });
    const none = attn.multiHeadAttention(config);
    try {
      assert.deepEqual([...layer.weights.sinks.data], [0, 0, 0, 0]);
      assert.deepEqual([...given.weights.sinks.data], [1, 2, 3, 4]);
      assert.equal(none.config.sinks, false);
      assert.equal('sinks' in none.weights, false);
      const x = randomTensor(rng(22), [4, 8]);
      none.forward(x);
      assert.equal('dsinks' in none.backward(randomTensor(rng(23), [4, 8])), false);
      // a sink of 0 still takes weight: the output differs from the layer without sinks
      assert.ok(maxAbsDiff(layer.forward(x).output.data, none.forward(x).output.data) > 1e-4);
    } finally {
      for (const l of [layer, given, none]) l.dispose();
    }
  });

  test('decoding over a cache with the layer sinks equals its causal forward over the whole sequence', () => {
    const next = rng(24);
    const layer = attn.multiHeadAttention({ ...config, sinks: Float32Array.of(1, -0.5, 2.5, 0) });
    const cache = attn.kvCache({ batch: 1, kvHeads: 2, dK: 3, dV: 2, capacity: 9 });
    try {
      const x = randomTensor(next, [1, 9, 8], -2, 2);
      const whole = layer.forward(x, { causal: true }).output.data;
      for (let t = 0; t < 9;) {
        const n = t === 0 ? 6 : 1;
        const step = tensor(x.data.slice(t * 8, (t + n) * 8), [1, n, 8]);
        const { output } = layer.forward(step, { cache, causal: true });
        assert.ok(maxAbsDiff(output.data, whole.subarray(t * 8, (t + n) * 8)) < 1e-5, `tokens ${t}..${t + n}`);
        t += n;
      }
    } finally {
      cache.dispose();
      layer.dispose();
    }
  });

  test('bad sinks are refused with a clear error, and no layer is made', () => {
    const cases = [
      [{ sinks: Float32Array.of(1, 2) }, RangeError, /sinks has 2 values but there are 4 query heads/],
      [
        { sinks: Float32Array.of(0, 0, -Infinity, 0) },
        RangeError,
        /sinks\[2\] is -Infinity: a layer's sinks are learned logits and must be finite/,
      ],
      [{ sinks: Float32Array.of(0, NaN, 0, 0) }, RangeError, /sinks\[1\] is NaN/],
      [{ sinks: 'yes' }, TypeError, /sinks must be true, false or a Float32Array of heads = 4 first values/],
      [
        { sinks: Float32Array.of(0, 0, 0, 0), weights: { sinks: tensor(new Float32Array(4), [4]) } },
        TypeError,
        /given twice/,
      ],
    ];
    for (const [extra, ErrorClass, message] of cases)
      assert.throws(() => attn.multiHeadAttention({ ...(extra.weights ? shape : config), ...extra }), {
        name: ErrorClass.name,
        message,
      });
    const plain = attn.multiHeadAttention(config);
    const w = plain.weights;
    plain.dispose();
    const before = attn.memory().allocatedBytes;
    assert.throws(
      () => attn.multiHeadAttention({ ...shape, weights: { ...w, sinks: tensor(new Float32Array(4), [4]) } }),
      {
        name: 'TypeError',
        message: /weights has sinks but sinks is not true; pass sinks: true/,
      },
    );
    assert.throws(
      () =>
        attn.multiHeadAttention({
          ...shape,
          sinks: true,
          weights: { ...w, sinks: tensor(Float32Array.of(0, -Infinity, 0, 0), [4]) },
        }),
      { name: 'RangeError', message: /weights\.sinks\.data\[1\] is -Infinity/ },
    );
    assert.equal(attn.memory().allocatedBytes, before); // no layer was left behind
  });
});

describe('attention sinks in the worker form', () => {
  let local, remote;
  before(async () => {
    local = await createAttention({ threads: 1 });
    remote = await createAttention({ threads: 1, worker: true });
  });
  after(() => {
    local.dispose();
    remote.dispose();
  });

  test('sinks pass through: the same bits as the synchronous form, forward and backward', async () => {
    const next = rng(17);
    const q = randomTensor(next, [1, 2, 3, 4]),
      k = randomTensor(next, [1, 1, 5, 4]),
      v = randomTensor(next, [1, 1, 5, 4]),
      dOut = randomTensor(next, [1, 2, 3, 4]);
    const sinks = Float32Array.of(0.5, -2);
    const want = local.attention(q, k, v, { sinks, causal: true });
    const got = await remote.attention(q, k, v, { sinks, causal: true });
    assert.deepEqual(got.output.data, want.output.data);
    assert.ok(maxAbsDiff(got.output.data, local.attention(q, k, v, { causal: true }).output.data) > 1e-4);
    const gWant = local.attentionBackward(q, k, v, dOut, { sinks });
    const gGot = await remote.attentionBackward(q, k, v, dOut, { sinks });
    assert.deepEqual(gGot.dsinks.data, gWant.dsinks.data);
    await assert.rejects(remote.attention(q, k, v, { sinks: Float32Array.of(NaN, 0) }), {
      name: 'RangeError',
      message: /sinks\[0\] is NaN/,
    });
  });

  test('a layer with sinks in the worker: the same output and dsinks as the synchronous form', async () => {
    const config = { dModel: 8, heads: 2, sinks: Float32Array.of(0.5, -1), seed: 4 };
    const mine = local.multiHeadAttention(config);
    const theirs = await remote.multiHeadAttention(config);
    try {
      const x = randomTensor(rng(18), [3, 8]);
      const want = mine.forward(x, { causal: true });
      const got = await theirs.forward(x, { causal: true });
      assert.deepEqual(got.output.data, want.output.data);
      const dOut = randomTensor(rng(19), [3, 8]);
      assert.deepEqual((await theirs.backward(dOut)).dsinks.data, mine.backward(dOut).dsinks.data);
      assert.deepEqual((await theirs.weights).sinks.data, mine.weights.sinks.data);
    } finally {
      mine.dispose();
      await theirs.dispose();
    }
  });
});
