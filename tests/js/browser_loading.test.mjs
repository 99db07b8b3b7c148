// The package in a real browser: headless Chromium loads it from the dev server with and
// without cross-origin isolation, picks the threaded build only where it may, and computes
// the same numbers either way.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { startServer } from '../../scripts/serve.mjs';
import { launchBrowser, openPage } from './browser.mjs';

let browser;
const servers = {};

before(async () => {
  browser = await launchBrowser();
  servers.isolated = await startServer({ port: 9301, isolation: true, quiet: true });
  servers.plain = await startServer({ port: 9321, isolation: false, quiet: true });
});
after(async () => {
  await browser?.close();
  for (const s of Object.values(servers)) await s.close();
});

// In the page: load the package, ask for 2 threads, run the seed's worked example
// (X = [1 0; 0 1; 1 1], W_K = [1 1; 0 1], identity W_Q, W_V, W_O) and a larger attention.
async function runInPage(page) {
  return page.evaluate(async () => {
    const { createAttention } = await import('/lib/index.js');
    const attn = await createAttention({ threads: 2 });
    const t = (data, shape) => ({ data: new Float32Array(data), shape });
    const eye = t([1, 0, 0, 1], [2, 2]);
    const mha = attn.multiHeadAttention({
      dModel: 2,
      heads: 1,
      weights: { wq: eye, wk: t([1, 1, 0, 1], [2, 2]), wv: eye, wo: eye },
    });
    const worked = mha.forward(t([1, 0, 0, 1, 1, 1], [3, 2]), { trace: true });
    const n = 200,
      d = 32;
    const big = t(
      Array.from({ length: n * d }, (_, i) => Math.sin(i * 0.37)),
      [n, d],
    );
    const bigOut = attn.attention(big, big, big, { causal: true }).output.data;
    return {
      isolated: globalThis.crossOriginIsolated,
      backend: attn.backend,
      output: Array.from(worked.output.data),
      scores: Array.from(worked.heads[0].scores.data),
      bigSum: bigOut.reduce((a, b) => a + b, 0),
    };
  });
}

// worked by hand in tests/cpp/worked_example_test.cpp
const WORKED_OUTPUT = [0.80222419, 0.59888791, 0.75174492, 0.75174492, 0.85997076, 0.71600459];

const results = {};

test('cross-origin isolated page gets the threaded build', async () => {
  const { page, errors } = await openPage(browser, servers.isolated.url);
  results.isolated = await runInPage(page);
  assert.equal(results.isolated.isolated, true);
  assert.equal(results.isolated.backend.variant, 'simd-mt');
  assert.equal(results.isolated.backend.threads, 2);
  assert.deepEqual(errors(), []);
  await page.close();
});

test('a plain static page falls back to one thread without error', async () => {
  const { page, errors } = await openPage(browser, servers.plain.url);
  results.plain = await runInPage(page);
  assert.equal(results.plain.isolated, false);
  assert.equal(results.plain.backend.variant, 'simd');
  assert.equal(results.plain.backend.threads, 1);
  assert.deepEqual(errors(), []);
  await page.close();
});

test('both builds compute the worked example and agree bitwise', () => {
  for (const r of [results.isolated, results.plain]) {
    assert.deepEqual(r.scores, [1, 0, 1, 1, 1, 2, 2, 1, 3]);
    r.output.forEach((x, i) =>
      assert.ok(Math.abs(x - WORKED_OUTPUT[i]) < 1e-6, `output[${i}] = ${x}, expected ${WORKED_OUTPUT[i]}`),
    );
  }
  assert.equal(results.isolated.bigSum, results.plain.bigSum);
});

// The pthread worker's script swapped, through locateFile, for one that throws at once.
test("an isolated page whose threads' workers fail to start gets one thread, with no uncaught error", async () => {
  const { page, errors } = await openPage(browser, servers.isolated.url);
  const warnings = [];
  page.on('console', (m) => m.type() === 'warning' && warnings.push(m.text()));
  const backend = await page.evaluate(async () => {
    const { createAttention } = await import('/lib/index.js');
    const broken = URL.createObjectURL(new Blob(["throw new Error('this worker cannot start')"]));
    const locateFile = (name) => (name.endsWith('.worker.js') ? broken : `/lib/wasm/${name}`);
    const attn = await createAttention({ threads: 2, locateFile });
    await new Promise((resolve) => setTimeout(resolve, 200)); // any late error from the worker
    return attn.backend;
  });
  assert.equal(backend.threads, 1);
  assert.equal(backend.variant, 'simd');
  assert.deepEqual(errors(), []);
  assert.ok(
    warnings.some((w) => /running on one thread/.test(w)),
    `warnings: ${JSON.stringify(warnings)}`,
  );
  await page.close();
});
