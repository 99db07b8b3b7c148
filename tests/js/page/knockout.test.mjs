// The knock-out and the attribution of web/page/model/knockout.js and ablation.js, in Node on the
// shipped model, held to scalar double references: a head knocked out by zeroing its W_O rows
// gives the residual stream with that head's output o_k = concat_k · W_O,k subtracted (for
// layer-2 heads: exactly that); mean ablation puts the head's mean over the held-out windows
// (the manifest's heldOut.headMeans, times W_O,k) in its place, and those means are the mean of
// its outputs over held-out windows (scripts/train/head_means.mjs); each head's o_k, computed
// row by row in double, adds up with the input to the layer's residual; the attribution's parts
// (embedding, eight heads, feed-forward, bias) sum to the model's logit difference and their
// logits to its logit, at every token, for the predicted token and others against the runner-up,
// on odd lengths; the readout direction is the gradient of the logit in F (finite differences);
// and the page's predict with 'mean' matches that reference rerun.
// run with: node --test tests/js/page/knockout.test.mjs
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { createAttention } from '../../../web/lib/index.js';
import { attributionAt, headEffects, heldOutMeans, predictAt } from '../../../web/page/ablation.js';
import { ablatedWeights, headOutput, readout } from '../../../web/page/model/knockout.js';
import { headMeans } from '../../../scripts/train/head_means.mjs';
import { createModel } from '../../../web/page/model/train.js';
import { feedForward, forwardHead, headParams, topK } from '../../../web/page/model/lm.js';
import { change, createState, recompute } from '../../../web/page/state.js';
import { makeBatch } from '../../../web/page/model/train.js';
import { layerWeights } from '../../../web/page/model/weights.js';
import { tokenize } from '../../../web/page/tokenize.js';
import { loadShippedModel } from '../helpers/shipped_model.mjs';

let attn, model, words, p, state;
before(async () => {
  attn = await createAttention({ threads: 1 });
  model = loadShippedModel();
  state = createState(TEXTS[0]);
  Object.assign(state, { attn, model });
  p = headParams(model.tensors);
  words = p.embed; // the output scores the token embeddings (tied)
});
after(() => attn?.dispose());

const HEADS = 4;
const TEXTS = [
  'My brother bought the small green house near the lake. My brother bought the small green house near the lake.',
  'The animal didn’t cross the street because it was too tired.',
  'We the people', // 3 tokens: an odd, short length
];

// text -> { n, d, hs: [X, X₂, H] tensors, concats, layers } with each layer's weights w (knocked
// out as `knocked` says: [[heads] per layer]), run through the package with trace
const run = (text, knocked = [[], []], means = null) =>
  runIds(
    tokenize(text, model.tokenizer).map((t) => t.id),
    knocked,
    means,
  );
function runIds(ids, knocked = [[], []], means = null) {
  const n = ids.length,
    d = model.dim;
  const { x } = makeBatch([{ ids: [...ids, 0] }], n, d, model.tensors.embed.data, model.manifest.model.positionScale);
  const hs = [{ data: x.data, shape: [n, d] }];
  const concats = [];
  const layers = [];
  for (let L = 0; L < 2; ++L) {
    const { w, add } = ablatedWeights(layerWeights(model.tensors, L), HEADS, knocked[L], means?.[L]);
    const mha = attn.multiHeadAttention({ dModel: d, heads: HEADS, weights: w });
    const r = mha.forward(hs[L], { causal: true, trace: true });
    mha.dispose();
    const next = new Float32Array(n * d);
    for (let k = 0; k < next.length; ++k) next[k] = hs[L].data[k] + r.output.data[k] + (add ? add[k % d] : 0);
    hs.push({ data: next, shape: [n, d] });
    concats.push(r.concat);
    layers.push(w);
  }
  return { n, d, hs, concats, layers };
}

const worst = (a, b) => a.reduce((m, v, k) => Math.max(m, Math.abs(v - b[k])), 0);

test('head outputs o_k (double, row by row) add up with the input to each layer’s residual', () => {
  for (const text of TEXTS) {
    const { n, d, hs, concats, layers } = run(text);
    for (let L = 0; L < 2; ++L)
      for (let i = 0; i < n; ++i) {
        const sum = Float64Array.from(hs[L].data.subarray(i * d, (i + 1) * d));
        for (let k = 0; k < HEADS; ++k) {
          const o = headOutput(concats[L], layers[L].wo, k, d / HEADS, i);
          for (let j = 0; j < d; ++j) sum[j] += o[j];
        }
        const err = worst(sum, hs[L + 1].data.subarray(i * d, (i + 1) * d));
        assert.ok(err < 1e-3, `${text}: layer ${L + 1}, row ${i}: the heads' outputs miss the residual by ${err}`);
      }
  }
});

test('knocking out layer-2 heads (W_O rows zeroed) removes exactly their outputs from the residual', () => {
  for (const text of TEXTS)
    for (const knocked of [[2], [1, 2], [0, 1, 2, 3]]) {
      const full = run(text);
      const out = run(text, [[], knocked]);
      const { n, d } = full;
      // layer 1 is untouched
      assert.equal(worst(out.hs[1].data, full.hs[1].data), 0, 'layer 1 changed');
      for (let i = 0; i < n; ++i) {
        const want = Float64Array.from(full.hs[2].data.subarray(i * d, (i + 1) * d));
        for (const k of knocked) {
          const o = headOutput(full.concats[1], full.layers[1].wo, k, d / HEADS, i);
          for (let j = 0; j < d; ++j) want[j] -= o[j];
        }
        const err = worst(want, out.hs[2].data.subarray(i * d, (i + 1) * d));
        assert.ok(err < 1e-3, `${text}, heads ${knocked}: row ${i} is ${err} from H minus their outputs`);
      }
    }
});

test('mean ablation of layer-2 heads puts their mean output (held-out concat mean · W_O,k) in place of theirs', () => {
  recompute(state);
  const means = heldOutMeans(state);
  for (const text of TEXTS)
    for (const knocked of [[2], [0, 3]]) {
      const full = run(text);
      const out = run(text, [[], knocked], means);
      const { n, d } = full;
      const dV = d / HEADS;
      for (let i = 0; i < n; ++i) {
        const want = Float64Array.from(full.hs[2].data.subarray(i * d, (i + 1) * d));
        for (const k of knocked) {
          const o = headOutput(full.concats[1], full.layers[1].wo, k, dV, i);
          const mean = headOutput({ data: means[1], shape: [1, d] }, full.layers[1].wo, k, dV, 0);
          for (let j = 0; j < d; ++j) want[j] += mean[j] - o[j];
        }
        const err = worst(want, out.hs[2].data.subarray(i * d, (i + 1) * d));
        assert.ok(err < 1e-3, `${text}, heads ${knocked}: row ${i} is ${err} from H with their means`);
      }
    }
});

test('headMeans (scripts/train/head_means.mjs) is the mean of each head’s columns of concat over every position', () => {
  const texts = [
    'My brother bought the small green house near the lake',
    'We the people of the United States, in order',
  ];
  const n = 6,
    d = model.dim;
  const windows = texts.map((text) => ({
    ids: tokenize(text, model.tokenizer)
      .map((t) => t.id)
      .slice(0, n + 1),
  }));
  const m = createModel(attn, { d, heads: HEADS, layers: 2, tensors: model.tensors });
  const got = headMeans(m.layers, model.tensors.embed.data, windows, {
    n,
    d,
    positionScale: model.manifest.model.positionScale,
    B: 1,
  });
  for (const l of m.layers) l.dispose();
  const want = [new Float64Array(d), new Float64Array(d)];
  for (const w of windows) {
    const r = runIds(Array.from(w.ids.slice(0, n)));
    r.concats.forEach((c, L) => {
      for (let i = 0; i < n; ++i) for (let j = 0; j < d; ++j) want[L][j] += c.data[i * d + j] / (texts.length * n);
    });
  }
  for (let L = 0; L < 2; ++L) assert.ok(worst(got[L], want[L]) < 1e-5, `layer ${L + 1}: ${worst(got[L], want[L])}`);
});

test('knocking out no head returns the weights unchanged; the knocked-out rows are 0 and the others kept', () => {
  const w = layerWeights(model.tensors, 1);
  assert.equal(ablatedWeights(w, HEADS, []).w, w);
  assert.equal(ablatedWeights(w, HEADS, [1]).add, null, 'zero ablation adds nothing');
  const k = ablatedWeights(w, HEADS, [1]).w;
  const d = w.wo.shape[1],
    dV = w.wo.shape[0] / HEADS;
  for (let r = 0; r < w.wo.shape[0]; ++r)
    for (let c = 0; c < d; ++c) {
      const want = r >= dV && r < 2 * dV ? 0 : w.wo.data[r * d + c];
      assert.equal(k.wo.data[r * d + c], want, `W_O[${r}][${c}]`);
    }
  assert.equal(k.wq, w.wq);
  assert.notEqual(k.wo.data, w.wo.data, 'the model’s own W_O was written');
});

test('the attribution’s parts sum to the model’s logit difference (and logit), at every token, for the top token and others', () => {
  const V = model.vocab.length;
  let largest = 0;
  for (const text of TEXTS) {
    change(state, { text });
    recompute(state);
    const { n, dModel: d } = state.ctx;
    const { logits } = forwardHead(p, state.ctx.trained.hs[2].data, n, d, V);
    for (let at = 0; at < n; ++at) {
      const top = topK(logits, at * V, V, 10);
      for (const word of [undefined, model.vocab[top[1].c], model.vocab[top[9].c], ' the']) {
        const a = attributionAt(state, { at, word });
        assert.equal(a.parts.filter((x) => x.part === 'head').length, 8);
        assert.deepEqual(
          a.parts.filter((x) => x.part !== 'head').map((x) => x.part),
          ['embedding', 'feed-forward', 'bias'],
        );
        const c = word === undefined ? top[0].c : model.vocab.indexOf(word);
        const r = c === top[0].c ? top[1].c : top[0].c;
        assert.equal(a.c, c);
        assert.equal(a.r, r, 'the runner-up is the most likely other token');
        const diff = logits[at * V + c] - logits[at * V + r];
        const sum = a.parts.reduce((s, x) => s + x.diff, 0);
        const logit = a.parts.reduce((s, x) => s + x.logit, 0);
        largest = Math.max(largest, Math.abs(sum - diff), Math.abs(logit - logits[at * V + c]));
        assert.ok(Math.abs(sum - diff) < 1e-3, `${text} at ${at}, ${word}: parts ${sum}, model ${diff}`);
        assert.ok(Math.abs(logit - logits[at * V + c]) < 1e-3, `${text} at ${at}, ${word}: logit parts ${logit}`);
      }
    }
  }
  assert.ok(largest > 0, 'the sums were compared');
});

test('the readout direction u_c is the gradient of the logit in F (finite differences)', () => {
  const d = model.dim,
    V = model.vocab.length;
  change(state, { text: TEXTS[0] });
  recompute(state);
  const at = 16,
    c = model.vocab.indexOf(' the');
  const H = state.ctx.trained.hs[2].data.subarray(at * d, (at + 1) * d);
  const F = feedForward(p, H, 1, d).f;
  // the logits of F itself: no feed-forward block after it
  const logitAt = (f) => forwardHead({ ...p, w1: undefined }, f, 1, d, V).logits[c];
  const u = readout(p, words, c, d);
  const eps = 1e-2;
  let largest = 0;
  for (const j of [0, 7, 31, 50, 99]) {
    const up = Float32Array.from(F),
      down = Float32Array.from(F);
    up[j] += eps;
    down[j] -= eps;
    largest = Math.max(largest, Math.abs((logitAt(up) - logitAt(down)) / (2 * eps) - u[j]));
  }
  assert.ok(largest < 2e-2, `u differs from the finite differences by ${largest}`);
});

test('headEffects on texts that repeat nothing (one token, a sentence): measured on the text written twice', () => {
  for (const text of ['Hello', 'The animal didn’t cross the street because it was too tired.']) {
    change(state, { text });
    recompute(state);
    const e = headEffects(state);
    assert.equal(e.source, 'twice', text);
    assert.equal(e.heads.length, 8);
    assert.ok(e.induction.length >= 1 && e.induction.every((h) => h.layer === 1), text);
    for (const h of e.heads) for (const k of ['zero', 'mean']) assert.ok(h[k].copy >= 0 && h[k].copy <= 1, text);
  }
});

test('predict with mean ablation is the reference rerun with the heads’ held-out means; zero and mean differ', () => {
  change(state, { text: TEXTS[0] });
  recompute(state);
  const V = model.vocab.length,
    d = model.dim;
  const at = 16;
  const means = heldOutMeans(state);
  const ref = run(TEXTS[0], [[1], [2]], means);
  const { logits } = forwardHead(p, ref.hs[2].data.subarray(at * d, (at + 1) * d), 1, d, V);
  const want = topK(logits, 0, V, 10);
  const knockOut = [
    { layer: 0, head: 1 },
    { layer: 1, head: 2 },
  ];
  const got = predictAt(state, { at, knockOut, ablation: 'mean' }).knocked;
  assert.deepEqual(
    got.map((g) => g.c),
    want.map((g) => g.c),
  );
  for (let k = 0; k < 10; ++k) assert.ok(Math.abs(got[k].p - want[k].p) < 1e-4, `guess ${k}`);
  const zero = predictAt(state, { at, knockOut, ablation: 'zero' }).knocked;
  assert.ok(Math.abs(zero[0].p - got[0].p) > 1e-4, 'zero and mean ablation gave the same guesses');
  assert.throws(
    () => predictAt(state, { at, knockOut, ablation: 'half' }),
    /^Error: predict: ablation is "half"; give 'zero'/,
  );
});
