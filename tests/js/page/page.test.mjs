// The tutorial page (web/index.html) in headless Chromium: typing a sentence, stepping through the
// eleven forward steps with the buttons and the arrow keys, the numbers it shows against the
// package run here in Node on the same input, the toggles (causal, heads, scaling, positions,
// random weights), the worked example against hand values, threaded vs single-thread loading, the
// phone layout, and no console errors. Full-page screenshots of every step go to
// tests/artifacts/page/. The backward steps (12-18) are page_backward.test.mjs's.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { tensor } from '../../../web/lib/index.js';
import { sinusoidalPositions } from '../../../web/page/positions.js';
import { MAX_TOKENS } from '../../../web/page/limits.js';
import { pieceLabel, tokenize } from '../../../web/page/tokenize.js';
import { openPage } from '../../../scripts/lib/browser.mjs';
import { ARTIFACTS, closePageSuite, openPageSuite, pageDriver } from '../helpers/page_driver.mjs';
import { columns, eye } from '../../../scripts/lib/tensors.mjs';

const STEP_IDS = ['x', 'qkv', 'scores', 'scale', 'mask', 'softmax', 'weighted', 'heads', 'concat', 'wo', 'output'];
const SENTENCE = 'I saw a cat on the mat with 3 dogs, and it purred.';
const TOL = 1e-5; // relative to max(1, max |expected|)

let browser, attn, model;
let suite;
const servers = {};

before(async () => {
  suite = await openPageSuite({ port: 9401, plainPort: 9421, attention: true, model: true });
  ({ browser, attn, model } = suite);
  servers.isolated = suite.server;
  servers.plain = suite.plain;
});
after(() => closePageSuite(suite));

// ---- the same computation in Node ----------------------------------------------------------
// What the page should show for `text` and these settings: { n, texts (the pieces), labels (as shown), m: name -> { data, shape } }.
function expectedFor({
  text,
  heads = 4,
  dK,
  seed = null,
  causal = false,
  scaling = true,
  positions = false,
  head = 0,
}) {
  const toks = tokenize(text, model.tokenizer).slice(0, MAX_TOKENS);
  const n = toks.length,
    d = model.dim;
  dK ??= d / heads;
  // E (n,d): each token's row of the trained model's embeddings
  const e = new Float32Array(n * d);
  toks.forEach((t, i) => e.set(model.tensors.embed.data.subarray(t.id * d, (t.id + 1) * d), i * d));
  let x = e,
    p = null;
  if (positions) {
    p = sinusoidalPositions(n, d);
    x = Float32Array.from(e, (v, k) => v + p[k]);
  }
  const mha =
    seed === null
      ? attn.multiHeadAttention({ dModel: d, heads, weights: { wq: eye(d), wk: eye(d), wv: eye(d), wo: eye(d) } })
      : attn.multiHeadAttention({ dModel: d, heads, dK, seed });
  const scale = scaling ? 1 / Math.sqrt(dK) : 1;
  const f = mha.forward(tensor(x, [n, d]), { causal, scale, trace: true });
  const w = mha.weights;
  mha.dispose();
  const h = f.heads[head];
  const s = attn.attention(h.q, h.k, h.v, { causal, scale, trace: true });
  const hv = heads * dK;
  const m = {
    E: { data: e, shape: [n, d] },
    X: { data: x, shape: [n, d] },
    Q: h.q,
    K: h.k,
    V: h.v,
    W_Q: columns(w.wq, head * dK, dK),
    W_K: columns(w.wk, head * dK, dK),
    W_V: columns(w.wv, head * dK, dK),
    scores: s.scores,
    scaled: s.scaled,
    masked: s.masked,
    weights: s.weights,
    head_output: s.output,
    concat: { data: f.concat.data, shape: [n, hv] },
    W_O: { data: w.wo.data, shape: [hv, d] },
    output: f.output,
  };
  if (p) m.P = { data: p, shape: [n, d] };
  f.heads.forEach((hd, k) => {
    m[`weights_head${k + 1}`] = hd.weights;
  });
  return { n, texts: toks.map((t) => t.text), labels: toks.map((t) => pieceLabel(t.text)), m };
}

function assertClose(actual, expected, what) {
  assert.equal(actual.length, expected.length, `${what}: length`);
  let size = 1;
  for (const v of expected) if (Number.isFinite(v)) size = Math.max(size, Math.abs(v));
  let worst = 0;
  for (let k = 0; k < actual.length; ++k) {
    if (!Number.isFinite(expected[k])) {
      assert.equal(actual[k], expected[k], `${what}[${k}]: expected ${expected[k]}`);
      continue;
    }
    worst = Math.max(worst, Math.abs(actual[k] - expected[k]));
  }
  assert.ok(worst <= TOL * size, `${what}: largest difference ${worst} > ${TOL * size}`);
}

// Every matrix of every forward step the page shows equals Node's, with the same shape.
function assertPageMatches(steps, exp) {
  assert.deepEqual(
    steps.slice(0, STEP_IDS.length).map((s) => s.id),
    STEP_IDS,
  );
  for (const step of steps.slice(0, STEP_IDS.length)) {
    for (const mat of step.matrices) {
      const want = exp.m[mat.name];
      assert.ok(want, `step ${step.id}: no expected values for ${mat.name}`);
      assert.deepEqual(mat.shape, want.shape, `step ${step.id}: shape of ${mat.name}`);
      assertClose(mat.data, want.data, `step ${step.id}: ${mat.name}`);
    }
  }
}

// ---- page helpers ----------------------------------------------------------------------------
// The state and the forward steps (the backward steps' matrices would triple what every snapshot
// carries over from the page; page_backward.test.mjs checks them).
const { snapshot, matrix, act, goToStep, useIdentity } = pageDriver(0, STEP_IDS.length);

const parseShown = (text) =>
  Number(
    text
      .trim()
      .replace(/\u2212/g, '-')
      .replace(/\u221e/, 'Infinity')
      .split(' ')[0],
  );

// Hovers cell (i, j) of heatmap `name` and returns the tooltip's text parts.
async function hover(page, name, i, j) {
  const point = await page.evaluate(([n, a, b]) => window.attentionPage.cellPoint(n, a, b), [name, i, j]);
  await page.mouse.move(point.x, point.y);
  await page.waitForSelector('#tooltip:not([hidden])');
  return page.evaluate(() => ({
    title: document.querySelector('#tooltip .tt-title')?.textContent ?? '',
    row: document.querySelector('#tooltip .tt-row')?.textContent ?? '',
    col: document.querySelector('#tooltip .tt-col')?.textContent ?? '',
    value: document.querySelector('#tooltip .tt-value')?.textContent ?? '',
  }));
}

const figureShapes = (page) =>
  page.$$eval('#matrices figure.heatmap', (figs) =>
    figs.map((f) => ({
      name: f.dataset.name,
      shape: f.dataset.shape,
      shown: f.querySelector('.hm-shape').textContent,
    })),
  );

// ---- tests -----------------------------------------------------------------------------------
test('a typed sentence: the model’s tokens as chips, every step forward and back, numbers equal to the package', async () => {
  const { page, errors } = await openPage(browser, servers.isolated.url);
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.evaluate(() => window.attentionPage.ready);
  await useIdentity(page);
  const hood = await page.$eval('#hood', (el) => ({ threads: el.dataset.threads, text: el.textContent }));
  const cores = await page.evaluate(() => navigator.hardwareConcurrency);
  if (cores > 1) {
    assert.equal(hood.threads, String(Math.min(16, cores)));
    assert.match(hood.text, /Threaded build/);
    assert.match(hood.text, /cross-origin isolated/);
  }
  let { state } = await snapshot(page);
  const prefilled = "The animal didn't cross the street because it was too tired.";
  assert.equal(state.n, tokenize(prefilled, model.tokenizer).length, 'the prefilled example, tokenized');
  assert.equal(state.isolated, true);

  ({ state } = await act(
    page,
    () => page.fill('#sentence', SENTENCE),
    new Function('s', `return s.text === ${JSON.stringify(SENTENCE)}`),
  ));
  const exp = expectedFor({ text: SENTENCE });
  assert.equal(state.n, exp.n);
  // the model's tokens: pieces that spell the sentence, shown with a visible leading space
  assert.deepEqual(
    state.tokens.map((t) => t.text),
    exp.texts,
  );
  assert.equal(state.tokens.map((t) => t.text).join(''), SENTENCE);
  assert.ok(state.tokens.every((t) => Number.isInteger(t.id)));
  const chips = await page.$$eval('#chips .chip', (cs) =>
    cs.map((c) => ({ text: c.querySelector('.chip-text').textContent, unknown: c.classList.contains('unknown') })),
  );
  assert.deepEqual(
    chips.map((c) => c.text),
    exp.labels,
  );
  assert.ok(
    chips.some((c) => c.text === '\u2423the'),
    'a leading space is shown as ␣',
  );
  assert.ok(
    chips.every((c) => !c.unknown),
    'no token is unknown',
  );
  assert.ok(await page.isVisible('#token-legend'), 'the tokens legend is shown');
  assert.doesNotMatch(await page.textContent('#token-status'), /not in the vocabulary/);

  const snap = await snapshot(page);
  assertPageMatches(snap.steps, exp);
  for (const step of snap.steps) {
    if (!['softmax'].includes(step.id)) continue;
    const w = matrix(snap.steps, step.id, 'weights');
    for (let r = 0; r < exp.n; ++r) {
      const sum = w.data.slice(r * exp.n, (r + 1) * exp.n).reduce((a, b) => a + b, 0);
      assert.ok(Math.abs(sum - 1) < 1e-5, `softmax row ${r} sums to ${sum}`);
    }
  }

  // Forward with → (focus on a button, where arrows are free), checking the shapes shown.
  await page.focus('#next');
  for (let i = 0; i < STEP_IDS.length; ++i) {
    if (i > 0) await act(page, () => page.keyboard.press('ArrowRight'), new Function('s', `return s.step === ${i}`));
    const s = await snapshot(page);
    assert.equal(s.state.stepId, STEP_IDS[i]);
    const figs = await figureShapes(page);
    const mats = s.steps[i].matrices;
    assert.deepEqual(
      figs.map((f) => f.name),
      mats.map((m) => m.name),
      `step ${STEP_IDS[i]}: one heatmap per matrix`,
    );
    figs.forEach((f, k) => {
      assert.equal(f.shape, exp.m[f.name].shape.join(','), `step ${STEP_IDS[i]}: data-shape of ${f.name}`);
      assert.equal(f.shown, exp.m[f.name].shape.join(' \u00d7 '), `step ${STEP_IDS[i]}: shape shown for ${f.name}`);
      assert.equal(mats[k].shape.join(','), f.shape);
    });
    assert.match(await page.textContent('#step-title'), new RegExp(`^${i + 1}\\. `));
    assert.ok((await page.$$eval('#step-shapes li', (li) => li.length)) > 0, 'operand shapes are listed');
    await page.screenshot({
      path: new URL(`desktop-${String(i + 1).padStart(2, '0')}-${STEP_IDS[i]}.png`, ARTIFACTS).pathname,
      fullPage: true,
    });
  }
  assert.equal(await page.isDisabled('#next'), false, 'the output step goes on to the backward steps');
  // Back with ←.
  for (let i = STEP_IDS.length - 2; i >= 0; --i) {
    const s = await act(page, () => page.keyboard.press('ArrowLeft'), new Function('s', `return s.step === ${i}`));
    assert.equal(s.state.stepId, STEP_IDS[i]);
  }
  // The buttons.
  await act(
    page,
    () => page.click('#next'),
    (s) => s.step === 1,
  );
  await act(
    page,
    () => page.click('#next'),
    (s) => s.step === 2,
  );
  ({ state } = await act(
    page,
    () => page.click('#prev'),
    (s) => s.step === 1,
  ));
  assert.equal(state.stepId, 'qkv');
  // Arrows typed in the sentence box move the caret, not the step.
  await page.focus('#sentence');
  await page.keyboard.press('ArrowLeft');
  await page.waitForTimeout(50);
  assert.equal((await snapshot(page)).state.step, 1);

  // Hover: tooltips carry the row and column tokens and the value drawn.
  await goToStep(page, 2);
  const scores = matrix(snap.steps, 'scores', 'scores');
  for (const [i, j] of [
    [0, 0],
    [3, 11],
    [exp.n - 1, 2],
  ]) {
    const tip = await hover(page, 'scores', i, j);
    assert.match(
      tip.row,
      new RegExp(`query ${i + 1} \u201c${exp.labels[i].replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\u201d`),
    );
    assert.match(
      tip.col,
      new RegExp(`key ${j + 1} \u201c${exp.labels[j].replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\u201d`),
    );
    assert.ok(
      Math.abs(parseShown(tip.value) - scores.data[i * exp.n + j]) <= 5e-5,
      `tooltip ${tip.value} vs ${scores.data[i * exp.n + j]}`,
    );
  }
  await goToStep(page, 5);
  const w = matrix(snap.steps, 'softmax', 'weights');
  const tip = await hover(page, 'weights', 4, 2);
  assert.ok(Math.abs(parseShown(tip.value) - w.data[4 * exp.n + 2]) <= 5e-5);

  // Following a token: a chip, a cell, a row label; the inspector lists its softmax.
  await act(
    page,
    () => page.click('#chips li:nth-child(4) .chip'),
    (s) => s.focus === 3,
  );
  assert.equal(await page.getAttribute('#chips li:nth-child(4) .chip', 'aria-pressed'), 'true');
  let inspector = await page.textContent('#inspector');
  assert.ok(inspector.includes(`Following \u201c${exp.labels[3]}\u201d`), inspector.slice(0, 60));
  assert.match(inspector, /Row maximum/);
  assert.match(inspector, /= 1\.0000/);
  const rowText = await page.$$eval('#inspector tbody tr', (trs) => trs.map((tr) => tr.lastElementChild.textContent));
  assert.deepEqual(
    rowText.map(parseShown).map((v) => v.toFixed(4)),
    Array.from(w.data.slice(3 * exp.n, 4 * exp.n), (v) => v.toFixed(4)),
    'the inspector lists the followed row of weights',
  );
  const cell = await page.evaluate(() => window.attentionPage.cellPoint('weights', 6, 1));
  await act(
    page,
    () => page.mouse.click(cell.x, cell.y),
    (s) => s.focus === 6,
  );
  const box = await page.locator('figure[data-name="weights"] canvas[role="img"]').boundingBox();
  const row8 = await page.evaluate(() => window.attentionPage.cellPoint('weights', 8, 0));
  await act(
    page,
    () => page.mouse.click(box.x + 4, row8.y),
    (s) => s.focus === 8,
  );
  inspector = await page.textContent('#inspector');
  assert.match(inspector, new RegExp(`token 9 of ${exp.n}`));

  assert.deepEqual(errors(), []);
  await page.close();
});

test('causal mask, heads, scaling, positions and random weights change what the page computes', async () => {
  const { page, errors } = await openPage(browser, servers.isolated.url);
  await page.evaluate(() => window.attentionPage.ready);
  await useIdentity(page);
  const text = await page.inputValue('#sentence');

  // Causal: everything above the diagonal is -Infinity before softmax and exactly 0 after.
  let snap = await act(
    page,
    () => page.check('#causal'),
    (s) => s.causal,
  );
  let exp = expectedFor({ text, causal: true });
  assertPageMatches(snap.steps, exp);
  const n = exp.n;
  const upper = (m) => m.data.filter((v, k) => k % n > Math.floor(k / n));
  assert.ok(upper(matrix(snap.steps, 'mask', 'masked')).every((v) => v === -Infinity));
  assert.ok(
    upper(matrix(snap.steps, 'softmax', 'weights')).every((v) => v === 0),
    'causal weights above the diagonal are exactly 0',
  );
  for (const m of snap.steps.find((s) => s.id === 'heads').matrices)
    assert.ok(
      upper(m).every((v) => v === 0),
      `${m.name}: upper triangle 0`,
    );
  await goToStep(page, 4);
  const masked = await hover(page, 'masked', 0, n - 1);
  assert.match(masked.value, /\u2212\u221e/);

  // Heads: 10 heads -> 10 per-head grids, d_k 10.
  snap = await act(
    page,
    () => page.selectOption('#heads', '10'),
    (s) => s.heads === 10,
  );
  assert.equal(snap.state.dK, 10);
  exp = expectedFor({ text, causal: true, heads: 10 });
  assertPageMatches(snap.steps, exp);
  await goToStep(page, 7);
  assert.equal(await page.$$eval('#matrices .multiples figure.heatmap', (f) => f.length), 10);
  await page.screenshot({ path: new URL('desktop-heads-10.png', ARTIFACTS).pathname, fullPage: true });
  await act(
    page,
    () => page.selectOption('#heads', '2'),
    (s) => s.heads === 2,
  );
  assert.equal(await page.$$eval('#matrices figure.heatmap', (f) => f.length), 2);

  // Following head 2 in steps 2-7.
  snap = await act(
    page,
    () => page.selectOption('#follow-head', { value: '1' }),
    (s) => s.head === 1,
  );
  assertPageMatches(snap.steps, expectedFor({ text, causal: true, heads: 2, head: 1 }));

  // Scaling off: scale 1, so the scaled scores equal the scores.
  await page.selectOption('#follow-head', { value: '0' });
  snap = await act(
    page,
    () => page.uncheck('#scaling'),
    (s) => !s.scaling && s.head === 0,
  );
  assert.deepEqual(matrix(snap.steps, 'scale', 'scaled').data, matrix(snap.steps, 'scale', 'scores').data);
  assertPageMatches(snap.steps, expectedFor({ text, causal: true, heads: 2, scaling: false }));
  await goToStep(page, 5);
  await page.screenshot({ path: new URL('desktop-softmax-unscaled.png', ARTIFACTS).pathname, fullPage: true });

  // Positions: X = E + P.
  snap = await act(
    page,
    () => page.check('#positions'),
    (s) => s.positions,
  );
  assertPageMatches(snap.steps, expectedFor({ text, causal: true, heads: 2, scaling: false, positions: true }));
  await page.uncheck('#positions');
  await page.check('#scaling');
  await page.uncheck('#causal');

  // Random projections from a seed, with d_k 8.
  await act(
    page,
    () => page.check('input[name="projection"][value="random"]'),
    (s) => s.projection === 'random' && !s.causal && s.scaling && !s.positions,
  );
  assert.match(await page.textContent('#weights-note'), /Random projections/);
  await act(
    page,
    () => page.fill('#seed', '7'),
    (s) => s.seed === 7,
  );
  snap = await act(
    page,
    () => page.fill('#dk', '8'),
    (s) => s.dK === 8,
  );
  assert.equal(snap.state.heads, 2);
  assertPageMatches(snap.steps, expectedFor({ text, heads: 2, dK: 8, seed: 7 }));
  assert.match(await page.textContent('#weights-note'), /seed 7/);

  // Long inputs: 70 words (their tokens) fit, drawn as an overview and a zoom (page_share.test.mjs
  // has more, up to the cap of 512).
  const words = (k) =>
    Array.from({ length: k }, (_, i) => ['the', 'river', 'runs', 'past', 'old', 'stone', 'walls'][i % 7]).join(' ');
  await page.check('input[name="projection"][value="identity"]');
  const long = tokenize(words(70), model.tokenizer).length;
  assert.ok(long >= 70);
  snap = await act(page, () => page.fill('#sentence', words(70)), new Function('s', `return s.n === ${long}`));
  assert.deepEqual(matrix(snap.steps, 'scores', 'scores').shape, [long, long]);
  assert.ok(Number.isFinite(snap.state.renderMs), `a 70-token step drew (renderMs ${snap.state.renderMs})`);
  await goToStep(page, 5);
  assert.equal(await page.locator('figure.heatmap[data-name="weights"] .hm-overview').count(), 1);
  await page.screenshot({ path: new URL('desktop-70-tokens-softmax.png', ARTIFACTS).pathname, fullPage: true });

  assert.deepEqual(errors(), []);
  await page.close();
});

test('the worked example matches the hand calculation', async () => {
  const { page, errors } = await openPage(browser, servers.isolated.url);
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.evaluate(() => window.attentionPage.ready);
  const snap = await act(
    page,
    () => page.check('input[name="mode"][value="worked"]'),
    (s) => s.mode === 'worked',
  );
  assert.equal(snap.state.n, 3);
  const get = (id, name) => matrix(snap.steps, id, name).data;
  assert.deepEqual(get('x', 'X'), [1, 0, 0, 1, 1, 1]);
  assert.deepEqual(get('qkv', 'K'), [1, 1, 0, 1, 1, 2]);
  assert.deepEqual(get('scores', 'scores'), [1, 0, 1, 1, 1, 2, 2, 1, 3]);
  const e = Math.exp(1 / Math.SQRT2);
  const row1 = [e, 1, e].map((v) => v / (2 * e + 1));
  get('softmax', 'weights')
    .slice(0, 3)
    .forEach((v, j) => assert.ok(Math.abs(v - row1[j]) < 1e-6, `weights[0][${j}] = ${v}, by hand ${row1[j]}`));
  for (const [id, name] of [
    ['weighted', 'head_output'],
    ['output', 'output'],
  ]) {
    const out = get(id, name);
    assert.ok(
      Math.abs(out[0] - 0.80222419) < 1e-6 && Math.abs(out[1] - 0.59888791) < 1e-6,
      `${name} row 1 = ${out.slice(0, 2)}`,
    );
  }
  await page.focus('#next');
  for (let i = 0; i < STEP_IDS.length; ++i) {
    if (i > 0) await act(page, () => page.keyboard.press('ArrowRight'), new Function('s', `return s.step === ${i}`));
    await page.screenshot({
      path: new URL(`worked-${String(i + 1).padStart(2, '0')}-${STEP_IDS[i]}.png`, ARTIFACTS).pathname,
      fullPage: true,
    });
  }
  await goToStep(page, 2);
  assert.match(await page.textContent('#step-hand'), /\[1 0 1; 1 1 2; 2 1 3\]/);
  const tip = await hover(page, 'scores', 2, 2);
  assert.equal(tip.value, '3.0000');
  await goToStep(page, 5);
  assert.match(await page.textContent('#step-hand'), /0\.4011, 0\.1978, 0\.4011/);

  assert.deepEqual(errors(), []);
  await page.close();
});

test('without cross-origin isolation the page runs single-threaded and says so', async () => {
  const { page, errors } = await openPage(browser, servers.plain.url);
  await page.evaluate(() => window.attentionPage.ready);
  await useIdentity(page);
  const snap = await snapshot(page);
  assert.equal(snap.state.isolated, false);
  assert.equal(snap.state.backend.threads, 1);
  const hood = await page.$eval('#hood', (el) => ({ threads: el.dataset.threads, text: el.textContent }));
  assert.equal(hood.threads, '1');
  assert.match(hood.text, /Single-thread build/);
  assert.match(hood.text, /not cross-origin isolated/);
  assertPageMatches(snap.steps, expectedFor({ text: snap.state.text }));
  assert.deepEqual(errors(), []);
  await page.close();
});

test('keyboard only: controls, tokens, steps and the side panel are reachable by Tab', async () => {
  const { page, errors } = await openPage(browser, servers.isolated.url);
  await page.evaluate(() => window.attentionPage.ready);
  await useIdentity(page);
  const seen = new Set();
  for (let k = 0; k < 60; ++k) {
    await page.keyboard.press('Tab');
    seen.add(
      await page.evaluate(() => {
        const el = document.activeElement;
        return (
          el.id ||
          (el.classList.contains('chip') ? 'chip' : el.classList.contains('step-pill') ? 'step-pill' : el.tagName)
        );
      }),
    );
  }
  for (const id of ['sentence', 'chip', 'seed', 'heads', 'causal', 'scaling', 'next', 'step-pill', 'inspector']) {
    assert.ok(seen.has(id), `Tab reaches ${id}`);
  }
  await page.focus('#chips li:nth-child(2) .chip');
  await act(
    page,
    () => page.keyboard.press('Enter'),
    (s) => s.focus === 1,
  );
  await act(
    page,
    () => page.keyboard.press('ArrowRight'),
    (s) => s.step === 1,
  );
  assert.deepEqual(errors(), []);
  await page.close();
});

test('at 375 px wide nothing scrolls the page sideways, on any step', async () => {
  const { page, errors } = await openPage(browser, servers.isolated.url);
  await page.setViewportSize({ width: 375, height: 800 });
  await page.evaluate(() => window.attentionPage.ready);
  for (const mode of ['sentence', 'worked']) {
    if (mode === 'worked')
      await act(
        page,
        () => page.check('input[name="mode"][value="worked"]'),
        (s) => s.mode === 'worked',
      );
    for (let i = 0; i < STEP_IDS.length; ++i) {
      await goToStep(page, i);
      const { scroll, client } = await page.evaluate(() => ({
        scroll: document.documentElement.scrollWidth,
        client: document.documentElement.clientWidth,
      }));
      assert.ok(scroll <= client, `${mode} step ${STEP_IDS[i]}: page is ${scroll} px wide in a ${client} px window`);
      if (mode === 'sentence' || i === 5) {
        await page.screenshot({
          path: new URL(`phone-${mode}-${String(i + 1).padStart(2, '0')}-${STEP_IDS[i]}.png`, ARTIFACTS).pathname,
          fullPage: true,
        });
      }
    }
  }
  assert.deepEqual(errors(), []);
  await page.close();
});
