// The tutorial page's backward steps (12-18) in headless Chromium: reaching them with the arrow
// keys and the buttons, the shapes shown, every matrix against the package run here in Node on the
// same input (dY, dC, dZ, A, dV, dA, dS, dQ, dK, and the layer's dW_Q, dW_K, dW_V, dW_O, dX),
// choosing the loss's token i and target j, SGD steps lowering the loss, the causal mask (masked
// cells of dS exactly 0 and drawn hatched), the worked example against hand values, the phone
// layout, and no console errors. Screenshots go to tests/artifacts/page/ (backward-*.png).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { tensor } from '../../../web/lib/index.js';
import { MAX_TOKENS } from '../../../web/page/limits.js';
import { tokenize } from '../../../web/page/tokenize.js';
import { HAND_BACK, WORKED } from '../../../web/page/worked_example.js';
import { openPage } from '../../../scripts/lib/browser.mjs';
import { ARTIFACTS, closePageSuite, openPageSuite, pageDriver } from '../helpers/page_driver.mjs';
import { columns, eye } from '../../../scripts/lib/tensors.mjs';

const FORWARD = 11;
const BACK_IDS = ['loss', 'dhead', 'dv', 'dA', 'dS', 'dqk', 'dw'];
const TOL = 1e-5; // relative to the largest |expected| of the matrix

let browser, server, attn, model;
let suite;

before(async () => {
  suite = await openPageSuite({ port: 9501, attention: true, model: true });
  ({ browser, server, attn, model } = suite);
});
after(() => closePageSuite(suite));

// ---- the same computation in Node ----------------------------------------------------------
// X and the layer for a sentence (identity or seeded weights) or the worked example.
function inputFor({ text, worked = false, heads = 4, dK, seed = null }) {
  if (worked) {
    return { x: WORKED.x, n: 3, config: { dModel: 2, heads: 1, dK: 2, weights: WORKED.weights } };
  }
  const toks = tokenize(text, model.tokenizer).slice(0, MAX_TOKENS);
  const n = toks.length,
    d = model.dim;
  dK ??= d / heads;
  const x = new Float32Array(n * d);
  toks.forEach((t, i) => x.set(model.tensors.embed.data.subarray(t.id * d, (t.id + 1) * d), i * d));
  const config =
    seed === null
      ? { dModel: d, heads, weights: { wq: eye(d), wk: eye(d), wv: eye(d), wo: eye(d) } }
      : { dModel: d, heads, dK, seed };
  return { x: tensor(x, [n, d]), n, config, labels: toks.map((t) => t.text) };
}

// The loss L = ½‖y_i − x_j‖² and dY.
function loss(y, x, i, j) {
  const [n, d] = y.shape;
  const dy = new Float32Array(n * d);
  let L = 0;
  for (let c = 0; c < d; ++c) {
    dy[i * d + c] = y.data[i * d + c] - x.data[j * d + c];
    L += 0.5 * dy[i * d + c] ** 2;
  }
  return { L, dy: tensor(dy, [n, d]) };
}

// What the backward steps should show: name -> { data, shape }, and the loss.
function expectedBackward({ causal = false, scaling = true, head = 0, i, j, ...input }) {
  const { x, n, config } = inputFor(input);
  const mha = attn.multiHeadAttention(config);
  const { dK, dV, heads, dModel } = mha.config;
  const scale = scaling ? 1 / Math.sqrt(dK) : 1;
  const f = mha.forward(x, { causal, scale, trace: true });
  const w = mha.weights;
  const { L, dy } = loss(f.output, x, i, j);
  const layer = mha.backward(dy);
  mha.dispose();
  const dC = attn.matmul(dy, w.wo, { transposeB: true });
  const dZ = columns(dC, head * dV, dV);
  const h = f.heads[head];
  const b = attn.attentionBackward(h.q, h.k, h.v, dZ, { causal, scale, trace: true });
  const rows = new Float32Array(3 * dModel);
  rows.set(f.output.data.subarray(i * dModel, (i + 1) * dModel), 0);
  rows.set(x.data.subarray(j * dModel, (j + 1) * dModel), dModel);
  rows.set(dy.data.subarray(i * dModel, (i + 1) * dModel), 2 * dModel);
  return {
    n,
    L,
    w,
    x,
    config: { dModel: config.dModel, heads: config.heads, dK, weights: w }, // the weights drawn, not the seed
    scale,
    m: {
      loss_rows: tensor(rows, [3, dModel]),
      dOutput: dy,
      dConcat: dC,
      dZ,
      W_O: w.wo,
      V: h.v,
      weights: b.weights,
      dV: b.dv,
      dA: b.dWeights,
      dS: b.dScores,
      dQ: b.dq,
      dK: b.dk,
      dW_Q: layer.dwq,
      dW_K: layer.dwk,
      dW_V: layer.dwv,
      dW_O: layer.dwo,
      dX: layer.dx,
    },
    heads,
  };
}

// The losses before and after `count` SGD steps on the same loss, as the page takes them.
function expectedSgd(exp, { causal = false, i, j, lr, count }) {
  const mha = attn.multiHeadAttention(exp.config);
  const losses = [];
  try {
    for (let k = 0; k < count; ++k) {
      const f = mha.forward(exp.x, { causal, scale: exp.scale });
      const { L, dy } = loss(f.output, exp.x, i, j);
      if (k === 0) losses.push(L);
      mha.step(mha.backward(dy), lr);
      losses.push(loss(mha.forward(exp.x, { causal, scale: exp.scale }).output, exp.x, i, j).L);
    }
  } finally {
    mha.dispose();
  }
  return losses;
}

function assertClose(actual, expected, what, tol = TOL) {
  assert.equal(actual.length, expected.length, `${what}: length`);
  let size = 0;
  for (const v of expected) size = Math.max(size, Math.abs(v));
  let worst = 0;
  for (let k = 0; k < actual.length; ++k) worst = Math.max(worst, Math.abs(actual[k] - expected[k]));
  assert.ok(worst <= tol * (size || 1), `${what}: largest difference ${worst} > ${tol} × ${size}`);
}

// Every matrix of every backward step (`back`, as a snapshot has them) equals Node's, with the same shape.
function assertBackwardMatches(back, exp) {
  assert.deepEqual(
    back.map((s) => s.id),
    BACK_IDS,
  );
  for (const step of back) {
    for (const mat of step.matrices) {
      const want = exp.m[mat.name];
      assert.ok(want, `step ${step.id}: no expected values for ${mat.name}`);
      assert.deepEqual(mat.shape, want.shape, `step ${step.id}: shape of ${mat.name}`);
      assertClose(mat.data, want.data, `step ${step.id}: ${mat.name}`);
    }
  }
}

// ---- page helpers ----------------------------------------------------------------------------
// The state and the backward steps only (the forward ones are page.test.mjs's; leaving them out
// keeps each snapshot small).
const { snapshot, matrix, act, goToStep, useIdentity } = pageDriver(FORWARD);

const figureShapes = (page) =>
  page.$$eval('#matrices figure.heatmap', (figs) =>
    figs.map((f) => ({
      name: f.dataset.name,
      shape: f.dataset.shape,
      shown: f.querySelector('.hm-shape').textContent,
    })),
  );

const shot = (page, name) =>
  page.screenshot({ path: new URL(`backward-${name}.png`, ARTIFACTS).pathname, fullPage: true });

// The colour drawn near the top-left corner of cell (i, j) of heatmap `name`, [r, g, b].
const cellColour = (page, name, i, j) =>
  page.evaluate(
    ([nm, a, b]) => {
      const p = window.attentionPage.cellPoint(nm, a, b);
      const canvas = document.querySelector(`figure[data-name="${nm}"] canvas`);
      const rect = canvas.getBoundingClientRect();
      const ratio = canvas.width / rect.width;
      const x = Math.round((p.x - p.w / 2 + 2 - rect.left) * ratio),
        y = Math.round((p.y - p.h / 2 + 2 - rect.top) * ratio);
      return Array.from(canvas.getContext('2d').getImageData(x, y, 1, 1).data.slice(0, 3));
    },
    [name, i, j],
  );
// The masked hatch: greys from #9aa0ab to #e4e6eb, never the RdBu white #f7f7f7 of a plain 0.
const isHatch = ([r, g, b]) => r >= 150 && r <= 236 && Math.abs(r - g) <= 10 && b >= r && b - r <= 20;

// ---- tests -----------------------------------------------------------------------------------
test('backward steps: keys and buttons, shapes, numbers equal to the package, choosing i and j, SGD', async () => {
  const { page, errors } = await openPage(browser, server.url);
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.evaluate(() => window.attentionPage.ready);
  await useIdentity(page);
  let snap = await snapshot(page);
  const text = snap.state.text;
  const labels = snap.state.tokens.map((t) => t.text);
  // a word's first token (" an" of " an|im|al"): the page's default target is never a piece inside a word
  const wordAt = (w) =>
    labels.findIndex((p, k) => (k === 0 || /^\s/u.test(p)) && labels.slice(k).join('').trim().startsWith(w));
  const i = labels.indexOf(' it'),
    j = wordAt('animal');
  assert.ok(i > 0 && j >= 0, JSON.stringify(labels));
  assert.equal(snap.state.focus, i, 'the followed token is " it"');
  assert.equal(snap.state.target, j, 'the default target is "animal"\'s first token');
  assert.equal(await page.evaluate(() => window.attentionPage.steps.length), FORWARD + BACK_IDS.length);
  let exp = expectedBackward({ text, i, j });
  assertBackwardMatches(snap.steps, exp);
  assert.ok(Math.abs(snap.state.loss - exp.L) <= 1e-5 * exp.L, `loss ${snap.state.loss} vs ${exp.L}`);

  // The target is marked on the chips only on the backward steps.
  assert.equal(await page.$$eval('#chips .chip.target', (c) => c.length), 0);
  assert.ok(await page.isHidden('#backward-bar'));

  // → from step 11 through the backward steps, checking the shapes shown.
  await goToStep(page, FORWARD - 1);
  await page.focus('#next');
  for (let k = 0; k < BACK_IDS.length; ++k) {
    const step = FORWARD + k;
    snap = await act(page, () => page.keyboard.press('ArrowRight'), new Function('s', `return s.step === ${step}`));
    assert.equal(snap.state.stepId, BACK_IDS[k]);
    const figs = await figureShapes(page);
    const mats = snap.steps[k].matrices;
    assert.deepEqual(
      figs.map((f) => f.name),
      mats.map((m) => m.name),
      `step ${BACK_IDS[k]}: one heatmap per matrix`,
    );
    for (const f of figs) {
      assert.equal(f.shape, exp.m[f.name].shape.join(','), `step ${BACK_IDS[k]}: data-shape of ${f.name}`);
      assert.equal(f.shown, exp.m[f.name].shape.join(' \u00d7 '), `step ${BACK_IDS[k]}: shape shown for ${f.name}`);
    }
    assert.match(await page.textContent('#step-title'), new RegExp(`^${step + 1}\\. `));
    assert.match(await page.textContent('#step-kicker'), /^Backward/);
    assert.ok((await page.$$eval('#step-shapes li', (li) => li.length)) > 0, 'operand shapes are listed');
    assert.ok(await page.isVisible('#backward-bar'));
    assert.deepEqual(await page.$$eval('#chips .chip.target', (c) => c.map((b) => Number(b.dataset.index))), [j]);
    const source = await page.textContent('#step-source');
    if (k > 0)
      assert.match(
        source,
        /^Computed by (attn\.matmul|attn\.attentionBackward|mha\.backward)\(.* in \d+\.\d\d ms\.$/,
        `step ${BACK_IDS[k]}: ${source}`,
      );
    await shot(page, `desktop-${step + 1}-${BACK_IDS[k]}`);
  }
  assert.equal(await page.isDisabled('#next'), true, 'Next is disabled on the last step');
  const calls = (await page.evaluate(() => window.attentionPage.timings)).map((t) => t.call);
  for (const call of ['attn.matmul', 'attn.attentionBackward', 'mha.backward'])
    assert.ok(calls.includes(call), `the hood lists ${call}`);

  // ← back to step 11, then the buttons.
  for (let step = FORWARD + BACK_IDS.length - 2; step >= FORWARD - 1; --step) {
    await act(page, () => page.keyboard.press('ArrowLeft'), new Function('s', `return s.step === ${step}`));
  }
  await act(
    page,
    () => page.click('#next'),
    (s) => s.stepId === 'loss',
  );
  await act(
    page,
    () => page.click('#next'),
    (s) => s.stepId === 'dhead',
  );
  await act(
    page,
    () => page.click('#prev'),
    (s) => s.stepId === 'loss',
  );

  // The softmax backward's side panel: A, dA and dS of the followed row.
  await goToStep(page, FORWARD + BACK_IDS.indexOf('dS'));
  const inspector = await page.textContent('#inspector');
  assert.match(inspector, /The loss is on this token's output/);
  const cols = await page.$$eval('#inspector tbody tr', (trs) =>
    trs.map((tr) => Array.from(tr.querySelectorAll('td'), (td) => td.textContent)),
  );
  const n = exp.n;
  const shown = (t) => Number(t.replace(/\u2212/g, '-').replace(/[^\d.-]/g, ''));
  assert.equal(cols.length, n);
  for (const [c, name] of [
    [0, 'weights'],
    [1, 'dA'],
    [2, 'dS'],
  ]) {
    const want = exp.m[name].data.slice(i * n, (i + 1) * n);
    cols.forEach((r, k) =>
      assert.ok(
        Math.abs(shown(r[c]) - want[k]) <= 6e-5,
        `the inspector's ${name} for key ${k + 1}: ${r[c]} vs ${want[k]}`,
      ),
    );
  }

  // Another target j with the select, another token i with the other one (it is the followed token).
  const j2 = wordAt('street');
  snap = await act(
    page,
    () => page.selectOption('#target', String(j2)),
    new Function('s', `return s.target === ${j2}`),
  );
  exp = expectedBackward({ text, i, j: j2 });
  assertBackwardMatches(snap.steps, exp);
  const i2 = labels.length - 1; // the last token
  snap = await act(
    page,
    () => page.selectOption('#loss-row', String(i2)),
    new Function('s', `return s.focus === ${i2}`),
  );
  assert.equal(snap.state.target, j2, 'the chosen target stays');
  exp = expectedBackward({ text, i: i2, j: j2 });
  assertBackwardMatches(snap.steps, exp);
  assert.ok((await page.textContent('#loss-line')).includes(`y${i2 + 1} − x${j2 + 1}‖² = `));
  // Following a token by its chip moves the loss too.
  snap = await act(
    page,
    () => page.click(`#chips li:nth-child(${i + 1}) .chip`),
    new Function('s', `return s.focus === ${i}`),
  );
  exp = expectedBackward({ text, i, j: j2 });
  assertBackwardMatches(snap.steps, exp);

  // SGD: the loss goes down for lr 0.01, two steps in a row, as in Node.
  await goToStep(page, FORWARD + BACK_IDS.indexOf('dw'));
  assert.ok(await page.isVisible('#sgd'));
  await act(
    page,
    () => page.click('#sgd-step'),
    (s) => s.sgdLosses.length === 2,
  );
  snap = await act(
    page,
    () => page.click('#sgd-step'),
    (s) => s.sgdLosses.length === 3,
  );
  const L = snap.state.sgdLosses;
  assert.ok(Math.abs(L[0] - snap.state.loss) <= 1e-5 * L[0], 'the first loss is the step 12 loss');
  assert.ok(L[1] < L[0] && L[2] < L[1], `the loss goes down: ${L}`);
  expectedSgd(exp, { i, j: j2, lr: 0.01, count: 2 }).forEach((v, k) =>
    assert.ok(Math.abs(L[k] - v) <= 1e-4 * v, `SGD loss ${k}: ${L[k]} vs ${v}`),
  );
  assert.match(await page.textContent('#sgd-result'), /2 steps \(lr 0\.01\): down/);
  await shot(page, 'desktop-18-dw-sgd');
  await act(
    page,
    () => page.click('#sgd-reset'),
    (s) => s.sgdLosses.length === 0,
  );
  // A large learning rate overshoots: the page says so when the loss went up.
  await act(
    page,
    () => page.selectOption('#lr', '0.1'),
    (s) => s.lr === 0.1,
  );
  snap = await act(
    page,
    () => page.click('#sgd-step'),
    (s) => s.sgdLosses.length === 2,
  );
  const big = expectedSgd(exp, { i, j: j2, lr: 0.1, count: 1 });
  assert.ok(Math.abs(snap.state.sgdLosses[1] - big[1]) <= 1e-4 * big[1]);
  if (big[1] > big[0]) assert.match(await page.textContent('#sgd-result'), /too large/);

  assert.deepEqual(errors(), []);
  await page.close();
});

test('causal mask: masked cells of dS are exactly 0 and drawn as masked; other heads and random weights', async () => {
  const { page, errors } = await openPage(browser, server.url);
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.evaluate(() => window.attentionPage.ready);
  await useIdentity(page);
  let snap = await act(
    page,
    () => page.check('#causal'),
    (s) => s.causal,
  );
  const text = snap.state.text;
  const i = snap.state.focus,
    j = snap.state.target;
  let exp = expectedBackward({ text, causal: true, i, j });
  assertBackwardMatches(snap.steps, exp);
  const n = exp.n;
  const upper = (m) => Array.from(m.data).filter((v, k) => k % n > Math.floor(k / n));
  for (const id of ['dS', 'dqk']) {
    const ds = matrix(snap.steps, id, 'dS');
    assert.ok(
      upper(ds).every((v) => v === 0),
      `${id}: every masked cell of dS is 0 or −0`,
    );
  }
  assert.ok(
    upper(matrix(snap.steps, 'dA', 'dA')).some((v) => v !== 0),
    'dA has values in masked cells (and the page says why)',
  );
  // dV and dK rows of keys after i are exactly 0.
  for (const name of ['dV', 'dK']) {
    const m = matrix(snap.steps, name === 'dV' ? 'dv' : 'dqk', name);
    const w = m.shape[1];
    assert.ok(
      Array.from(m.data.slice((i + 1) * w)).every((v) => v === 0),
      `${name}: rows after token ${i + 1} are 0`,
    );
  }

  await goToStep(page, FORWARD + BACK_IDS.indexOf('dS'));
  assert.match(await page.textContent('#step-explain'), /Jacobian-vector product/);
  assert.match(await page.textContent('#step-explain'), /Masked cells are exactly 0/);
  assert.match(await page.textContent('figure[data-name="dS"] .hm-legend'), /0, masked/);
  for (let r = 0; r < n; ++r) {
    for (let c = r + 1; c < n; ++c) {
      const rgb = await cellColour(page, 'dS', r, c);
      assert.ok(isHatch(rgb), `dS[${r}][${c}] is drawn hatched, got rgb(${rgb})`);
    }
  }
  assert.ok(!isHatch(await cellColour(page, 'dS', n - 1, 0)), 'an unmasked 0 of dS is not hatched');
  assert.ok(!isHatch(await cellColour(page, 'dS', i, 0)), 'an unmasked value of dS is not hatched');
  const point = await page.evaluate(([a, b]) => window.attentionPage.cellPoint('dS', a, b), [i, n - 1]);
  await page.mouse.move(point.x, point.y);
  await page.waitForSelector('#tooltip:not([hidden])');
  assert.match(await page.textContent('#tooltip .tt-value'), /^0\.0000 \(masked\)$/);
  assert.match(await page.textContent('#inspector'), /a masked key/);
  await shot(page, 'desktop-16-dS-causal');

  // Two heads, following head 2; then random weights with d_k 8.
  await act(
    page,
    () => page.selectOption('#heads', '2'),
    (s) => s.heads === 2,
  );
  snap = await act(
    page,
    () => page.selectOption('#follow-head', { value: '1' }),
    (s) => s.head === 1,
  );
  assertBackwardMatches(snap.steps, expectedBackward({ text, causal: true, heads: 2, head: 1, i, j }));
  assert.match(await page.textContent('#step-kicker'), /^Backward, head 2 of 2/);
  await act(
    page,
    () => page.check('input[name="projection"][value="random"]'),
    (s) => s.projection === 'random',
  );
  snap = await act(
    page,
    () => page.fill('#dk', '8'),
    (s) => s.dK === 8,
  );
  exp = expectedBackward({ text, causal: true, heads: 2, head: 1, dK: 8, seed: 42, i, j });
  assertBackwardMatches(snap.steps, exp);
  assert.ok(upper(matrix(snap.steps, 'dS', 'dS')).every((v) => v === 0));
  await goToStep(page, FORWARD + BACK_IDS.indexOf('dw'));
  assert.deepEqual(
    (await figureShapes(page)).map((f) => f.shape),
    ['100,16', '100,16', '100,16', '16,100', `${n},100`],
  );
  await shot(page, 'desktop-18-dw-random');
  // Scaling off: dS = A ⊙ (dA − rowsum), scale 1, still as in Node.
  snap = await act(
    page,
    () => page.uncheck('#scaling'),
    (s) => !s.scaling,
  );
  assertBackwardMatches(
    snap.steps,
    expectedBackward({ text, causal: true, scaling: false, heads: 2, head: 1, dK: 8, seed: 42, i, j }),
  );

  assert.deepEqual(errors(), []);
  await page.close();
});

test('the worked example: backward steps against the package and the hand calculation', async () => {
  const { page, errors } = await openPage(browser, server.url);
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.evaluate(() => window.attentionPage.ready);
  let snap = await act(
    page,
    () => page.check('input[name="mode"][value="worked"]'),
    (s) => s.mode === 'worked',
  );
  assert.equal(snap.state.n, 3);
  assert.equal(snap.state.focus, 0);
  assert.equal(snap.state.target, 1, 'x₁ is pulled toward x₂');
  const exp = expectedBackward({ worked: true, i: 0, j: 1 });
  assertBackwardMatches(snap.steps, exp);
  const get = (id, name) => Array.from(matrix(snap.steps, id, name).data);
  const near = (a, b, what) =>
    a.forEach((v, k) => assert.ok(Math.abs(v - b[k]) < 1e-6, `${what}[${k}] = ${v}, by hand ${b[k]}`));
  assert.ok(Math.abs(snap.state.loss - HAND_BACK.loss) < 1e-6);
  near(get('loss', 'dOutput').slice(0, 2), HAND_BACK.dOutputRow1, 'dY row 1');
  near(get('loss', 'dOutput').slice(2), [0, 0, 0, 0], 'dY rows 2-3');
  near(get('dv', 'dV'), HAND_BACK.dVRows.flat(), 'dV');
  near(get('dA', 'dA').slice(0, 3), HAND_BACK.dARow1, 'dA row 1');
  near(get('dS', 'dS').slice(0, 3), HAND_BACK.dSRow1, 'dS row 1');
  near(get('dqk', 'dQ').slice(0, 2), HAND_BACK.dQRow1, 'dQ row 1');
  near(
    get('dqk', 'dK').filter((v, k) => k % 2 === 0),
    HAND_BACK.dKCol1,
    'dK column 1',
  );
  near(get('dw', 'dW_Q'), HAND_BACK.dWQ, 'dW_Q');
  near(get('dw', 'dW_O'), HAND_BACK.dWO, 'dW_O');

  await goToStep(page, FORWARD - 1);
  await page.focus('#next');
  for (let k = 0; k < BACK_IDS.length; ++k) {
    await act(page, () => page.keyboard.press('ArrowRight'), new Function('s', `return s.step === ${FORWARD + k}`));
    assert.match(await page.textContent('#step-hand'), /By hand/, `step ${BACK_IDS[k]} has a hand note`);
    await shot(page, `worked-${FORWARD + k + 1}-${BACK_IDS[k]}`);
  }
  assert.match(await page.textContent('#step-hand'), /\[0\.1125 −0\.0006; 0 0\]/);
  // Another target: the hand notes say what they assume; the numbers still match the package.
  snap = await act(
    page,
    () => page.selectOption('#target', '2'),
    (s) => s.target === 2,
  );
  assertBackwardMatches(snap.steps, expectedBackward({ worked: true, i: 0, j: 2 }));
  assert.match(await page.textContent('#step-hand'), /assume .* i = x₁ and j = x₂/);
  // SGD on the worked example: the loss goes down.
  snap = await act(
    page,
    () => page.click('#sgd-step'),
    (s) => s.sgdLosses.length === 2,
  );
  assert.ok(snap.state.sgdLosses[1] < snap.state.sgdLosses[0], `worked SGD: ${snap.state.sgdLosses}`);

  assert.deepEqual(errors(), []);
  await page.close();
});

test('at 375 px wide the backward steps do not scroll the page sideways', async () => {
  const { page, errors } = await openPage(browser, server.url);
  await page.setViewportSize({ width: 375, height: 800 });
  await page.evaluate(() => window.attentionPage.ready);
  await useIdentity(page);
  await act(
    page,
    () => page.check('#causal'),
    (s) => s.causal,
  );
  for (const mode of ['sentence', 'worked']) {
    if (mode === 'worked')
      await act(
        page,
        () => page.check('input[name="mode"][value="worked"]'),
        (s) => s.mode === 'worked',
      );
    for (let k = 0; k < BACK_IDS.length; ++k) {
      await goToStep(page, FORWARD + k);
      const { scroll, client } = await page.evaluate(() => ({
        scroll: document.documentElement.scrollWidth,
        client: document.documentElement.clientWidth,
      }));
      assert.ok(scroll <= client, `${mode} step ${BACK_IDS[k]}: page is ${scroll} px wide in a ${client} px window`);
      await shot(page, `phone-${mode}-${FORWARD + k + 1}-${BACK_IDS[k]}`);
    }
  }
  assert.deepEqual(errors(), []);
  await page.close();
});
