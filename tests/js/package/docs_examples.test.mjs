// Every example of the README and web/docs/ runs as written: each ```js block that imports
// 'wasm-attention' (docs_examples.mjs finds them) is written into a scratch project where the
// package resolves to this repository, run with node (a block that requires it and imports nothing as CommonJS),
// and must exit with 0 within a minute. Browser-only examples are fenced ```js browser and
// left out (the bundler and browser suites load the same code in pages). Every relative link
// reaches its file and heading.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';

import { DOC_FILES, jsBlocks, repo, scratchProject } from '../helpers/docs_examples.mjs';

const run = promisify(execFile);

let project;
before(() => {
  project = scratchProject();
});
after(() => project.remove());

test('the README and every web/docs file have examples to run', () => {
  assert.ok(DOC_FILES.length > 1, `docs found: ${DOC_FILES.join(', ')}`);
  assert.ok(jsBlocks('README.md').length >= 2, 'the README has its quick start');
});

for (const file of DOC_FILES) {
  describe(file, () => {
    for (const block of jsBlocks(file)) {
      test(`the example at line ${block.line} runs as written`, async () => {
        const commonjs = !/^import /m.test(block.code) && /require\('wasm-attention'\)/.test(block.code);
        const name = `${file.replace(/\W/g, '_')}_${block.line}.${commonjs ? 'cjs' : 'mjs'}`;
        const path = project.write(name, block.code);
        try {
          await run(process.execPath, [path], { cwd: project.dir, timeout: 60000 });
        } catch (e) {
          assert.fail(`${file}:${block.line} exited with ${e.code ?? e.signal}:\n${e.stderr || e.message}`);
        }
      });
    }
  });
}

// The README's vite.config.js is the Vite example's, which tests/js/engines/bundlers.test.mjs
// runs with `vite`, `vite build` and `vite preview` of Vite 5-8: the same config object.
test("the README's vite.config.js is web/examples/vite's", async () => {
  const readme = readFileSync(join(repo, 'README.md'), 'utf8');
  const block = [...readme.matchAll(/^```js\n(\/\/ vite\.config\.js\n[\s\S]*?)^```$/gm)].map((m) => m[1]);
  assert.equal(block.length, 1, 'one vite.config.js block in the README');
  const path = project.write('vite.config.mjs', block[0]);
  const { default: shown } = await import(pathToFileURL(path));
  const { default: example } = await import(pathToFileURL(join(repo, 'web/examples/vite/vite.config.js')));
  assert.deepEqual(shown, example);
  assert.deepEqual(shown.optimizeDeps, { exclude: ['wasm-attention'] });
  for (const side of ['server', 'preview'])
    assert.deepEqual(shown[side].headers, {
      'Cross-Origin-Opener-Policy': 'same-origin',
      'Cross-Origin-Embedder-Policy': 'require-corp',
    });
});

// GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens.
const slug = (heading) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');

test('every relative link of the README and web/docs reaches a file, and its #anchor a heading there', () => {
  const broken = [];
  const headings = (file) =>
    new Set(
      readFileSync(join(repo, file), 'utf8')
        .replace(/^```[\s\S]*?^```/gm, '')
        .split('\n')
        .filter((line) => /^#{1,6} /.test(line))
        .map((line) => slug(line.replace(/^#+ /, ''))),
    );
  for (const file of DOC_FILES) {
    const text = readFileSync(join(repo, file), 'utf8').replace(/^```[\s\S]*?^```/gm, '');
    for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/.test(target)) continue; // http:, https:, mailto:
      const [path, anchor] = target.split('#');
      const linked = path ? relative(repo, resolve(repo, dirname(file), path)) : file;
      if (!existsSync(join(repo, linked))) broken.push(`${file}: ${target} (no ${linked})`);
      else if (anchor && linked.endsWith('.md') && !headings(linked).has(anchor))
        broken.push(`${file}: ${target} (no heading #${anchor} in ${linked})`);
    }
  }
  assert.deepEqual(broken, []);
});
