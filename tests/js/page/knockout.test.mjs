// The knock-out and the attribution of web/page/model/knockout.js, in Node on the shipped model,
// held to scalar double references: a head knocked out by zeroing its W_O rows gives the
// residual stream with that head's output o_k = concat_k · W_O,k subtracted (for a layer-2 head:
// exactly that; for several heads of layer 2, their sum); each head's o_k, computed row by row
// in double, adds up with the input to the layer's residual; the attribution's parts add up to
// the model's logit at every token, for the top word and others, on odd lengths; and the logit
// direction v equals the finite-difference gradient of the logit in the residual stream where
// the feed-forward block's ReLU gates do not flip.
// run with: node --test tests/js/page/knockout.test.mjs
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { createAttention } from '../../../web/lib/index.js';
import { attribution, headOutput, knockedOutWeights, logitDirection } from '../../../web/page/model/knockout.js';
import { forwardHead, headParams } from '../../../web/page/model/lm.js';
import { makeBatch } from '../../../web/page/model/train.js';
import { layerWeights } from '../../../web/page/model/weights.js';
import { tokenize } from '../../../web/page/tokenize.js';
import { loadShippedModel } from '../helpers/shipped_model.mjs';

let attn, model, words, p;
before(async () => {
  attn = await createAttention({ threads: 1 });
  model = loadShippedModel();
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
function run(text, knocked = [[], []]) {
  const ids = tokenize(text, model.tokenizer).map((t) => t.id);
  const n = ids.length,
    d = model.dim;
  const { x } = makeBatch([{ ids: [...ids, 0] }], n, d, model.tensors.embed.data, model.manifest.model.positionScale);
  const hs = [{ data: x.data, shape: [n, d] }];
  const concats = [];
  const layers = [];
  for (let L = 0; L < 2; ++L) {
    const w = knockedOutWeights(layerWeights(model.tensors, L), HEADS, knocked[L]);
    const mha = attn.multiHeadAttention({ dModel: d, heads: HEADS, weights: w });
    const r = mha.forward(hs[L], { causal: true, trace: true });
    mha.dispose();
    const next = new Float32Array(n * d);
    for (let k = 0; k < next.length; ++k) next[k] = hs[L].data[k] + r.output.data[k];
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

test('knocking out no head returns the weights unchanged; the knocked-out rows are 0 and the others kept', () => {
  const w = layerWeights(model.tensors, 1);
  assert.equal(knockedOutWeights(w, HEADS, []), w);
  const k = knockedOutWeights(w, HEADS, [1]);
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

test('the attribution’s parts add up to the model’s logit, at every token, for the top word and others', () => {
  const V = model.vocab.length;
  for (const text of TEXTS) {
    const r = run(text);
    const { logits } = forwardHead(p, r.hs[2].data, r.n, r.d, V);
    for (let at = 0; at < r.n; ++at)
      for (const c of [0, 5, V - 1, tokenize(' house', model.tokenizer)[0].id]) {
        const a = attribution({ p, words, ...r, wos: r.layers.map((w) => w.wo), heads: HEADS, dV: r.d / HEADS, at, c });
        assert.equal(a.heads.length, 8);
        const model = logits[at * V + c];
        assert.ok(Math.abs(a.logit - model) < 1e-3, `${text} at ${at}, class ${c}: logit ${a.logit}, model ${model}`);
        assert.ok(
          Math.abs(a.total - a.logit) < 1e-3,
          `${text} at ${at}, class ${c}: parts ${a.total}, logit ${a.logit}`,
        );
      }
  }
});

test('the logit direction is the gradient of the logit in the residual stream (finite differences)', () => {
  const r = run(TEXTS[0]);
  const { d } = r;
  const V = model.vocab.length;
  // a token of the second copy, and the token that follows it (the copy)
  const ids = tokenize(TEXTS[0], model.tokenizer).map((t) => t.id);
  const at = ids.length - 4,
    c = ids[at + 1];
  const H = Float32Array.from(r.hs[2].data.subarray(at * d, (at + 1) * d));
  const { v } = logitDirection(p, words, H, c, d);
  const logitAt = (h) => forwardHead(p, h, 1, d, V).logits[c];
  const eps = 1e-2;
  let largest = 0;
  for (const j of [0, 7, 31, 50, 99]) {
    const up = Float32Array.from(H),
      down = Float32Array.from(H);
    up[j] += eps;
    down[j] -= eps;
    const fd = (logitAt(up) - logitAt(down)) / (2 * eps);
    largest = Math.max(largest, Math.abs(fd - v[j]));
  }
  assert.ok(largest < 2e-2, `v differs from the finite differences by ${largest}`);
});
