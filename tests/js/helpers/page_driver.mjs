// The page suites' setup, and a driver of the tutorial page.
//
//   openPageSuite({ port, isolation = true, plainPort, attention, model })
//     -> { browser, server, plain, attn, model }, for a suite's before(): headless Chromium,
//     the dev server (scripts/serve.mjs) on port, cross-origin isolated unless isolation is false,
//     and with plainPort a second one without isolation (plain); with attention the package in
//     Node on one thread, with model the shipped model, its tokenizer and embeddings
//     (helpers/shipped_model.mjs). tests/artifacts/page/ (ARTIFACTS), where the suites write
//     their screenshots, exists afterwards.
//   closePageSuite(suite)   for its after(): closes and disposes what openPageSuite opened
//   pageDriver(from, to)    drives the page through its debug hook window.attentionPage
//     (web/page/debug_hook.js): snapshots of its state and of the matrices it draws, and
//     actions that wait for the render they cause. The matrices are large, so a driver carries
//     only steps [from, to) in snapshots.
import fs from 'node:fs';

import { launchBrowser } from '../../../scripts/lib/browser.mjs';
import { startServer } from '../../../scripts/serve.mjs';
import { createAttention } from '../../../web/lib/index.js';
import { loadShippedModel } from './shipped_model.mjs';

export const ARTIFACTS = new URL('../../artifacts/page/', import.meta.url);

export async function openPageSuite({ port, isolation = true, plainPort, attention, model }) {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  const suite = {};
  try {
    suite.browser = await launchBrowser();
    suite.server = await startServer({ port, isolation, quiet: true });
    if (plainPort) suite.plain = await startServer({ port: plainPort, isolation: false, quiet: true });
    if (attention) suite.attn = await createAttention({ threads: 1 });
    if (model) suite.model = loadShippedModel();
    return suite;
  } catch (error) {
    await closePageSuite(suite);
    throw error;
  }
}

export async function closePageSuite(suite) {
  await suite?.browser?.close();
  await suite?.server?.close();
  await suite?.plain?.close();
  suite?.attn?.dispose();
}

export function pageDriver(from, to = null) {
  const snapshot = (page) =>
    page.evaluate(
      ([a, b]) => ({
        state: window.attentionPage.state,
        // (the hook copies every step's matrices: none at all when none are asked for)
        steps: b !== null && b <= a ? [] : window.attentionPage.steps.slice(a, b ?? undefined),
      }),
      [from, to],
    );
  const version = (page) => page.evaluate(() => window.attentionPage.version);
  const matrix = (steps, id, name) => steps.find((s) => s.id === id).matrices.find((m) => m.name === name);

  // Runs action() and waits until the page has rendered again and check(state) holds.
  async function act(page, action, check = () => true) {
    const v0 = await version(page);
    await action();
    await page.waitForFunction(
      ([v, src]) =>
        window.attentionPage.version > v && new Function('s', `return (${src})(s)`)(window.attentionPage.state),
      [v0, check.toString()],
    );
    return snapshot(page);
  }

  async function goToStep(page, i) {
    const { state } = await snapshot(page);
    if (state.step !== i)
      await act(page, () => page.click(`button[data-step="${i}"]`), new Function('s', `return s.step === ${i}`));
  }

  // The page opens on the trained model; tests of the mechanics choose Identity weights (which
  // give back the untrained settings: no mask, no positions, 4 heads).
  const useIdentity = (page) =>
    act(
      page,
      () => page.check('input[name="projection"][value="identity"]'),
      (s) => s.projection === 'identity',
    );

  return { snapshot, version, matrix, act, goToStep, useIdentity };
}
