// Runs tsc over types/usage.mts in a scratch project that installs this package by a link:
// every line after "// EXPECT-ERROR what" must be refused by tsc, every other line accepted.
// Prints a row per check, as round2.mjs does.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const repo = join(here, '../../../..');
const scratch = mkdtempSync(join(tmpdir(), 'hostile-types-'));
mkdirSync(join(scratch, 'node_modules'));
symlinkSync(repo, join(scratch, 'node_modules/wasm-attention'));
const source = readFileSync(join(here, 'types/usage.mts'), 'utf8');
// each EXPECT-ERROR comment becomes a @ts-expect-error: tsc then reports an unused directive
// where the line below it type-checks
const lines = source.split('\n');
const expected = new Map(); // line number (1-based) of the directive -> what
const rewritten = lines.map((l, i) => {
  const m = l.match(/^\/\/ EXPECT-ERROR (.*)$/);
  if (!m) return l;
  expected.set(i + 1, m[1]);
  return `// @ts-expect-error ${m[1]}`;
});
writeFileSync(join(scratch, 'usage.mts'), rewritten.join('\n'));
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
    files: ['usage.mts'],
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
const errors = out.split('\n').filter((l) => /usage\.mts\(\d+,/.test(l));
const unused = new Set(errors.filter((l) => /TS2578/.test(l)).map((l) => Number(l.match(/\((\d+),/)[1])));
const other = errors.filter((l) => !/TS2578/.test(l));
let ok = 0;
for (const [line, what] of expected) {
  const good = !unused.has(line);
  ok += good;
  console.log(
    `${good ? 'ok ' : 'DEV'} | types | tsc refuses: ${what} | expected: a type error | got: ${good ? 'a type error' : 'accepted'}`,
  );
}
const accepted = other.length === 0;
ok += accepted;
console.log(
  `${accepted ? 'ok ' : 'DEV'} | types | the documented calls type-check | expected: no errors | got: ${accepted ? 'none' : other.join(' / ')}`,
);
console.log(`\n${expected.size + 1} checks, ${ok} as documented, ${expected.size + 1 - ok} deviations`);
