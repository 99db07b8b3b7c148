// The package under a strict Content-Security-Policy, the one a Manifest V3 extension's pages
// have: script-src 'self' 'wasm-unsafe-eval'; worker-src 'self'. The shipped JavaScript
// evaluates no string (ESLint's no-eval, no-new-func and no-implied-eval over every file), and
// in Chromium, Firefox and WebKitGTK (as shipped, and with SharedArrayBuffer on as in Safari) a
// page served with that policy and COOP/COEP computes attention with 2 threads where the engine
// runs threads (ENGINE_GETS), directly and in the worker form, with no violation of the
// policy; the same page checks that the policy does refuse an evaluated string and a blob:
// worker there. A page whose policy allows no worker at all gets one thread and the warning.
// Without a policy, the package served from another origin than the page's (a CDN) gets its
// threads from blob: workers.
// The page is tests/js/engines/csp_site/; the extension is tests/js/engines/extension.test.mjs.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, cpSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { Linter } from 'eslint';

import { ENGINES, launchBrowser, openPage, serveBlankPage } from '../../../scripts/lib/browser.mjs';
import { attentionRef } from '../../../scripts/lib/reference.mjs';
import { startServer } from '../../../scripts/serve.mjs';
import { describeEngines, WEBKIT_AS_SAFARI } from '../helpers/engines.mjs';
import { buildOf } from '../helpers/backend_build.mjs';

const lib = fileURLToPath(new URL('../../../web/lib/', import.meta.url));
const STRICT = "script-src 'self' 'wasm-unsafe-eval'; worker-src 'self'";
const NO_WORKERS = "script-src 'self' 'wasm-unsafe-eval'; worker-src 'none'";

// Every JavaScript file the package ships: web/lib/*.js, index.cjs, and the glue in web/lib/wasm/.
function shippedScripts() {
  const top = readdirSync(lib).filter((f) => /\.(js|cjs)$/.test(f));
  const wasm = readdirSync(join(lib, 'wasm')).filter((f) => /\.(js|mjs)$/.test(f));
  return [...top.map((f) => join(lib, f)), ...wasm.map((f) => join(lib, 'wasm', f))];
}

test('the shipped JavaScript evaluates no string (no eval, no Function constructor, no string timers)', () => {
  const files = shippedScripts();
  // the four builds' glue (.js, .mjs) and the threaded builds' pthread workers (.worker.js, .worker.mjs)
  assert.equal(files.filter((f) => f.includes('/wasm/')).length, 12, files.join('\n'));
  const linter = new Linter();
  const found = [];
  for (const file of files) {
    const config = {
      languageOptions: {
        ecmaVersion: 'latest',
        // ES modules: web/lib/*.js and the glue's .mjs; scripts: the classic glue and index.cjs
        sourceType: file.endsWith('.mjs') || (file.endsWith('.js') && !file.includes('/wasm/')) ? 'module' : 'script',
        globals: { setTimeout: 'readonly', setInterval: 'readonly', execScript: 'readonly', self: 'readonly' },
      },
      rules: { 'no-eval': 'error', 'no-new-func': 'error', 'no-implied-eval': 'error' },
    };
    for (const m of linter.verify(readFileSync(file, 'utf8'), config)) {
      found.push(`${file.slice(lib.length)}:${m.line}:${m.column} ${m.ruleId ?? 'parse'}: ${m.message}`);
    }
  }
  assert.deepEqual(found, []);
});

// A site of index.html and page.js (csp_site/) with lib -> web/lib, served with the policy.
let site;
const servers = {};
before(async () => {
  site = mkdtempSync(join(tmpdir(), 'wasm-attention-csp-'));
  cpSync(fileURLToPath(new URL('./csp_site', import.meta.url)), site, { recursive: true });
  symlinkSync(lib, join(site, 'lib'));
  const serve = (port, policy) =>
    startServer({ port, quiet: true, root: site, headers: { 'Content-Security-Policy': policy } });
  servers.strict = await serve(9381, STRICT);
  servers.noWorkers = await serve(9391, NO_WORKERS);
  // The package from another origin, as from a CDN (CORS and CORP let an isolated page load it),
  // and an isolated blank page that imports it.
  servers.cdn = await startServer({
    port: 9395,
    quiet: true,
    root: site,
    headers: { 'Access-Control-Allow-Origin': '*', 'Cross-Origin-Resource-Policy': 'cross-origin' },
  });
  servers.blank = await serveBlankPage({ port: 9397, isolation: true });
});
after(async () => {
  for (const s of Object.values(servers)) await s.close();
  rmSync(site, { recursive: true, force: true });
});

// Opens url and waits for its page.js to finish -> { found (its #result), errors, warnings }.
async function load(browser, url) {
  const { page, errors, warnings } = await openPage(browser, url);
  let title;
  for (const t0 = Date.now(); Date.now() - t0 < 120000; await new Promise((r) => setTimeout(r, 100))) {
    title = await page.evaluate(() => document.title);
    if (title === 'done' || title.startsWith('failed')) break;
  }
  assert.equal(title, 'done');
  const found = JSON.parse(await page.evaluate(() => document.getElementById('result').textContent));
  await page.close();
  return { found, errors: errors(), warnings: warnings() };
}

// The page's inputs (page.js): q, k, v (16,16), sin(i * 0.37 + phase) for phases 0, 1, 2.
const input = (phase) => ({
  data: Float32Array.from({ length: 256 }, (_, i) => Math.sin(i * 0.37 + phase)),
  shape: [16, 16],
});
const REFERENCE = attentionRef(input(0), input(1), input(2), { causal: true }).output;

function assertAttention(output, form) {
  assert.equal(output.length, REFERENCE.length, form);
  const worst = Math.max(...output.map((x, i) => Math.abs(x - REFERENCE[i])));
  assert.ok(worst < 1e-5, `${form}: largest difference from the float64 reference ${worst}`);
}

describeEngines(
  'a page under a strict Content-Security-Policy',
  ({ engine, launch, gets }) => {
    const threads = gets.threads ? 2 : 1;
    let browser;
    before(async () => {
      browser = await launchBrowser(engine, launch);
    });
    after(() => browser?.close());

    test('the policy refuses an evaluated string and a blob: worker there', async () => {
      const { found } = await load(browser, `${servers.strict.url}?controls`);
      assert.equal(found.isolated, true);
      assert.match(found.evaluated, /^refused/);
      assert.equal(found.blobWorker, 'refused');
    });

    test(`attention with ${threads === 1 ? '1 thread' : `${threads} threads`}, directly and in the worker form, and no violation`, async () => {
      const { found, errors } = await load(browser, servers.strict.url);
      assert.equal(found.isolated, true);
      for (const form of ['direct', 'worker']) {
        assert.deepEqual(buildOf(found[form].backend), { threads, isa: gets.isa }, form);
        assertAttention(found[form].output, form);
      }
      assert.deepEqual(found.worker.output, found.direct.output);
      assert.deepEqual(found.violations, []);
      assert.deepEqual(errors, []);
    });

    // No worker can start from another origin's script: there the pthread workers run the
    // glue's text from blob: URLs (web/lib/loader.js).
    test(`the package from another origin (a CDN) gets ${threads === 1 ? '1 thread' : `${threads} threads`} from blob: workers`, async () => {
      const { page, errors } = await openPage(browser, servers.blank.url);
      const found = await page.evaluate(async (lib) => {
        const { createAttention } = await import(`${lib}index.js`);
        const attn = await createAttention({ threads: 2 });
        const input = (phase) => ({
          data: Float32Array.from({ length: 256 }, (_, i) => Math.sin(i * 0.37 + phase)),
          shape: [16, 16],
        });
        const output = Array.from(attn.attention(input(0), input(1), input(2), { causal: true }).output.data);
        const { backend } = attn;
        attn.dispose();
        return { backend, output, page: location.origin, lib: new URL(lib).origin };
      }, `${servers.cdn.url}lib/`);
      assert.notEqual(found.lib, found.page);
      assert.deepEqual(buildOf(found.backend), { threads, isa: gets.isa });
      assertAttention(found.output, 'direct');
      assert.deepEqual(errors(), []);
      await page.close();
    });

    test(
      'a policy that allows no worker gets one thread and the warning',
      { skip: !gets.threads && 'this engine gets one thread anyway' },
      async () => {
        const { found, warnings } = await load(browser, `${servers.noWorkers.url}?direct`);
        assert.deepEqual(buildOf(found.direct.backend), { threads: 1, isa: gets.isa });
        assertAttention(found.direct.output, 'direct');
        assert.ok(
          warnings.some((w) => /running on one thread/.test(w)),
          `warnings: ${JSON.stringify(warnings)}`,
        );
      },
    );
  },
  [...ENGINES, WEBKIT_AS_SAFARI],
);
