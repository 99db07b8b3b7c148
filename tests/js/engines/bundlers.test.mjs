// The package in real web apps. Each build below copies an example under web/examples/ to
// build/examples/<build>, installs the packed tarball in it, builds it with its own
// `npm run build` (the real bundler, at the version the example pins, which the root
// package.json installs too), and loads it in each browser engine from a static server with
// and without cross-origin isolation. The app computes the worked example on the page and in
// a worker (createAttention({ worker: true })); both must show the right output and the build
// they ran on: the engine's instruction set, and 2 threads (the threaded build) when isolated,
// 1 thread otherwise. Vite's apps are also served by `vite preview` and the dev server.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { startServer } from '../../../scripts/serve.mjs';
import { engineMissing, launchBrowser, openPage } from '../../../scripts/lib/browser.mjs';
import { attentionRef } from '../../../scripts/lib/reference.mjs';

const repo = fileURLToPath(new URL('../../..', import.meta.url));
const rootPackage = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8'));
const tarball = `wasm-attention-${rootPackage.version}.tgz`;
const scratch = join(repo, 'build/examples');

// build -> example: its folder under web/examples/; serve: the folder of the built app that a
// static server serves (relative to the copy); bundled: the bundler's output must hold
// everything, so the copy's node_modules/ is removed once built (only the unbundled app may
// read it at run time); tools: the example's devDependency -> the root devDependency that runs
// it instead (npm aliases: one Vite example built by four Vite majors installed side by side);
// vite: served by `vite preview` and the dev server too.
const BUILDS = {
  vite5: { example: 'vite', serve: 'dist', bundled: true, tools: { vite: 'vite5' }, vite: true },
  vite6: { example: 'vite', serve: 'dist', bundled: true, tools: { vite: 'vite6' }, vite: true },
  vite7: { example: 'vite', serve: 'dist', bundled: true, tools: { vite: 'vite7' }, vite: true },
  vite8: { example: 'vite', serve: 'dist', bundled: true, vite: true },
  webpack: { example: 'webpack', serve: '.', bundled: true },
  rollup: { example: 'rollup', serve: '.', bundled: true },
  esbuild: { example: 'esbuild', serve: '.', bundled: true },
  parcel: { example: 'parcel', serve: 'dist', bundled: true },
  plain: { example: 'plain', serve: '.', bundled: false },
};

// The browser engines every app is loaded in, and the instruction set each runs: both have
// relaxed SIMD (Chromium since 114, Firefox since 145).
const ENGINES = { chromium: 'relaxed-simd', firefox: 'relaxed-simd' };

const readJson = (path) => JSON.parse(readFileSync(path, 'utf8'));
const examplePackage = (name) => readJson(join(repo, 'web/examples', name, 'package.json'));
// The root's installed package that runs dep for build.
const toolPackage = (build, dep) => join(repo, 'node_modules', BUILDS[build].tools?.[dep] ?? dep);

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

// engine -> its browser, launched on first use
const browsers = {};
const browserFor = (engine) => (browsers[engine] ??= launchBrowser(engine));
// What each page load showed: [build, engine, served by, isolated, form, isa, threads]
const cells = [];

before(async () => {
  rmSync(scratch, { recursive: true, force: true });
  mkdirSync(scratch, { recursive: true });
  // Packed once into build/; each example's copy names it by its absolute path.
  // --ignore-scripts: the tests run after the build; packing must not rebuild.
  await sh('npm', ['pack', '--ignore-scripts', '--pack-destination', join(repo, 'build')], repo);
});
after(async () => {
  await Promise.all(Object.values(browsers).map(async (b) => (await b).close()));
  if (cells.length) writeFileSync(join(scratch, 'cells.json'), `${JSON.stringify(cells, null, 1)}\n`);
});

// Built when a test first needs it, one app at a time: building the next app while the
// browser loads the last one measured no faster on 2 cores.
// Copies the example, installs the tarball (offline: it has no dependencies; the lock file it
// writes makes the copy a project root of its own, where Parcel would take the repository's),
// links the bundler's commands from the root's node_modules/ into the copy's node_modules/.bin
// (first on the PATH npm run makes) and builds it with the example's own build script -> the
// copy's folder. The build must leave the app's package.json as it was: no bundler installs
// anything into the app (Parcel's autoinstall does, unless its build says --no-autoinstall).
const builds = {};
function build(name) {
  builds[name] ??= (async () => {
    const { example, tools } = BUILDS[name];
    const from = join(repo, 'web/examples', example);
    const dir = join(scratch, name);
    cpSync(from, dir, { recursive: true, filter: (f) => !/[/\\](node_modules|dist)$/.test(f) });
    const pkg = examplePackage(example);
    const devDependencies = Object.keys(pkg.devDependencies ?? {});
    delete pkg.devDependencies;
    pkg.dependencies['wasm-attention'] = `file:${join(repo, 'build', tarball)}`;
    const manifest = JSON.stringify(pkg, null, 2);
    writeFileSync(join(dir, 'package.json'), manifest);
    await sh('npm', ['install', '--offline', '--no-audit', '--no-fund'], dir);
    const bin = join(dir, 'node_modules/.bin');
    mkdirSync(bin, { recursive: true });
    for (const dep of devDependencies) {
      const tool = toolPackage(name, dep);
      const { bin: bins = {}, name: toolName } = readJson(join(tool, 'package.json'));
      const entries = typeof bins === 'string' ? { [toolName]: bins } : bins;
      for (const [command, path] of Object.entries(entries)) symlinkSync(join(tool, path), join(bin, command));
    }
    if (pkg.scripts?.build) await sh('npm', ['run', 'build'], dir);
    assert.equal(readFileSync(join(dir, 'package.json'), 'utf8'), manifest, `${name}: the build changed package.json`);
    return { dir, tools };
  })();
  return builds[name];
}

// Loads url in engine, waits for the app's status line and reads what it shows.
async function load(engine, url) {
  const { page, errors } = await openPage(await browserFor(engine), url);
  try {
    const read = () =>
      page.evaluate(() => {
        const text = (id) => document.getElementById(id).textContent;
        const numbers = (id) => text(id).split(/\s+/).filter(Boolean).map(Number);
        return {
          status: text('status'),
          build: text('build'),
          output: numbers('output'),
          workerBuild: text('worker-build'),
          workerOutput: numbers('worker-output'),
          isolated: globalThis.crossOriginIsolated,
        };
      });
    try {
      await page.waitForFunction(() => document.getElementById('status').textContent !== 'running…', null, {
        timeout: 60_000,
      });
    } catch (e) {
      // what the app got to, for the failure's message
      throw new Error(`${e.message}; the page shows ${JSON.stringify(await read())}, errors ${errors()}`, {
        cause: e,
      });
    }
    return { ...(await read()), errors: errors() };
  } finally {
    await page.close();
  }
}

// Checks what the app showed and records the cells: build, engine, how it was served.
function checkShown(shown, { build: name, engine, servedBy, isolated }) {
  assert.deepEqual(shown.errors, []);
  assert.equal(shown.status, 'done');
  assert.equal(shown.isolated, isolated);
  const expected = `${ENGINES[engine]}, ${isolated ? '2 threads' : '1 thread'}`;
  for (const [form, described, output] of [
    ['page', shown.build, shown.output],
    ['worker', shown.workerBuild, shown.workerOutput],
  ]) {
    assert.equal(described, expected, `${form}`);
    assert.equal(output.length, 6, `${form}`);
    output.forEach((v, i) => {
      // the page shows 6 decimals: off by at most 5e-7 from the float32 result
      assert.ok(Math.abs(v - REFERENCE[i]) < 1e-6, `${form}: output[${i}] = ${v}, float64 reference ${REFERENCE[i]}`);
      assert.ok(Math.abs(v - BY_HAND[i]) < 1e-6, `${form}: output[${i}] = ${v}, by hand ${BY_HAND[i]}`);
    });
    const [isa, threads] = described.split(', ');
    cells.push({ build: name, engine, servedBy, isolated, form, isa, threads: parseInt(threads) });
  }
}

test('every example folder is built, and pins the bundler versions the repository installs', () => {
  assert.deepEqual(
    readdirSync(join(repo, 'web/examples'), { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => d.name)
      .sort(),
    [...new Set(Object.values(BUILDS).map((b) => b.example))].sort(),
  );
  for (const [name, { example, tools = {} }] of Object.entries(BUILDS)) {
    const pkg = examplePackage(example);
    assert.equal(pkg.dependencies['wasm-attention'], `file:../../../${tarball}`, `${name}: the tarball npm pack makes`);
    for (const [dep, version] of Object.entries(pkg.devDependencies ?? {})) {
      const tool = readJson(join(toolPackage(name, dep), 'package.json'));
      if (tools[dep]) {
        // an alias: the root names it as npm:<package>@<version>, of the package the example names
        assert.equal(tool.name, dep, `${name}: ${tools[dep]} is not ${dep}`);
        assert.equal(rootPackage.devDependencies[tools[dep]], `npm:${dep}@${tool.version}`);
      } else {
        assert.equal(tool.version, version, `${name} pins ${dep}@${version}; the root installs ${tool.version}`);
      }
    }
  }
});

// The server of the example's own Vite (the copy's node_modules/.bin/vite): `vite preview` of
// the build, or the dev server. The example's vite.config.js sends the isolation headers.
async function withVite(name, args, fn) {
  const { dir } = await build(name);
  const vite = spawn(process.execPath, [join(dir, 'node_modules/.bin/vite'), ...args, '--port', '0', '--strictPort'], {
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
    return await fn(url);
  } finally {
    vite.kill();
  }
}

const threadsSaid = (isolated) => (isolated ? 'runs on 2 threads' : 'runs on 1 thread');

for (const [name, { serve, bundled, vite }] of Object.entries(BUILDS)) {
  for (const engine of Object.keys(ENGINES)) {
    const skip = engineMissing(engine) ?? false;
    for (const isolated of [true, false]) {
      // Vite's isolated page is served by `vite preview` (below): the app's own server.
      if (vite && isolated) continue;
      test(
        `${name}, ${engine}: built app on a ${isolated ? 'cross-origin isolated' : 'plain'} page ${threadsSaid(isolated)}`,
        { skip },
        async () => {
          const { dir } = await build(name);
          // vite preview and the dev server still need the copy's node_modules/.bin/vite; a
          // static server of dist/ reaches no node_modules/ anyway
          if (bundled && !vite) rmSync(join(dir, 'node_modules'), { recursive: true, force: true });
          assert.ok(existsSync(join(dir, serve, 'index.html')), `${name}: no index.html in ${serve}`);
          const server = await startServer({ root: join(dir, serve), isolation: isolated, port: 9500, quiet: true });
          try {
            checkShown(await load(engine, server.url), { build: name, engine, servedBy: 'static', isolated });
          } finally {
            await server.close();
          }
        },
      );
    }
    if (vite) {
      test(`${name}, ${engine}: vite preview runs on 2 threads`, { skip }, () =>
        withVite(name, ['preview'], async (url) =>
          checkShown(await load(engine, url), { build: name, engine, servedBy: 'vite preview', isolated: true }),
        ),
      );
      // The dev server serves the package through its dependency pre-bundling, a path the
      // build does not take.
      test(`${name}, ${engine}: the dev server runs on 2 threads`, { skip }, () =>
        withVite(name, [], async (url) =>
          checkShown(await load(engine, url), { build: name, engine, servedBy: 'vite dev', isolated: true }),
        ),
      );
    }
  }
}

// Without a bundler's help: locateFile places the scripts and wasmBinary hands over the bytes
// (locateFile names a missing .wasm, so only the bytes can have been used).
test('plain: locateFile and wasmBinary place every file a threaded page loads', async () => {
  const { dir } = await build('plain');
  const server = await startServer({ root: dir, isolation: true, port: 9500, quiet: true });
  const { page, errors } = await openPage(await browserFor('chromium'), server.url);
  try {
    const shown = await page.evaluate(async () => {
      const { createAttention } = await import('wasm-attention');
      const folder = new URL('node_modules/wasm-attention/web/lib/wasm/', location.href);
      const wasmBinary = await (await fetch(new URL('wasm_attention_simd128_mt.wasm', folder))).arrayBuffer();
      const asked = [];
      const locateFile = (name) => {
        asked.push(name);
        return name.endsWith('.wasm') ? new URL('missing.wasm', location.href).href : new URL(name, folder).href;
      };
      const attn = await createAttention({ threads: 2, locateFile, wasmBinary });
      const t = (data, shape) => ({ data: new Float32Array(data), shape });
      const x = t([1, 0, 0, 1, 1, 1], [3, 2]);
      const { output } = attn.attention(x, t([1, 1, 0, 1, 1, 2], [3, 2]), x);
      const { threads } = attn.backend;
      attn.dispose();
      return { asked: [...new Set(asked)].sort(), threads, output: Array.from(output.data) };
    });
    assert.deepEqual(shown.asked, [
      'wasm_attention_simd128_mt.js',
      'wasm_attention_simd128_mt.wasm',
      'wasm_attention_simd128_mt.worker.js',
    ]);
    assert.equal(shown.threads, 2);
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
  const { dir } = await build('plain');
  const server = await startServer({ root: dir, isolation: true, port: 9500, quiet: true });
  const { page, errors } = await openPage(await browserFor('chromium'), server.url);
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
        results.push({ worker, threads: attn.backend.threads, output: Array.from(output.data) });
        await attn.dispose();
      }
      return results;
    });
    for (const r of shown) {
      assert.equal(r.threads, 2, `worker: ${r.worker}`);
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
  const { dir } = await build('plain');
  const server = await startServer({ root: dir, isolation: true, port: 9500, quiet: true });
  const page = await (await browserFor('chromium')).newPage();
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
    assert.ok(
      warnings.some((w) =>
        /running on one thread: wasm-attention: a thread's worker failed to start \(.*\): wasm_attention_(simd128|relaxed_simd)_mt\.worker\.js and wasm_attention_(simd128|relaxed_simd)_mt\.js must be served/.test(
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

// The threaded build's pthread workers run from blob: URLs (scripts/build/wrap_esm.mjs): a page whose
// Content-Security-Policy allows blob: in worker-src and script-src gets its threads; one that
// does not gets one thread and a warning naming the policy, not a failure. 'unsafe-eval': the
// Embind glue makes functions with new Function(); 'unsafe-inline': the example's import map.
test('plain: a Content-Security-Policy without blob: gives one thread and a warning, with blob: two', async () => {
  const { dir } = await build('plain');
  const index = readFileSync(join(dir, 'index.html'), 'utf8');
  const server = await startServer({ root: dir, isolation: true, port: 9500, quiet: true });
  try {
    for (const blob of [false, true]) {
      const allow = blob ? ' blob:' : '';
      const policy = `script-src 'self' 'unsafe-inline' 'unsafe-eval'${allow}; worker-src 'self'${allow}`;
      const meta = `<meta http-equiv="Content-Security-Policy" content="${policy}" />`;
      writeFileSync(join(dir, 'csp.html'), index.replace('<meta charset="utf-8" />', `$&${meta}`));
      const page = await (await browserFor('chromium')).newPage();
      const warnings = [];
      page.on('console', (m) => m.type() === 'warning' && warnings.push(m.text()));
      try {
        await page.goto(`${server.url}csp.html`);
        await page.waitForFunction(() => document.getElementById('status').textContent !== 'running…');
        const shown = await page.evaluate(() =>
          ['status', 'build'].map((id) => document.getElementById(id).textContent),
        );
        assert.deepEqual(shown, ['done', `relaxed-simd, ${blob ? '2 threads' : '1 thread'}`], policy);
        assert.equal(
          warnings.some((w) => /running on one thread: .*a Content-Security-Policy must allow/.test(w)),
          !blob,
          `${policy}: warnings ${JSON.stringify(warnings)}`,
        );
      } finally {
        await page.close();
      }
    }
  } finally {
    await server.close();
  }
});
