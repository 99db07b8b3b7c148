// The tutorial page (web/index.html) once through in Firefox and WebKitGTK, beside Chromium as
// the reference (the page's own tests, page*.test.mjs, run in Chromium only): it loads on the
// build the engine gets (ENGINE_GETS), takes a typed sentence on the trained model, steps
// forward and backward through all eighteen steps, takes one SGD step, with no console error —
// and shows the same next-word predictions and losses as Chromium.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { startServer } from '../../../scripts/serve.mjs';
import { engineMissing, launchBrowser, openPage } from '../../../scripts/lib/browser.mjs';
import { describeEngines } from '../helpers/engines.mjs';
import { buildOf } from '../helpers/backend_build.mjs';
import { pageDriver } from '../helpers/page_driver.mjs';

const SENTENCE = 'The old dog slept by the door while the children played in the garden.';
const STEP_IDS = [
  ...['x', 'qkv', 'scores', 'scale', 'mask', 'softmax', 'weighted', 'heads', 'concat', 'wo', 'output'],
  ...['loss', 'dhead', 'dv', 'dA', 'dS', 'dqk', 'dw'],
];
const TOL = 1e-4; // relative: relaxed SIMD (Chromium, Firefox) and SIMD128 (WebKit) round apart

// (the driver's snapshots carry no steps' matrices: only the state is compared here)
const { snapshot, act } = pageDriver(0, 0);

let server;
before(async () => {
  server = await startServer({ port: 9701, isolation: true, quiet: true });
});
after(() => server?.close());

const seen = {}; // engine -> { predictions, loss, sgdLosses } at the end of its run
let chromiumDone; // resolved when Chromium's run has ended, however it ended
const chromiumRun = new Promise((resolve) => (chromiumDone = resolve));

describeEngines('the page once through', ({ engine, launch, gets }) => {
  let browser;
  before(async () => {
    browser = await launchBrowser(engine, launch);
  });
  after(() => browser?.close());

  test(`loads (${gets.isa}), takes a sentence, steps through, trains one step`, async () => {
    try {
      await runPage();
    } finally {
      if (engine === 'chromium') chromiumDone();
    }
  });

  async function runPage() {
    const { page, errors } = await openPage(browser, server.url);
    await page.waitForFunction(() => window.attentionPage !== undefined); // its modules run
    await page.evaluate(() => window.attentionPage.ready);
    let { state } = await snapshot(page);
    const cores = await page.evaluate(() => navigator.hardwareConcurrency);
    const threads = gets.threads ? Math.max(1, Math.min(16, cores)) : 1;
    assert.equal(state.isolated, true);
    assert.deepEqual(buildOf(state.backend), { threads, isa: gets.isa });
    assert.equal(state.projection, 'trained', 'the page opens on the trained model');

    ({ state } = await act(
      page,
      () => page.fill('#sentence', SENTENCE),
      new Function('s', `return s.text === ${JSON.stringify(SENTENCE)}`),
    ));
    // the model's tokens: pieces that spell the sentence, each a token id
    assert.equal(state.tokens.map((t) => t.text).join(''), SENTENCE);
    assert.ok(state.tokens.every((t) => Number.isInteger(t.id)));

    // Forward and backward with the Next button, then one SGD step at the last one (dw).
    for (let i = 1; i < STEP_IDS.length; ++i) {
      ({ state } = await act(page, () => page.click('#next'), new Function('s', `return s.step === ${i}`)));
      assert.equal(state.stepId, STEP_IDS[i]);
    }
    ({ state } = await act(
      page,
      () => page.click('#sgd-step'),
      (s) => s.sgdLosses.length === 2,
    ));
    // (on the trained model the page's default learning rate overshoots: the loss goes up)
    assert.ok(state.sgdLosses.every(Number.isFinite), `the SGD step's losses ${state.sgdLosses}`);
    assert.equal(state.predictions.length, 5);
    assert.deepEqual(errors(), []);
    await page.close();
    seen[engine] = { predictions: state.predictions, loss: state.loss, sgdLosses: state.sgdLosses };
  }

  if (engine !== 'chromium')
    test("shows Chromium's predictions and losses", { skip: engineMissing('chromium') ?? false }, async () => {
      await chromiumRun;
      const [got, want] = [seen[engine], seen.chromium];
      assert.ok(got && want, `the run above did not finish in ${got ? 'Chromium' : engine}`);
      const near = (a, b, what) =>
        assert.ok(Math.abs(a - b) <= TOL * Math.max(1, Math.abs(b)), `${what}: ${a} vs ${b}`);
      assert.deepEqual(
        got.predictions.map((p) => p.word),
        want.predictions.map((p) => p.word),
      );
      got.predictions.forEach((p, k) => near(p.p, want.predictions[k].p, `p(${p.word})`));
      near(got.loss, want.loss, 'loss');
      got.sgdLosses.forEach((l, k) => near(l, want.sgdLosses[k], `SGD loss ${k}`));
    });
});
