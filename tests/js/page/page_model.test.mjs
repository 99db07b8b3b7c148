// The tutorial page's "Trained" weights in headless Chromium: both layers' numbers equal the
// package run here in Node on the shipped weights, each head shows its measured description from
// the manifest, and step 11 lists the model's top-5 next words for the followed token.
// run with: node --test tests/js/page/page_model.test.mjs (screenshots in tests/artifacts/page/)
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { tensor } from '../../../web/lib/index.js';
import { sinusoidalPositions } from '../../../web/page/positions.js';
import { describeHead } from '../../../web/page/model/head_stats.js';
import { predictNext } from '../../../web/page/model/predict.js';
import { layerWeights } from '../../../web/page/model/weights.js';
import { tokenize } from '../../../web/page/tokenize.js';
import { openPage } from '../../../scripts/lib/browser.mjs';
import { ARTIFACTS, closePageSuite, openPageSuite, pageDriver } from '../helpers/page_driver.mjs';

const STEP = { x: 0, heads: 7, output: 10 };
const TOL = 1e-4; // relative to the largest |expected| of the matrix

let browser, server, attn, model;
let suite;

before(async () => {
  suite = await openPageSuite({ port: 9507, attention: true, model: true });
  ({ browser, server, attn, model } = suite);
});
after(() => closePageSuite(suite));

const { snapshot, matrix, act, goToStep } = pageDriver(0, 11);
const shot = (page, name) =>
  page.screenshot({ path: new URL(`model-${name}.png`, ARTIFACTS).pathname, fullPage: true });

// The model in Node: X₁ = E + P, both layers with the package, each layer's head weights, and
// the next-word guesses of every row.
function expectedFor(text) {
  const toks = tokenize(text, model.tokenizer);
  const n = toks.length,
    d = model.dim;
  const P = sinusoidalPositions(n, d).map((v) => v * model.manifest.model.positionScale);
  const x = new Float32Array(n * d);
  toks.forEach((t, i) => {
    const v = model.tensors.embed.data.subarray(t.id * d, (t.id + 1) * d);
    for (let k = 0; k < d; ++k) x[i * d + k] = v[k] + P[i * d + k];
  });
  const hs = [tensor(x, [n, d])],
    heads = [];
  for (let L = 0; L < model.manifest.model.layers; ++L) {
    const mha = attn.multiHeadAttention({ dModel: d, heads: 4, weights: layerWeights(model.tensors, L) });
    const f = mha.forward(hs[L], { causal: true, trace: true });
    mha.dispose();
    heads.push(f.heads.map((h) => h.weights.data));
    hs.push(
      tensor(
        Float32Array.from(hs[L].data, (v, k) => v + f.output.data[k]),
        [n, d],
      ),
    );
  }
  return { n, hs, heads, predictions: predictNext(model, hs[2].data, n) };
}

function assertClose(actual, expected, what) {
  let top = 0,
    worst = 0;
  for (const e of expected) top = Math.max(top, Math.abs(e));
  for (let i = 0; i < expected.length; ++i) worst = Math.max(worst, Math.abs(actual[i] - expected[i]));
  assert.equal(actual.length, expected.length, `${what}: size`);
  assert.ok(worst <= TOL * Math.max(top, 1), `${what}: largest difference ${worst} (largest value ${top})`);
}

test('trained preset: both layers equal the package, measured head descriptions, top-5 next words', async () => {
  const { page, errors } = await openPage(browser, server.url);
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.evaluate(() => window.attentionPage.ready);
  // The page opens on the trained model (its default weights).
  let snap = await snapshot(page);
  const { state } = snap;
  assert.equal(state.projection, 'trained');
  assert.ok(await page.isChecked('input[name="projection"][value="trained"]'));
  assert.deepEqual([state.causal, state.positions, state.heads, state.dK, state.layer], [true, true, 4, 25, 0]);
  for (const id of ['#causal', '#positions', '#heads'])
    assert.ok(await page.isDisabled(id), `${id} is fixed by the model`);
  assert.ok(await page.isVisible('#layer'));
  assert.match(await page.textContent('#weights-note'), /Trained:.*layer 1/);
  const want = expectedFor(state.text);
  assert.equal(state.n, want.n);

  // Layer 1: X = E + P, its heads' weights, the manifest's descriptions in step 8.
  assertClose(matrix(snap.steps, 'x', 'X').data, want.hs[0].data, 'layer 1 X');
  await goToStep(page, STEP.heads);
  snap = await snapshot(page);
  for (let h = 0; h < 4; ++h)
    assertClose(matrix(snap.steps, 'heads', `weights_head${h + 1}`).data, want.heads[0][h], `layer 1 head ${h + 1}`);
  const explain = await page.textContent('#step-explain');
  for (const s of model.manifest.heads.filter((h) => h.layer === 0))
    assert.ok(explain.includes(describeHead(s)), `layer 1 head ${s.head + 1}: ${describeHead(s)}`);
  await shot(page, 'layer1-heads');

  // Layer 2: its input is the residual X₂ = X₁ + Y₁, its own heads.
  snap = await act(
    page,
    () => page.selectOption('#layer', '1'),
    (s) => s.layer === 1,
  );
  assertClose(matrix(snap.steps, 'x', 'X').data, want.hs[1].data, 'layer 2 X');
  for (let h = 0; h < 4; ++h)
    assertClose(matrix(snap.steps, 'heads', `weights_head${h + 1}`).data, want.heads[1][h], `layer 2 head ${h + 1}`);
  const explain2 = await page.textContent('#step-explain');
  for (const s of model.manifest.heads.filter((h) => h.layer === 1))
    assert.ok(explain2.includes(describeHead(s)), `layer 2 head ${s.head + 1}`);
  await goToStep(page, STEP.x);
  assert.match(await page.textContent('#step-title'), /Layer 2 input/);
  await shot(page, 'layer2-input');

  // Step 11: the top-5 next words for the followed token, then for another one.
  await goToStep(page, STEP.output);
  snap = await snapshot(page);
  const focus = snap.state.focus;
  const check = async (i, got) => {
    assert.equal(got.length, 5);
    got.forEach((g, k) => {
      assert.equal(g.word, want.predictions[i][k].word);
      assert.ok(Math.abs(g.p - want.predictions[i][k].p) < 1e-4, `${g.word}: ${g.p} vs ${want.predictions[i][k].p}`);
    });
    const items = await page.$$eval('#inspector .next-words li', (lis) => lis.map((li) => li.textContent));
    assert.equal(items.length, 5);
    assert.match(items[0], new RegExp(`${(100 * got[0].p).toFixed(1)} %`));
  };
  await check(focus, snap.state.predictions);
  assert.match(await page.textContent('#inspector'), /Next word after/);
  await shot(page, 'predictions');
  const other = focus === 0 ? 1 : 0;
  snap = await act(
    page,
    () => page.click(`#chips button[data-index="${other}"]`),
    new Function('s', `return s.focus === ${other}`),
  );
  await check(other, snap.state.predictions);
  assert.deepEqual(errors(), []);
});
