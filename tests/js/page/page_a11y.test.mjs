// Accessibility audit of the tutorial page (web/index.html): axe-core's WCAG 2.0 and 2.1 A and
// AA rules, in headless Chromium at desktop width and at phone width (390 px), on the page as
// it loads and then, in the parts that change, on every step, forward and backward. Any violation fails, listed with the
// elements it was found on.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { after, before, test } from 'node:test';

import { openPage } from '../../../scripts/lib/browser.mjs';
import { closePageSuite, openPageSuite } from '../helpers/page_driver.mjs';

const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
const RULES = { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } };

let browser, server;
let suite;
before(async () => {
  suite = await openPageSuite({ port: 9481 });
  ({ browser, server } = suite);
});
after(() => closePageSuite(suite));

// axe's violations -> one line each: rule, impact, what it checks, and up to 5 elements.
const describe = (violations) =>
  violations.map(
    (v) =>
      `${v.id} (${v.impact}): ${v.help}: ${v.nodes
        .slice(0, 5)
        .map((n) => n.target.join(' '))
        .join(', ')}` + `${v.nodes.length > 5 ? ` and ${v.nodes.length - 5} more` : ''}`,
  );

// Audits the whole page, or only the parts a step changes (the step and the inspector).
async function audit(page, where, { whole = false } = {}) {
  const { violations } = await page.evaluate(
    ([rules, whole]) => window.axe.run(whole ? document : { include: [['#steps'], ['#inspector']] }, rules),
    [RULES, whole],
  );
  return describe(violations).map((line) => `${where}: ${line}`);
}

for (const [name, viewport] of [
  ['desktop', { width: 1280, height: 900 }],
  ['phone', { width: 390, height: 844 }],
]) {
  test(`${name} (${viewport.width} px): no WCAG 2.1 AA violation on any step`, async () => {
    const { page, errors } = await openPage(browser, server.url);
    await page.setViewportSize(viewport);
    await page.evaluate(() => window.attentionPage.ready);
    await page.addScriptTag({ content: AXE });
    const found = await audit(page, 'as loaded', { whole: true });
    const steps = await page.locator('button[data-step]').count();
    assert.ok(steps >= 11, `only ${steps} step buttons`);
    for (let i = 1; i < steps; ++i) {
      // A click through the DOM: on a phone the step list scrolls, and the pill may sit under it.
      const version = await page.evaluate(() => window.attentionPage.version);
      await page.$eval(`button[data-step="${i}"]`, (b) => b.click());
      await page.waitForFunction(
        ([v, step]) => window.attentionPage.version > v && window.attentionPage.state.step === step,
        [version, i],
      );
      found.push(...(await audit(page, `step ${i + 1}`)));
    }
    assert.deepEqual(found, []);
    assert.deepEqual(errors(), []);
    await page.close();
  });
}

// What the audit's scrollable-region rule stands for: on a phone, a heatmap wider than the
// screen is reached with Tab and scrolled with the arrow keys, which elsewhere change the step.
test('phone (390 px): a wide heatmap is reached by Tab and scrolled by the arrow keys', async () => {
  const { page, errors } = await openPage(browser, server.url);
  await page.setViewportSize({ width: 390, height: 844 });
  await page.evaluate(() => window.attentionPage.ready);
  const wide = 'figure.heatmap .hm-scroll';
  const overflowing = await page.$$eval(wide, (boxes) => boxes.map((b) => b.scrollWidth > b.clientWidth));
  assert.ok(overflowing.includes(true), 'no heatmap overflows at 390 px: nothing to scroll');
  // Tab from a button put just before the first overflowing box.
  await page.$$eval(wide, (boxes) => {
    const box = boxes.find((b) => b.scrollWidth > b.clientWidth);
    box.dataset.probe = 'wide';
    const before = document.createElement('button');
    before.id = 'probe-before';
    box.before(before);
    before.focus();
  });
  await page.keyboard.press('Tab');
  assert.equal(
    await page.evaluate(() => document.activeElement.dataset.probe),
    'wide',
    'Tab did not reach the heatmap',
  );
  assert.match(await page.evaluate(() => document.activeElement.getAttribute('aria-label')), /\d+ × \d+$/);
  const step = await page.evaluate(() => window.attentionPage.state.step);
  await page.keyboard.press('ArrowRight');
  await page.waitForFunction(() => document.activeElement.scrollLeft > 0, null, { timeout: 5000 }).catch(() => {});
  assert.equal(await page.evaluate(() => window.attentionPage.state.step), step, 'ArrowRight changed the step');
  assert.ok(await page.$eval('[data-probe="wide"]', (b) => b.scrollLeft > 0), 'ArrowRight did not scroll the heatmap');
  assert.deepEqual(errors(), []);
  await page.close();
});

// A long input's token matrices are an overview (a focusable group that moves the zoom) and a zoom.
for (const [name, viewport] of [
  ['desktop', { width: 1280, height: 900 }],
  ['phone', { width: 390, height: 844 }],
]) {
  test(`${name} (${viewport.width} px): a 150-token input's overview and zoom, no violation`, async () => {
    const { page, errors } = await openPage(browser, server.url);
    await page.setViewportSize(viewport);
    await page.evaluate(() => window.attentionPage.ready);
    await page.addScriptTag({ content: AXE });
    // words that are one token each, with and without a leading space: 150 words, 150 tokens
    const words = ['the', 'old', 'man', 'and', 'it', 'of', 'day', 'new', 'land', 'way'];
    const text = Array.from({ length: 150 }, (_, i) => words[i % words.length]).join(' ');
    let version = await page.evaluate(() => window.attentionPage.version);
    await page.fill('#sentence', text);
    await page.waitForFunction(
      (v) => window.attentionPage.version > v && window.attentionPage.state.n === 150,
      version,
    );
    const found = await audit(page, '150 tokens, step 1');
    for (const i of [2, 5, 7, 13, 16]) {
      version = await page.evaluate(() => window.attentionPage.version);
      await page.$eval(`button[data-step="${i}"]`, (b) => b.click());
      await page.waitForFunction(
        ([v, step]) => window.attentionPage.version > v && window.attentionPage.state.step === step,
        [version, i],
      );
      found.push(...(await audit(page, `150 tokens, step ${i + 1}`)));
    }
    assert.ok((await page.locator('.hm-overview').count()) > 0, 'no overview drawn');
    assert.deepEqual(found, []);
    assert.deepEqual(errors(), []);
    await page.close();
  });
}
