// Imports go one way: the tests import the tools under scripts/ (and their shared helpers,
// scripts/lib/), and neither scripts/ nor the package and page under web/ import tests/.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const repo = fileURLToPath(new URL('../..', import.meta.url));

// Every .js and .mjs file under dir (a path from the repository), skipping installed packages
// and build outputs.
function sources(dir) {
  const files = [];
  for (const entry of readdirSync(join(repo, dir), { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (!['node_modules', 'dist', 'wasm'].includes(entry.name)) files.push(...sources(path));
    } else if (/\.m?js$/.test(entry.name)) files.push(path);
  }
  return files;
}

// The relative specifiers of a file's static and dynamic imports, as paths from the repository.
function importsOf(file) {
  const text = readFileSync(join(repo, file), 'utf8');
  const specifiers = [...text.matchAll(/(?:from|import)\s*\(?\s*'(\.{1,2}\/[^']+)'/g)].map((m) => m[1]);
  return specifiers.map((s) => relative(repo, resolve(repo, dirname(file), s)));
}

test('nothing under scripts/ or web/ imports tests/', () => {
  const wrong = [];
  for (const file of [...sources('scripts'), ...sources('web')])
    for (const target of importsOf(file)) if (target.startsWith('tests/')) wrong.push(`${file} imports ${target}`);
  assert.deepEqual(wrong, []);
});
