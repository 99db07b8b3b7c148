// index.d.ts against behaviour: tsc refuses each call of fixtures/refused.mts marked
// EXPECT-ERROR (a call the library refuses at run time, or a misuse of a type) and accepts every
// other line, in a scratch project where 'wasm-attention' is this repository (a link).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';

const repo = fileURLToPath(new URL('../../..', import.meta.url));
const scratch = mkdtempSync(join(tmpdir(), 'wasm-attention-types-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

// tsc over refused.mts, each EXPECT-ERROR made a @ts-expect-error -> { expected: line -> what,
// unused: lines whose directive found no error (TS2578), other: every other error }
function check() {
  mkdirSync(join(scratch, 'node_modules'));
  symlinkSync(repo, join(scratch, 'node_modules/wasm-attention'));
  const expected = new Map();
  const lines = readFileSync(join(repo, 'tests/js/package/fixtures/refused.mts'), 'utf8')
    .split('\n')
    .map((l, i) => {
      const m = l.match(/^\/\/ EXPECT-ERROR (.*)$/);
      if (!m) return l;
      expected.set(i + 1, m[1]);
      return `// @ts-expect-error ${m[1]}`;
    });
  writeFileSync(join(scratch, 'refused.mts'), lines.join('\n'));
  writeFileSync(
    join(scratch, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        noEmit: true,
        module: 'nodenext',
        moduleResolution: 'nodenext',
        target: 'es2022',
        types: [],
        lib: ['es2023'],
      },
      files: ['refused.mts'],
    }),
  );
  let out = '';
  try {
    execFileSync(process.execPath, [join(repo, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'], {
      cwd: scratch,
      encoding: 'utf8',
    });
  } catch (e) {
    out = e.stdout;
  }
  const errors = out.split('\n').filter((l) => /refused\.mts\(\d+,/.test(l));
  const unused = new Set(errors.filter((l) => /TS2578/.test(l)).map((l) => Number(l.match(/\((\d+),/)[1])));
  return { expected, unused, other: errors.filter((l) => !/TS2578/.test(l)) };
}

test('tsc refuses every call the library refuses, and accepts the documented ones', () => {
  const { expected, unused, other } = check();
  assert.ok(expected.size >= 30, `refused.mts holds ${expected.size} EXPECT-ERROR lines`);
  const accepted = [...expected].filter(([line]) => unused.has(line)).map(([line, what]) => `line ${line}: ${what}`);
  assert.deepEqual(accepted, [], 'tsc accepted calls the library refuses');
  assert.deepEqual(other, [], 'tsc refused lines that should type-check');
});
