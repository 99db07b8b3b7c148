// The package in real web apps. Each example under web/examples/ is copied to
// build/examples/<name>, gets the packed tarball installed, is built by its own `npm run build`
// (the real bundler, at the version the example pins, which the root package.json pins too and
// npm ci installed), and is loaded in headless Chromium from a static server with and without
// cross-origin isolation. It must show the worked example's output and the build it ran on:
// simd-mt (2 threads) when isolated, simd (1 thread) otherwise.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { cpSync, existsSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { startServer } from '../../scripts/serve.mjs';
import { launchBrowser, openPage } from './browser.mjs';
import { attentionRef } from './reference.mjs';

const repo = fileURLToPath(new URL('../..', import.meta.url));
const rootPackage = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8'));
const tarball = `wasm-attention-${rootPackage.version}.tgz`;
const scratch = join(repo, 'build/examples');

// name -> the folder of the built app that a static server serves (relative to the example),
// and whether that app may still read node_modules/ at run time (only the unbundled one may:
// the bundlers' output must hold everything, so their node_modules/ is removed once built).
// optional: its bundler is not among the root devDependencies, and its tests run only where
// it was installed by hand at the example's versions (Rollup: the npm registry this project's
// machines reach lacks Rollup's other platform binaries, so no lock file npm ci accepts can
// name it).
const EXAMPLES = {
  vite: { serve: 'dist', bundled: true },
  webpack: { serve: '.', bundled: true },
  rollup: { serve: '.', bundled: true, optional: true },
  esbuild: { serve: '.', bundled: true },
  plain: { serve: '.', bundled: false },
};

// The example's devDependencies -> null when each is installed in the repository at the pinned
// version, else why not.
function missingBundler(name) {
  const pkg = JSON.parse(readFileSync(join(repo, 'web/examples', name, 'package.json'), 'utf8'));
  for (const [dep, version] of Object.entries(pkg.devDependencies ?? {})) {
    const installed = join(repo, 'node_modules', dep, 'package.json');
    if (!existsSync(installed) || JSON.parse(readFileSync(installed, 'utf8')).version !== version) {
      const all = Object.entries(pkg.devDependencies)
        .map(([d, v]) => `${d}@${v}`)
        .join(' ');
      return `${dep}@${version} is not installed (npm install --no-save ${all} runs this test)`;
    }
  }
  return null;
}

// The worked example every app computes: x (3,2) is the queries and values, k (3,2) the keys;
// the float64 reference, and the output worked by hand in tests/cpp/worked_example_test.cpp.
const t = (data, shape) => ({ data: new Float32Array(data), shape });
const x = t([1, 0, 0, 1, 1, 1], [3, 2]);
const k = t([1, 1, 0, 1, 1, 2], [3, 2]);
const REFERENCE = Array.from(attentionRef(x, k, x).output);
const BY_HAND = [0.80222419, 0.59888791, 0.75174492, 0.75174492, 0.85997076, 0.71600459];

const run = promisify(execFile);
async function sh(cmd, args, cwd) {
  try {
    return (await run(cmd, args, { cwd, encoding: 'utf8', maxBuffer: 16 << 20 })).stdout;
  } catch (e) {
    throw new Error(`${cmd} ${args.join(' ')} failed in ${cwd}:\n${e.stdout}\n${e.stderr}`, { cause: e });
  }
}

let browser;
before(async () => {
  rmSync(scratch, { recursive: true, force: true });
  // Packed once into build/; each example's copy names it by its absolute path.
  // --ignore-scripts: the tests run after the build; packing must not rebuild.
  await sh('npm', ['pack', '--ignore-scripts', '--pack-destination', join(repo, 'build')], repo);
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
});

// Copies the example, installs the tarball (offline: it has no dependencies) and builds it with
// the example's own build script. The copy's package.json leaves out the bundler, which npm run
// finds in the repository's node_modules/.bin (npm puts every parent's on PATH) -> the copy's folder.
const builds = {};
function build(name) {
  builds[name] ??= (async () => {
    const from = join(repo, 'web/examples', name);
    const dir = join(scratch, name);
    cpSync(from, dir, { recursive: true, filter: (f) => !/[/\\](node_modules|dist)$/.test(f) });
    const pkg = JSON.parse(readFileSync(join(from, 'package.json'), 'utf8'));
    delete pkg.devDependencies;
    pkg.dependencies['wasm-attention'] = `file:${join(repo, 'build', tarball)}`;
    writeFileSync(join(dir, 'package.json'), JSON.stringify(pkg, null, 2));
    await sh('npm', ['install', '--offline', '--no-audit', '--no-fund', '--no-package-lock'], dir);
    if (pkg.scripts?.build) await sh('npm', ['run', 'build'], dir);
    return dir;
  })();
  return builds[name];
}

// Loads url, waits for the app's status line and reads what it shows.
async function load(url) {
  const { page, errors } = await openPage(browser, url);
  try {
    await page.waitForFunction(() => document.getElementById('status').textContent !== 'running…', null, {
      timeout: 60_000,
    });
    const shown = await page.evaluate(() => ({
      status: document.getElementById('status').textContent,
      variant: document.getElementById('variant').textContent,
      output: document.getElementById('output').textContent.split(/\s+/).filter(Boolean).map(Number),
      isolated: globalThis.crossOriginIsolated,
    }));
    return { ...shown, errors: errors() };
  } finally {
    await page.close();
  }
}

function checkShown(shown, isolated) {
  assert.deepEqual(shown.errors, []);
  assert.equal(shown.status, 'done');
  assert.equal(shown.isolated, isolated);
  assert.equal(shown.variant, isolated ? 'simd-mt, 2 threads' : 'simd, 1 thread');
  assert.equal(shown.output.length, 6);
  shown.output.forEach((v, i) => {
    // the page shows 6 decimals: off by at most 5e-7 from the float32 result
    assert.ok(Math.abs(v - REFERENCE[i]) < 1e-6, `output[${i}] = ${v}, float64 reference ${REFERENCE[i]}`);
    assert.ok(Math.abs(v - BY_HAND[i]) < 1e-6, `output[${i}] = ${v}, by hand ${BY_HAND[i]}`);
  });
}

test('every example folder is tested, and pins the bundler versions the repository installs', () => {
  assert.deepEqual(
    readdirSync(join(repo, 'web/examples'), { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => d.name)
      .sort(),
    Object.keys(EXAMPLES).sort(),
  );
  for (const name of Object.keys(EXAMPLES)) {
    const pkg = JSON.parse(readFileSync(join(repo, 'web/examples', name, 'package.json'), 'utf8'));
    assert.equal(pkg.dependencies['wasm-attention'], `file:../../../${tarball}`, `${name}: the tarball npm pack makes`);
    for (const [dep, version] of Object.entries(pkg.devDependencies ?? {})) {
      if (EXAMPLES[name].optional)
        assert.equal(rootPackage.devDependencies[dep], undefined, `${name} is optional but the root installs ${dep}`);
      else
        assert.equal(
          rootPackage.devDependencies[dep],
          version,
          `${name} pins ${dep}@${version}; the root package.json must pin the same`,
        );
    }
  }
});

// Vite's dev server serves the package through its dependency pre-bundling, a path the
// build does not take; the example's vite.config.js sends the isolation headers.
test('vite: the dev server runs simd-mt', async () => {
  const dir = await build('vite');
  const vite = spawn(process.execPath, [join(repo, 'node_modules/vite/bin/vite.js'), '--port', '0', '--strictPort'], {
    cwd: dir,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  try {
    const url = await new Promise((resolve, reject) => {
      let out = '';
      vite.stdout.on('data', (d) => {
        out += d;
        // eslint-disable-next-line no-control-regex -- ESC starts the terminal colour codes Vite prints
        const m = /Local:\s+(http:\/\/\S+)/.exec(out.replace(/\x1b\[[0-9;]*m/g, ''));
        if (m) resolve(m[1]);
      });
      vite.on('exit', (code) => reject(new Error(`vite exited with ${code}: ${out}`)));
    });
    checkShown(await load(url), true);
  } finally {
    vite.kill();
  }
});

for (const [name, { serve, bundled, optional }] of Object.entries(EXAMPLES)) {
  const skip = optional ? (missingBundler(name) ?? false) : false;
  for (const isolated of [true, false]) {
    test(
      `${name}: built app on a ${isolated ? 'cross-origin isolated page runs simd-mt' : 'plain page runs simd'}`,
      { skip },
      async () => {
        const dir = await build(name);
        if (bundled) rmSync(join(dir, 'node_modules'), { recursive: true, force: true });
        assert.ok(existsSync(join(dir, serve, 'index.html')), `${name}: no index.html in ${serve}`);
        const server = await startServer({ root: join(dir, serve), isolation: isolated, port: 9500, quiet: true });
        try {
          checkShown(await load(server.url), isolated);
        } finally {
          await server.close();
        }
      },
    );
  }
}

// Without a bundler's help: locateFile places the scripts and wasmBinary hands over the bytes
// (locateFile names a missing .wasm, so only the bytes can have been used).
test('plain: locateFile and wasmBinary place every file a threaded page loads', async () => {
  const dir = await build('plain');
  const server = await startServer({ root: dir, isolation: true, port: 9500, quiet: true });
  const { page, errors } = await openPage(browser, server.url);
  try {
    const shown = await page.evaluate(async () => {
      const { createAttention } = await import('wasm-attention');
      const folder = new URL('node_modules/wasm-attention/web/lib/wasm/', location.href);
      const wasmBinary = await (await fetch(new URL('wasm_attention_mt.wasm', folder))).arrayBuffer();
      const asked = [];
      const locateFile = (name) => {
        asked.push(name);
        return name.endsWith('.wasm') ? new URL('missing.wasm', location.href).href : new URL(name, folder).href;
      };
      const attn = await createAttention({ threads: 2, locateFile, wasmBinary });
      const t = (data, shape) => ({ data: new Float32Array(data), shape });
      const x = t([1, 0, 0, 1, 1, 1], [3, 2]);
      const { output } = attn.attention(x, t([1, 1, 0, 1, 1, 2], [3, 2]), x);
      const { variant } = attn.backend;
      attn.dispose();
      return { asked: [...new Set(asked)].sort(), variant, output: Array.from(output.data) };
    });
    assert.deepEqual(shown.asked, ['wasm_attention_mt.js', 'wasm_attention_mt.wasm', 'wasm_attention_mt.worker.js']);
    assert.equal(shown.variant, 'simd-mt');
    shown.output.forEach((v, i) =>
      assert.ok(Math.abs(v - REFERENCE[i]) < 1e-6, `output[${i}] = ${v}, float64 reference ${REFERENCE[i]}`),
    );
    assert.deepEqual(errors(), []);
  } finally {
    await page.close();
    await server.close();
  }
});

// locateFile may answer with URLs relative to the page: the pthread workers and the worker
// form resolve them elsewhere (their own script's URL), so the package makes them absolute.
test('plain: relative locateFile answers serve the threaded build and the worker form', async () => {
  const dir = await build('plain');
  const server = await startServer({ root: dir, isolation: true, port: 9500, quiet: true });
  const { page, errors } = await openPage(browser, server.url);
  try {
    const shown = await page.evaluate(async () => {
      const { createAttention } = await import('wasm-attention');
      const locateFile = (name) => `node_modules/wasm-attention/web/lib/wasm/${name}`;
      const t = (data, shape) => ({ data: new Float32Array(data), shape });
      const x = t([1, 0, 0, 1, 1, 1], [3, 2]);
      const results = [];
      for (const worker of [false, true]) {
        const attn = await createAttention({ threads: 2, locateFile, worker });
        const { output } = await attn.attention(x, t([1, 1, 0, 1, 1, 2], [3, 2]), x);
        results.push({ worker, variant: attn.backend.variant, output: Array.from(output.data) });
        await attn.dispose();
      }
      return results;
    });
    for (const r of shown) {
      assert.equal(r.variant, 'simd-mt', `worker: ${r.worker}`);
      r.output.forEach((v, i) =>
        assert.ok(Math.abs(v - REFERENCE[i]) < 1e-6, `worker ${r.worker}: output[${i}] = ${v}`),
      );
    }
    assert.deepEqual(errors(), []);
  } finally {
    await page.close();
    await server.close();
  }
});

// A worker script that does not load (missing here; elsewhere a wrong path or a blocked
// request): createAttention falls back to one thread, with a warning that says why, where the
// factory alone would wait forever.
test('plain: a worker script that does not load gives one thread and a warning', async () => {
  const dir = await build('plain');
  const server = await startServer({ root: dir, isolation: true, port: 9500, quiet: true });
  const page = await browser.newPage();
  const warnings = [];
  page.on('console', (m) => m.type() === 'warning' && warnings.push(m.text()));
  try {
    await page.goto(server.url);
    const outcome = await page.evaluate(async () => {
      const { createAttention } = await import('wasm-attention');
      const folder = new URL('node_modules/wasm-attention/web/lib/wasm/', location.href);
      const locateFile = (name) => new URL(name.endsWith('.worker.js') ? 'missing.worker.js' : name, folder).href;
      const timeout = new Promise((resolve) => setTimeout(resolve, 20_000, 'still pending after 20 s'));
      return Promise.race([
        createAttention({ threads: 2, locateFile }).then(
          (attn) => attn.backend,
          (e) => e.message,
        ),
        timeout,
      ]);
    });
    assert.equal(outcome.threads, 1, JSON.stringify(outcome));
    assert.equal(outcome.variant, 'simd');
    assert.ok(
      warnings.some((w) =>
        /running on one thread: wasm-attention: a thread's worker failed to start \(.*\): wasm_attention_(relaxed_)?mt\.worker\.js and wasm_attention_(relaxed_)?mt\.js must be served/.test(
          w,
        ),
      ),
      `warnings: ${JSON.stringify(warnings)}`,
    );
  } finally {
    await page.close();
    await server.close();
  }
});
