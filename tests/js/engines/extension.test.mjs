// The Manifest V3 extension of web/examples/extension/, built by its own build script
// (node build.mjs, with this repository's web/lib as its node_modules/wasm-attention) and
// loaded unpacked in Chromium (its new headless mode runs extensions): its page, cross-origin
// isolated by the manifest's keys under the policy extension pages have (script-src 'self'
// 'wasm-unsafe-eval'), computes the worked example with 2 threads on the page and in the
// worker form, and shows it with the build it ran on.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { chromium } from 'playwright-core';

import { CHROMIUM, engineMissing } from '../../../scripts/lib/browser.mjs';
import { attentionRef } from '../../../scripts/lib/reference.mjs';

const repo = fileURLToPath(new URL('../../..', import.meta.url));
const missing = engineMissing('chromium');

// The worked example the page computes (page.js): x (3,2) the queries and values, k (3,2) the keys.
const t = (data, shape) => ({ data: new Float32Array(data), shape });
const x = t([1, 0, 0, 1, 1, 1], [3, 2]);
const k = t([1, 1, 0, 1, 1, 2], [3, 2]);
const SHOWN = Array.from(attentionRef(x, k, x).output, (v) => v.toFixed(6));

let scratch, context;
before(async () => {
  if (missing) return;
  scratch = mkdtempSync(join(tmpdir(), 'wasm-attention-extension-'));
  const example = join(scratch, 'extension');
  cpSync(join(repo, 'web/examples/extension'), example, {
    recursive: true,
    filter: (path) => !/\/(dist|node_modules)$/.test(path),
  });
  mkdirSync(join(example, 'node_modules/wasm-attention/web'), { recursive: true });
  symlinkSync(join(repo, 'web/lib'), join(example, 'node_modules/wasm-attention/web/lib'));
  execFileSync(process.execPath, ['build.mjs'], { cwd: example, stdio: 'pipe' });
  const extension = join(example, 'dist');
  context = await chromium.launchPersistentContext(join(scratch, 'profile'), {
    executablePath: CHROMIUM,
    headless: true,
    // Playwright's defaults turn extensions off; --headless (the new headless mode) runs them.
    ignoreDefaultArgs: ['--disable-extensions'],
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      `--disable-extensions-except=${extension}`,
      `--load-extension=${extension}`,
    ],
  });
});
after(async () => {
  await context?.close();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

test('the manifest has the cross-origin isolation keys and the extension pages policy', () => {
  const manifest = JSON.parse(readFileSync(join(repo, 'web/examples/extension/manifest.json'), 'utf8'));
  assert.equal(manifest.manifest_version, 3);
  assert.deepEqual(manifest.cross_origin_embedder_policy, { value: 'require-corp' });
  assert.deepEqual(manifest.cross_origin_opener_policy, { value: 'same-origin' });
  assert.match(manifest.content_security_policy.extension_pages, /script-src 'self' 'wasm-unsafe-eval';/);
  assert.doesNotMatch(manifest.content_security_policy.extension_pages, /'unsafe-eval'|blob:/);
});

test(
  'the extension page computes attention with 2 threads, on the page and in a worker',
  { skip: missing ?? false },
  async () => {
    const worker = context.serviceWorkers()[0] ?? (await context.waitForEvent('serviceworker'));
    const id = new URL(worker.url()).host;
    const page = await context.newPage();
    const problems = [];
    page.on('pageerror', (e) => problems.push(`uncaught: ${e.message}`));
    page.on('console', (m) => m.type() === 'error' && problems.push(`console.error: ${m.text()}`));
    await page.goto(`chrome-extension://${id}/page.html`);
    await page.waitForFunction(() => document.getElementById('status').textContent !== 'running…', null, {
      timeout: 120000,
    });
    const shown = await page.evaluate(() =>
      Object.fromEntries(
        ['status', 'build', 'output', 'worker-build', 'worker-output'].map((id) => [
          id,
          document.getElementById(id).textContent,
        ]),
      ),
    );
    const rows = [0, 1, 2].map((i) => `${SHOWN[2 * i]} ${SHOWN[2 * i + 1]}`).join('\n');
    assert.deepEqual(shown, {
      status: 'done',
      build: 'relaxed-simd, 2 threads',
      output: rows,
      'worker-build': 'relaxed-simd, 2 threads',
      'worker-output': rows,
    });
    assert.equal(await page.evaluate(() => crossOriginIsolated), true);
    assert.deepEqual(problems, []);
  },
);
