// The tutorial page's model view and head comparison in headless Chromium: Trained is the
// default; every layer × head of the trained model is a small heatmap whose numbers equal the
// package run here in Node on the shipped weights, labelled with its measured description;
// a tile (click or Enter) opens its head in the steps; two heads compared side by side with
// A − B; at 390 px nothing scrolls sideways.
// run with: node --test tests/js/page/page_views.test.mjs (screenshots in tests/artifacts/page/)
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import { after, before, test } from 'node:test';

import { tensor } from '../../../web/lib/index.js';
import { sinusoidalPositions } from '../../../web/page/positions.js';
import { describeHead } from '../../../web/page/model/head_stats.js';
import { layerWeights } from '../../../web/page/model/weights.js';
import { tokenize } from '../../../web/page/tokenize.js';
import { openPage } from '../../../scripts/lib/browser.mjs';
import { ARTIFACTS, closePageSuite, openPageSuite, pageDriver } from '../helpers/page_driver.mjs';

const TOL = 1e-4;
const AXE = fs.readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

let browser, server, attn, model;
let suite;

before(async () => {
  suite = await openPageSuite({ port: 9531, attention: true, model: true });
  ({ browser, server, attn, model } = suite);
});
after(() => closePageSuite(suite));

const { snapshot, matrix, act } = pageDriver(5, 6); // step 6: the followed head's softmax weights
const shot = (page, name, options = {}) =>
  page.screenshot({ path: new URL(`views-${name}.png`, ARTIFACTS).pathname, fullPage: true, ...options });
const views = (page) => page.evaluate(() => ({ m: window.attentionPage.modelView, c: window.attentionPage.compare }));

// Every head's weights (n,n) of both layers in Node: X₁ = E + P, X₂ = X₁ + layer 1(X₁).
function expectedHeads(text) {
  const toks = tokenize(text, model.tokenizer);
  const n = toks.length,
    d = model.dim;
  const P = sinusoidalPositions(n, d).map((v) => v * model.manifest.model.positionScale);
  const x = new Float32Array(n * d);
  toks.forEach((t, i) => {
    const v = model.tensors.embed.data.subarray(t.id * d, (t.id + 1) * d);
    for (let k = 0; k < d; ++k) x[i * d + k] = v[k] + P[i * d + k];
  });
  let h = tensor(x, [n, d]);
  const heads = [];
  for (let L = 0; L < model.manifest.model.layers; ++L) {
    const mha = attn.multiHeadAttention({ dModel: d, heads: 4, weights: layerWeights(model.tensors, L) });
    const f = mha.forward(h, { causal: true, trace: true });
    mha.dispose();
    heads.push(f.heads.map((hd) => hd.weights.data));
    h = tensor(
      Float32Array.from(h.data, (v, k) => v + f.output.data[k]),
      [n, d],
    );
  }
  return { n, heads };
}

function assertClose(actual, expected, what) {
  assert.equal(actual.length, expected.length, `${what}: size`);
  let worst = 0;
  for (let i = 0; i < expected.length; ++i) worst = Math.max(worst, Math.abs(actual[i] - expected[i]));
  assert.ok(worst <= TOL, `${what}: largest difference ${worst}`);
}

// axe-core's WCAG 2.1 A/AA violations in the model view's section (as page_a11y.test.mjs).
async function auditViews(page) {
  if (!(await page.evaluate(() => 'axe' in window))) await page.addScriptTag({ content: AXE });
  const { violations } = await page.evaluate(() =>
    window.axe.run(
      { include: [['#model']] },
      { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } },
    ),
  );
  return violations.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
}

// Hovers cell (i, j) of a comparison heatmap; the number its tooltip shows.
async function tooltipValue(page, name, i, j) {
  const p = await page.evaluate(([n, a, b]) => window.attentionPage.compareCellPoint(n, a, b), [name, i, j]);
  await page.mouse.move(p.x, p.y);
  await page.waitForSelector('#tooltip:not([hidden])');
  const text = await page.$eval('#tooltip .tt-value', (el) => el.textContent);
  const title = await page.$eval('#tooltip .tt-title', (el) => el.textContent);
  assert.ok(title.endsWith(`[${i + 1}, ${j + 1}]`), `tooltip of ${name} is for ${title}`);
  return Number(text.replace('\u2212', '-').replace(' (masked)', ''));
}

test('default Trained; the model view: layers × heads, measured descriptions, the package numbers; a tile opens its head', async () => {
  const { page, errors } = await openPage(browser, server.url);
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.evaluate(() => window.attentionPage.ready);
  let { state } = await snapshot(page);
  assert.deepEqual(
    [state.projection, state.layer, state.causal, state.positions, state.heads],
    ['trained', 0, true, true, 4],
    'the page opens on the trained model',
  );
  assert.ok(await page.isChecked('input[name="projection"][value="trained"]'));
  const want = expectedHeads(state.text);
  // The head picker's label, its step numbers filled from the step list (page_steps.test.mjs holds the order).
  assert.equal(await page.textContent('#follow-head-label'), 'Steps 2–7 and 13–17 follow head');

  // 2 layers × 4 heads, each tile the package's weights and the manifest's measured words.
  let { m } = await views(page);
  const { layers, heads } = model.manifest.model;
  assert.equal(m.tiles.length, layers * heads);
  assert.equal(await page.locator('#model-grid .mv-tile canvas').count(), layers * heads);
  const tiles = await page.$$eval('#model-grid .mv-tile', (bs) =>
    bs.map((b) => ({
      layer: Number(b.dataset.layer),
      head: Number(b.dataset.head),
      name: b.querySelector('.mv-name').textContent,
      desc: b.querySelector('.mv-desc').textContent,
      current: b.getAttribute('aria-current'),
    })),
  );
  for (const [k, t] of tiles.entries()) {
    const stats = model.manifest.heads.find((s) => s.layer === t.layer && s.head === t.head);
    assert.equal(t.desc, describeHead(stats), `layer ${t.layer + 1} head ${t.head + 1}: its measured description`);
    assert.match(t.desc, /\d+ %|\d\.\d bits/, 'a description gives measured numbers');
    assert.equal(t.name, `Layer ${t.layer + 1}, head ${t.head + 1}`);
    assert.equal(m.tiles[k].description, t.desc);
    assertClose(m.tiles[k].data, want.heads[t.layer][t.head], `tile layer ${t.layer + 1} head ${t.head + 1}`);
  }
  assert.deepEqual(
    tiles.filter((t) => t.current === 'true').map((t) => [t.layer, t.head]),
    [[0, 0]],
  );
  // The tiles are drawn: cell (0, n−1) is after its query, hatched as masked (the hatch's two
  // greys); cell (0, 0) holds weight 1 (the first word sees only itself), the top of the scale
  // when the top is 1. The cells start after the token labels' 44 CSS px (tile_axes.js).
  const px = await page.$eval(
    '#model-grid .mv-tile canvas',
    (c, n) => {
      const g = c.getContext('2d');
      const a = Math.round(44 * Math.max(1, Math.round(window.devicePixelRatio || 1)));
      const k = (c.width - a) / n;
      const at = (x, y) => Array.from(g.getImageData(Math.floor(x), Math.floor(y), 1, 1).data);
      const masked = [0.2, 0.4, 0.6, 0.8].map((f) => at(a + (n - 1 + f) * k, a + 0.5 * k).join(','));
      return [[...new Set(masked)], at(a + 0.5 * k, a + 0.5 * k)];
    },
    want.n,
  );
  for (const c of px[0]) assert.ok(['228,230,235,255', '154,160,171,255'].includes(c), `masked cell: ${c}`);
  if (m.top === 1) assert.deepEqual(px[1], [0xfd, 0xe7, 0x25, 255], 'weight 1 in viridis yellow');
  await shot(page, 'desktop');
  await page.locator('#model').screenshot({ path: new URL('views-model.png', ARTIFACTS).pathname });

  // Click layer 2, head 3: the steps show it, on the softmax weights step.
  let snap = await act(
    page,
    () => page.click('#model-grid .mv-tile[data-layer="1"][data-head="2"]'),
    (s) => s.layer === 1 && s.head === 2,
  );
  assert.equal(snap.state.stepId, 'softmax');
  assertClose(matrix(snap.steps, 'softmax', 'weights').data, want.heads[1][2], 'step 6 after the click');
  assert.equal(await page.evaluate(() => document.activeElement.id), 'steps', 'the focus moves to the steps');
  assert.match(await page.textContent('#step-kicker'), /head 3/i);
  ({ m } = await views(page));
  assert.deepEqual(
    m.tiles.filter((t) => t.current).map((t) => [t.layer, t.head]),
    [[1, 2]],
  );
  await shot(page, 'opened-head');

  // The keyboard: Enter on layer 1, head 2.
  await page.focus('#model-grid .mv-tile[data-layer="0"][data-head="1"]');
  snap = await act(
    page,
    () => page.keyboard.press('Enter'),
    (s) => s.layer === 0 && s.head === 1,
  );
  assert.equal(snap.state.stepId, 'softmax');
  assertClose(matrix(snap.steps, 'softmax', 'weights').data, want.heads[0][1], 'step 6 after Enter');
  assert.deepEqual(errors(), []);
  await page.close();
});

test('head comparison: two heads side by side and A − B, cell by cell', async () => {
  const { page, errors } = await openPage(browser, server.url);
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.evaluate(() => window.attentionPage.ready);
  const { state } = await snapshot(page);
  const want = expectedHeads(state.text);
  const n = want.n;

  await act(
    page,
    () => page.selectOption('#compare-a', '0,3'),
    () => window.attentionPage.compare.a.head === 3,
  );
  await act(
    page,
    () => page.selectOption('#compare-b', '1,0'),
    () => window.attentionPage.compare.b.layer === 1,
  );
  const { c } = await views(page);
  assert.deepEqual(
    [c.a, c.b],
    [
      { layer: 0, head: 3 },
      { layer: 1, head: 0 },
    ],
  );
  assertClose(c.data.a, want.heads[0][3], 'A');
  assertClose(c.data.b, want.heads[1][0], 'B');
  for (let k = 0; k < n * n; ++k) assert.equal(c.data.diff[k], Math.fround(c.data.a[k] - c.data.b[k]), `A − B at ${k}`);
  assert.deepEqual(
    await page.$$eval('#compare figure.heatmap', (fs) => fs.map((f) => [f.dataset.name, f.dataset.shape])),
    [
      ['compare_a', `${n},${n}`],
      ['compare_b', `${n},${n}`],
      ['compare_diff', `${n},${n}`],
    ],
  );

  // A cell the mask keeps, with a clear difference: the tooltips read a, b and a − b.
  let best = null;
  for (let i = 1; i < n; ++i)
    for (let j = 0; j <= i; ++j)
      if (!best || Math.abs(c.data.diff[i * n + j]) > Math.abs(c.data.diff[best[0] * n + best[1]])) best = [i, j];
  const [i, j] = best;
  const a = await tooltipValue(page, 'compare_a', i, j);
  const b = await tooltipValue(page, 'compare_b', i, j);
  const d = await tooltipValue(page, 'compare_diff', i, j);
  assert.ok(Math.abs(d) > 0.01, `a real difference at (${i}, ${j}): ${d}`);
  assert.ok(Math.abs(d - (a - b)) <= 1.5e-4, `A − B shown ${d}, A ${a}, B ${b}`);
  assert.ok(Math.abs(a - c.data.a[i * n + j]) <= 5.1e-5 && Math.abs(d - c.data.diff[i * n + j]) <= 5.1e-5);

  // The difference's legend: diverging, centred at 0, ± its largest |A − B|.
  const top = Math.max(...c.data.diff.map(Math.abs));
  const legend = await page.$$eval('#compare figure[data-name="compare_diff"] .hm-legend span', (ss) =>
    ss.map((s) => s.textContent),
  );
  assert.equal(Number(legend[0].replace('\u2212', '-')), -Number(legend[2]));
  assert.ok(Math.abs(Number(legend[2]) - top) < 0.001, `legend ${legend} vs ${top}`);
  assert.match(legend[1], /^0$/);
  assert.match(await page.textContent('#compare-note'), /Red: A puts more weight/);
  await page.locator('#compare-title').scrollIntoViewIfNeeded();
  await shot(page, 'compare');

  // The same head twice: no difference at all.
  await act(
    page,
    () => page.selectOption('#compare-b', '0,3'),
    () => window.attentionPage.compare.b.layer === 0,
  );
  const same = (await views(page)).c;
  assert.ok(same.data.diff.every((v) => v === 0));
  assert.match(await page.textContent('#compare-note'), /exactly the same/);
  assert.deepEqual(await auditViews(page), []);
  assert.deepEqual(errors(), []);
  await page.close();
});

test('other presets: the views say they show the trained model, and Trained gives back its settings', async () => {
  const { page, errors } = await openPage(browser, server.url);
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.evaluate(() => window.attentionPage.ready);
  const { state } = await act(
    page,
    () => page.check('input[name="projection"][value="identity"]'),
    (s) => s.projection === 'identity',
  );
  assert.deepEqual([state.causal, state.positions, state.layer], [false, false, null], 'Identity as it always was');
  assert.deepEqual(await views(page), { m: null, c: null });
  assert.ok(await page.isDisabled('#compare-a'));
  assert.deepEqual(await auditViews(page), []);
  await act(
    page,
    () => page.click('#use-trained'),
    (s) => s.projection === 'trained',
  );
  assert.equal((await views(page)).m.tiles.length, 8);
  assert.ok(await page.isChecked('input[name="projection"][value="trained"]'));
  assert.deepEqual(errors(), []);
  await page.close();
});

test('phone (390 px): two tiles a row, the comparison scrolls in its boxes, the page never sideways', async () => {
  const { page, errors } = await openPage(browser, server.url);
  await page.setViewportSize({ width: 390, height: 844 });
  await page.evaluate(() => window.attentionPage.ready);
  const overflow = () => page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.equal(await overflow(), 0);
  const lefts = await page.$$eval('#model-grid .mv-grid:first-of-type .mv-tile', (bs) =>
    bs.map((b) => Math.round(b.getBoundingClientRect().left)),
  );
  assert.equal(new Set(lefts).size, 2, `tiles start at ${lefts}`);
  // what a scroll box holds (a heatmap's .hm-scroll, a table's .table-scroll: overflow-x auto or
  // scroll) may reach past it: the box scrolls sideways; the boxes themselves stay on screen
  const widest = await page.$$eval('#model, #model *', (els) => {
    const scrolls = (e) => ['auto', 'scroll'].includes(getComputedStyle(e).overflowX);
    const inBox = (e) => {
      for (let a = e.parentElement; a; a = a.parentElement) if (scrolls(a)) return true;
      return false;
    };
    const widest = els
      .filter((e) => !inBox(e))
      .reduce(
        (a, e) =>
          e.getBoundingClientRect().right > a.right
            ? { right: e.getBoundingClientRect().right, name: `${e.tagName}.${e.className}` }
            : a,
        { right: 0 },
      );
    return widest;
  });
  assert.ok(widest.right <= 390, `${widest.name} in the model view reaches ${widest.right} px`);
  await page.locator('#model').screenshot({ path: new URL('views-phone-model.png', ARTIFACTS).pathname });
  await page.locator('#compare-title').scrollIntoViewIfNeeded();
  await shot(page, 'phone');
  assert.deepEqual(await auditViews(page), []);
  assert.deepEqual(errors(), []);
  await page.close();
});
