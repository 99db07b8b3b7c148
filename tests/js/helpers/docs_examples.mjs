// The examples of the README and web/docs/ (docs_examples.test.mjs runs them).
//   DOC_FILES                  README.md and every web/docs/*.md, as paths from the repository
//   jsBlocks(file, { browser }) -> [{ file, line, info, code }]   the ```js blocks of one file
//                              that import the package ('wasm-attention'): each a complete
//                              program. A block whose fence says ```js browser needs a page:
//                              left out, or with browser: true the only ones given;
//                              fragments use another fence (```ts, ```text) and are never seen.
//   scratchProject() -> { dir, write(name, code) -> path, remove() }   a folder where
//                              'wasm-attention' resolves to this repository (a node_modules
//                              symlink), as it does for an app that installed the package
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const repo = fileURLToPath(new URL('../../..', import.meta.url));

export const DOC_FILES = [
  'README.md',
  ...readdirSync(join(repo, 'web/docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `web/docs/${name}`),
];

const IMPORTS_PACKAGE = /from 'wasm-attention'|require\('wasm-attention'\)|import\('wasm-attention'\)/;

export function jsBlocks(file, { browser = false } = {}) {
  const lines = readFileSync(join(repo, file), 'utf8').split('\n');
  const blocks = [];
  for (let i = 0; i < lines.length; ++i) {
    const open = lines[i].match(/^```(\S*)\s*(.*)$/);
    if (!open) continue;
    let end = i + 1;
    while (end < lines.length && !/^```\s*$/.test(lines[end])) ++end;
    const code = lines.slice(i + 1, end).join('\n') + '\n';
    if (open[1] === 'js' && /\bbrowser\b/.test(open[2]) === browser && IMPORTS_PACKAGE.test(code))
      blocks.push({ file, line: i + 1, info: lines[i].slice(3), code });
    i = end;
  }
  return blocks;
}

export function scratchProject() {
  const dir = mkdtempSync(join(tmpdir(), 'wasm-attention-docs-'));
  mkdirSync(join(dir, 'node_modules'));
  symlinkSync(repo, join(dir, 'node_modules', 'wasm-attention'), 'dir');
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'docs-examples', private: true, type: 'module' }));
  return {
    dir,
    write(name, code) {
      writeFileSync(join(dir, name), code);
      return join(dir, name);
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
