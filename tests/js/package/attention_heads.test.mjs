// attention() and attentionBackward() on heads (3-D and 4-D), held to the float64 ONNX
// Attention reference (scripts/lib/reference.mjs): layouts, GQA/MQA, masks of every rank and type,
// causal after a past and with kvLength, windows, softcap, every qkOutput, rotary in both
// pair orders, a KV cache decode loop, the backward, threads, and wasm memory left as found.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';

import { createAttention, tensor } from '../../../web/lib/index.js';
import {
  maxAbs,
  maxAbsDiff,
  onnxAttentionBackwardRef,
  onnxAttentionRef,
  rng,
  uniform,
} from '../../../scripts/lib/reference.mjs';

const TOL = 2e-5; // float32 against float64, relative to max(1, |reference|)
const QK_MODES = ['scaled', 'softcapped', 'masked', 'weights'];

// A reference case: { batch, qHeads, kvHeads, nQ, nNew, dK, dV, q, k, v, ... } as
// onnxAttentionRef takes it, inputs uniform in [-1, 1).
function makeCase(seed, a) {
  const next = rng(seed);
  const c = { batch: 1, qHeads: 1, kvHeads: 1, nPast: 0, ...a };
  c.q = uniform(next, c.batch * c.qHeads * c.nQ * c.dK);
  c.k = uniform(next, c.batch * c.kvHeads * c.nNew * c.dK);
  c.v = uniform(next, c.batch * c.kvHeads * c.nNew * c.dV);
  if (c.nPast) {
    c.pastKey = uniform(next, c.batch * c.kvHeads * c.nPast * c.dK);
    c.pastValue = uniform(next, c.batch * c.kvHeads * c.nPast * c.dV);
  }
  return c;
}

const headShape = (c, heads, rows, d) => (c.threeD ? [c.batch, rows, heads * d] : [c.batch, heads, rows, d]);

// The package's arguments for case c: [q, k, v, options].
function packageArgs(c, extra = {}) {
  const o = { ...extra };
  if (c.threeD) o.heads = { q: c.qHeads, kv: c.kvHeads };
  for (const name of ['causal', 'scale', 'softcap', 'kvLength', 'rotary']) if (c[name] !== undefined) o[name] = c[name];
  if (c.left !== undefined || c.right !== undefined) o.window = { left: c.left, right: c.right };
  if (c.nPast) {
    o.pastKey = tensor(c.pastKey, [c.batch, c.kvHeads, c.nPast, c.dK]);
    o.pastValue = tensor(c.pastValue, [c.batch, c.kvHeads, c.nPast, c.dV]);
  }
  if (c.mask) {
    const { dims, values, boolean, asArray } = c.mask;
    const data = !boolean
      ? Float32Array.from(values)
      : asArray
        ? Array.from(values, Boolean)
        : Uint8Array.from(values, (x) => (x ? 1 : 0));
    o.mask = { data, shape: dims };
  }
  return [
    tensor(c.q, headShape(c, c.qHeads, c.nQ, c.dK)),
    tensor(c.k, headShape(c, c.kvHeads, c.nNew, c.dK)),
    tensor(c.v, headShape(c, c.kvHeads, c.nNew, c.dV)),
    o,
  ];
}

function assertClose(got, want, what) {
  const d = maxAbsDiff(got, want);
  const tol = TOL * Math.max(1, maxAbs(Array.from(want).filter(Number.isFinite)));
  assert.ok(d <= tol, `${what}: max abs diff ${d} (tolerance ${tol})`);
}

// attention() on case c against the reference: output, and qk in every mode, present keys.
function check(attn, c, title) {
  const ref = onnxAttentionRef(c);
  const args = packageArgs(c);
  const r = attn.attention(...args);
  assert.deepEqual(r.output.shape, headShape(c, c.qHeads, c.nQ, c.dV), `${title}: output shape`);
  assertClose(r.output.data, ref.y, `${title}: output`);
  if (c.nPast) {
    assertClose(r.presentKey.data, ref.presentKey, `${title}: presentKey`);
    assertClose(r.presentValue.data, ref.presentValue, `${title}: presentValue`);
  }
  return { ref, args };
}

function checkQk(attn, c, title) {
  const { ref, args } = check(attn, c, title);
  const [q, k, v, o] = args;
  const n = c.nPast + c.nNew;
  QK_MODES.forEach((mode, m) => {
    const { qk } = attn.attention(q, k, v, { ...o, qkOutput: mode });
    assert.deepEqual(qk.shape, [c.batch, c.qHeads, c.nQ, n]);
    assertClose(qk.data, ref.qk[m], `${title}: qk ${mode}`);
  });
}

describe('attention on heads against the ONNX reference', () => {
  let attn;
  before(async () => {
    attn = await createAttention({ threads: 2 });
  });
  after(() => attn.dispose());

  test('odd sizes, both layouts, GQA, MQA and one head per kv head', () => {
    const sizes = [
      [1, 1],
      [3, 5],
      [5, 17],
      [17, 63],
      [63, 65],
      [65, 129],
      [1, 257],
      [3, 300],
    ];
    const heads = [
      [4, 2],
      [3, 1],
      [2, 2],
      [6, 3],
    ];
    const dims = [
      [5, 3],
      [8, 7],
      [17, 16],
      [1, 1],
    ];
    sizes.forEach(([nQ, nNew], i) => {
      const [qHeads, kvHeads] = heads[i % heads.length];
      const [dK, dV] = dims[i % dims.length];
      const c = makeCase(10 + i, { batch: 1 + (i % 2), qHeads, kvHeads, nQ, nNew, dK, dV, threeD: i % 2 === 1 });
      check(attn, c, `nQ ${nQ} nK ${nNew} Hq ${qHeads} Hkv ${kvHeads} dK ${dK} dV ${dV} ${c.threeD ? '3-D' : '4-D'}`);
      check(attn, { ...c, causal: true }, `causal nQ ${nQ} nK ${nNew}`);
    });
  });

  test('masks of every rank (1 to 4), broadcast and full, keep (Uint8Array, boolean[]) and additive, padded when short', () => {
    const base = { batch: 2, qHeads: 4, kvHeads: 2, nQ: 3, nNew: 7, dK: 5, dV: 3 };
    const rankDims = [[7], [3, 7], [1, 3, 5], [4, 1, 7], [2, 1, 1, 7], [2, 4, 3, 6], [1, 1, 3, 1]];
    let seed = 100;
    for (const dims of rankDims) {
      for (const type of ['uint8', 'boolean[]', 'float32']) {
        const next = rng(++seed);
        const count = dims.reduce((x, y) => x * y, 1);
        const boolean = type !== 'float32';
        const values = Array.from({ length: count }, () =>
          boolean ? next() < 0.7 : next() < 0.2 ? -Infinity : 2 * next() - 1,
        );
        const c = makeCase(seed, {
          ...base,
          threeD: seed % 2 === 0,
          mask: { dims, boolean, values, asArray: type === 'boolean[]' },
        });
        check(attn, c, `mask ${JSON.stringify(dims)} ${type}`);
      }
    }
  });

  test('causal after a past (bottom-right), with presentKey/presentValue; kvLength per sequence', () => {
    for (const [nQ, nNew, nPast] of [
      [1, 1, 5],
      [3, 3, 17],
      [2, 4, 65],
      [5, 5, 260],
    ]) {
      const c = makeCase(nPast, {
        batch: 2,
        qHeads: 4,
        kvHeads: 1,
        nQ,
        nNew,
        nPast,
        dK: 8,
        dV: 5,
        causal: true,
        threeD: nQ % 2 === 1,
      });
      checkQk(attn, c, `past ${nPast} new ${nNew}`);
    }
    const padded = makeCase(7, {
      batch: 3,
      qHeads: 2,
      kvHeads: 2,
      nQ: 3,
      nNew: 9,
      dK: 4,
      dV: 4,
      causal: true,
      kvLength: [9, 4, 0],
    });
    checkQk(attn, padded, 'kvLength [9,4,0]');
    checkQk(
      attn,
      { ...padded, causal: false, kvLength: Int32Array.from([2, 9, 5]) },
      'kvLength Int32Array, not causal',
    );
  });

  test('windows: left, right, both, with and without causal, after a past', () => {
    for (const [left, right, causal, nPast] of [
      [2, -1, true, 0],
      [0, 0, false, 0],
      [-1, 3, false, 0],
      [4, 1, false, 6],
      [1, -1, true, 9],
      [0, -1, true, 0],
    ]) {
      const c = makeCase(left + 3 * right + nPast, {
        batch: 1,
        qHeads: 2,
        kvHeads: 1,
        nQ: 6,
        nNew: 6,
        nPast,
        dK: 4,
        dV: 3,
        causal,
        left,
        right,
      });
      checkQk(attn, c, `window left ${left} right ${right} causal ${causal} past ${nPast}`);
    }
  });

  test('softcap bounds the scaled scores before the mask; every qkOutput', () => {
    const c = makeCase(31, {
      batch: 2,
      qHeads: 3,
      kvHeads: 1,
      nQ: 5,
      nNew: 17,
      dK: 9,
      dV: 4,
      softcap: 0.7,
      scale: 1.9,
      causal: true,
      mask: { dims: [5, 17], boolean: false, values: uniform(rng(32), 85) },
    });
    const { ref } = check(attn, c, 'softcap');
    assert.ok(maxAbs(ref.qk[0]) > 0.7 && maxAbs(ref.qk[1]) <= 0.7, 'the case has scores past the cap');
    checkQk(attn, c, 'softcap qk');
  });

  test('rotary on q and k: half-split and interleaved, partial dims, offsets, after a past', () => {
    const cases = [
      { rotary: { offset: 0 }, nPast: 0 },
      { rotary: { interleaved: true, base: 500, offset: 3 }, nPast: 0 },
      { rotary: { dims: 4, offset: 1 }, nPast: 5 },
      { rotary: { dims: 6, interleaved: true }, nPast: 2 },
    ];
    cases.forEach(({ rotary, nPast }, i) => {
      const c = makeCase(40 + i, {
        batch: 2,
        qHeads: 4,
        kvHeads: 2,
        nQ: 3,
        nNew: 3,
        nPast,
        dK: 8,
        dV: 5,
        causal: true,
        rotary,
        threeD: i % 2 === 0,
      });
      check(attn, c, `rotary ${JSON.stringify(rotary)} past ${nPast}`);
    });
  });

  test('trace on heads: scores, scaled, capped, masked and weights [B,Hq,nQ,nTotal] match the reference', () => {
    const c = makeCase(55, {
      batch: 2,
      qHeads: 4,
      kvHeads: 2,
      nQ: 3,
      nNew: 6,
      nPast: 2,
      dK: 5,
      dV: 3,
      causal: true,
      softcap: 0.5,
      scale: 2,
    });
    const ref = onnxAttentionRef(c);
    const r = attn.attention(...packageArgs(c, { trace: true }));
    const n = c.nPast + c.nNew;
    for (const name of ['scores', 'scaled', 'capped', 'masked', 'weights'])
      assert.deepEqual(r[name].shape, [2, 4, 3, n], name);
    assertClose(
      r.scores.data,
      ref.qk[0].map((x) => x / c.scale),
      'scores',
    );
    assertClose(r.scaled.data, ref.qk[0], 'scaled');
    assertClose(r.capped.data, ref.qk[1], 'capped');
    assertClose(r.masked.data, ref.qk[2], 'masked');
    assertClose(r.weights.data, ref.qk[3], 'weights');
  });

  test('the 2-D call is unchanged, and a 4-D call with one head gives the same numbers', () => {
    const c = makeCase(50, { nQ: 5, nNew: 7, dK: 6, dV: 4, causal: true });
    const twoD = attn.attention(tensor(c.q, [5, 6]), tensor(c.k, [7, 6]), tensor(c.v, [7, 4]), { causal: true });
    const fourD = attn.attention(...packageArgs(c));
    assert.deepEqual(twoD.output.shape, [5, 4]);
    assert.ok(maxAbsDiff(twoD.output.data, fourD.output.data) <= 1e-6);
  });

  test('2-D calls take softcap, window and rotary: bitwise the 4-D call with one head, forward, trace and backward', () => {
    const options = [
      { causal: true, window: { left: 3 } },
      { window: { left: 2, right: 1 }, softcap: 0.7, scale: 1.3 },
      { causal: true, rotary: { offset: 3, interleaved: true } },
      { softcap: 2, rotary: { dims: 4, base: 50 }, window: { right: 0 } },
      { softcap: 1.1, rotary: true },
    ];
    // the last shapes decode: a few queries over more keys than one decode run
    for (const [nQ, nK] of [
      [5, 7],
      [40, 33],
      [2, 1300],
    ])
      for (const o of options) {
        const what = `nQ ${nQ}, nK ${nK}, ${JSON.stringify(o)}`;
        const c = makeCase(nQ + nK, { nQ, nNew: nK, dK: 6, dV: 4 });
        const [q, k, v] = [tensor(c.q, [nQ, 6]), tensor(c.k, [nK, 6]), tensor(c.v, [nK, 4])];
        const [q4, k4, v4] = [q, k, v].map((t) => tensor(t.data, [1, 1, ...t.shape]));
        const same = (a, b, name) =>
          assert.ok(
            a.length === b.length && a.every((x, i) => Object.is(x, b[i])),
            `${what}: ${name} not bitwise the 4-D one (max abs diff ${maxAbsDiff(a, b)})`,
          );
        const twoD = attn.attention(q, k, v, { ...o, trace: true });
        const fourD = attn.attention(q4, k4, v4, { ...o, trace: true });
        assert.deepEqual(twoD.output.shape, [nQ, 4]);
        same(twoD.output.data, fourD.output.data, 'output');
        same(attn.attention(q, k, v, o).output.data, attn.attention(q4, k4, v4, o).output.data, 'fused output');
        for (const name of ['scores', 'scaled', 'masked', 'weights', ...(o.softcap ? ['capped'] : [])])
          same(twoD[name].data, fourD[name].data, name);
        const ref = onnxAttentionRef({
          ...c,
          causal: o.causal,
          left: o.window?.left,
          right: o.window?.right,
          softcap: o.softcap,
          scale: o.scale,
          rotary: o.rotary,
        });
        assertClose(twoD.output.data, ref.y, `${what}: output against the reference`);
        const dy = uniform(rng(nQ), nQ * 4);
        const g2 = attn.attentionBackward(q, k, v, tensor(dy, [nQ, 4]), o);
        const g4 = attn.attentionBackward(q4, k4, v4, tensor(dy, [1, 1, nQ, 4]), o);
        // with trace, the 2-D backward that keeps its intermediates gives the same gradients
        const g2t = attn.attentionBackward(q, k, v, tensor(dy, [nQ, 4]), { ...o, trace: true });
        for (const name of ['dq', 'dk', 'dv']) {
          assert.deepEqual(g2[name].shape, [name === 'dq' ? nQ : nK, name === 'dv' ? 4 : 6]);
          same(g2[name].data, g4[name].data, name);
          same(g2t[name].data, g4[name].data, `${name} with trace`);
        }
        for (const name of ['weights', 'dWeights', 'dScores']) assert.deepEqual(g2t[name].shape, [nQ, nK]);
        same(g2t.weights.data, twoD.weights.data, "the backward trace's weights");
      }
  });

  test("a 2-D call's mask is the heads mask of one sequence and one head: boolean[], Uint8Array, bare", () => {
    const [nQ, nK] = [3, 5];
    const c = makeCase(31, { nQ, nNew: nK, dK: 4, dV: 2 });
    const [q, k, v] = [tensor(c.q, [nQ, 4]), tensor(c.k, [nK, 4]), tensor(c.v, [nK, 2])];
    const keep = Array.from({ length: nQ * nK }, (_, i) => i % 3 !== 1);
    const bytes = Uint8Array.from(keep, (b) => (b ? 1 : 0));
    const want = attn.attention(q, k, v, { mask: bytes }).output.data;
    const heads = attn.attention(...[q, k, v].map((t) => tensor(t.data, [1, 1, ...t.shape])), {
      mask: tensor(bytes, [nQ, nK]),
    });
    assert.deepEqual(heads.output.data, want);
    assert.deepEqual(attn.attention(q, k, v, { mask: { data: keep, shape: [nQ, nK] } }).output.data, want);
    assert.deepEqual(attn.attention(q, k, v, { mask: tensor(bytes, [nQ, nK]) }).output.data, want);
    assert.notDeepEqual(attn.attention(q, k, v).output.data, want);
  });
});

describe('a KV cache', () => {
  let attn;
  before(async () => {
    attn = await createAttention({ threads: 2 });
  });
  after(() => attn.dispose());

  test('a decode loop, one token at a time after a prefill, equals causal attention over the whole sequence (rotary, GQA)', () => {
    const B = 1,
      Hq = 4,
      Hkv = 2,
      d = 8,
      T = 21,
      prefill = 5;
    const next = rng(60);
    const q = uniform(next, B * Hq * T * d),
      k = uniform(next, B * Hkv * T * d),
      v = uniform(next, B * Hkv * T * d);
    const rotary = { interleaved: false, offset: 0 };
    const whole = attn.attention(tensor(q, [B, Hq, T, d]), tensor(k, [B, Hkv, T, d]), tensor(v, [B, Hkv, T, d]), {
      causal: true,
      rotary,
    });
    // rows [from, to) of each head of x [B,H,T,d]
    const rows = (x, H, from, to) => {
      const out = new Float32Array(B * H * (to - from) * d);
      for (let h = 0; h < B * H; ++h) out.set(x.subarray((h * T + from) * d, (h * T + to) * d), h * (to - from) * d);
      return out;
    };
    const cache = attn.kvCache({ batch: B, kvHeads: Hkv, dK: d, dV: d, capacity: T });
    try {
      let t = 0;
      for (const step of [prefill, ...Array(T - prefill).fill(1)]) {
        const r = attn.attention(
          tensor(rows(q, Hq, t, t + step), [B, Hq, step, d]),
          tensor(rows(k, Hkv, t, t + step), [B, Hkv, step, d]),
          tensor(rows(v, Hkv, t, t + step), [B, Hkv, step, d]),
          { cache, causal: true, rotary },
        );
        t += step;
        assert.equal(cache.length, t);
        const d_ = maxAbsDiff(r.output.data, rows(whole.output.data, Hq, t - step, t));
        assert.ok(d_ <= 1e-5, `step ending at ${t}: max abs diff ${d_}`);
      }
      assert.equal(cache.capacity, T);
      cache.truncate(3);
      assert.equal(cache.length, 3);
      cache.reset();
      assert.equal(cache.length, 0);
    } finally {
      cache.dispose();
    }
    assert.equal(cache.length, 0);
    assert.throws(() => cache.reset(), { name: 'TypeError', message: 'kvCache.reset: this cache was disposed' });
  });

  test('3-D new keys go into the 4-D cache; an overflow is a RangeError that leaves the cache as it was', () => {
    const c = makeCase(70, {
      batch: 2,
      qHeads: 2,
      kvHeads: 1,
      nQ: 3,
      nNew: 3,
      dK: 4,
      dV: 2,
      threeD: true,
      causal: true,
    });
    const cache = attn.kvCache({ batch: 2, kvHeads: 1, dK: 4, dV: 2, capacity: 5 });
    try {
      const [q, k, v, o] = packageArgs(c);
      const first = attn.attention(q, k, v, { ...o, cache });
      assertClose(first.output.data, onnxAttentionRef(c).y, 'first append');
      assert.throws(() => attn.attention(q, k, v, { ...o, cache }), {
        name: 'RangeError',
        message:
          'attention: the cache holds 3 of 5 rows and 3 new keys would overflow it; create it with a larger capacity or reset() it',
      });
      assert.equal(cache.length, 3);
      // the same cache then attends over past + new, as pastKey/pastValue would
      const one = makeCase(71, {
        batch: 2,
        qHeads: 2,
        kvHeads: 1,
        nQ: 1,
        nNew: 1,
        dK: 4,
        dV: 2,
        threeD: true,
        causal: true,
      });
      const [q1, k1, v1, o1] = packageArgs(one);
      const r = attn.attention(q1, k1, v1, { ...o1, cache });
      const withPast = attn.attention(q1, k1, v1, { ...o1, ...pastOf(c) });
      assertClose(r.output.data, withPast.output.data, 'cache vs pastKey/pastValue');
    } finally {
      cache.dispose();
    }
  });
});

// The keys and values of case c (4-D, no rotary) as pastKey/pastValue tensors.
function pastOf(c) {
  const to4d = (x, d) => {
    const out = new Float32Array(x.length);
    for (let b = 0; b < c.batch; ++b)
      for (let h = 0; h < c.kvHeads; ++h)
        for (let r = 0; r < c.nNew; ++r)
          for (let t = 0; t < d; ++t)
            out[((b * c.kvHeads + h) * c.nNew + r) * d + t] = x[((b * c.nNew + r) * c.kvHeads + h) * d + t];
    return out;
  };
  return {
    pastKey: tensor(to4d(c.k, c.dK), [c.batch, c.kvHeads, c.nNew, c.dK]),
    pastValue: tensor(to4d(c.v, c.dV), [c.batch, c.kvHeads, c.nNew, c.dV]),
  };
}

describe('attentionBackward on heads against the ONNX reference', () => {
  let attn;
  before(async () => {
    attn = await createAttention({ threads: 2 });
  });
  after(() => attn.dispose());

  const cases = [
    { title: 'GQA 4-D causal', batch: 2, qHeads: 4, kvHeads: 2, nQ: 5, nNew: 5, dK: 6, dV: 3, causal: true },
    {
      title: 'MQA 3-D, window, softcap, rotary interleaved',
      batch: 1,
      qHeads: 3,
      kvHeads: 1,
      nQ: 17,
      nNew: 17,
      dK: 8,
      dV: 5,
      threeD: true,
      causal: true,
      left: 4,
      softcap: 0.8,
      scale: 1.3,
      rotary: { interleaved: true, offset: 2, base: 50 },
    },
    {
      title: 'kvLength, additive rank-3 mask, rotary half-split partial',
      batch: 2,
      qHeads: 2,
      kvHeads: 2,
      nQ: 3,
      nNew: 65,
      dK: 8,
      dV: 4,
      causal: true,
      kvLength: [65, 30],
      rotary: { dims: 4 },
      mask: { dims: [2, 1, 65], boolean: false, values: uniform(rng(81), 130) },
    },
    {
      title: 'boolean rank-4 mask, right window, no causal',
      batch: 2,
      qHeads: 4,
      kvHeads: 2,
      nQ: 4,
      nNew: 6,
      dK: 5,
      dV: 5,
      right: 1,
      left: 2,
      mask: { dims: [2, 4, 1, 6], boolean: true, values: Array.from({ length: 48 }, (_, i) => i % 3 !== 1) },
    },
  ];
  for (const spec of cases) {
    test(spec.title, () => {
      const { title, ...a } = spec;
      const c = makeCase(title.length, a);
      const dy = uniform(rng(title.length + 1), c.batch * c.qHeads * c.nQ * c.dV);
      const ref = onnxAttentionBackwardRef(c, dy);
      const [q, k, v, o] = packageArgs(c);
      const g = attn.attentionBackward(q, k, v, tensor(dy, headShape(c, c.qHeads, c.nQ, c.dV)), o);
      assert.deepEqual([g.dq.shape, g.dk.shape, g.dv.shape], [q.shape, k.shape, v.shape]);
      assertClose(g.dq.data, ref.dq, `${title}: dq`);
      assertClose(g.dk.data, ref.dk, `${title}: dk`);
      assertClose(g.dv.data, ref.dv, `${title}: dv`);
    });
  }
});

describe('threads and memory', () => {
  test('1 and 2 threads give bitwise the same forward, qk and backward', async () => {
    const one = await createAttention({ threads: 1 }),
      two = await createAttention({ threads: 2 });
    try {
      const c = makeCase(90, {
        batch: 2,
        qHeads: 8,
        kvHeads: 2,
        nQ: 65,
        nNew: 300,
        dK: 16,
        dV: 16,
        threeD: true,
        causal: true,
        softcap: 2,
        rotary: {},
      });
      const args = packageArgs(c);
      const dy = tensor(uniform(rng(91), 2 * 65 * 8 * 16), [2, 65, 128]);
      for (const [name, call] of [
        ['forward', (a) => a.attention(...args).output.data],
        ['qk', (a) => a.attention(args[0], args[1], args[2], { ...args[3], qkOutput: 'weights' }).qk.data],
        ['dq', (a) => a.attentionBackward(args[0], args[1], args[2], dy, args[3]).dq.data],
        ['dk', (a) => a.attentionBackward(args[0], args[1], args[2], dy, args[3]).dk.data],
      ]) {
        assert.deepEqual(call(one), call(two), `${name} differs between 1 and 2 threads`);
      }
    } finally {
      one.dispose();
      two.dispose();
    }
  });

  // 1 thread: exactly the baseline. 2 threads: which thread runs which task varies from call to
  // call, and each thread's scratch buffers grow once, the first time it runs a larger task; so
  // there only a bounded growth (a few KiB, not one per round) is allowed.
  for (const threads of [1, 2])
    test(`wasm memory comes back to its baseline after calls, failed calls and a disposed cache (${threads} thread(s))`, async () => {
      const attn = await createAttention({ threads });
      try {
        const c = makeCase(95, {
          batch: 2,
          qHeads: 4,
          kvHeads: 2,
          nQ: 3,
          nNew: 3,
          nPast: 4,
          dK: 8,
          dV: 4,
          causal: true,
          rotary: {},
          mask: { dims: [3, 7], boolean: true, values: Array(21).fill(true) },
        });
        const [q, k, v, o] = packageArgs(c);
        const dy = tensor(uniform(rng(96), 2 * 4 * 3 * 4), [2, 4, 3, 4]);
        const { pastKey: _pastKey, pastValue: _pastValue, mask: _mask, ...noPast } = o; // the mask covers past + new keys
        const round = () => {
          attn.attention(q, k, v, { ...o, trace: true, qkOutput: 'masked' });
          attn.attentionBackward(q, k, v, dy, noPast);
          assert.throws(() => attn.attention(q, k, v, { ...o, window: { left: -2 } }), RangeError);
          const cache = attn.kvCache({ batch: 2, kvHeads: 2, dK: 8, dV: 4, capacity: 5 });
          attn.attention(q, k, v, { ...noPast, cache });
          assert.throws(() => attn.attention(q, k, v, { ...noPast, cache, qkOutput: 'weights' }), RangeError);
          cache.dispose();
        };
        for (let i = 0; i < 5; ++i) round();
        const baseline = attn.memory().allocatedBytes;
        for (let i = 0; i < 50; ++i) round();
        if (threads === 1) assert.equal(attn.memory().allocatedBytes, baseline);
        else
          assert.ok(attn.memory().allocatedBytes - baseline <= 16384, `${attn.memory().allocatedBytes} vs ${baseline}`);
      } finally {
        attn.dispose();
      }
    });
});

describe('a window reaching 2^31 − 1 keys', () => {
  let attn;
  before(async () => {
    attn = await createAttention({ threads: 2 });
  });
  after(() => attn.dispose());

  const FAR = 2 ** 31 - 1;
  const windows = [
    { left: FAR },
    { right: FAR },
    { left: FAR, right: FAR },
    { right: FAR - 20 },
    { left: FAR - 1, right: FAR - 2 },
  ];
  const same = (got, want, what) =>
    assert.ok(
      got.length === want.length && got.every((x, i) => Object.is(x, want[i])),
      `${what}: not bitwise the same as no window (max abs diff ${maxAbsDiff(got, want)})`,
    );

  test('is no window in 4-D calls with kvLength (queries before key 0), attentionBackward, caches and layers', () => {
    // nQ 30 queries over 12 keys, kvLength 4 and 12: the first queries stand before key 0
    const c = makeCase(90, { batch: 2, qHeads: 2, kvHeads: 1, nQ: 30, nNew: 12, dK: 4, dV: 3, kvLength: [4, 12] });
    const [q, k, v, o] = packageArgs(c);
    const dy = tensor(uniform(rng(91), 2 * 2 * 30 * 3), [2, 2, 30, 3]);
    const plain = attn.attention(q, k, v, o).output.data;
    const plainGrads = attn.attentionBackward(q, k, v, dy, o);
    assert.ok(maxAbs(plain) > 0);
    const layer = (window) => attn.multiHeadAttention({ dModel: 8, heads: 2, window, seed: 5 });
    const x = tensor(uniform(rng(92), 2 * 25 * 8), [2, 25, 8]);
    const base = layer({});
    const layerPlain = base.forward(x, { causal: true }).output.data;
    const cached = (a, window) => {
      const cache = a.kvCache({ batch: 2, kvHeads: 1, dK: 4, dV: 3, capacity: 12 });
      try {
        return a.attention(q, k, v, { ...o, kvLength: undefined, cache, window }).output.data;
      } finally {
        cache.dispose();
      }
    };
    const cachePlain = cached(attn, undefined);
    for (const window of windows) {
      const what = `window ${JSON.stringify(window)}`;
      same(attn.attention(q, k, v, { ...o, window }).output.data, plain, `${what}: attention`);
      const g = attn.attentionBackward(q, k, v, dy, { ...o, window });
      for (const name of ['dq', 'dk', 'dv']) same(g[name].data, plainGrads[name].data, `${what}: ${name}`);
      same(cached(attn, window), cachePlain, `${what}: over a cache`);
      const l = layer(window);
      try {
        same(l.forward(x, { causal: true }).output.data, layerPlain, `${what}: layer`);
      } finally {
        l.dispose();
      }
    }
    base.dispose();
  });
});
