// The package as users get it: `npm pack`, install the tarball into a scratch project, and
// there import it, require it, and type-check a TypeScript usage example with tsc. Packing
// without the built files stops with the command to run; the tarball carries the license and
// the links the registry's page needs.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { DOC_FILES, jsBlocks } from '../helpers/docs_examples.mjs';

const repo = fileURLToPath(new URL('../../..', import.meta.url));
const tsc = join(repo, 'node_modules/typescript/bin/tsc');
let scratch;
let packed;

const run = (cmd, args, cwd) => execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

before(() => {
  scratch = mkdtempSync(join(tmpdir(), 'wasm-attention-pkg-'));
  // with its prepack: the check that the built files are there (scripts/build/check_pack.mjs)
  [packed] = JSON.parse(run('npm', ['pack', '--json', '--pack-destination', scratch], repo));
  writeFileSync(join(scratch, 'package.json'), JSON.stringify({ name: 'scratch', private: true }));
  run('npm', ['install', '--no-audit', '--no-fund', '--offline', join(scratch, packed.filename)], scratch);
});
after(() => rmSync(scratch, { recursive: true, force: true }));

test('the tarball holds the library and its types, not the sources', () => {
  const files = packed.files.map((f) => f.path).sort();
  for (const f of [
    'package.json',
    'web/lib/index.js',
    'web/lib/index.cjs',
    'web/lib/index.d.ts',
    'web/lib/index.d.cts',
    'web/lib/worker_client.js',
    'web/lib/worker_host.js',
    'web/lib/wasm/wasm_attention_simd128_mt.wasm',
    'web/lib/wasm/wasm_attention_simd128_mt.worker.js',
    'web/lib/wasm/wasm_attention_simd128_mt.worker.mjs',
    'web/lib/wasm/wasm_attention_simd128_mt.mjs',
    'web/lib/wasm/wasm_attention_simd128.wasm',
    'web/lib/wasm/wasm_attention_simd128.mjs',
    'web/lib/wasm/package.json',
    'web/lib/features.js',
    'web/lib/wasm/wasm_attention_relaxed_simd_mt.wasm',
    'web/lib/wasm/wasm_attention_relaxed_simd_mt.worker.js',
    'web/lib/wasm/wasm_attention_relaxed_simd_mt.worker.mjs',
    'web/lib/wasm/wasm_attention_relaxed_simd_mt.mjs',
    'web/lib/wasm/wasm_attention_relaxed_simd.wasm',
    'web/lib/wasm/wasm_attention_relaxed_simd.mjs',
  ]) {
    assert.ok(files.includes(f), `${f} missing from the tarball: ${files.join(', ')}`);
  }
  for (const f of files) assert.ok(!/^(cpp|tests|scripts|build)\//.test(f), `${f} should not be packed`);
  for (const f of packed.files.filter((x) => x.path.endsWith('.wasm'))) {
    assert.ok(f.size < 250 * 1024, `${f.path} is ${f.size} bytes, over 250 KB`);
  }
});

// package.json's prepack (scripts/build/check_pack.mjs): in a tree with the sources only, as a fresh
// clone is, `npm pack` (and so `npm publish`) fails, naming the built files and the commands.
test('npm pack without the built modules stops, naming what is missing and the command that builds it', () => {
  const bare = mkdtempSync(join(tmpdir(), 'wasm-attention-bare-'));
  try {
    cpSync(join(repo, 'package.json'), join(bare, 'package.json'));
    mkdirSync(join(bare, 'scripts/build'), { recursive: true });
    cpSync(join(repo, 'scripts/build/check_pack.mjs'), join(bare, 'scripts/build/check_pack.mjs'));
    cpSync(join(repo, 'web/lib'), join(bare, 'web/lib'), {
      recursive: true,
      filter: (f) => !/[/\\]wasm$|index\.(cjs|d\.cts)$/.test(f),
    });
    let failed = null;
    try {
      run('npm', ['pack', '--dry-run', '--json'], bare);
    } catch (e) {
      failed = e.stderr;
    }
    assert.ok(failed !== null, 'npm pack wrote a tarball without the .wasm files');
    assert.match(
      failed,
      /wasm-attention: cannot pack: 17 built files missing \(web\/lib\/wasm\/wasm_attention_simd128_mt\.wasm, /,
    );
    assert.match(failed, /index\.cjs, web\/lib\/index\.d\.cts\)/);
    assert.match(failed, /`npm run build`.*\n.*`npm run tarball` \(setup, build, then npm pack\)/);
  } finally {
    rmSync(bare, { recursive: true, force: true });
  }
});

// `npm run tarball`, the one line from a fresh clone to a tarball, and the README's install
// section, which names it.
test('npm run tarball sets up, builds and packs, as the README says', () => {
  const { scripts } = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8'));
  assert.equal(scripts.tarball, 'bash scripts/build/setup.sh && bash scripts/build/build.sh && npm pack');
  assert.equal(scripts.prepack, 'node scripts/build/check_pack.mjs');
  assert.match(readFileSync(join(repo, 'README.md'), 'utf8'), /\nnpm run tarball +# /);
});

// The registry's page shows the README with its relative links resolved against the
// repository, and the license from the LICENSE file.
test('the tarball holds the MIT LICENSE, and package.json the repository, homepage and bugs', () => {
  assert.ok(
    packed.files.some((f) => f.path === 'LICENSE'),
    'LICENSE is packed',
  );
  const license = readFileSync(join(scratch, 'node_modules/wasm-attention/LICENSE'), 'utf8');
  assert.match(license, /^MIT License\n\nCopyright \(c\) \d{4} /);
  const pkg = JSON.parse(readFileSync(join(scratch, 'node_modules/wasm-attention/package.json'), 'utf8'));
  assert.equal(pkg.license, 'MIT');
  assert.match(pkg.repository.url, /^git\+https:\/\/github\.com\/[\w-]+\/[\w-]+\.git$/);
  const home = pkg.repository.url.replace(/^git\+|\.git$/g, '');
  assert.equal(pkg.homepage, `${home}#readme`);
  assert.equal(pkg.bugs.url, `${home}/issues`);
});

// The bench's micro-kernel probe lives in build/wasm/bench/'s forensics modules: a module's
// Embind names are strings in its data, so the name is absent from every shipped .wasm.
test('the shipped modules carry no bench probe (gemmKernelGflops)', () => {
  const wasm = packed.files.filter((f) => f.path.endsWith('.wasm'));
  assert.ok(wasm.length >= 4, 'the four builds are packed');
  for (const f of wasm) {
    const bytes = readFileSync(join(scratch, 'node_modules/wasm-attention', f.path));
    assert.ok(bytes.includes('gemmKernelGflops') === false, `${f.path} binds gemmKernelGflops`);
    assert.ok(bytes.includes('gemmKernels'), `${f.path}: the package's own names are found this way`);
  }
});

// Runs the seed's worked example and prints the output.
const usage = (load) => `${load}
const attn = await createAttention({ threads: 2 });
const t = (data, shape) => ({ data: new Float32Array(data), shape });
const x = t([1, 0, 0, 1, 1, 1], [3, 2]);
const k = t([1, 1, 0, 1, 1, 2], [3, 2]);
const { output } = attn.attention(x, k, x);
console.log(JSON.stringify({ backend: attn.backend, output: Array.from(output.data) }));
`;
const WORKED_OUTPUT = [0.80222419, 0.59888791, 0.75174492, 0.75174492, 0.85997076, 0.71600459];

function checkOutput(stdout) {
  const { backend, output } = JSON.parse(stdout);
  assert.equal(backend.threads, 2);
  output.forEach((v, i) => assert.ok(Math.abs(v - WORKED_OUTPUT[i]) < 1e-6, `output[${i}] = ${v}`));
}

test('import works in the scratch project', () => {
  writeFileSync(join(scratch, 'use.mjs'), usage("import { createAttention } from 'wasm-attention';"));
  checkOutput(run(process.execPath, ['use.mjs'], scratch));
});

// Deno reads the installed package's web/lib/wasm/ as CommonJS (its package.json says so), as
// Node does; run from a checkout, it reads the pthread worker's script as an ES module
// (tests/js/engines/runtimes.test.mjs): both must start threads.
test('import works under Deno and Bun in the scratch project, with 2 threads', () => {
  const bin = (name) => join(repo, 'node_modules/.bin', name);
  checkOutput(run(bin('deno'), ['run', '-A', 'use.mjs'], scratch));
  checkOutput(run(bin('bun'), ['use.mjs'], scratch));
});

test('require works in the scratch project', () => {
  writeFileSync(
    join(scratch, 'use.cjs'),
    `(async () => {\n${usage("const { createAttention } = require('wasm-attention');")}\n})();`,
  );
  checkOutput(run(process.execPath, ['use.cjs'], scratch));
});

test('a typed usage example passes tsc --noEmit, and a wrong call does not', () => {
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
      },
      files: ['usage.mts'],
    }),
  );
  writeFileSync(join(scratch, 'usage.mts'), readFileSync(join(repo, 'tests/js/package/fixtures/usage.mts'), 'utf8'));
  run(process.execPath, [tsc, '-p', 'tsconfig.json'], scratch);

  writeFileSync(
    join(scratch, 'usage.mts'),
    `import { createAttention } from 'wasm-attention';
const attn = await createAttention({ threads: 'many' });
attn.attention({ data: new Float32Array(4), shape: [2, 2] });
`,
  );
  const failed = (() => {
    try {
      run(process.execPath, [tsc, '-p', 'tsconfig.json'], scratch);
      return null;
    } catch (e) {
      return e.stdout;
    }
  })();
  assert.ok(failed, 'tsc accepted a call with wrong types');
  assert.match(failed, /"many"/);
  assert.match(failed, /Expected 3-4 arguments, but got 1/);
});

// The README's and web/docs' examples, as a TypeScript user meets them: each block that
// imports the package (the Node ones docs_examples.test.mjs runs, and the ```js browser ones)
// type-checked as JavaScript (checkJs) under --strict against the installed tarball's types.
// Results narrow on the options (trace: true gives weights, pastKey presentKey, qkOutput qk),
// so the examples read them without a guard.
test('every example of the README and web/docs typechecks under --strict against the packed types', () => {
  const files = [];
  for (const file of DOC_FILES) {
    for (const { line, code } of [...jsBlocks(file), ...jsBlocks(file, { browser: true })]) {
      const commonjs = !/^import /m.test(code) && /require\('wasm-attention'\)/.test(code);
      const name = `docs_${file.replace(/\W/g, '_')}_${line}.${commonjs ? 'cjs' : 'mjs'}`;
      writeFileSync(join(scratch, name), code);
      files.push(name);
    }
  }
  assert.ok(files.length >= 12, `examples found: ${files.join(', ')}`);
  const config = {
    compilerOptions: {
      strict: true,
      allowJs: true,
      checkJs: true,
      noEmit: true,
      module: 'nodenext',
      moduleResolution: 'nodenext',
      target: 'es2022',
      types: [],
    },
    files,
  };
  writeFileSync(join(scratch, 'tsconfig.docs.json'), JSON.stringify(config));
  try {
    run(process.execPath, [tsc, '-p', 'tsconfig.docs.json'], scratch);
  } catch (e) {
    assert.fail(`tsc --strict on the docs' examples:\n${e.stdout}`);
  }
});
