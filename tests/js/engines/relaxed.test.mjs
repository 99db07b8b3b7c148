// The relaxed-SIMD builds (f32x4.relaxed_madd in the GEMM kernel): the loader picks them
// exactly where the engine validates relaxed SIMD, in Node (only with
// --experimental-wasm-relaxed-simd, so each case runs in a child Node: tests/js/helpers/relaxed_child.mjs)
// and in Chromium and Firefox (ENGINE_GETS), falls back to SIMD128 elsewhere (WebKitGTK), and
// both compute the reference's numbers.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { launchBrowser, openPage, serveBlankPage } from '../../../scripts/lib/browser.mjs';
import { describeEngines } from '../helpers/engines.mjs';
import { attentionRef, maxAbs, maxAbsDiff } from '../../../scripts/lib/reference.mjs';
import { buildOf } from '../helpers/backend_build.mjs';
import { FMA_PROBE, inputs } from '../helpers/relaxed_child.mjs';

const FLAG = '--experimental-wasm-relaxed-simd';
const TOL = 1e-5; // max abs difference for unit-range values, relative past magnitude 1

// Whether relaxed_madd fuses here: V8 emits FMA on x86 CPUs that have it (and always on arm64).
const CPU_FUSES =
  process.arch === 'arm64' ||
  (existsSync('/proc/cpuinfo') && /^flags\s*:.*\bfma\b/m.test(readFileSync('/proc/cpuinfo', 'utf8')));

const child = fileURLToPath(new URL('../helpers/relaxed_child.mjs', import.meta.url));
async function runChild(flags) {
  const { stdout } = await promisify(execFile)(process.execPath, [...flags, child], { maxBuffer: 64 << 20 });
  return JSON.parse(stdout);
}

const f32 = (bits) => new Float32Array(Uint32Array.from(bits).buffer);
const x = inputs();
const expected = {
  attention: attentionRef(x.q, x.k, x.v, { causal: true }).output,
  matmul: matmulRef(x.a, x.b),
};

// a (m,k) · b (k,n) in float64
function matmulRef(a, b) {
  const [m, k] = a.shape,
    n = b.shape[1];
  const c = new Float64Array(m * n);
  for (let i = 0; i < m; ++i)
    for (let p = 0; p < k; ++p) for (let j = 0; j < n; ++j) c[i * n + j] += a.data[i * k + p] * b.data[p * n + j];
  return c;
}

function assertNearReference(run, what) {
  for (const op of ['attention', 'matmul']) {
    const bound = TOL * Math.max(1, maxAbs(expected[op]));
    const diff = maxAbsDiff(f32(run[op]), expected[op]);
    assert.ok(diff <= bound, `${what} ${op}: max abs diff ${diff} > ${bound}`);
  }
}

describe('Node', () => {
  const runs = {};
  before(async () => {
    [runs.flag, runs.plain] = await Promise.all([runChild([FLAG]), runChild([])]);
  });

  test(`with ${FLAG} the loader picks relaxed SIMD, threaded or not`, () => {
    assert.equal(runs.flag.available, true);
    assert.deepEqual(buildOf(runs.flag.auto[1].backend), {
      threads: 1,
      isa: 'relaxed-simd',
    });
    assert.deepEqual(buildOf(runs.flag.auto[2].backend), {
      threads: 2,
      isa: 'relaxed-simd',
    });
  });

  test('without the flag it picks SIMD128, and asking for relaxed SIMD is a RangeError', () => {
    assert.equal(runs.plain.available, false);
    assert.deepEqual(buildOf(runs.plain.auto[1].backend), { threads: 1, isa: 'simd128' });
    assert.deepEqual(buildOf(runs.plain.auto[2].backend), {
      threads: 2,
      isa: 'simd128',
    });
    assert.equal(runs.plain.askedRelaxed.error?.name, 'RangeError');
    assert.match(
      runs.plain.askedRelaxed.error.message,
      /^createAttention: isa 'relaxed-simd' is not supported by this WebAssembly engine \(Node 20 needs --experimental-wasm-relaxed-simd/,
    );
  });

  test('isa picks the build explicitly; wasmBinary alone keeps SIMD128', () => {
    assert.equal(runs.flag.simd128.backend.isa, 'simd128');
    assert.equal(runs.flag.askedRelaxed.backend?.isa, 'relaxed-simd');
    assert.equal(runs.flag.withBinary.backend?.isa, 'simd128', 'the bytes given are the SIMD128 build');
  });

  test('relaxed matmul fuses multiply and add where the CPU can; SIMD128 never does', () => {
    // FMA_PROBE's exact product sum is 2^-24; rounding the product first gives 0
    assert.equal(runs.flag.auto[1].fmaProbe, CPU_FUSES ? 2 ** -24 : 0);
    assert.equal(runs.flag.auto[2].fmaProbe, CPU_FUSES ? 2 ** -24 : 0);
    assert.equal(runs.flag.simd128.fmaProbe, 0);
    assert.equal(runs.plain.auto[1].fmaProbe, 0);
    assert.equal(FMA_PROBE.a.data[0] + FMA_PROBE.a.data[1] * FMA_PROBE.b.data[1], 2 ** -24, 'in float64');
  });

  test('every build computes the reference; 1 and 2 threads agree bitwise within a build', () => {
    for (const [name, run] of [
      ['relaxed', runs.flag.auto],
      ['simd128', runs.plain.auto],
    ]) {
      assertNearReference(run[1], `${name}, 1 thread`);
      assertNearReference(run[2], `${name}, 2 threads`);
      assert.deepEqual(run[2].attention, run[1].attention, `${name}: attention, 1 vs 2 threads`);
      assert.deepEqual(run[2].matmul, run[1].matmul, `${name}: matmul, 1 vs 2 threads`);
    }
    // the same SIMD128 build with or without the flag
    assert.deepEqual(runs.flag.simd128.matmul, runs.plain.auto[1].matmul);
  });

  test('isa option errors name the option and the choices', async () => {
    const { createAttention } = await import('../../../web/lib/index.js');
    await assert.rejects(createAttention({ isa: 'avx' }), {
      name: 'RangeError',
      message: "createAttention: isa must be one of auto, relaxed-simd, simd128, got 'avx'",
    });
    await assert.rejects(createAttention({ isa: 2 }), {
      name: 'TypeError',
      message: 'createAttention: isa must be one of auto, relaxed-simd, simd128, got the number 2',
    });
  });
});

// Neither Chromium's V8 nor Firefox's SpiderMonkey has a flag that turns relaxed SIMD off,
// so a browser without it is simulated: WebAssembly.validate answers false for the
// detection module (as such an engine would) and everything else runs as it is.
function withoutRelaxedSimd() {
  const validate = WebAssembly.validate;
  WebAssembly.validate = (bytes) => {
    const b = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes.buffer ?? bytes);
    for (let i = 0; i + 2 < b.length; ++i) if (b[i] === 0xfd && b[i + 1] === 0x85 && b[i + 2] === 0x02) return false;
    return validate(bytes);
  };
}

const plain = (o) => JSON.parse(JSON.stringify(o, (_, v) => (v instanceof Float32Array ? Array.from(v) : v)));

// The builds an ISA and thread count load, as the file names start
const BUILD = {
  'relaxed-simd': { 1: 'wasm_attention_relaxed_simd', 2: 'wasm_attention_relaxed_simd_mt' },
  simd128: { 1: 'wasm_attention_simd128', 2: 'wasm_attention_simd128_mt' },
};

describe('browsers', () => {
  let servers;
  before(async () => {
    servers = {
      isolated: await serveBlankPage({ port: 9601, isolation: true }),
      plain: await serveBlankPage({ port: 9621, isolation: false }),
    };
  });
  after(async () => {
    for (const s of Object.values(servers ?? {})) await s.close();
  });

  describeEngines('relaxed SIMD where the engine validates it', ({ engine, launch, gets }) => {
    const { isa } = gets;
    const threads = gets.threads ? 2 : 1;
    const backend = (isa, threads) => ({ threads, isa });
    let browser;
    let isolated; // the first test's results
    before(async () => {
      browser = await launchBrowser(engine, launch);
    });
    after(() => browser?.close());

    // In the page: what loads for 2 threads, the FMA probe, and the shared inputs' results, and
    // the package's files the page fetched (from the page's resource timing).
    async function runInPage(server, init) {
      const { page, errors } = await openPage(browser, server.url, { init });
      const result = await page.evaluate(
        async ({ probe, x }) => {
          const { createAttention } = await import('/lib/index.js');
          const { relaxedSimdAvailable } = await import('/lib/features.js');
          const attn = await createAttention({ threads: 2 });
          const t = ({ data, shape }) => ({ data: new Float32Array(data), shape });
          const bits = (f) => Array.from(new Uint32Array(f.buffer, f.byteOffset, f.length));
          const out = {
            available: relaxedSimdAvailable(),
            backend: attn.backend,
            fmaProbe: attn.matmul(t(probe.a), t(probe.b)).data[0],
            attention: bits(attn.attention(t(x.q), t(x.k), t(x.v), { causal: true }).output.data),
            matmul: bits(attn.matmul(t(x.a), t(x.b)).data),
            fetched: performance
              .getEntriesByType('resource')
              .map((e) => new URL(e.name).pathname)
              .filter((p) => p.startsWith('/lib/wasm/')),
          };
          attn.dispose();
          return out;
        },
        { probe: plain(FMA_PROBE), x: plain(x) },
      );
      assert.deepEqual(errors(), []);
      await page.close();
      return result;
    }
    // the build's .wasm, and no other build's files
    const assertFetched = (r, build) =>
      assert.ok(
        r.fetched.includes(`/lib/wasm/${build}.wasm`) && r.fetched.every((p) => p.startsWith(`/lib/wasm/${build}.`)),
        `fetched ${r.fetched.join(', ')}`,
      );

    test(`a cross-origin isolated page gets the ${isa} build${threads > 1 ? ', threaded' : ''}${isa === 'relaxed-simd' ? ', and fuses' : ''}`, async () => {
      const r = await runInPage(servers.isolated);
      assert.equal(r.available, isa === 'relaxed-simd');
      assert.deepEqual(buildOf(r.backend), backend(isa, threads));
      assert.equal(r.fmaProbe, isa === 'relaxed-simd' && CPU_FUSES ? 2 ** -24 : 0);
      assertNearReference(r, `${isa}, isolated page`);
      assertFetched(r, BUILD[isa][threads]);
      isolated = r;
    });

    test(`a plain page gets the single-thread ${isa} build, with the same bits`, async () => {
      const r = await runInPage(servers.plain);
      assert.deepEqual(buildOf(r.backend), backend(isa, 1));
      assertNearReference(r, `${isa}, plain page`);
      assertFetched(r, BUILD[isa][1]);
      assert.deepEqual(r.attention, isolated.attention, `attention: 1 thread vs ${threads}, bitwise`);
      assert.deepEqual(r.matmul, isolated.matmul, `matmul: 1 thread vs ${threads}, bitwise`);
    });

    if (isa === 'relaxed-simd')
      test('a browser without relaxed SIMD falls back to SIMD128 without error', async () => {
        const r = await runInPage(servers.isolated, withoutRelaxedSimd);
        assert.equal(r.available, false);
        assert.deepEqual(buildOf(r.backend), backend('simd128', threads));
        assert.equal(r.fmaProbe, 0);
        assertNearReference(r, 'simd128, isolated page');
        assertFetched(r, BUILD.simd128[threads]);
      });
  });
});
