// The package's JS API against the float64 reference in scripts/lib/reference.mjs: attention over odd
// shapes and every mask, multi-head attention (self, cross, batch, bias, trace), seeded
// initialization, weight copies, one thread vs two, and results that own their memory.
import { createRequire } from 'node:module';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';

import * as binding from '../../../web/lib/binding.js';
import { relaxedSimdAvailable } from '../../../web/lib/features.js';
import * as esm from '../../../web/lib/index.js';
import { createAttention, seededRandom, tensor, xavierUniform } from '../../../web/lib/index.js';
import { glue } from '../../../web/lib/glue.js';
import { Heap } from '../../../web/lib/heap.js';
import { loadModule } from '../../../web/lib/loader.js';
import {
  attentionRef,
  maxAbs,
  maxAbsDiff,
  mhaRef,
  randomTensor,
  rng,
  uniform,
} from '../../../scripts/lib/reference.mjs';

const TOL = 1e-5; // max abs difference for unit-range values (relative past magnitude 1)
const SIZES = [1, 2, 3, 5, 17, 63, 64, 65, 129];

// actual (Float32Array) vs expected (float64), within TOL·max(1, max |expected|).
// Infinities must match exactly (same cells, same sign).
function assertClose(actual, expected, what, tol = TOL) {
  assert.ok(actual instanceof Float32Array, `${what}: expected a Float32Array, got ${actual?.constructor?.name}`);
  assert.equal(actual.length, expected.length, `${what}: length`);
  let size = 1;
  for (const x of expected) if (Number.isFinite(x)) size = Math.max(size, Math.abs(x));
  const bound = tol * size;
  const diff = maxAbsDiff(actual, expected);
  assert.ok(diff <= bound, `${what}: max abs diff ${diff} > ${bound}`);
  for (let i = 0; i < actual.length; ++i) {
    assert.ok(!Number.isNaN(actual[i]), `${what}[${i}] is NaN`);
  }
}

// Same bytes, not merely equal values (-0 vs 0 and NaN payloads count).
function assertBitwise(a, b, what) {
  assert.ok(a instanceof Float32Array && b instanceof Float32Array, `${what}: Float32Arrays`);
  assert.equal(a.length, b.length, `${what}: length`);
  const ba = new Uint32Array(a.buffer, a.byteOffset, a.length);
  const bb = new Uint32Array(b.buffer, b.byteOffset, b.length);
  for (let i = 0; i < ba.length; ++i) {
    if (ba[i] !== bb[i])
      assert.fail(`${what}[${i}]: ${a[i]} vs ${b[i]} (bits ${ba[i].toString(16)} vs ${bb[i].toString(16)})`);
  }
}

function assertTensor(t, shape, what) {
  assert.ok(t && typeof t === 'object', `${what}: not a tensor`);
  assert.deepEqual(t.shape, shape, `${what}: shape`);
  assert.ok(t.data instanceof Float32Array, `${what}.data: not a Float32Array`);
  assert.equal(
    t.data.length,
    shape.reduce((a, b) => a * b, 1),
    `${what}.data: length`,
  );
}

// The -Infinity cells of a trace's `masked` must be exactly those of the reference.
function assertSameMaskedCells(actual, expected, what) {
  for (let i = 0; i < expected.length; ++i) {
    assert.equal(
      actual[i] === -Infinity,
      expected[i] === -Infinity,
      `${what}[${i}]: got ${actual[i]}, reference ${expected[i]}`,
    );
  }
}

// Layer weights of unit scale: U(-a, a) with a = sqrt(3 / fanIn), so that every product stays
// around magnitude 1.
function randomWeights(next, { dModel, heads, dK, dV, bias }) {
  const hk = heads * dK,
    hv = heads * dV;
  const mat = (rows, cols) =>
    tensor(uniform(next, rows * cols, -Math.sqrt(3 / rows), Math.sqrt(3 / rows)), [rows, cols]);
  const w = { wq: mat(dModel, hk), wk: mat(dModel, hk), wv: mat(dModel, hv), wo: mat(hv, dModel) };
  if (bias) {
    w.bq = randomTensor(next, [hk], -0.5, 0.5);
    w.bk = randomTensor(next, [hk], -0.5, 0.5);
    w.bv = randomTensor(next, [hv], -0.5, 0.5);
    w.bo = randomTensor(next, [dModel], -0.5, 0.5);
  }
  return w;
}

function randomKeep(next, nQ, nK, pKeep = 0.6) {
  const keep = new Uint8Array(nQ * nK);
  for (let i = 0; i < keep.length; ++i) keep[i] = next() < pKeep ? 1 : 0;
  return keep;
}

for (const threads of [1, 2]) {
  describe(`attention (threads: ${threads})`, () => {
    let attn;
    before(async () => {
      attn = await createAttention({ threads });
    });
    after(() => attn.dispose());

    test('backend reports the build', () => {
      const b = attn.backend;
      assert.deepEqual(Object.keys(b).sort(), ['gemmKernel', 'isa', 'threads']);
      assert.equal(b.threads, threads);
      // 'simd128' in Node without the relaxed-SIMD flag, 'relaxed-simd' in Deno and Bun
      // (tests/js/engines/runtimes.test.mjs pins each runtime's)
      assert.equal(b.isa, relaxedSimdAvailable() ? 'relaxed-simd' : 'simd128');
      // the matrix-product kernel chosen for this engine (gemm_select.cpp), of the isa's kernels
      assert.match(
        b.gemmKernel,
        b.isa === 'relaxed-simd' ? /^f32_gemm_[3-6]x8(_\w+)?_relaxed_simd$/ : /^f32_gemm_[3-6]x8(_\w+)?_simd128$/,
      );
    });

    test('odd shapes, dK != dV, nQ != nK', () => {
      const next = rng(11 + threads);
      const widths = [1, 3, 8, 16, 33];
      let n = 0;
      for (const nQ of SIZES) {
        for (const nK of SIZES) {
          const dK = widths[n % widths.length];
          const dV = widths[(n * 3 + 1) % widths.length];
          ++n;
          const q = randomTensor(next, [nQ, dK]);
          const k = randomTensor(next, [nK, dK]);
          const v = randomTensor(next, [nK, dV]);
          const { output } = attn.attention(q, k, v);
          assertTensor(output, [nQ, dV], `output nQ ${nQ} nK ${nK}`);
          assertClose(output.data, attentionRef(q, k, v).output, `output nQ ${nQ} nK ${nK} dK ${dK} dV ${dV}`);
        }
      }
    });

    test('causal, top-left aligned also for nQ != nK', () => {
      const next = rng(21 + threads);
      const shapes = [
        [1, 1],
        [1, 5],
        [5, 1],
        [3, 17],
        [17, 3],
        [63, 64],
        [64, 65],
        [65, 63],
        [129, 64],
        [64, 129],
        [129, 129],
        [33, 32],
        [2, 129],
      ];
      for (const [nQ, nK] of shapes) {
        const dK = 1 + (nQ % 7),
          dV = 2 + (nK % 5);
        const q = randomTensor(next, [nQ, dK]);
        const k = randomTensor(next, [nK, dK]);
        const v = randomTensor(next, [nK, dV]);
        const ref = attentionRef(q, k, v, { causal: true });
        const { output } = attn.attention(q, k, v, { causal: true });
        assertTensor(output, [nQ, dV], 'output');
        assertClose(output.data, ref.output, `causal nQ ${nQ} nK ${nK}`);
        // and causal really changes the result wherever a query has later keys to ignore
        if (nK > 1) {
          const plain = attentionRef(q, k, v).output;
          assert.ok(maxAbsDiff(output.data, plain) > 1e-4, `causal nQ ${nQ} nK ${nK} looks unmasked`);
        }
      }
    });

    test('keep mask: Uint8Array tensor and bare array, fully masked rows give zeros', () => {
      const next = rng(31 + threads);
      for (const [nQ, nK, dK, dV] of [
        [5, 17, 3, 7],
        [65, 63, 16, 8],
        [129, 2, 5, 1],
        [2, 129, 1, 33],
      ]) {
        const q = randomTensor(next, [nQ, dK]);
        const k = randomTensor(next, [nK, dK]);
        const v = randomTensor(next, [nK, dV]);
        const keep = randomKeep(next, nQ, nK);
        keep.fill(0, 0, nK); // row 0: every key masked
        if (nQ > 1) keep.fill(1, nK, 2 * nK); // row 1: every key kept
        for (const causal of [false, true]) {
          const ref = attentionRef(q, k, v, { keep, causal });
          const asTensor = attn.attention(q, k, v, { mask: { data: keep, shape: [nQ, nK] }, causal }).output;
          const bare = attn.attention(q, k, v, { mask: keep, causal }).output;
          assertClose(asTensor.data, ref.output, `keep tensor nQ ${nQ} nK ${nK} causal ${causal}`);
          assertClose(bare.data, ref.output, `keep bare nQ ${nQ} nK ${nK} causal ${causal}`);
          for (let c = 0; c < dV; ++c) assert.equal(asTensor.data[c], 0, 'a fully masked row is zero');
        }
      }
    });

    test('additive Float32Array mask with -Infinity entries', () => {
      const next = rng(41 + threads);
      for (const [nQ, nK, dK, dV] of [
        [3, 5, 2, 4],
        [64, 65, 8, 3],
        [17, 129, 5, 5],
      ]) {
        const q = randomTensor(next, [nQ, dK]);
        const k = randomTensor(next, [nK, dK]);
        const v = randomTensor(next, [nK, dV]);
        const bias = uniform(next, nQ * nK, -2, 2);
        for (let i = 0; i < bias.length; ++i) if (next() < 0.3) bias[i] = -Infinity;
        bias.fill(-Infinity, (nQ - 1) * nK); // last row: every key masked
        for (const causal of [false, true]) {
          const ref = attentionRef(q, k, v, { bias, causal });
          const asTensor = attn.attention(q, k, v, { mask: tensor(bias, [nQ, nK]), causal }).output;
          const bare = attn.attention(q, k, v, { mask: bias, causal }).output;
          assertClose(asTensor.data, ref.output, `bias tensor nQ ${nQ} nK ${nK} causal ${causal}`);
          assertClose(bare.data, ref.output, `bias bare nQ ${nQ} nK ${nK} causal ${causal}`);
          for (let c = 0; c < dV; ++c) assert.equal(asTensor.data[(nQ - 1) * dV + c], 0, 'a fully masked row is zero');
        }
        // a finite additive mask shifts the result (it is not ignored)
        const finite = uniform(next, nQ * nK, -2, 2);
        const shifted = attn.attention(q, k, v, { mask: finite }).output;
        assertClose(shifted.data, attentionRef(q, k, v, { bias: finite }).output, 'finite bias');
        if (nK > 1) assert.ok(maxAbsDiff(shifted.data, attentionRef(q, k, v).output) > 1e-4, 'bias ignored');
      }
    });

    test('custom scale', () => {
      const next = rng(51 + threads);
      for (const scale of [0.37, 2, -0.5, 0, 1]) {
        const q = randomTensor(next, [17, 8]);
        const k = randomTensor(next, [63, 8]);
        const v = randomTensor(next, [63, 5]);
        const { output, scaled } = attn.attention(q, k, v, { scale, causal: true, trace: true });
        const ref = attentionRef(q, k, v, { scale, causal: true });
        assertClose(output.data, ref.output, `scale ${scale}`);
        assertClose(scaled.data, ref.scaled, `scaled, scale ${scale}`);
      }
    });

    test('trace: scores, scaled, masked (-Infinity cells), weights', () => {
      const next = rng(61 + threads);
      const cases = [
        [5, 3, 2, 7, {}],
        [65, 64, 9, 4, { causal: true }],
        [33, 129, 3, 2, { causal: true, keep: true }],
        [64, 17, 16, 16, { bias: true, scale: 0.7 }],
        [129, 65, 4, 1, { causal: true, bias: true }],
      ];
      for (const [nQ, nK, dK, dV, o] of cases) {
        const q = randomTensor(next, [nQ, dK]);
        const k = randomTensor(next, [nK, dK]);
        const v = randomTensor(next, [nK, dV]);
        const refOptions = { causal: o.causal, scale: o.scale };
        const options = { causal: o.causal, scale: o.scale, trace: true };
        if (o.keep) options.mask = refOptions.keep = randomKeep(next, nQ, nK);
        if (o.bias) {
          const bias = uniform(next, nQ * nK, -1, 1);
          for (let i = 0; i < bias.length; i += 3) bias[i] = -Infinity;
          options.mask = refOptions.bias = tensor(bias, [nQ, nK]);
        }
        const ref = attentionRef(q, k, v, refOptions);
        const r = attn.attention(q, k, v, options);
        const label = `trace nQ ${nQ} nK ${nK} ${JSON.stringify(o)}`;
        assertTensor(r.output, [nQ, dV], `${label} output`);
        for (const name of ['scores', 'scaled', 'masked', 'weights']) {
          assertTensor(r[name], [nQ, nK], `${label} ${name}`);
          assertClose(r[name].data, ref[name], `${label} ${name}`);
        }
        assertSameMaskedCells(r.masked.data, ref.masked, `${label} masked`);
        assertClose(r.output.data, ref.output, `${label} output`);
        // the output does not depend on whether a trace is taken
        const plain = attn.attention(q, k, v, { ...options, trace: false });
        assert.equal(plain.scores, undefined, 'no trace without trace: true');
        assertClose(plain.output.data, ref.output, `${label} output without trace`);
      }
    });

    test('inputs are left unchanged', () => {
      const next = rng(71);
      const q = randomTensor(next, [17, 4]);
      const k = randomTensor(next, [5, 4]);
      const v = randomTensor(next, [5, 3]);
      const copies = [q, k, v].map((t) => t.data.slice());
      attn.attention(q, k, v, { causal: true, trace: true });
      [q, k, v].forEach((t, i) => assert.deepEqual(t.data, copies[i]));
    });
  });

  describe(`multiHeadAttention (threads: ${threads})`, () => {
    let attn;
    before(async () => {
      attn = await createAttention({ threads });
    });
    after(() => attn.dispose());

    // One forward against mhaRef; returns the result.
    function check(config, { batch, nQ, nK, context, causal, mask, maskKind, scale, trace, seed }) {
      const next = rng(seed);
      const { dModel, heads } = config;
      const dK = config.dK ?? dModel / heads;
      const dV = config.dV ?? dK;
      const weights = randomWeights(next, { dModel, heads, dK, dV, bias: config.bias });
      const layer = attn.multiHeadAttention({ ...config, weights });
      const lead = batch === undefined ? [] : [batch];
      const b = batch ?? 1;
      const x = randomTensor(next, [...lead, nQ, dModel]);
      const ctx = context ? randomTensor(next, [...lead, nK, dModel]) : undefined;
      const n2 = context ? nK : nQ;
      const options = { causal, scale, trace };
      const refOptions = { batch: b, nQ, nK: n2, dModel, heads, dK, dV, causal, scale };
      if (ctx) options.context = refOptions.context = ctx;
      if (mask === 'keep') options.mask = refOptions.keep = randomKeep(next, nQ, n2);
      if (mask === 'bias') {
        const bias = uniform(next, nQ * n2, -1, 1);
        bias.fill(-Infinity, 0, Math.max(1, n2 >> 1));
        options.mask = refOptions.bias = maskKind === 'tensor' ? tensor(bias, [nQ, n2]) : bias;
      }
      const ref = mhaRef(x, weights, refOptions);
      const r = layer.forward(x, options);
      const label = `mha ${JSON.stringify(config)} batch ${batch} nQ ${nQ} nK ${n2} causal ${causal} mask ${mask}`;
      assertTensor(r.output, [...lead, nQ, dModel], `${label} output`);
      assertClose(r.output.data, ref.output, `${label} output`);
      if (trace) {
        assert.equal(r.heads.length, heads, `${label}: one trace per head`);
        const shapes = {
          q: [nQ, dK],
          k: [n2, dK],
          v: [n2, dV],
          scores: [nQ, n2],
          scaled: [nQ, n2],
          masked: [nQ, n2],
          weights: [nQ, n2],
          output: [nQ, dV],
        };
        for (let h = 0; h < heads; ++h) {
          for (const [name, shape] of Object.entries(shapes)) {
            assertTensor(r.heads[h][name], [...lead, ...shape], `${label} heads[${h}].${name}`);
            assertClose(r.heads[h][name].data, ref.heads[h][name], `${label} heads[${h}].${name}`);
          }
          assertSameMaskedCells(r.heads[h].masked.data, ref.heads[h].masked, `${label} heads[${h}].masked`);
        }
        assertTensor(r.concat, [...lead, nQ, heads * dV], `${label} concat`);
        assertClose(r.concat.data, ref.concat, `${label} concat`);
      } else {
        assert.equal(r.heads, undefined);
        assert.equal(r.concat, undefined);
      }
      layer.dispose();
      return r;
    }

    test('self-attention, given weights, no bias', () => {
      check({ dModel: 16, heads: 4 }, { nQ: 17, seed: 1 });
      check({ dModel: 8, heads: 1 }, { nQ: 1, seed: 2 });
      check({ dModel: 12, heads: 3 }, { nQ: 65, seed: 3, causal: true });
    });

    test('cross-attention (context), nK != nQ', () => {
      check({ dModel: 16, heads: 2 }, { nQ: 5, nK: 63, context: true, seed: 4 });
      check({ dModel: 16, heads: 4 }, { nQ: 64, nK: 3, context: true, causal: true, seed: 5 });
    });

    test('batch [batch,n,dModel], self and cross', () => {
      check({ dModel: 16, heads: 4 }, { batch: 3, nQ: 17, seed: 6 });
      check({ dModel: 8, heads: 2 }, { batch: 2, nQ: 33, nK: 5, context: true, causal: true, seed: 7 });
      check({ dModel: 8, heads: 2 }, { batch: 1, nQ: 3, seed: 8 });
    });

    test('bias: true with given biases, dK != dV, heads not dividing dModel', () => {
      check({ dModel: 16, heads: 4, bias: true }, { batch: 2, nQ: 17, seed: 9, causal: true });
      check({ dModel: 10, heads: 3, dK: 4, dV: 6, bias: true }, { nQ: 9, nK: 13, context: true, seed: 10 });
      check({ dModel: 7, heads: 2, dK: 5, bias: false }, { batch: 2, nQ: 65, seed: 11 });
    });

    test('bias: true with some biases left out (zero)', () => {
      const next = rng(12);
      const config = { dModel: 8, heads: 2, bias: true };
      const weights = randomWeights(next, { dModel: 8, heads: 2, dK: 4, dV: 4, bias: true });
      delete weights.bk;
      delete weights.bo;
      const layer = attn.multiHeadAttention({ ...config, weights });
      const w = layer.weights;
      assert.deepEqual([...w.bk.data], new Array(8).fill(0));
      assert.deepEqual([...w.bo.data], new Array(8).fill(0));
      const x = randomTensor(next, [5, 8]);
      const ref = mhaRef(x, weights, { nQ: 5, dModel: 8, heads: 2 });
      assertClose(layer.forward(x).output.data, ref.output, 'output with partial biases');
      layer.dispose();
    });

    test('masks: keep and additive, shared by batch and heads', () => {
      check({ dModel: 16, heads: 2 }, { batch: 2, nQ: 17, mask: 'keep', seed: 13 });
      check({ dModel: 16, heads: 2 }, { batch: 2, nQ: 9, nK: 65, context: true, mask: 'bias', seed: 14 });
      check({ dModel: 8, heads: 4 }, { nQ: 5, mask: 'bias', maskKind: 'tensor', causal: true, seed: 15, scale: 0.3 });
    });

    test('trace: per head q, k, v, scores, scaled, masked, weights, output, and concat', () => {
      check({ dModel: 12, heads: 3, bias: true }, { nQ: 5, trace: true, seed: 16 });
      check({ dModel: 16, heads: 2 }, { batch: 2, nQ: 33, nK: 7, context: true, causal: true, trace: true, seed: 17 });
      check(
        { dModel: 8, heads: 2, dK: 3, dV: 5, bias: true },
        { batch: 3, nQ: 4, mask: 'keep', trace: true, seed: 18 },
      );
      check({ dModel: 16, heads: 4 }, { batch: 1, nQ: 65, causal: true, mask: 'bias', trace: true, seed: 19 });
    });

    test('seeded init: deterministic, seed-dependent, Xavier-bounded', () => {
      const config = { dModel: 24, heads: 4, dV: 5, bias: true };
      const a = attn.multiHeadAttention({ ...config, seed: 7 });
      const b = attn.multiHeadAttention({ ...config, seed: 7 });
      const c = attn.multiHeadAttention({ ...config, seed: 8 });
      const d = attn.multiHeadAttention({ ...config });
      const e = attn.multiHeadAttention({ ...config, seed: 0 });
      const wa = a.weights,
        wb = b.weights,
        wc = c.weights;
      assert.deepEqual(Object.keys(wa).sort(), ['bk', 'bo', 'bq', 'bv', 'wk', 'wo', 'wq', 'wv']);
      const shapes = { wq: [24, 24], wk: [24, 24], wv: [24, 20], wo: [20, 24], bq: [24], bk: [24], bv: [20], bo: [24] };
      for (const [name, shape] of Object.entries(shapes)) {
        assertTensor(wa[name], shape, name);
        assert.deepEqual(wa[name].data, wb[name].data, `${name}: same seed, same weights`);
      }
      for (const name of ['wq', 'wk', 'wv', 'wo']) {
        assert.notDeepEqual(wa[name].data, wc[name].data, `${name}: another seed, other weights`);
        const [fanIn, fanOut] = shapes[name];
        const bound = Math.sqrt(6 / (fanIn + fanOut));
        const m = maxAbs(wa[name].data);
        assert.ok(m <= bound, `${name}: max |w| ${m} > Xavier bound ${bound}`);
        assert.ok(m > 0.8 * bound, `${name}: max |w| ${m} is far below the Xavier bound ${bound}`);
        // roughly centred, and the four matrices differ from each other
        const mean = wa[name].data.reduce((s, x) => s + x, 0) / wa[name].data.length;
        assert.ok(Math.abs(mean) < 0.25 * bound, `${name}: mean ${mean}`);
      }
      assert.notDeepEqual(wa.wq.data, wa.wk.data.subarray(0, wa.wq.data.length));
      // the public generator reproduces them: wq, wk, wv, wo drawn in turn from seededRandom(seed)
      const next = seededRandom(7);
      for (const name of ['wq', 'wk', 'wv', 'wo'])
        assert.deepEqual(wa[name].data, xavierUniform(...shapes[name], next), `${name}: the public draws`);
      for (const name of ['bq', 'bk', 'bv', 'bo'])
        assert.ok(
          wa[name].data.every((x) => x === 0),
          `${name} starts at zero`,
        );
      // no seed is seed 0
      assert.deepEqual(d.weights.wq.data, e.weights.wq.data);
      // the seeded layer computes with exactly those weights
      const x = randomTensor(rng(20), [2, 9, 24]);
      const ref = mhaRef(x, wa, { batch: 2, nQ: 9, dModel: 24, heads: 4, dK: 6, dV: 5, causal: true });
      assertClose(a.forward(x, { causal: true }).output.data, ref.output, 'seeded layer output');
      for (const layer of [a, b, c, d, e]) layer.dispose();
    });

    test('weights are copies: neither the given arrays nor the returned ones alias the layer', () => {
      const next = rng(21);
      const config = { dModel: 8, heads: 2, bias: true };
      const given = randomWeights(next, { dModel: 8, heads: 2, dK: 4, dV: 4, bias: true });
      const original = Object.fromEntries(Object.entries(given).map(([n, t]) => [n, t.data.slice()]));
      const layer = attn.multiHeadAttention({ ...config, weights: given });
      const x = randomTensor(next, [2, 5, 8]);
      const firstOutput = layer.forward(x).output.data;
      assertClose(firstOutput, mhaRef(x, original, { batch: 2, nQ: 5, dModel: 8, heads: 2 }).output, 'output');

      for (const t of Object.values(given)) t.data.fill(3); // the caller's arrays
      const w = layer.weights;
      for (const t of Object.values(w)) t.data.fill(5); // the returned copies
      w.wq.data = new Float32Array(64);
      const again = layer.weights;
      for (const [name, data] of Object.entries(original)) {
        assert.deepEqual(again[name].data, data, `${name} unchanged in the layer`);
        assert.notEqual(again[name].data, w[name].data);
      }
      assert.deepEqual(layer.forward(x).output.data, firstOutput, 'same output after mutating copies');
      layer.dispose();
    });
  });
}

describe('threads: 1 vs 2', () => {
  let one, two;
  before(async () => {
    one = await createAttention({ threads: 1 });
    two = await createAttention({ threads: 2 });
  });
  after(() => {
    one.dispose();
    two.dispose();
  });

  test('backend threads', () => {
    assert.equal(one.backend.threads, 1);
    assert.equal(two.backend.threads, 2);
  });

  test('multi-head attention: bitwise-identical outputs and traces', () => {
    const config = { dModel: 64, heads: 4, bias: true, seed: 3 };
    const a = one.multiHeadAttention(config);
    const b = two.multiHeadAttention(config);
    assert.deepEqual(a.weights, b.weights);
    const next = rng(31);
    const x = randomTensor(next, [2, 130, 64]);
    const ctx = randomTensor(next, [2, 77, 64]);
    for (const options of [{ causal: true }, { causal: true, trace: true }, { context: ctx }]) {
      const ra = a.forward(x, options);
      const rb = b.forward(x, options);
      assertBitwise(ra.output.data, rb.output.data, `output ${Object.keys(options)}`);
      if (options.trace) {
        assertBitwise(ra.concat.data, rb.concat.data, 'concat');
        for (let h = 0; h < 4; ++h) {
          for (const name of ['q', 'k', 'v', 'scores', 'scaled', 'masked', 'weights', 'output']) {
            assertBitwise(ra.heads[h][name].data, rb.heads[h][name].data, `heads[${h}].${name}`);
          }
        }
      }
    }
    // and both are right
    const w = a.weights;
    const ref = mhaRef(x, w, { batch: 2, nQ: 130, dModel: 64, heads: 4, causal: true });
    assertClose(b.forward(x, { causal: true }).output.data, ref.output, 'two threads vs reference');
    a.dispose();
    b.dispose();
  });

  test('attention: bitwise-identical outputs', () => {
    const next = rng(32);
    const q = randomTensor(next, [257, 24]);
    const k = randomTensor(next, [190, 24]);
    const v = randomTensor(next, [190, 40]);
    for (const options of [{}, { causal: true }, { mask: randomKeep(next, 257, 190) }, { causal: true, trace: true }]) {
      const ra = one.attention(q, k, v, options);
      const rb = two.attention(q, k, v, options);
      assert.deepEqual(Object.keys(ra), Object.keys(rb));
      for (const name of Object.keys(ra)) {
        assert.deepEqual(ra[name].shape, rb[name].shape);
        assertBitwise(ra[name].data, rb[name].data, `${name}, options ${Object.keys(options)}`);
      }
    }
  });
});

describe('results own their memory', () => {
  for (const threads of [1, 2]) {
    test(`fresh Float32Arrays, not views into wasm memory (threads: ${threads})`, async () => {
      const attn = await createAttention({ threads });
      try {
        const next = rng(41);
        const q = randomTensor(next, [9, 4]);
        const k = randomTensor(next, [7, 4]);
        const v = randomTensor(next, [7, 3]);
        const first = attn.attention(q, k, v, { trace: true });
        const saved = Object.fromEntries(Object.entries(first).map(([n, t]) => [n, t.data.slice()]));
        const wasmBytes = attn.memory().wasmBytes;
        for (const [name, t] of Object.entries(first)) {
          const { buffer } = t.data;
          assert.ok(t.data instanceof Float32Array, name);
          assert.ok(
            !(typeof SharedArrayBuffer === 'function' && buffer instanceof SharedArrayBuffer),
            `${name}: a SharedArrayBuffer`,
          );
          assert.equal(t.data.byteOffset, 0, `${name}: byteOffset`);
          assert.equal(
            buffer.byteLength,
            t.data.byteLength,
            `${name}: its buffer is larger than the result (wasm memory has ${wasmBytes} bytes)`,
          );
        }
        // another call with other inputs does not touch the first result
        attn.attention(randomTensor(next, [9, 4]), randomTensor(next, [7, 4]), randomTensor(next, [7, 3]), {
          trace: true,
        });
        for (const [name, data] of Object.entries(saved)) assert.deepEqual(first[name].data, data, `${name} changed`);

        // nor does a call that grows wasm memory (which would detach views)
        const big = attn.attention(
          randomTensor(next, [1024, 8]),
          randomTensor(next, [2048, 8]),
          randomTensor(next, [2048, 8]),
          { trace: true },
        );
        assert.ok(attn.memory().wasmBytes > wasmBytes, 'wasm memory grew');
        assert.equal(big.weights.data.buffer.byteLength, 1024 * 2048 * 4);
        for (const [name, data] of Object.entries(saved))
          assert.deepEqual(first[name].data, data, `${name} changed after growth`);

        // multi-head outputs, traces and weights, likewise
        const layer = attn.multiHeadAttention({ dModel: 8, heads: 2, bias: true, seed: 1 });
        const x = randomTensor(next, [2, 5, 8]);
        const r1 = layer.forward(x, { trace: true });
        const w = layer.weights;
        const kept = {
          out: r1.output.data.slice(),
          concat: r1.concat.data.slice(),
          q0: r1.heads[0].q.data.slice(),
          wq: w.wq.data.slice(),
        };
        for (const t of [r1.output, r1.concat, r1.heads[0].q, r1.heads[1].weights, w.wq, w.bo]) {
          assert.equal(t.data.buffer.byteLength, t.data.byteLength, 'mha result: its own buffer');
          assert.ok(!(typeof SharedArrayBuffer === 'function' && t.data.buffer instanceof SharedArrayBuffer));
        }
        layer.forward(randomTensor(next, [2, 5, 8]), { trace: true });
        assert.deepEqual(r1.output.data, kept.out);
        assert.deepEqual(r1.concat.data, kept.concat);
        assert.deepEqual(r1.heads[0].q.data, kept.q0);
        assert.deepEqual(w.wq.data, kept.wq);
        layer.dispose();
      } finally {
        attn.dispose();
      }
    });
  }
});

test('each tensor of a result has its own shape array (2-D trace, heads trace and qk)', async () => {
  const attn = await createAttention({ threads: 1 });
  try {
    const next = rng(43);
    const calls = [
      attn.attention(randomTensor(next, [3, 4]), randomTensor(next, [5, 4]), randomTensor(next, [5, 4]), {
        trace: true,
        softcap: 2,
      }),
      attn.attention(
        randomTensor(next, [1, 2, 3, 4]),
        randomTensor(next, [1, 1, 5, 4]),
        randomTensor(next, [1, 1, 5, 4]),
        {
          trace: true,
          qkOutput: 'weights',
        },
      ),
    ];
    for (const result of calls) {
      const tensors = Object.entries(result);
      for (const [i, [name, t]] of tensors.entries())
        for (const [other, u] of tensors.slice(i + 1))
          assert.notEqual(t.shape, u.shape, `${name} and ${other} share one shape array`);
      // reshaping one leaves the others as they were
      const shape = result.weights.shape.slice();
      result.scores.shape.reverse();
      assert.deepEqual(result.weights.shape, shape);
    }
  } finally {
    attn.dispose();
  }
});

test('tensor() builds { data, shape }', () => {
  const data = new Float32Array(6);
  const t = tensor(data, [2, 3]);
  assert.equal(t.data, data);
  assert.deepEqual(t.shape, [2, 3]);
});

// The shipped model was trained on, and the page's unknown-word vectors are, these numbers:
// pinned. mulberry32's first three draws (×2³²) for three seeds, and one Xavier draw.
test('seededRandom(seed) and xavierUniform give the pinned numbers', () => {
  const draws = (seed) => {
    const next = seededRandom(seed);
    return [next(), next(), next()].map((x) => x * 2 ** 32);
  };
  assert.deepEqual(draws(0), [1144304738, 1416247, 958946056]);
  assert.deepEqual(draws(1), [2693262067, 11749833, 2265367787]);
  assert.deepEqual(draws(2 ** 32 - 1), [3850105811, 813802916, 3073704848]);
  assert.deepEqual(
    xavierUniform(2, 3, seededRandom(7)),
    new Float32Array([-1.0698013, -0.95970136, 1.0448523, 0.43605006, 0.04698423, -0.20699161]),
  );
});

// index.cjs is built from web/lib/require_entry.js (scripts/build/build_cjs.mjs): the same functions,
// bundled, and createAttention loading the ES module.
describe('the CommonJS entry (require)', () => {
  const cjs = createRequire(import.meta.url)('../../../web/lib/index.cjs');

  test('exports what the ES module exports', () => {
    assert.deepEqual(Object.keys(cjs).sort(), Object.keys(esm).sort());
  });

  test('tensor() builds the same tensors', () => {
    const data = new Float32Array(6);
    const bits = new Uint16Array(6);
    for (const [made, madeCjs] of [
      [tensor(data, [2, 3]), cjs.tensor(data, [2, 3])],
      [tensor(bits, [3, 2], { dtype: 'float16' }), cjs.tensor(bits, [3, 2], { dtype: 'float16' })],
    ]) {
      assert.deepEqual(Object.keys(madeCjs), Object.keys(made));
      assert.equal(madeCjs.data, made.data);
      assert.deepEqual(madeCjs, made);
    }
  });

  test('seededRandom and xavierUniform give the same numbers', () => {
    for (const seed of [0, 1, 0xe40c292c, 2 ** 32 - 1]) {
      const [a, b] = [seededRandom(seed), cjs.seededRandom(seed)];
      for (let i = 0; i < 100; ++i) assert.equal(b(), a(), `seed ${seed}, draw ${i}`);
    }
    assert.deepEqual(cjs.xavierUniform(7, 5, cjs.seededRandom(3)), xavierUniform(7, 5, seededRandom(3)));
  });

  test('createAttention loads the module and computes', async () => {
    const attn = await cjs.createAttention({ threads: 1 });
    try {
      const x = tensor(new Float32Array([1, 0, 0, 1, 1, 1]), [3, 2]);
      const k = tensor(new Float32Array([1, 1, 0, 1, 1, 2]), [3, 2]);
      const { output } = attn.attention(x, k, x);
      const expected = [0.80222419, 0.59888791, 0.75174492, 0.75174492, 0.85997076, 0.71600459];
      output.data.forEach((v, i) => assert.ok(Math.abs(v - expected[i]) < 1e-6, `output[${i}] = ${v}`));
    } finally {
      attn.dispose();
    }
  });
});

describe('binding contract (web/lib/binding.js)', () => {
  const { ErrorKind, mhaSaved, scoreMask, throwIfFailed } = binding;
  test('a struct builder sets every field, its default (0 unless said) for those left out', () => {
    const fields = binding.structFields;
    assert.deepEqual(fields(scoreMask({ keep: 64 })), {
      causal: false,
      keep: 64,
      bias: 0,
      offset: 0,
      left: -1,
      right: -1,
      keyLimit: 2 ** 32 - 1,
      maskLd: 2 ** 32 - 1,
      maskCols: 2 ** 32 - 1,
      softcap: 0,
      sink: -Infinity,
    });
    assert.deepEqual(fields(mhaSaved({ q: 8, concat: 16 })), {
      q: 8,
      k: 0,
      v: 0,
      scores: 0,
      scaled: 0,
      masked: 0,
      weights: 0,
      concat: 16,
    });
  });

  test('a struct builder rejects a field the struct does not have', () => {
    assert.throws(() => mhaSaved({ x: 8 }), { name: 'Error', message: 'wasm-attention: MhaSaved has no field "x"' });
  });

  test("a struct argument's layout and values are checked as it is written: a bug in this package throws", async () => {
    const { module } = await loadModule({ threads: 1, isa: 'simd128', glue });
    try {
      const structs = new binding.StructWriter(module, new Heap(module));
      structs.begin();
      assert.throws(() => structs.write({ rows: 1 }), /wasm-attention: a call's argument is not a struct/);
      assert.throws(() => structs.write(binding.matrix(-4, 1, 1)), {
        message: 'wasm-attention: Matrix.data is -4, not a u32',
      });
      assert.throws(() => structs.write(scoreMask({ softcap: NaN })), {
        message: 'wasm-attention: ScoreMask.softcap is NaN, not a f32',
      });
      assert.throws(() => structs.write(binding.headsShape({ nQ: '4' })), {
        message: 'wasm-attention: HeadsShape.nQ is 4, not a u32',
      });
      // the bytes embind.cpp reads: HeadsMask holds its ScoreMask inline
      const at = structs.write(binding.headsMask({ mask: scoreMask({ causal: true, left: 3 }), headStride: 7 }));
      const layouts = JSON.parse(module.structLayouts());
      const view = new DataView(new Heap(module).buffer());
      const { fields } = layouts.HeadsMask;
      const mask = at + fields.mask[0];
      assert.equal(view.getUint8(mask + layouts.ScoreMask.fields.causal[0]), 1);
      assert.equal(view.getInt32(mask + layouts.ScoreMask.fields.left[0], true), 3);
      assert.equal(view.getInt32(mask + layouts.ScoreMask.fields.right[0], true), -1);
      assert.equal(view.getFloat32(mask + layouts.ScoreMask.fields.sink[0], true), -Infinity);
      assert.equal(view.getUint32(at + fields.headStride[0], true), 7);
    } finally {
      module.setThreads(1);
    }
  });

  test('a failed call throws by its error kind, not by its text', () => {
    assert.doesNotThrow(() => throwIfFailed('f', { kind: ErrorKind.ok, message: '' }));
    assert.throws(() => throwIfFailed('f', { kind: ErrorKind.outOfMemory, message: 'no room' }), {
      name: 'RangeError',
      message: 'f: no room',
    });
    assert.throws(
      () => throwIfFailed('f', { kind: ErrorKind.invalidArgument, message: 'out of memory, says the text' }),
      { name: 'Error', message: 'f: out of memory, says the text' },
    );
  });

  test('the module returns a core error as a Status: its kind and the core message', async () => {
    const { module } = await loadModule({ threads: 1, isa: 'simd128', glue });
    try {
      const { matrix, attentionBackwardTrace } = binding;
      // each struct argument as the address of its bytes (Runtime.call's way)
      const structs = new binding.StructWriter(module, new Heap(module));
      const call = (name, ...args) => {
        structs.begin();
        return module[name](...args.map((a) => (typeof a === 'object' ? structs.write(a) : a)));
      };
      const nowhere = 64; // an offset the core never reads: each call below fails first
      // k with 3 columns for q's 2: std::invalid_argument in the core
      const bad = call(
        'attentionForward',
        matrix(nowhere, 4, 2),
        matrix(nowhere, 5, 3),
        matrix(nowhere, 5, 3),
        matrix(nowhere, 4, 3),
        1,
        scoreMask(),
        binding.attentionTrace(),
      );
      assert.equal(bad.kind, ErrorKind.invalidArgument);
      assert.match(bad.message, /^attention: k must have as many columns as q \(d_k\): q \(4,2\), k \(5,3\)/);
      // P (65536,65536) is 2^32 floats, past wasm32: std::bad_alloc before any memory is read
      const n = 65536;
      const oom = call(
        'attentionBackward',
        matrix(nowhere, n, 1),
        matrix(nowhere, n, 1),
        matrix(nowhere, n, 1),
        matrix(nowhere, n, 1),
        matrix(nowhere, n, 1),
        matrix(nowhere, n, 1),
        matrix(nowhere, n, 1),
        1,
        scoreMask(),
        attentionBackwardTrace(),
        0, // no d_sink
      );
      assert.equal(oom.kind, ErrorKind.outOfMemory);
      assert.match(oom.message, /^out of memory/);
    } finally {
      module.setThreads(1);
    }
  });
});
