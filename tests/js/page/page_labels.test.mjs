// Labels, scroll cues and masked cells on the tutorial page's heatmaps, in headless Chromium: at
// 390 px a heatmap wider than the screen says which columns are out of view and keeps its row
// labels in view while it scrolls; the model view's tiles and the live training's grid hatch
// their masked cells (as every heatmap does) and write their tokens beside the cells.
// Screenshots: tests/artifacts/page/labels-*.png.
// run with: node --test tests/js/page/page_labels.test.mjs
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';

import { MASKED_FILL, MASKED_HATCH } from '../../../web/page/colors.js';
import { openPage } from '../../../scripts/lib/browser.mjs';
import { ARTIFACTS, closePageSuite, openPageSuite } from '../helpers/page_driver.mjs';

// the shipped model's window: live training measures a sentence that is not a repeat on its
// first n/2 tokens (at most) twice (head_stats.js repeatedSentence)
const MODEL_N = JSON.parse(readFileSync(new URL('../../../web/page/data/model/manifest.json', import.meta.url), 'utf8'))
  .model.n;

let browser, server;
let suite;
before(async () => {
  suite = await openPageSuite({ port: 9575 });
  ({ browser, server } = suite);
});
after(() => closePageSuite(suite));

async function open(viewport) {
  const { page, errors } = await openPage(browser, server.url);
  await page.setViewportSize(viewport);
  await page.evaluate(() => window.attentionPage.ready);
  return { page, errors };
}

// In the page: of a tile canvas (n cells a side after `a` px of labels, k px a cell), the colour
// at the centre of masked cell (0, n−1) and how many dark pixels the label strips hold.
const probeTile = (page, selector, n, index = 0) =>
  page.$$eval(
    selector,
    (canvases, [n, index]) => {
      const canvas = canvases[index];
      const g = canvas.getContext('2d');
      const { width } = canvas;
      // the cells fill the canvas after the label space: solve a + n·k = width with the label
      // space that tile_axes.js keeps (44 CSS px × devicePixelRatio, or 0)
      const dpr = Math.max(1, Math.round(window.devicePixelRatio || 1));
      const a = Math.round(44 * dpr);
      const k = (width - a) / n;
      const px = (x, y) => Array.from(g.getImageData(Math.floor(x), Math.floor(y), 1, 1).data.slice(0, 3));
      // the hatch tile has two colours: sample a few points of the cell and keep the distinct ones
      const cell = [];
      for (const dx of [0.2, 0.4, 0.6, 0.8]) cell.push(px(a + (n - 1 + dx) * k, a + 0.5 * k).join(','));
      let dark = 0;
      const strip = g.getImageData(0, a, a, n * k).data;
      for (let i = 0; i < strip.length; i += 4) if (strip[i] + strip[i + 1] + strip[i + 2] < 300) ++dark;
      return { cell: [...new Set(cell)], dark };
    },
    [n, index],
  );
const rgb = (hex) => [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16)).join(',');

function assertHatched({ cell, dark }, what) {
  const allowed = [rgb(MASKED_FILL), rgb(MASKED_HATCH)];
  for (const c of cell) assert.ok(allowed.includes(c), `${what}: a masked cell has ${c}, not the hatch's ${allowed}`);
  assert.ok(dark > 50, `${what}: no token labels beside the rows (${dark} dark pixels)`);
}

test('phone (390 px): a wide heatmap names the columns out of view and keeps its row labels in view', async () => {
  const { page, errors } = await open({ width: 390, height: 844 });
  await page.$eval('button[data-step="5"]', (b) => b.click()); // the masked scores and the weights
  await page.waitForFunction(() => window.attentionPage.state.stepId === 'softmax');
  const fig = page.locator('figure.heatmap', { has: page.locator('.hm-scroll') }).first();
  const before = await fig.evaluate((f) => {
    const box = f.querySelector('.hm-scroll');
    return {
      over: box.scrollWidth - box.clientWidth,
      cue: f.querySelector('.hm-cue').textContent,
      more: f.classList.contains('hm-more'),
    };
  });
  assert.ok(before.over > 0, 'the heatmap fits: nothing to scroll');
  const tokens = await page.evaluate(() => window.attentionPage.state.n);
  assert.match(before.cue, new RegExp(`^Scroll sideways for columns? \\d+(–${tokens})? →$`));
  assert.ok(before.more, 'no fade at the right edge');
  await fig.screenshot({ path: new URL('labels-phone-start.png', ARTIFACTS).pathname });
  const after = await fig.evaluate(async (f) => {
    const box = f.querySelector('.hm-scroll');
    box.scrollLeft = box.scrollWidth;
    await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
    const strip = f.querySelector('canvas.hm-rows').getBoundingClientRect();
    return {
      stripLeft: strip.left,
      boxLeft: box.getBoundingClientRect().left,
      cue: f.querySelector('.hm-cue').textContent,
      more: f.classList.contains('hm-more'),
    };
  });
  assert.ok(
    Math.abs(after.stripLeft - after.boxLeft) < 1,
    `the row labels scrolled away (${after.stripLeft} vs ${after.boxLeft})`,
  );
  assert.match(after.cue, /Scroll back for the first columns/);
  assert.ok(!after.more);
  await fig.screenshot({ path: new URL('labels-phone-scrolled.png', ARTIFACTS).pathname });
  assert.deepEqual(errors(), []);
  await page.close();
});

test('the model view’s tiles and the live grid hatch masked cells and write their tokens', async () => {
  const { page, errors } = await open({ width: 1280, height: 900 });
  const n = await page.evaluate(() => window.attentionPage.state.n);
  for (let k = 0; k < 8; ++k) assertHatched(await probeTile(page, '#model-grid canvas', n, k), `tile ${k + 1}`);
  await page.click('#train-run');
  await page.waitForFunction(() => window.attentionTraining.headsShown >= 1, null, { timeout: 120000 });
  await page.click('#train-run'); // pause
  await page.waitForFunction(() => window.attentionTraining.state === 'paused', null, { timeout: 60000 });
  // the grid shows the sentence written twice (its own n)
  const live = await page.evaluate(() =>
    Number(document.querySelector('#train-heads figure.heatmap').dataset.shape.split(',')[0]),
  );
  const twice = 2 * Math.min(n, Math.floor(MODEL_N / 2));
  assert.equal(live, twice, `the default sentence (${n} tokens): its first ${twice / 2} twice`);
  assertHatched(await probeTile(page, '#train-heads canvas', live), 'the live grid');
  await page.locator('#train-heads').screenshot({ path: new URL('labels-train-grid.png', ARTIFACTS).pathname });
  assert.deepEqual(errors(), []);
  await page.close();
});

// Of heatmap `name` of the current step (its cell (0, n−1) found by cellPoint): the distinct
// colours across that masked cell, and the dark pixels left of the cells beside the first rows.
async function probeStep(page, name) {
  const sel = `figure.heatmap[data-name="${name}"] canvas`;
  const n = await page.$eval(sel, (c) => Number(c.closest('figure').dataset.shape.split(',')[0]));
  const p = await page.evaluate(([nm, col]) => window.attentionPage.cellPoint(nm, 0, col), [name, n - 1]);
  return page.$eval(
    sel,
    (c, { p, n }) => {
      const rect = c.getBoundingClientRect();
      const dpr = c.width / rect.width;
      const g = c.getContext('2d');
      const px = (x, y) => Array.from(g.getImageData(Math.floor(x * dpr), Math.floor(y * dpr), 1, 1).data.slice(0, 3));
      const cx = p.x - rect.left,
        cy = p.y - rect.top;
      const seen = new Set([0.25, 0.5, 0.75].map((f) => px(cx + (f - 0.5) * p.w, cy).join(',')));
      const left = cx - (n - 0.5) * p.w; // the first cell's left edge
      const strip = g.getImageData(
        0,
        Math.floor((cy - p.h / 2) * dpr),
        Math.max(1, Math.floor((left - 2) * dpr)),
        Math.floor(4 * p.h * dpr),
      ).data;
      let dark = 0;
      for (let i = 0; i < strip.length; i += 4) if (strip[i] + strip[i + 1] + strip[i + 2] < 300) ++dark;
      return { n, seen: [...seen], dark };
    },
    { p, n },
  );
}

test('step 8’s head grids and step 6’s weights: tokens beside the cells, masked cells hatched', async () => {
  for (const viewport of [
    { width: 1280, height: 900 },
    { width: 390, height: 844 },
  ]) {
    const { page, errors } = await open(viewport);
    // a short sentence: its tiles' cells are wide enough for token labels (tile_axes.js MIN_CELL)
    const short = 'The old man and the sea.';
    await page.fill('#sentence', short);
    await page.waitForFunction((t) => window.attentionPage.state.text === t, short);
    for (const [step, id, name] of [
      [7, 'heads', 'weights_head2'],
      [5, 'softmax', 'weights'],
    ]) {
      await page.$eval(`button[data-step="${step}"]`, (b) => b.click());
      await page.waitForFunction((want) => window.attentionPage.state.stepId === want, id);
      const { n, seen, dark } = await probeStep(page, name);
      assert.equal(n, await page.evaluate(() => window.attentionPage.state.n));
      for (const c of seen)
        assert.ok(
          [rgb(MASKED_FILL), rgb(MASKED_HATCH)].includes(c),
          `${name} at ${viewport.width} px: masked cell ${c}`,
        );
      assert.ok(dark > 30, `${name} at ${viewport.width} px: no token labels (${dark} dark pixels)`);
    }
    assert.deepEqual(errors(), []);
    await page.close();
  }
});
