// The package's table of builds (web/lib/builds.js) against what CMakeLists.txt makes: the
// same builds, each with its ISA and threads, and every file the table names on disk after the
// build; and the glue tables (glue.js, glue_static.js) with a loader for each. The loader, the
// worker form and the kernel bench read the table.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { BUILDS, buildFor } from '../../../web/lib/builds.js';

const cmake = readFileSync(new URL('../../../CMakeLists.txt', import.meta.url), 'utf8');

// wa_module(<base> <core> <export name> [THREADED]); a core made by wa_relaxed_core() has
// relaxed SIMD, the others SIMD128 alone.
function cmakeBuilds() {
  const relaxedCores = new Set([...cmake.matchAll(/^wa_relaxed_core\((\w+)/gm)].map((m) => m[1]));
  return [...cmake.matchAll(/^wa_module\((\w+) (\w+) \w+( THREADED)?\)/gm)].map(([, base, core, threaded]) => ({
    base,
    isa: relaxedCores.has(core) ? 'relaxed-simd' : 'simd128',
    threads: Boolean(threaded),
  }));
}

const byBase = (a, b) => a.base.localeCompare(b.base);

test('the table lists the builds CMakeLists.txt makes, with their ISA and threads', () => {
  const made = cmakeBuilds();
  assert.equal(made.length, 4, `wa_module calls found: ${JSON.stringify(made)}`);
  assert.deepEqual(BUILDS.map(({ base, isa, threads }) => ({ base, isa, threads })).sort(byBase), made.sort(byBase));
});

test('each ISA has one build with threads and one without', () => {
  for (const isa of ['simd128', 'relaxed-simd']) {
    for (const threads of [true, false]) {
      const matches = BUILDS.filter((v) => v.isa === isa && v.threads === threads);
      assert.equal(matches.length, 1, `${isa}, threads ${threads}`);
      assert.equal(buildFor(isa, threads), matches[0]);
    }
  }
});

test("each build's files: the .wasm and glue, the pthread workers' scripts with threads; all built", () => {
  for (const { base, threads, files, wasm, worker } of BUILDS) {
    const expected = [`${base}.wasm`, `${base}.js`, ...(threads ? [`${base}.worker.js`] : [])];
    assert.deepEqual([...files].sort(), expected.sort(), base);
    assert.ok(wasm().href.endsWith(`/web/lib/wasm/${base}.wasm`), `${base}: ${wasm().href}`);
    // the module worker a browser's pthreads start from (scripts/build/wrap_esm.mjs), threaded builds only
    assert.equal(typeof worker, threads ? 'function' : 'undefined', base);
    const moduleWorker = fileURLToPath(new URL(`../../../web/lib/wasm/${base}.worker.mjs`, import.meta.url));
    assert.equal(existsSync(moduleWorker), threads, `${base}.worker.mjs`);
    for (const file of files) {
      assert.ok(
        existsSync(fileURLToPath(new URL(`../../../web/lib/wasm/${file}`, import.meta.url))),
        `${file} is not built`,
      );
    }
  }
});

test('the glue tables (glue.js, imported lazily; glue_static.js, for the worker form) load every build', async () => {
  for (const path of ['../../../web/lib/glue.js', '../../../web/lib/glue_static.js']) {
    const { glue } = await import(path);
    assert.deepEqual(Object.keys(glue).sort(), BUILDS.map((v) => v.base).sort(), path);
    for (const { base, threads } of BUILDS) {
      const { default: wrapped, scripts } = await glue[base]();
      assert.equal(typeof wrapped, 'function', `${path}: ${base}`);
      // a threaded build's pthread workers run, in a browser, the text of its two classic scripts
      const texts = threads
        ? ['js', 'worker.js'].map((ext) =>
            readFileSync(fileURLToPath(new URL(`../../../web/lib/wasm/${base}.${ext}`, import.meta.url)), 'utf8'),
          )
        : undefined;
      assert.deepEqual(scripts && [scripts.glue, scripts.worker], texts, `${path}: ${base}'s scripts`);
    }
  }
});

// One spelling of the build axis: the isa as the package says it ('simd128', 'relaxed-simd'),
// with '_' for '-' in names, and _mt for threads.
const token = (isa) => isa.replace('-', '_');

test('every build, core and ctest suite is named <isa>[_mt] after its isa and threads', () => {
  for (const { base, isa, threads } of cmakeBuilds())
    assert.equal(base, `wasm_attention_${token(isa)}${threads ? '_mt' : ''}`);
  const cores = [...cmake.matchAll(/^wa_(?:relaxed_)?core\((wa_core_\w+)/gm)].map((m) => m[1]).sort();
  assert.deepEqual(cores, ['wa_core_relaxed_simd', 'wa_core_relaxed_simd_mt', 'wa_core_simd128', 'wa_core_simd128_mt']);
  const suites = [...cmake.matchAll(/add_test\(NAME (wasm_\w+)/g)].map((m) => m[1]).sort();
  assert.deepEqual(suites, ['wasm_relaxed_simd_mt', 'wasm_simd128', 'wasm_simd128_mt']);
});

test('every GEMM kernel in the list is named for its isa: f32_gemm_<tile>_<isa>', () => {
  const list = readFileSync(new URL('../../../cpp/src/gemm/f32_gemm_kernels.def', import.meta.url), 'utf8');
  const kernels = [...list.matchAll(/^WA_GEMM_KERNEL_(\w+)\((\w+),/gm)].map(([, isa, name]) => ({ isa, name }));
  assert.ok(kernels.length > 0);
  for (const { isa, name } of kernels) {
    assert.ok(['SIMD128', 'RELAXED_SIMD'].includes(isa), `${name}: WA_GEMM_KERNEL_${isa}`);
    assert.match(name, new RegExp(`^f32_gemm_\\w+_${isa.toLowerCase()}$`));
  }
});
