// `npm run bench -- --browser`: the kernel sections in headless Chromium. Serves web/ as
// `npm start` does (cross-origin isolated, so all three libraries get threads; the peers and
// the bench's modules under the paths scripts/serve.mjs lists), opens web/bench.html with
// ?run=..., which runs everything in the page (web/bench/run.js), and takes its results back:
// the report is the Node run's, with the CPU model (which a page cannot see) added from here.
// Debian's /usr/bin/chromium (or CHROMIUM_PATH) through playwright-core; never a download.
import { launchBrowser } from '../../tests/js/browser.mjs';
import { startServer } from '../serve.mjs';
import { ensureBrowserBundles } from './browser_bundles.mjs';
import { machineInfo } from './machine.mjs';
import { peerNotes } from './notes.mjs';
import { peakRecord } from './peak_probe.mjs';
import { ensurePeers, installedVersion, PEER_VERSIONS } from './peers.mjs';
import { checkTargets } from './targets.mjs';

export async function runInBrowser({ options, caseIds, log }) {
  const peers = ensurePeers(log);
  const bundles = await ensureBrowserBundles(log);
  if (bundles.skipped.length) log(`not bundled: ${bundles.skipped.join(', ')}`);
  const node = machineInfo();
  const server = await startServer({ port: 9470, quiet: true });
  const browser = await launchBrowser();
  try {
    const page = await browser.newPage();
    page.on('console', (m) => {
      if (m.type() === 'error') log(`page console.error: ${m.text()}`);
    });
    page.on('pageerror', (e) => log(`page error: ${e.message}`));
    await page.exposeFunction('benchLog', (text) => log(`[chromium] ${text}`));
    const query = new URLSearchParams({ run: options.quick ? 'quick' : 'full', cases: caseIds.join(',') });
    await page.goto(`${server.url}bench.html?${query}`);
    await page.waitForFunction(() => window.benchResults !== undefined, null, { timeout: 60_000 });
    const results = await page.evaluate(() => window.benchResults);
    results.startedAt ??= new Date().toISOString();
    results.options = { ...options, ...results.options };
    results.machine = {
      ...results.machine,
      browser: `Chromium ${browser.version()} (headless)`,
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
