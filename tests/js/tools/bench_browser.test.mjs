// The benchmark in headless Chromium, end to end, on one tiny case (matmul 64³): the command
// (`npm run bench -- --browser`) prints the report with a number for every library, and
// web/bench.html, served as `npm start` serves it, shows the table and the chart. Nothing here
// asserts a speed: only that every row ran and the report says where.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { after, before, test } from 'node:test';

import { ensurePeers } from '../../../scripts/bench/peers.mjs';
import { startServer } from '../../../scripts/serve.mjs';
import { launchBrowser, openPage } from '../../../scripts/lib/browser.mjs';

const ROOT = new URL('../../../', import.meta.url);
const NUMBER = String.raw`\d+(?:\.\d+)?`;

// The lines of the report's block for a case, by the label each row starts with.
function blockRows(text, caseLabel) {
  const lines = text.split('\n');
  const start = lines.findIndex((l) => l.startsWith(caseLabel));
  assert.ok(start >= 0, `no block for ${caseLabel} in:\n${text}`);
  const end = lines.findIndex((l, i) => i > start && l.trim() === '');
  return lines.slice(start + 3, end < 0 ? undefined : end).map((l) => l.trim());
}

// A row whose ms and GFLOP/s columns are numbers.
function assertMeasured(rows, label) {
  const row = rows.find((r) => r.startsWith(label));
  assert.ok(row, `no row "${label}" in:\n${rows.join('\n')}`);
  assert.match(row.slice(label.length), new RegExp(`^\\s+${NUMBER}\\s+${NUMBER}\\s+${NUMBER}%`), row);
}

const LIBRARIES = [
  'wasm-attention SIMD128, 1 thread',
  'wasm-attention relaxed SIMD, 1 thread', // Chromium runs relaxed SIMD
  'wasm-attention SIMD128, 2 threads',
  'tfjs-wasm 4.22, 1 thread',
  'tfjs-wasm 4.22, 2 threads',
  'onnxruntime-web 1.30, 1 thread',
  'onnxruntime-web 1.30, 2 threads',
];

let peers;
before(() => {
  peers = ensurePeers(() => {}); // what the bench would do first; installs once
});

test('npm run bench -- --browser --quick --cases=matmul-small prints a row with numbers for each library', (t) => {
  if (!peers.ok) return t.skip(`the peers could not be installed: ${peers.error}`);
  const r = spawnSync(process.execPath, ['scripts/bench.mjs', '--browser', '--quick', '--cases=matmul-small'], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 120_000,
  });
  assert.equal(r.status, 0, r.stderr);
  const out = r.stdout;
  assert.match(out, /^wasm-attention benchmark in Chromium \d+\.\d+\S* \(headless; V8\)/m);
  assert.match(out, /^machine: .+, \d+ logical cores; Chromium .*cross-origin isolated \(threads on\)/m);
  const rows = blockRows(out, 'matmul 64×64×64');
  for (const label of LIBRARIES) assertMeasured(rows, label);
  assert.ok(!/DIFF/.test(rows.join('\n')), `an output differs:\n${rows.join('\n')}`);
  assert.match(out, /^targets \(from this run, Chromium .* on .+\):/m);
});

let browser, server;
before(async () => {
  browser = await launchBrowser();
  server = await startServer({ port: 9491, quiet: true });
});
after(async () => {
  await browser?.close();
  await server?.close();
});

test('web/bench.html runs a tiny case and shows the table and the chart', async () => {
  const { page, errors } = await openPage(browser, `${server.url}bench.html?run=quick&cases=matmul-small`);
  await page.waitForFunction(() => window.benchResults !== undefined, null, { timeout: 30_000 });
  const results = await page.evaluate(() => window.benchResults.then((r) => ({ rows: r.rows, machine: r.machine })));
  assert.equal(results.machine.crossOriginIsolated, true);
  const ours = results.rows.filter((r) => r.impl.startsWith('ours-'));
  assert.deepEqual(ours.map((r) => r.impl).sort(), ['ours-1', 'ours-2', 'ours-relaxed-1']);
  for (const r of ours) assert.ok(r.status === 'ok' && r.ms > 0 && r.gflops > 0, JSON.stringify(r));

  const table = await page.textContent('#bench-table');
  const rows = blockRows(table, 'matmul 64×64×64');
  for (const label of LIBRARIES.slice(0, 3)) assertMeasured(rows, label);
  if (peers.ok) for (const label of LIBRARIES.slice(3)) assertMeasured(rows, label);
  assert.ok(await page.isVisible('#bench-results'));
  // one bar (a rect with a tooltip) per row that ran
  const ran = await page.evaluate(() =>
    window.benchResults.then((r) => r.rows.filter((x) => x.status === 'ok').length),
  );
  assert.equal(await page.locator('#bench-chart svg rect:has(title)').count(), ran);
  assert.match(await page.textContent('#bench-targets'), /^targets \(from this run, Chromium/);

  // the page with its results, audited as the tutorial is (page_a11y.test.mjs)
  await page.addScriptTag({
    content: readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8'),
  });
  const { violations } = await page.evaluate(() =>
    window.axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } }),
  );
  assert.deepEqual(
    violations.map((v) => `${v.id}: ${v.help}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`),
    [],
  );
  assert.deepEqual(errors(), []);
});
