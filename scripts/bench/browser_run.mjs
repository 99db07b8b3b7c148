// `npm run bench -- --browser[=chromium|firefox|webkit]`: the kernel and decode sections in a browser
// engine. Serves web/ as `npm start` does (cross-origin isolated, so the libraries get threads
// where the engine has them; the peers and the bench's modules under the paths
// scripts/serve.mjs lists), opens web/bench.html with ?run=..., which runs everything in the
// page (web/bench/run.js), the engine's own peak probe included, and takes its results back:
// the report is the Node run's, headed with the engine, with the CPU model (which a page
// cannot see) added from here. The browsers are Debian's, launched by scripts/lib/browser.mjs
// (Chromium through playwright-core, Firefox ESR through puppeteer-core, WebKitGTK's
// MiniBrowser through WebKitWebDriver); never a download.
import { execFileSync } from 'node:child_process';

import { launchBrowser } from '../lib/browser.mjs';
import { startServer } from '../serve.mjs';
import { ensureBrowserBundles } from './browser_bundles.mjs';
import { machineInfo } from './machine.mjs';
import { peerNotes } from './notes.mjs';
import { peakRecord } from './peak_probe.mjs';
import { ensurePeers, installedVersion, PEER_VERSIONS } from './peers.mjs';
import { checkTargets } from './targets.mjs';

// The engine's name and version, for the report's heading.
async function engineLabel(engine, browser) {
  if (engine === 'chromium') return `Chromium ${browser.version()} (headless; V8)`;
  if (engine === 'firefox')
    return `Firefox ${(await browser.puppeteer.version()).replace(/^firefox\//, '')} (headless; SpiderMonkey)`;
  let version = '';
  try {
    version = ` ${execFileSync('dpkg-query', ['-W', '-f=${Version}', 'libwebkit2gtk-4.1-0'], { encoding: 'utf8' }).replace(/-.*/, '')}`;
  } catch {
    // not a Debian system: the name alone
  }
  return `WebKitGTK${version} MiniBrowser (JavaScriptCore)`;
}

// The page's results once its run ends: polled, so that no single driver call has to last as
// long as a run (puppeteer's calls time out after 3 minutes, WebDriver's after its script
// timeout).
async function resultsOf(page) {
  await page.evaluate(() => {
    window.benchResults.then(
      (r) => (window.benchDone = { results: r }),
      (e) => (window.benchDone = { error: String(e?.stack ?? e) }),
    );
  });
  for (;;) {
    const done = await page.evaluate(() => window.benchDone ?? null);
    if (done?.error) throw new Error(`the page's run failed: ${done.error}`);
    if (done) return done.results;
    await new Promise((resolve) => setTimeout(resolve, 2000));
  }
}

export async function runInBrowser({ options, caseIds, log }) {
  const engine = options.browser === true ? 'chromium' : options.browser;
  const peers = ensurePeers(log);
  const bundles = await ensureBrowserBundles(log);
  if (bundles.skipped.length) log(`not bundled: ${bundles.skipped.join(', ')}`);
  const node = machineInfo();
  const server = await startServer({ port: 9470, quiet: true });
  // WebKitGTK as Safari runs it: as shipped, its JavaScriptCore has no SharedArrayBuffer, so no
  // library would run a second thread (tests/js/helpers/engines.mjs, WEBKIT_AS_SAFARI)
  const browser = await launchBrowser(engine, engine === 'webkit' ? { env: { JSC_useSharedArrayBuffer: 'true' } } : {});
  try {
    const page = await browser.newPage();
    if (page.on) {
      // Chromium and Firefox: the page's errors and progress as it runs (WebKit's driver has
      // neither events nor exposed functions: its run is silent until it ends)
      page.on('console', (m) => {
        if (m.type() === 'error') log(`page console.error: ${m.text()}`);
      });
      page.on('pageerror', (e) => log(`page error: ${e.message}`));
      await page.exposeFunction('benchLog', (text) => log(`[${engine}] ${text}`));
    }
    const query = new URLSearchParams({ run: options.quick ? 'quick' : 'full', cases: caseIds.join(',') });
    await page.goto(`${server.url}bench.html?${query}`);
    await page.waitForFunction(() => window.benchResults !== undefined, null, { timeout: 60_000 });
    const results = await resultsOf(page);
    results.startedAt ??= new Date().toISOString();
    results.options = { ...options, ...results.options, browser: engine };
    results.machine = {
      ...results.machine,
      browser: await engineLabel(engine, browser),
      cpuModel: node.cpuModel,
      cpuMHz: node.cpuMHz,
      memoryGB: node.memoryGB,
      platform: node.platform,
      node: node.node,
      loadAverage: node.loadAverage,
    };
    results.peak = peakRecord(results.peak); // its forThreads() did not survive the trip
    for (const name of Object.keys(PEER_VERSIONS)) results.peers[name] = installedVersion(name);
    if (!peers.ok) results.notes.unshift(`the peers could not be installed (${peers.error}): their rows are n/a`);
    if (engine === 'webkit')
      results.notes.unshift(
        'WebKitGTK ran with JSC_useSharedArrayBuffer=true, as Safari runs (as shipped it has no SharedArrayBuffer: no library would run a second thread)',
      );
    if (node.loadAverage[0] > 0.25 * node.cores)
      results.notes.unshift(
        `the machine was busy when the run started (1-minute load average ${node.loadAverage[0]} on ${node.cores} cores): the figures are noisy`,
      );
    // the notes and targets again, now that the machine is named
    const kept = results.notes.filter((n) => !peerNotes(results).includes(n));
    results.notes = [...kept, ...peerNotes(results)];
    results.targets = checkTargets(results);
    return results;
  } finally {
    await browser.close();
    await server.close();
  }
}
