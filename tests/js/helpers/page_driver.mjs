// Drives the tutorial page through its debug hook window.attentionPage (web/page/debug_hook.js):
// snapshots of its state and of the matrices it draws, and actions that wait for the render
// they cause. The matrices are large, so a driver carries only steps [from, to) in snapshots.
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
