// The package in real browsers: Chromium, Firefox and WebKitGTK (as shipped, and with
// SharedArrayBuffer on as in Safari) each load it from the dev server with and without
// cross-origin isolation, pick the threaded build only where the engine can run it and the
// engine's instruction set (ENGINE_GETS), and compute the same numbers either way; bad input
// gets the same error classes and messages as in Node.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { ENGINES, launchBrowser, openPage, serveBlankPage } from '../../../scripts/lib/browser.mjs';
import { describeEngines, WEBKIT_AS_SAFARI } from '../helpers/engines.mjs';
import { buildOf } from '../helpers/backend_build.mjs';
import { badCalls } from '../helpers/error_cases.mjs';

const servers = {};
let inNode; // badCalls' results in Node
before(async () => {
  inNode = await badCalls(await import('../../../web/lib/index.js'));
  servers.isolated = await serveBlankPage({ port: 9301, isolation: true });
  servers.plain = await serveBlankPage({ port: 9321, isolation: false });
});
after(async () => {
  for (const s of Object.values(servers)) await s.close();
});

test('in Node, each bad call throws an Error of its class and leaves the package as it was', () => {
  for (const { call, error, instanceOfError } of inNode.results) {
    assert.match(
      error ?? '',
      /^(TypeError|RangeError): (attention|matmul|multiHeadAttention\.\w+|createAttention|tensor): /,
      call,
    );
    assert.ok(instanceOfError, call);
  }
  assert.ok(inNode.unchanged, 'a correct call after the bad ones gave other bits, or a weight changed');
});

// In the page: load the package, ask for 2 threads, run the seed's worked example
// (X = [1 0; 0 1; 1 1], W_K = [1 1; 0 1], identity W_Q, W_V, W_O) and a larger attention.
async function runInPage(page) {
  return page.evaluate(async () => {
    const { createAttention } = await import('/lib/index.js');
    const attn = await createAttention({ threads: 2 });
    const t = (data, shape) => ({ data: new Float32Array(data), shape });
    const eye = t([1, 0, 0, 1], [2, 2]);
    const mha = attn.multiHeadAttention({
      dModel: 2,
      heads: 1,
      weights: { wq: eye, wk: t([1, 1, 0, 1], [2, 2]), wv: eye, wo: eye },
    });
    const worked = mha.forward(t([1, 0, 0, 1, 1, 1], [3, 2]), { trace: true });
    const n = 200,
      d = 32;
    const big = t(
      Array.from({ length: n * d }, (_, i) => Math.sin(i * 0.37)),
      [n, d],
    );
    const bigOut = attn.attention(big, big, big, { causal: true }).output.data;
    // What threads need of the engine: a shared memory that a worker can be sent.
    let sharesMemory = true;
    try {
      new MessageChannel().port1.postMessage(new WebAssembly.Memory({ shared: true, initial: 1, maximum: 1 }));
    } catch {
      sharesMemory = false;
    }
    return {
      isolated: globalThis.crossOriginIsolated,
      sharesMemory,
      backend: attn.backend,
      output: Array.from(worked.output.data),
      scores: Array.from(worked.heads[0].scores.data),
      bigSum: bigOut.reduce((a, b) => a + b, 0),
    };
  });
}

// The GEMM micro-kernel gemm_select.cpp picks in each engine for the ISA it gets by default
// (scripts/LAB.md, "The GEMM micro-kernel per engine"): JavaScriptCore's SIMD128 the kernel on
// broadcast a panels, V8 15's the 4x8 unrolled by 2, relaxed SIMD's 6x8 in V8 15 and SpiderMonkey.
const KERNEL = {
  chromium: { simd128: 'f32_gemm_4x8_k2_simd128', 'relaxed-simd': 'f32_gemm_6x8_relaxed_simd' },
  firefox: { simd128: 'f32_gemm_4x8_simd128', 'relaxed-simd': 'f32_gemm_6x8_relaxed_simd' },
  webkit: { simd128: 'f32_gemm_4x8_bcast_simd128' },
};

// worked by hand in tests/cpp/worked_example_test.cpp
const WORKED_OUTPUT = [0.80222419, 0.59888791, 0.75174492, 0.75174492, 0.85997076, 0.71600459];

describeEngines(
  'the package in a browser',
  ({ engine, launch, gets }) => {
    const { isa } = gets;
    const threads = gets.threads ? 2 : 1;
    let browser;
    const results = {};
    before(async () => {
      browser = await launchBrowser(engine, launch);
    });
    after(() => browser?.close());

    test(`a cross-origin isolated page gets ${gets.threads ? 'the threaded build' : 'one thread, without error'} (${isa}, ${threads === 1 ? '1 thread' : `${threads} threads`})`, async () => {
      const { page, errors } = await openPage(browser, servers.isolated.url);
      results.isolated = await runInPage(page);
      assert.equal(results.isolated.isolated, true);
      assert.equal(
        results.isolated.sharesMemory,
        gets.threads,
        `${engine} ${gets.threads ? 'cannot' : 'can'} send a shared WebAssembly.Memory to a worker: ENGINE_GETS is out of date`,
      );
      assert.deepEqual(buildOf(results.isolated.backend), { threads, isa });
      assert.deepEqual(errors(), []);
      await page.close();
    });

    let plainPage; // kept open for the bad calls below (a page load fewer)
    test(`a plain static page falls back to one thread without error (${isa}, 1 thread)`, async () => {
      plainPage = await openPage(browser, servers.plain.url);
      results.plain = await runInPage(plainPage.page);
      assert.equal(results.plain.isolated, false);
      assert.deepEqual(buildOf(results.plain.backend), { threads: 1, isa });
      assert.deepEqual(plainPage.errors(), []);
    });

    test(`the GEMM kernel picked for ${engine} on ${isa}`, () => {
      for (const r of [results.isolated, results.plain]) assert.equal(r.backend.gemmKernel, KERNEL[engine][isa]);
    });

    test('both builds compute the worked example and agree bitwise', () => {
      for (const r of [results.isolated, results.plain]) {
        assert.deepEqual(r.scores, [1, 0, 1, 1, 1, 2, 2, 1, 3]);
        r.output.forEach((x, i) =>
          assert.ok(Math.abs(x - WORKED_OUTPUT[i]) < 1e-6, `output[${i}] = ${x}, expected ${WORKED_OUTPUT[i]}`),
        );
      }
      assert.equal(results.isolated.bigSum, results.plain.bigSum);
    });

    // The pthread worker's script swapped, through locateFile, for one that throws at once.
    test(
      "an isolated page whose threads' workers fail to start gets one thread, a warning, no uncaught error",
      {
        skip: !gets.threads && 'this engine gets one thread anyway',
      },
      async () => {
        const { page, errors, warnings } = await openPage(browser, servers.isolated.url);
        const backend = await page.evaluate(async () => {
          const { createAttention } = await import('/lib/index.js');
          const script = new Blob(["throw new Error('this worker cannot start')"], { type: 'text/javascript' });
          const broken = URL.createObjectURL(script);
          const locateFile = (name) => (name.endsWith('.worker.js') ? broken : `/lib/wasm/${name}`);
          const attn = await createAttention({ threads: 2, locateFile });
          await new Promise((resolve) => setTimeout(resolve, 200)); // any late error from the worker
          return attn.backend;
        });
        assert.deepEqual(buildOf(backend), { threads: 1, isa });
        assert.deepEqual(errors(), []);
        assert.ok(
          warnings().some((w) => /running on one thread/.test(w)),
          `warnings: ${JSON.stringify(warnings())}`,
        );
        await page.close();
      },
    );

    // Float16Array: Chromium, Firefox and WebKitGTK all have it
    test('a Float16Array in gives a Float16Array out, the float32 call rounded by the engine', async () => {
      const r = await plainPage.page.evaluate(async () => {
        const F16 = globalThis.Float16Array;
        if (typeof F16 !== 'function') return null;
        const { createAttention, tensor } = await import('/lib/index.js');
        const attn = await createAttention({ threads: 1 });
        const values = Float32Array.from({ length: 6 * 8 }, (_, i) => Math.sin(i * 0.61));
        const half = tensor(new F16(values), [6, 8]);
        const widened = tensor(new Float32Array(half.data), [6, 8]);
        const out = attn.attention(half, half, half, { causal: true }).output;
        const want = new F16(attn.attention(widened, widened, widened, { causal: true }).output.data);
        attn.dispose();
        return {
          type: Object.prototype.toString.call(out.data),
          dtype: out.dtype,
          equal: out.data.every((x, i) => Object.is(x, want[i])),
        };
      });
      assert.notEqual(r, null, `${engine} has no Float16Array`);
      assert.deepEqual(r, { type: '[object Float16Array]', dtype: 'float16', equal: true });
    });

    test('bad input gets the error classes and messages it gets in Node, and changes nothing', async () => {
      const { page, errors } = plainPage;
      const inPage = await page.evaluate(
        async (source) => (0, eval)(`(${source})`)(await import('/lib/index.js')),
        badCalls.toString(),
      );
      assert.deepEqual(inPage, inNode);
      assert.deepEqual(errors(), []);
      await page.close();
    });
  },
  [...ENGINES, WEBKIT_AS_SAFARI],
);
