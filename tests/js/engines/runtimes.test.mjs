// The package under Deno and Bun (the npm packages `deno` and `bun` ship their executables):
// each runtime's own test runner (`deno test -A`, `bun test`) runs a representative part of the
// Node suites as they are (API, errors, heads and caches, layers, the worker form, hostile
// inputs, and errors.test's checks that wasm memory does not leak), and
// tests/js/helpers/runtime_probe.mjs reports the build each runtime ends up on, checked against what it
// should get and against Node's own numbers. Each runtime's results go to
// tests/artifacts/runtimes.json (the runtime rows of web/docs/loading.md).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { buildOf } from '../helpers/backend_build.mjs';

const repo = fileURLToPath(new URL('../../../', import.meta.url));
const bin = (name) => fileURLToPath(new URL(`../../../node_modules/.bin/${name}`, import.meta.url));

// The node:test files both runtimes run as they are (about 30 s each on 2 cores).
const SUITES = [
  'api', // createAttention, attention, matmul, multi-head layers, 1 vs 2 threads bitwise
  'errors', // every error's class and message; no leaks in wasm memory; disposed instances
  'attention_heads', // attention on heads, 3-D and 4-D, GQA, masks, kv caches
  'mha_options', // layers with kvHeads, rotary, window, softcap; decoding over a kv cache
  'backward', // gradients of attention and of a layer, step()
  'half', // float16 tensors; Float16Array in and out (Node 20 has none)
  'sinks', // attention sinks: forward, caches, gradients, the layer
  'worker', // the worker form, its errors, and a process that exits on its own
  'out', // results written into the caller's arrays, direct and worker form
  'host_inputs', // arguments read once
  'host_reentry', // callers that dispose mid-call
  'properties', // property-based, against the float64 reference
].map((name) => `tests/js/package/${name}.test.mjs`);

// What each runtime should get from createAttention({ threads: 2 }): the engine's relaxed SIMD
// (Deno's V8 and Bun's JavaScriptCore both have it) and two threads.
const EXPECTED = {
  deno: { isa: 'relaxed-simd', threads: 2 },
  bun: { isa: 'relaxed-simd', threads: 2 },
};

// A run that has not ended after this long is stuck, not slow (a runtime's test run takes about
// 20 s of CPU; a loaded machine stretches it many times): it is killed and the test fails.
const HANG_MS = 20 * 60_000;

const RUNTIMES = {
  deno: { test: [bin('deno'), ['test', '-A', ...SUITES]], run: [bin('deno'), ['run', '-A']] },
  // --timeout: Bun's own limit is 5 s per test, which the slowest tests exceed on a loaded
  // machine (Node and Deno set none); HANG_MS, a guard against a hang only
  bun: {
    test: [bin('bun'), ['test', '--timeout', String(HANG_MS), ...SUITES.map((f) => `./${f}`)]],
    run: [bin('bun'), []],
  },
  node: { run: [process.execPath, []] },
};

// -> { code, stdout, stderr }, never rejecting on a non-zero exit
function exec(file, args, timeout) {
  return new Promise((resolve) => {
    // NO_COLOR: plain summaries to read
    const env = { ...process.env, NO_COLOR: '1' };
    execFile(file, args, { cwd: repo, env, timeout, maxBuffer: 64 << 20 }, (error, stdout, stderr) =>
      resolve({ code: error ? (error.code ?? error.signal) : 0, stdout, stderr }),
    );
  });
}

// The runner's closing counts: Deno's `ok | 9 passed (43 steps) | 0 failed`, Bun's ` 45 pass`
// and ` 0 fail` lines.
function counts(runtime, output) {
  if (runtime === 'deno') {
    const m = /(ok|FAILED) \| (\d+) passed(?: \((\d+) steps\))? \| (\d+) failed/.exec(output);
    return m && { passed: Number(m[3] ?? m[2]), failed: Number(m[4]) };
  }
  const passed = /^\s*(\d+) pass$/m.exec(output);
  const failed = /^\s*(\d+) fail$/m.exec(output);
  return passed && failed && { passed: Number(passed[1]), failed: Number(failed[1]) };
}

async function probe(runtime) {
  const [file, args] = RUNTIMES[runtime].run;
  const r = await exec(file, [...args, 'tests/js/helpers/runtime_probe.mjs'], HANG_MS);
  assert.equal(r.code, 0, `${runtime} exited with ${r.code}:\n${r.stderr.slice(-2000)}`);
  return JSON.parse(r.stdout.trim().split('\n').pop());
}

const record = {};
let nodeProbe; // Node's own report, asked once

// The two runtimes side by side: their suites wait on workers and child processes more than
// they compute.
describe('Deno and Bun', { concurrency: true }, () => {
  after(() => {
    mkdirSync(`${repo}tests/artifacts`, { recursive: true });
    writeFileSync(`${repo}tests/artifacts/runtimes.json`, `${JSON.stringify(record, null, 2)}\n`);
  });

  for (const runtime of ['deno', 'bun'])
    // a runtime not installed shows as skipped, with the reason, in the runner's closing lines
    describe(runtime, { skip: !existsSync(bin(runtime)) && `${bin(runtime)} is missing: run npm ci` }, () => {
      test(`${runtime}: the build it gets (ISA, threads), the same numbers as Node, the fallback`, async (t) => {
        nodeProbe ??= probe('node');
        const [node, p] = await Promise.all([nodeProbe, probe(runtime)]);
        record[runtime] = { ...record[runtime], version: p.version, backends: p.backends, fallback: p.fallback };
        const { isa, threads } = p.backends[2];
        t.diagnostic(`${runtime} ${p.version}: isa ${isa}, ${threads} threads`);
        assert.deepEqual({ isa, threads }, EXPECTED[runtime]);
        assert.deepEqual(buildOf(p.backends[1]), { isa, threads: 1 });
        assert.deepEqual(p.backends.worker, p.backends[2], 'the worker form gets the same build');
        assert.equal(p.bitwise, true, '1 and 2 threads give the same bits');
        // relaxed SIMD may fuse where Node's SIMD128 build rounds twice: close, not bitwise
        const difference = Math.abs(p.sums[2] - node.sums[2]);
        assert.ok(difference < 1e-3, `sum ${p.sums[2]}, Node's ${node.sums[2]}`);
        assert.deepEqual(buildOf(p.fallback), { isa, threads: 1 });
        assert.deepEqual(p.globalsChanged, []);
      });

      test(`${runtime}: its test runner passes the Node suites`, async (t) => {
        const [file, args] = RUNTIMES[runtime].test;
        const r = await exec(file, args, HANG_MS);
        const output = r.stdout + r.stderr;
        const c = counts(runtime, output);
        record[runtime] = { ...record[runtime], suites: SUITES, ...c };
        t.diagnostic(`${runtime}: ${c?.passed} passed, ${c?.failed} failed`);
        assert.equal(r.code, 0, `${runtime} exited with ${r.code}:\n${output.slice(-4000)}`);
        assert.ok(c && c.failed === 0 && c.passed >= 200, `counts ${JSON.stringify(c)}:\n${output.slice(-2000)}`);
      });
    });
});
