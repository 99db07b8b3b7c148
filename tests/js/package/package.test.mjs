// The package as users get it: `npm pack`, install the tarball into a scratch project, and
// there import it, require it, and type-check a TypeScript usage example with tsc.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';

const repo = fileURLToPath(new URL('../../..', import.meta.url));
const tsc = join(repo, 'node_modules/typescript/bin/tsc');
let scratch;
let packed;

const run = (cmd, args, cwd) => execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

before(() => {
  scratch = mkdtempSync(join(tmpdir(), 'wasm-attention-pkg-'));
  // --ignore-scripts: the tests run after the build; packing must not rebuild.
  [packed] = JSON.parse(run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', scratch], repo));
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
