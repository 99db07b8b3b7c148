// The worker form's round trip for a small call (attention, q, k, v [16,16], causal), of two or
// more built copies of the package side by side, against the limit of any worker: a bare worker
// echoing a message of the same three arrays. Every build runs in ONE process (Node) or ONE
// page (a browser), its calls interleaved with the others' round by round, so the machine's load
// falls on all alike. Per engine and build: the median over rounds of the µs per call (each
// round `calls` awaited calls, one thread), and the echo's time as % of it.
//
//   node scripts/forensics/worker_call.mjs --build new=/work/main --build old=/tmp/old \
//     [--engines node,chromium,firefox,webkit] [--rounds 21] [--calls 200] [--warm-ms 1500]
//
// --build LABEL=DIR: a checkout whose web/lib/ is built, or a web/lib folder itself.
import { existsSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

// Self-contained (a browser gets it as text). arg: { libs: [[label, url]], rounds, calls, warmMs }
// -> { label: µs per call } with 'echo (limit)'.
export async function measure({ libs, rounds, calls, warmMs }) {
  const forms = [];
  for (const [label, url] of libs) {
    const lib = await import(url);
    const attn = await lib.createAttention({ worker: true, threads: 1 });
    const t = (s) =>
      lib.tensor(
        Float32Array.from({ length: 256 }, (_, i) => Math.sin(i * s)),
        [16, 16],
      );
    const [q, k, v] = [t(1), t(2), t(3)];
    forms.push({ label, run: () => attn.attention(q, k, v, { causal: true }), dispose: () => attn.dispose() });
  }
  let post;
  let answered;
  if (globalThis.process?.versions?.node) {
    const { Worker } = await import('node:worker_threads');
    const code =
      "require('node:worker_threads').parentPort.on('message', (m) => require('node:worker_threads').parentPort.postMessage({ output: m.q }));";
    const echo = new Worker(code, { eval: true });
    echo.on('message', (m) => answered(m));
    post = (m) => echo.postMessage(m);
  } else {
    const code = 'onmessage = (e) => postMessage({ output: e.data.q });';
    const echo = new Worker(URL.createObjectURL(new Blob([code], { type: 'text/javascript' })));
    echo.onmessage = (e) => answered(e.data);
    post = (m) => echo.postMessage(m);
  }
  const arrays = () => ({ q: new Float32Array(256), k: new Float32Array(256), v: new Float32Array(256) });
  forms.push({ label: 'echo (limit)', run: () => new Promise((r) => ((answered = r), post(arrays()))) });
  for (const f of forms) for (const end = performance.now() + warmMs; performance.now() < end;) await f.run();
  const times = Object.fromEntries(forms.map((f) => [f.label, []]));
  for (let r = 0; r < rounds; r++) {
    for (const f of r % 2 ? forms : [...forms].reverse()) {
      const t0 = performance.now();
      for (let i = 0; i < calls; i++) await f.run();
      times[f.label].push(((performance.now() - t0) / calls) * 1000);
    }
  }
  for (const f of forms) await f.dispose?.();
  const median = (a) => [...a].sort((x, y) => x - y)[a.length >> 1];
  return Object.fromEntries(Object.entries(times).map(([label, a]) => [label, median(a)]));
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { values: args } = parseArgs({
    options: {
      build: { type: 'string', multiple: true },
      engines: { type: 'string', default: 'node,chromium' },
      rounds: { type: 'string', default: '21' },
      calls: { type: 'string', default: '200' },
      'warm-ms': { type: 'string', default: '1500' },
    },
  });
  if (!args.build?.length) throw new Error('give one or more --build LABEL=DIR');
  const builds = args.build.map((b) => {
    const [label, dir] = b.split('=');
    const lib = existsSync(join(resolve(dir), 'index.js')) ? resolve(dir) : join(resolve(dir), 'web/lib');
    if (!existsSync(join(lib, 'wasm'))) throw new Error(`${lib}: not built (no wasm/)`);
    return { label, lib };
  });
  const arg = { rounds: Number(args.rounds), calls: Number(args.calls), warmMs: Number(args['warm-ms']) };
  const load = () => loadavg()[0].toFixed(1);
  console.log(`CPU ${cpus()[0].model} x${cpus().length}; 1 thread; ${arg.rounds} rounds of ${arg.calls} calls`);
  for (const engine of args.engines.split(',')) {
    const before = load();
    let result;
    if (engine === 'node') {
      result = await measure({
        ...arg,
        libs: builds.map((b) => [b.label, pathToFileURL(join(b.lib, 'index.js')).href]),
      });
    } else {
      const { launchBrowser, openPage } = await import('../lib/browser.mjs');
      const { startServer } = await import('../serve.mjs');
      const root = mkdtempSync(join(tmpdir(), 'worker-call-'));
      writeFileSync(
        join(root, 'index.html'),
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>worker call</title></head></html>\n',
      );
      builds.forEach((b, i) => symlinkSync(b.lib, join(root, `b${i}`)));
      const server = await startServer({ port: 9571, isolation: true, quiet: true, root });
      const browser = await launchBrowser(engine);
      try {
        const { page } = await openPage(browser, server.url);
        result = await page.evaluate(measure, { ...arg, libs: builds.map((b, i) => [b.label, `/b${i}/index.js`]) });
      } finally {
        await browser.close();
        await server.close();
        rmSync(root, { recursive: true, force: true });
      }
    }
    const limit = result['echo (limit)'];
    console.log(`== ${engine}; load ${before} -> ${load()}`);
    for (const [label, us] of Object.entries(result))
      console.log(
        `  ${label.padEnd(16)} ${us.toFixed(1).padStart(8)} µs/call  echo = ${((100 * limit) / us).toFixed(0)} %`,
      );
  }
  process.exit(0);
}
