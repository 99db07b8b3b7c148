// The README's browser quick start as a newcomer uses it: its `main.js` (the ```js browser
// block) is the whole app of a project with no config file, the packed tarball installed,
// built by `vite build` of Vite 5, 6, 7 and 8 (the root's devDependencies, vite5..7 as npm
// aliases) and loaded in Chromium from a cross-origin isolated static server: it must build
// (no top-level await in a default target) and show the build it ran on with the worked
// example's output. And Vite 6's dev server without the README's optimizeDeps.exclude, which
// answers the .wasm with index.html: createAttention rejects with the error that names the
// file and that fix.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { startServer } from '../../../scripts/serve.mjs';
import { engineMissing, launchBrowser, openPage } from '../../../scripts/lib/browser.mjs';
import { jsBlocks } from '../helpers/docs_examples.mjs';
import { withVite } from '../helpers/vite.mjs';

const repo = fileURLToPath(new URL('../../..', import.meta.url));
const { version } = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8'));
const scratch = join(repo, 'build/readme-browser');
const tarball = join(scratch, `wasm-attention-${version}.tgz`);
// Vite major -> the root's package that is it
const VITES = { 5: 'vite5', 6: 'vite6', 7: 'vite7', 8: 'vite' };

const run = promisify(execFile);
async function sh(cmd, args, cwd) {
  try {
    return (await run(cmd, args, { cwd, encoding: 'utf8', maxBuffer: 16 << 20 })).stdout;
  } catch (e) {
    throw new Error(`${cmd} ${args.join(' ')} failed in ${cwd}:\n${e.stdout}\n${e.stderr}`, { cause: e });
  }
}

// The README's page module: its ```js browser blocks that import the package (one).
const README_MAIN = jsBlocks('README.md', { browser: true }).map((b) => b.code);

const skip = engineMissing('chromium') ?? false;
let browser;
before(async () => {
  rmSync(scratch, { recursive: true, force: true });
  mkdirSync(scratch, { recursive: true });
  await sh('npm', ['pack', '--pack-destination', scratch], repo);
});
after(async () => {
  if (browser) await (await browser).close();
});

test('the README has one browser module, and it is no example the Node docs test runs', () => {
  assert.equal(README_MAIN.length, 1);
  assert.ok(!jsBlocks('README.md').some((b) => b.code === README_MAIN[0]));
});

// A project of the README's main.js alone, with the tarball installed and `vite` of major v
// linked as the project's own -> its folder.
async function project(v) {
  const dir = join(scratch, `vite${v}`);
  mkdirSync(dir, { recursive: true });
  const pkg = {
    name: `readme-vite${v}`,
    private: true,
    type: 'module',
    dependencies: { 'wasm-attention': `file:${tarball}` },
  };
  writeFileSync(join(dir, 'package.json'), JSON.stringify(pkg, null, 2));
  writeFileSync(
    join(dir, 'index.html'),
    '<!doctype html>\n<html lang="en">\n  <head><meta charset="utf-8" /><link rel="icon" href="data:," /><title>README</title>\n    <script type="module" src="/main.js"></script>\n  </head>\n  <body>running…</body>\n</html>\n',
  );
  writeFileSync(join(dir, 'main.js'), README_MAIN[0]);
  await sh('npm', ['install', '--offline', '--no-audit', '--no-fund'], dir);
  const vite = join(repo, 'node_modules', VITES[v]);
  const { bin } = JSON.parse(readFileSync(join(vite, 'package.json'), 'utf8'));
  mkdirSync(join(dir, 'node_modules/.bin'), { recursive: true });
  symlinkSync(join(vite, typeof bin === 'string' ? bin : bin.vite), join(dir, 'node_modules/.bin/vite'));
  return dir;
}

// Loads url in Chromium -> { text: the page's body once main() wrote it, or once the package's
// error went uncaught (main() then writes nothing; 60 s at most), errors }.
async function shows(url) {
  browser ??= launchBrowser('chromium');
  const { page, errors } = await openPage(await browser, url);
  try {
    const ended = [
      page.waitForFunction(() => document.body.textContent.trim() !== 'running…', null, { timeout: 60_000 }),
      page.waitForEvent('pageerror', { predicate: (e) => /wasm-attention:/.test(e.message), timeout: 60_000 }),
    ];
    await Promise.race(ended.map((p) => p.catch(() => {})));
    return { text: await page.evaluate(() => document.body.textContent), errors: errors() };
  } finally {
    await page.close();
  }
}

for (const v of Object.keys(VITES)) {
  test(
    `the README's main.js builds with Vite ${v}'s defaults and runs on 2 threads in Chromium`,
    { skip },
    async () => {
      const dir = await project(v);
      await sh(process.execPath, [join(dir, 'node_modules/.bin/vite'), 'build'], dir);
      assert.ok(
        readdirSync(join(dir, 'dist/assets')).some((f) => /^wasm_attention_relaxed_simd_mt.*\.wasm$/.test(f)),
        'the threaded relaxed .wasm is in the build',
      );
      const server = await startServer({ root: join(dir, 'dist'), isolation: true, port: 9600, quiet: true });
      try {
        const { text, errors } = await shows(server.url);
        assert.deepEqual(errors, []);
        // the worked example, causal: row 0 is x0, row 1 mixes x0 and x1, row 2 all three
        assert.match(text, /^relaxed-simd, 2 threads: 1,0,0\.33\d*,0\.66\d*,0\.7\d*,0\.7\d*$/);
      } finally {
        await server.close();
      }
    },
  );
}

// Vite 6's dev server without optimizeDeps.exclude serves the pre-bundled package, whose
// new URL('./wasm/…') it answers with index.html.
test(
  "Vite 6's dev server without optimizeDeps.exclude: the error names the .wasm's URL and the fix",
  { skip },
  async () => {
    const dir = existsSync(join(scratch, 'vite6')) ? join(scratch, 'vite6') : await project(6);
    await withVite(dir, [], async (url) => {
      const { errors } = await shows(url);
      assert.ok(
        errors.some((e) =>
          /^uncaught: wasm-attention: http:\/\/localhost:\d+\/\S*wasm_attention_\w+\.wasm came back as an HTML page, not the \.wasm \(its bytes start 3c .*With Vite 5-7's dev server, add optimizeDeps: \{ exclude: \['wasm-attention'\] \} to vite\.config\.js/.test(
            e,
          ),
        ),
        `errors: ${JSON.stringify(errors)}`,
      );
    });
  },
);
