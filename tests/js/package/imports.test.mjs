// Imports go one way: the tests import the tools under scripts/ (and their shared helpers,
// scripts/lib/), and neither scripts/ nor the package and page under web/ import tests/. Under
// tests/js/ every suite lies in one folder named for what it tests, the ones `npm test` runs
// (tests/js/*/*.test.mjs), and imports what it shares from helpers/, never another suite; every
// relative import there names a file that exists.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const repo = fileURLToPath(new URL('../../..', import.meta.url));

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

// The folders of tests/js/: the suites, by what they test, and what they share.
const GROUPS = ['engines', 'package', 'page', 'tools'];
const HELPERS = 'helpers';

test('every JS suite lies in a folder of tests/js/ named for what it tests, and helpers/ holds none', () => {
  const suites = sources('tests/js').filter((f) => f.endsWith('.test.mjs'));
  assert.ok(suites.length > 0);
  const misplaced = suites.filter((f) => !GROUPS.includes(relative('tests/js', dirname(f))));
  assert.deepEqual(misplaced, []);
  assert.deepEqual(readdirSync(join(repo, 'tests/js')).sort(), [...GROUPS, HELPERS].sort());
});

test('under tests/js/ every relative import names a file that exists, and none names a suite', () => {
  const missing = [];
  const suitesImported = [];
  for (const file of sources('tests/js'))
    for (const target of importsOf(file)) {
      if (!existsSync(join(repo, target))) missing.push(`${file} imports ${target}`);
      if (target.endsWith('.test.mjs')) suitesImported.push(`${file} imports ${target}`);
    }
  assert.deepEqual(missing, []);
  assert.deepEqual(suitesImported, []);
});
