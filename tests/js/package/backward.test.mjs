// Gradients from JS: attentionBackward and a layer's backward() against central finite
// differences of the float64 reference, matmul against a plain loop, step(), the errors of
// the training entries, and a layer that really learns a task that needs attention.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { createAttention } from '../../../web/lib/index.js';
import { attentionRef, maxAbs, maxAbsDiff, mhaRef, randomTensor, rng } from '../../../scripts/lib/reference.mjs';

let attn;
let attn2;
before(async () => {
  attn = await createAttention({ threads: 1 });
  attn2 = await createAttention({ threads: 2 });
});
after(() => {
  attn?.dispose();
  attn2?.dispose();
});

const H = 1e-6; // finite-difference step, in float64

// ∂L/∂p for every entry p of params[name], L = loss(), by central differences.
function finiteDifferences(params, name, loss) {
  const p = params[name];
  const grad = new Float64Array(p.length);
  for (let i = 0; i < p.length; ++i) {
    const keep = p[i];
    p[i] = keep + H;
    const up = loss();
    p[i] = keep - H;
    const down = loss();
    p[i] = keep;
    grad[i] = (up - down) / (2 * H);
  }
  return grad;
}

const dot = (a, b) => a.reduce((s, x, i) => s + x * b[i], 0);
const f64 = (t) => Float64Array.from(t.data);

// The package's float32 gradient against the float64 finite difference. Some gradients are
// zero by the math (expectZero): with one key, dq and dk (a softmax over one key is 1); and
// dbk always (a key bias adds q·bk to every score of a row, which the softmax ignores).
function assertGradient(actual, expected, what, expectZero = false) {
  const diff = maxAbsDiff(actual, expected);
  const tol = 2e-4 * Math.max(1, maxAbs(expected));
  assert.ok(diff <= tol, `${what}: largest difference ${diff} (tolerance ${tol})`);
  if (expectZero) assert.ok(maxAbs(expected) < 1e-6 && maxAbs(actual) < 1e-5, `${what} should be zero`);
  else assert.ok(maxAbs(expected) > 1e-3, `${what}: the gradient is ~0, the check would prove nothing`);
}

describe('attentionBackward', () => {
  for (const [nQ, nK, dK, dV, causal, masked] of [
    [1, 1, 1, 1, false, false],
    [3, 5, 4, 2, false, false],
    [5, 5, 3, 7, true, false],
    [17, 9, 5, 3, false, true],
    [6, 6, 2, 2, true, true],
  ]) {
    test(`equals finite differences: nQ ${nQ}, nK ${nK}, dK ${dK}, dV ${dV}${causal ? ', causal' : ''}${masked ? ', keep mask' : ''}`, () => {
      const next = rng(nQ * 100 + nK);
      const q = randomTensor(next, [nQ, dK]),
        k = randomTensor(next, [nK, dK]),
        v = randomTensor(next, [nK, dV]);
      const dOut = randomTensor(next, [nQ, dV]);
      const keep = masked
        ? { data: Uint8Array.from({ length: nQ * nK }, () => (next() < 0.7 ? 1 : 0)), shape: [nQ, nK] }
        : undefined;
      const options = { causal, ...(keep ? { mask: keep } : {}) };
      const got = attn.attentionBackward(q, k, v, dOut, options);

      const params = { q: f64(q), k: f64(k), v: f64(v) };
      const loss = () =>
        dot(
          attentionRef(
            { data: params.q, shape: q.shape },
            { data: params.k, shape: k.shape },
            { data: params.v, shape: v.shape },
            { causal, keep },
          ).output,
          dOut.data,
        );
      assert.deepEqual(got.dq.shape, [nQ, dK]);
      assert.deepEqual(got.dk.shape, [nK, dK]);
      assert.deepEqual(got.dv.shape, [nK, dV]);
      assertGradient(got.dq.data, finiteDifferences(params, 'q', loss), 'dq', nK === 1);
      assertGradient(got.dk.data, finiteDifferences(params, 'k', loss), 'dk', nK === 1);
      assertGradient(got.dv.data, finiteDifferences(params, 'v', loss), 'dv');
    });
  }

  test('keys masked for every query get exactly zero dk and dv', () => {
    const next = rng(7);
    const [nQ, nK, d] = [4, 6, 3];
    const q = randomTensor(next, [nQ, d]),
      k = randomTensor(next, [nK, d]),
      v = randomTensor(next, [nK, d]);
    const keep = new Uint8Array(nQ * nK).fill(1);
    for (let i = 0; i < nQ; ++i) keep[i * nK + 2] = 0; // key 2 is never seen
    const g = attn.attentionBackward(q, k, v, randomTensor(next, [nQ, d]), { mask: keep });
    for (let c = 0; c < d; ++c) {
      assert.equal(g.dk.data[2 * d + c], 0);
      assert.equal(g.dv.data[2 * d + c], 0);
    }
    assert.ok(maxAbs(g.dk.data) > 0);
  });

  test('trace returns P, dP = dOutput·vᵀ and dS with dq = dS·k, zero where masked', () => {
    const next = rng(17);
    const [nQ, nK, dK, dV] = [5, 7, 3, 4];
    const q = randomTensor(next, [nQ, dK]),
      k = randomTensor(next, [nK, dK]),
      v = randomTensor(next, [nK, dV]);
    const dOut = randomTensor(next, [nQ, dV]);
    const g = attn.attentionBackward(q, k, v, dOut, { causal: true, trace: true });
    assert.deepEqual(g.weights.data, attn.attention(q, k, v, { causal: true, trace: true }).weights.data);
    for (let i = 0; i < nQ; ++i) {
      for (let j = 0; j < nK; ++j) {
        let dp = 0;
        for (let c = 0; c < dV; ++c) dp += dOut.data[i * dV + c] * v.data[j * dV + c];
        assert.ok(Math.abs(g.dWeights.data[i * nK + j] - dp) < 1e-6, `dP[${i},${j}]`);
        if (j > i) assert.ok(g.dScores.data[i * nK + j] === 0, `dS[${i},${j}] is masked: 0 (either sign)`);
      }
      for (let c = 0; c < dK; ++c) {
        let dq = 0;
        for (let j = 0; j < nK; ++j) dq += g.dScores.data[i * nK + j] * k.data[j * dK + c];
        assert.ok(Math.abs(g.dq.data[i * dK + c] - dq) < 1e-6, `dq[${i},${c}] = dS·k`);
      }
    }
  });

  test('1 and 2 threads give bitwise identical gradients', () => {
    const next = rng(11);
    const [n, d] = [150, 24];
    const q = randomTensor(next, [n, d]),
      k = randomTensor(next, [n, d]),
      v = randomTensor(next, [n, d]);
    const dOut = randomTensor(next, [n, d]);
    const a = attn.attentionBackward(q, k, v, dOut, { causal: true });
    const b = attn2.attentionBackward(q, k, v, dOut, { causal: true });
    for (const name of ['dq', 'dk', 'dv']) assert.deepEqual(a[name].data, b[name].data, name);
  });

  test('rejects a dOutput of the wrong shape, naming both', () => {
    const next = rng(3);
    const q = randomTensor(next, [3, 2]),
      kv = randomTensor(next, [4, 2]);
    assert.throws(() => attn.attentionBackward(q, kv, kv, randomTensor(next, [4, 2])), {
      name: 'RangeError',
      message: /^attentionBackward: dOutput is \[4,2\] but the output of attention\(q \[3,2\], v \[4,2\]\) is \[3,2\]$/,
    });
  });
});

describe('multi-head backward', () => {
  for (const [batch, nQ, nK, cross, bias, causal] of [
    [1, 3, 3, false, false, false],
    [2, 3, 4, true, true, false],
    [2, 4, 4, false, true, true],
  ]) {
    test(`equals finite differences: batch ${batch}, nQ ${nQ}, nK ${nK}${cross ? ', cross' : ''}${bias ? ', bias' : ''}${causal ? ', causal' : ''}`, () => {
      const next = rng(batch * 31 + nQ + (cross ? 5 : 0));
      const [dModel, heads, dK, dV] = [6, 2, 3, 2];
      const shapes = {
        wq: [dModel, heads * dK],
        wk: [dModel, heads * dK],
        wv: [dModel, heads * dV],
        wo: [heads * dV, dModel],
      };
      if (bias) Object.assign(shapes, { bq: [heads * dK], bk: [heads * dK], bv: [heads * dV], bo: [dModel] });
      const weights = Object.fromEntries(Object.entries(shapes).map(([n, s]) => [n, randomTensor(next, s, -0.8, 0.8)]));
      const lead = batch > 1 ? [batch] : [];
      const x = randomTensor(next, [...lead, nQ, dModel]);
      const context = cross ? randomTensor(next, [...lead, nK, dModel]) : undefined;
      const dOut = randomTensor(next, x.shape);

      const mha = attn.multiHeadAttention({ dModel, heads, dK, dV, bias, weights });
      mha.forward(x, { causal, ...(context ? { context } : {}) });
      const got = mha.backward(dOut);
      mha.dispose();

      const params = { x: f64(x), ...(context ? { context: f64(context) } : {}) };
      for (const n of Object.keys(shapes)) params[n] = f64(weights[n]);
      const loss = () =>
        dot(
          mhaRef(params.x, Object.fromEntries(Object.keys(shapes).map((n) => [n, params[n]])), {
            batch,
            nQ,
            nK,
            dModel,
            heads,
            dK,
            dV,
            causal,
            context: params.context,
          }).output,
          dOut.data,
        );

      assert.deepEqual(got.dx.shape, x.shape);
      assertGradient(got.dx.data, finiteDifferences(params, 'x', loss), 'dx');
      if (cross) assertGradient(got.dContext.data, finiteDifferences(params, 'context', loss), 'dContext');
      else assert.equal(got.dContext, undefined);
      for (const n of Object.keys(shapes)) {
        assert.deepEqual(got[`d${n}`].shape, shapes[n]);
        assertGradient(got[`d${n}`].data, finiteDifferences(params, n, loss), `d${n}`, n === 'bk');
      }
    });
  }

  test('backward needs a forward, the same output shape, and no step() in between', () => {
    const mha = attn.multiHeadAttention({ dModel: 4, heads: 2, seed: 1 });
    const next = rng(5);
    const x = randomTensor(next, [3, 4]);
    assert.throws(() => mha.backward(randomTensor(next, [3, 4])), {
      name: 'TypeError',
      message: /call forward\(\) first/,
    });
    mha.forward(x);
    assert.throws(() => mha.backward(randomTensor(next, [2, 4])), {
      name: 'RangeError',
      message: /^multiHeadAttention\.backward: dOutput is \[2,4\] but the last forward's output is \[3,4\]$/,
    });
    const grads = mha.backward(randomTensor(next, [3, 4]));
    mha.step(grads, 0.1);
    assert.throws(() => mha.backward(randomTensor(next, [3, 4])), {
      name: 'TypeError',
      message: /call forward\(\) first/,
    });
    mha.dispose();
  });

  test('step applies w -= lr·dw to exactly the weights given', () => {
    const mha = attn.multiHeadAttention({ dModel: 4, heads: 2, bias: true, seed: 9 });
    const before = mha.weights;
    const dwq = { data: Float32Array.from({ length: 16 }, (_, i) => i), shape: [4, 4] };
    const dbo = { data: new Float32Array([1, 2, 3, 4]), shape: [4] };
    mha.step({ dwq, dbo }, 0.5);
    const after = mha.weights;
    for (let i = 0; i < 16; ++i) assert.equal(after.wq.data[i], Math.fround(before.wq.data[i] - 0.5 * i));
    assert.deepEqual(after.bo.data, new Float32Array([-0.5, -1, -1.5, -2]));
    assert.deepEqual(after.wk.data, before.wk.data);
    assert.throws(() => mha.step({ dwq: { data: new Float32Array(4), shape: [2, 2] } }, 0.1), {
      name: 'RangeError',
      message: /^multiHeadAttention\.step: grads\.dwq must have|grads\.dwq is \[2,2\] but wq is \[4,4\]/,
    });
    assert.throws(() => mha.step({ dwz: dwq }, 0.1), { name: 'TypeError', message: /unknown option "dwz"/ });
    const noBias = attn.multiHeadAttention({ dModel: 4, heads: 2, seed: 9 });
    assert.throws(
      () => noBias.step({ dbq: { data: new Float32Array(4), shape: [4] } }, 0.1),
      { name: 'TypeError', message: /unknown option "dbq"/ },
      'a bias gradient for a layer without biases is not silently dropped',
    );
    noBias.dispose();
    assert.throws(() => mha.step({ dwq }, NaN), { name: 'RangeError', message: /learningRate must be finite/ });
    mha.dispose();
  });

  test('1 and 2 threads give bitwise identical gradients', () => {
    const next = rng(21);
    const config = { dModel: 32, heads: 4, bias: true, seed: 3 };
    const x = randomTensor(next, [2, 70, 32]);
    const dOut = randomTensor(next, [2, 70, 32]);
    const [a, b] = [attn, attn2].map((instance) => {
      const mha = instance.multiHeadAttention(config);
      mha.forward(x, { causal: true });
      const g = mha.backward(dOut);
      mha.dispose();
      return g;
    });
    for (const name of Object.keys(a)) assert.deepEqual(a[name].data, b[name].data, name);
  });
});

describe('matmul', () => {
  test('matches a plain loop for every transpose, over odd shapes', () => {
    const next = rng(13);
    for (const [m, n, k] of [
      [1, 1, 1],
      [3, 5, 7],
      [17, 9, 33],
      [65, 63, 129],
    ]) {
      for (const transposeA of [false, true]) {
        for (const transposeB of [false, true]) {
          const a = randomTensor(next, transposeA ? [k, m] : [m, k]);
          const b = randomTensor(next, transposeB ? [n, k] : [k, n]);
          const c = attn.matmul(a, b, { transposeA, transposeB });
          assert.deepEqual(c.shape, [m, n]);
          const expected = new Float64Array(m * n);
          for (let i = 0; i < m; ++i) {
            for (let j = 0; j < n; ++j) {
              let s = 0;
              for (let p = 0; p < k; ++p) {
                s +=
                  (transposeA ? a.data[p * m + i] : a.data[i * k + p]) *
                  (transposeB ? b.data[j * k + p] : b.data[p * n + j]);
              }
              expected[i * n + j] = s;
            }
          }
          const diff = maxAbsDiff(c.data, expected);
          assert.ok(
            diff < 1e-5 * Math.sqrt(k),
            `m ${m} n ${n} k ${k} tA ${transposeA} tB ${transposeB}: largest difference ${diff}`,
          );
        }
      }
    }
  });

  test('names both shapes when the inner sizes differ', () => {
    const next = rng(2);
    assert.throws(() => attn.matmul(randomTensor(next, [2, 3]), randomTensor(next, [4, 2])), {
      name: 'RangeError',
      message: /^matmul: a is \[2,3\] and b is \[4,2\]: the inner sizes 3 and 4 must match$/,
    });
  });
});

// A task only attention solves: each sequence marks one token with a flag, and every position
// must output that token's content. Content sits in dims 0-7, the flag in dim 8 and a constant
// 1 in dim 15 (so a query can ask "where is the flag?" whatever its own content).
test('a layer learns to attend to the flagged token: loss falls 10x, weights point at it', () => {
  const [dModel, heads, n, batch] = [16, 2, 6, 16];
  const next = rng(2024);
  const mha = attn.multiHeadAttention({ dModel, heads, seed: 5 });
  const makeBatch = () => {
    const x = new Float32Array(batch * n * dModel);
    const target = new Float32Array(batch * n * dModel);
    const flagged = [];
    for (let b = 0; b < batch; ++b) {
      const f = Math.floor(next() * n);
      flagged.push(f);
      for (let i = 0; i < n; ++i) {
        const row = (b * n + i) * dModel;
        for (let c = 0; c < 8; ++c) x[row + c] = 2 * next() - 1;
        x[row + 8] = i === f ? 1 : 0;
        x[row + 15] = 1;
      }
      for (let i = 0; i < n; ++i) {
        for (let c = 0; c < 8; ++c) target[(b * n + i) * dModel + c] = x[(b * n + f) * dModel + c];
      }
    }
    return { x: { data: x, shape: [batch, n, dModel] }, target, flagged };
  };
  // mean squared error and its gradient
  const lossOf = (out, target) => {
    const grad = new Float32Array(out.length);
    let loss = 0;
    for (let i = 0; i < out.length; ++i) {
      const e = out[i] - target[i];
      loss += e * e;
      grad[i] = (2 * e) / out.length;
    }
    return { loss: loss / out.length, grad };
  };

  const evaluate = () => {
    const { x, target } = makeBatch();
    return lossOf(mha.forward(x).output.data, target).loss;
  };
  const initial = evaluate();
  for (let stepIndex = 0; stepIndex < 600; ++stepIndex) {
    const { x, target } = makeBatch();
    const { grad } = lossOf(mha.forward(x).output.data, target);
    mha.step(mha.backward({ data: grad, shape: x.shape }), 1.0);
  }
  const final = (evaluate() + evaluate() + evaluate()) / 3;
  assert.ok(final * 10 <= initial, `loss went from ${initial} to ${final}: not 10x lower`);

  // Every query's weights peak at the flagged token, in every head that learned it.
  const { x, flagged } = makeBatch();
  const { heads: traced } = mha.forward(x, { trace: true });
  let pointing = 0,
    rows = 0;
  for (let b = 0; b < batch; ++b) {
    for (let i = 0; i < n; ++i) {
      // the head-averaged weight row of query i
      const row = Array.from(
        { length: n },
        (_, j) => traced.reduce((s, h) => s + h.weights.data[(b * n + i) * n + j], 0) / heads,
      );
      pointing += row.indexOf(Math.max(...row)) === flagged[b] ? 1 : 0;
      rows += 1;
    }
  }
  assert.ok(pointing / rows >= 0.95, `only ${pointing} of ${rows} weight rows peak at the flagged token`);
  mha.dispose();
});
