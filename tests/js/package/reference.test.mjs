// The float64 reference the JS tests and the bench lean on: the ONNX operator checked against
// numbers worked by hand and its backward against central differences of its forward; the 2-D
// entries and the layer against the operator they restate.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import {
  attentionBackwardRef,
  attentionRef,
  matmulRef,
  maxAbsDiff,
  mhaBackwardRef,
  mhaRef,
  onnxAttentionBackwardRef,
  onnxAttentionRef,
  rng,
  uniform,
} from '../../../scripts/lib/reference.mjs';

const close = (got, want, tol = 1e-12, what = '') =>
  assert.ok(Math.abs(got - want) <= tol, `${what} ${got} vs ${want}`);

// grad (theta's length) against central differences of loss(), which reads theta (changed in
// place and restored), within 1e-7.
function checkGradient(name, theta, grad, loss) {
  for (let e = 0; e < theta.length; ++e) {
    const at = theta[e],
      h = 1e-6;
    theta[e] = at + h;
    const up = loss();
    theta[e] = at - h;
    const down = loss();
    theta[e] = at;
    close(grad[e], (up - down) / (2 * h), 1e-7, `${name}[${e}]`);
  }
}

function randomCase(seed, extra = {}) {
  const next = rng(seed);
  const a = { batch: 2, qHeads: 4, kvHeads: 2, nQ: 3, nNew: 5, dK: 4, dV: 3, ...extra };
  a.q = uniform(next, a.batch * a.qHeads * a.nQ * a.dK);
  a.k = uniform(next, a.batch * a.kvHeads * a.nNew * a.dK);
  a.v = uniform(next, a.batch * a.kvHeads * a.nNew * a.dV);
  return a;
}

// Which keys row (b, h, i) gives weight: 'x' kept, '.' zero.
function pattern(a, out, b, h, i) {
  const n = (a.nPast ?? 0) + a.nNew;
  const row = out.qk[3].subarray(((b * a.qHeads + h) * a.nQ + i) * n, ((b * a.qHeads + h) * a.nQ + i + 1) * n);
  return Array.from(row, (w) => (w > 0 ? 'x' : '.')).join('');
}

test('onnx reference: one row by hand (weights 1/4, 3/4; output 7)', () => {
  const out = onnxAttentionRef({
    batch: 1,
    qHeads: 1,
    kvHeads: 1,
    nQ: 1,
    nNew: 2,
    dK: 1,
    dV: 1,
    q: [1],
    k: [0, Math.log(3)],
    v: [4, 8],
  });
  close(out.qk[3][0], 0.25);
  close(out.y[0], 7);
});

test('onnx reference: bottom-right causal after a past; kv_length offsets per batch', () => {
  const past = randomCase(1, { batch: 1, qHeads: 1, kvHeads: 1, nQ: 2, nNew: 2, causal: true, nPast: 2 });
  past.pastKey = new Float64Array(2 * 4).fill(0.5);
  past.pastValue = new Float64Array(2 * 3).fill(0.5);
  const o = onnxAttentionRef(past);
  assert.deepEqual([pattern(past, o, 0, 0, 0), pattern(past, o, 0, 0, 1)], ['xxx.', 'xxxx']);
  const padded = randomCase(2, { qHeads: 1, kvHeads: 1, nQ: 2, causal: true, kvLength: [3, 5] });
  const p = onnxAttentionRef(padded);
  assert.deepEqual([pattern(padded, p, 0, 0, 0), pattern(padded, p, 1, 0, 0)], ['xx...', 'xxxx.']);
});

test('onnx reference: GQA heads read kv head floor(h / 2); a fully masked row is zero', () => {
  const a = randomCase(3);
  a.v = a.v.map((_, e) => (e % (5 * 3 * 2) < 5 * 3 ? 1 : 2)); // kv head 0 all 1, head 1 all 2
  const o = onnxAttentionRef(a);
  for (let h = 0; h < 4; ++h) close(o.y[h * 3 * 3], h < 2 ? 1 : 2, 1e-12);
  const m = randomCase(4, {
    mask: { dims: [3, 5], boolean: true, values: [...'0000011111'.split('').map(Number), 1, 0, 0, 0, 0] },
  });
  const om = onnxAttentionRef(m);
  assert.deepEqual(Array.from(om.y.subarray(0, 3)), [0, 0, 0]);
  assert.equal(pattern(m, om, 1, 3, 2), 'x....');
});

test('onnx reference backward matches central differences (GQA, 3-D, causal, window, softcap, rotary, mask)', () => {
  const a = randomCase(5, {
    threeD: true,
    causal: true,
    left: 2,
    softcap: 0.9,
    scale: 0.8,
    rotary: { offset: 2, base: 30, interleaved: true },
    mask: { dims: [4, 3, 5], values: uniform(rng(6), 60) },
  });
  const dy = uniform(rng(7), 2 * 4 * 3 * 3);
  const g = onnxAttentionBackwardRef(a, dy);
  const loss = () => onnxAttentionRef(a).y.reduce((s, y, e) => s + y * dy[e], 0);
  for (const [name, grad] of [
    ['q', g.dq],
    ['k', g.dk],
    ['v', g.dv],
  ]) {
    a[name] = Float64Array.from(a[name]);
    checkGradient(name, a[name], grad, loss);
  }
});

test('2-D attention is the operator with one batch and one head: output, stages, gradients', () => {
  const next = rng(8);
  const [nQ, nK, dK, dV] = [4, 6, 3, 2];
  const q = { data: uniform(next, nQ * dK), shape: [nQ, dK] };
  const k = { data: uniform(next, nK * dK), shape: [nK, dK] };
  const v = { data: uniform(next, nK * dV), shape: [nK, dV] };
  const dOut = uniform(next, nQ * dV);
  const keep = Uint8Array.from({ length: nQ * nK }, (_, e) => (e % 5 === 2 ? 0 : 1));
  const options = { causal: true, keep, softcap: 0.5, scale: 0.7 };
  const a = { batch: 1, qHeads: 1, kvHeads: 1, nQ, nNew: nK, dK, dV, q: q.data, k: k.data, v: v.data };
  Object.assign(a, { causal: true, softcap: 0.5, scale: 0.7, mask: { dims: [nQ, nK], boolean: true, values: keep } });
  const r = attentionRef(q, k, v, options),
    o = onnxAttentionRef(a);
  assert.equal(maxAbsDiff(r.output, o.y), 0);
  assert.equal(maxAbsDiff(r.weights, o.qk[3]), 0);
  assert.equal(maxAbsDiff(r.masked, o.qk[2]), 0);
  const g = attentionBackwardRef(q, k, v, dOut, options),
    want = onnxAttentionBackwardRef(a, dOut);
  for (const n of ['dq', 'dk', 'dv']) assert.equal(maxAbsDiff(g[n], want[n]), 0, n);
});

test('the layer: projections by hand around the operator; its backward against central differences', () => {
  const next = rng(9);
  const [batch, nQ, dModel, heads, kvHeads, dK] = [2, 3, 4, 2, 1, 4];
  const w = {
    wq: Float64Array.from(uniform(next, dModel * heads * dK)),
    wk: Float64Array.from(uniform(next, dModel * kvHeads * dK)),
    wv: Float64Array.from(uniform(next, dModel * kvHeads * dK)),
    wo: Float64Array.from(uniform(next, heads * dK * dModel)),
    bq: Float64Array.from(uniform(next, heads * dK)),
  };
  const x = Float64Array.from(uniform(next, batch * nQ * dModel));
  const options = { batch, nQ, dModel, heads, kvHeads, dK, causal: true, rotary: { base: 20 } };
  const r = mhaRef(x, w, options);
  const Q = matmulRef(x, w.wq, batch * nQ, dModel, heads * dK).map((y, e) => y + w.bq[e % (heads * dK)]);
  assert.ok(maxAbsDiff(r.q, Q) <= 1e-15, 'q = x·wq + bq');
  assert.ok(maxAbsDiff(r.output, matmulRef(r.concat, w.wo, batch * nQ, heads * dK, dModel)) <= 1e-15, 'output');
  const dOut = uniform(next, batch * nQ * dModel);
  const g = mhaBackwardRef(x, w, options, dOut);
  const loss = () => mhaRef(x, w, options).output.reduce((s, y, e) => s + y * dOut[e], 0);
  for (const [name, theta, grad] of [
    ['x', x, g.dx],
    ['wk', w.wk, g.dwk],
    ['bq', w.bq, g.dbq],
  ])
    checkGradient(name, theta, grad, loss);
});
