// gemm_kernels.mjs in a browser engine's page: Chromium (V8), Firefox (SpiderMonkey) or
// WebKitGTK's MiniBrowser (JavaScriptCore), Debian's builds, never downloaded.
//
//   node scripts/forensics/gemm_kernels_browser.mjs --browser chromium|firefox|webkit
//        [--isa relaxed-simd] [--rounds N] [--kernels NAME,NAME...] [--baseline DIR] [--json]
//
// Builds and serves the repository's build/wasm/bench/ (the bench-only module with gemmKernelGflops),
// scripts/forensics/ and scripts/bench/ (whose peak probe gemm_kernels.mjs imports; the probe
// modules themselves are assembled here) from a local server, opens a page that runs
// measureGemmKernels on the single-thread module and prints its report.
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { buildForensics } from './bench_modules.mjs';
import { formatGemmKernels } from './gemm_kernels.mjs';
import { probeModule } from '../bench/peak_probe.mjs';

const args = process.argv.slice(2);
const arg = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : fallback;
};
const browserName = arg('--browser', 'chromium');
const isa = arg('--isa', 'simd128');
const rounds = Number(arg('--rounds', 7));
const baselineDir = arg('--baseline', null); // another checkout's web/lib/wasm/, served at /baseline/
const root = new URL('../../', import.meta.url);

const page = `<!doctype html><meta charset="utf-8"><title>gemm kernels</title><script type="module">
import { forensicsModule, measureGemmKernels } from '/scripts/forensics/gemm_kernels.mjs';
import { benchModule } from '/scripts/forensics/bench_modules.mjs';
const bytes = async (url) => new Uint8Array(await (await fetch(url)).arrayBuffer());
try {
  const base = ${JSON.stringify(isa === 'relaxed-simd' ? 'wasm_attention_relaxed_simd' : 'wasm_attention_simd128')};
  const { factory, wasmBinary } = await benchModule(...forensicsModule(${JSON.stringify(isa)}));
  const fmaBytes = await bytes('/peak-fma.wasm');
  const baseline = ${baselineDir ? 'true' : 'false'} ? {
    factory: (await import('/baseline/' + base + '.mjs')).default(undefined, undefined),
    wasmBinary: await bytes('/baseline/' + base + '.wasm') } : null;
  window.kernelsResult = await measureGemmKernels({
    factory, wasmBinary,
    peakBytes: await bytes('/peak.wasm'), fmaBytes: WebAssembly.validate(fmaBytes) ? fmaBytes : null,
    rounds: ${rounds}, baseline, shape: ${JSON.stringify(arg('--shape', null)?.split(',').map(Number) ?? null)}, only: ${JSON.stringify(arg('--kernels', null)?.split(',') ?? null)}, log: (text) => console.log(text) });
  window.kernelsResult.userAgent = navigator.userAgent;
} catch (e) { window.kernelsError = String(e && e.stack || e); }
</script>`;

await buildForensics();
const peak = Buffer.from(await probeModule());
const peakFma = Buffer.from(await probeModule({ fma: true }));
const types = { '.mjs': 'text/javascript', '.js': 'text/javascript', '.wasm': 'application/wasm' };
const server = createServer(async (req, res) => {
  const path = new URL(req.url, 'http://x').pathname;
  const send = (body, type) => {
    res.writeHead(200, {
      'content-type': type,
      'cross-origin-opener-policy': 'same-origin',
      'cross-origin-embedder-policy': 'require-corp',
    });
    res.end(body);
  };
  try {
    if (path === '/') return send(page, 'text/html');
    if (path === '/peak.wasm') return send(peak, types['.wasm']);
    if (path === '/peak-fma.wasm') return send(peakFma, types['.wasm']);
    if (baselineDir && /^\/baseline\/[\w.-]+$/.test(path)) {
      return send(await readFile(`${baselineDir}/${path.slice(10)}`), types[path.slice(path.lastIndexOf('.'))]);
    }
    if (!/^\/(build\/wasm\/bench|scripts\/bench|scripts\/forensics)\/[\w.-]+$/.test(path))
      throw new Error('not served');
    send(await readFile(new URL(path.slice(1), root)), types[path.slice(path.lastIndexOf('.'))] ?? 'text/plain');
  } catch {
    res.writeHead(404).end();
  }
});
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const url = `http://127.0.0.1:${server.address().port}/`;

// Waits for the page's result: polls evaluate() (a function of the page's state).
async function poll(evaluate) {
  for (;;) {
    const state = await evaluate();
    if (state) return state;
    await new Promise((r) => setTimeout(r, 500));
  }
}
const state = `return window.kernelsError ? { error: window.kernelsError } : window.kernelsResult ? { result: window.kernelsResult } : null`;

async function viaPlaywright() {
  const { chromium } = await import('playwright-core');
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu'],
  });
  try {
    const p = await browser.newPage();
    await p.goto(url);
    return { version: `Chromium ${browser.version()}`, ...(await poll(() => p.evaluate(new Function(state)))) };
  } finally {
    await browser.close();
  }
}

async function viaPuppeteerFirefox() {
  const { default: puppeteer } = await import('puppeteer-core');
  const browser = await puppeteer.launch({
    browser: 'firefox',
    executablePath: '/usr/bin/firefox-esr',
    headless: true,
  });
  try {
    const p = await browser.newPage();
    await p.goto(url);
    return { version: await browser.version(), ...(await poll(() => p.evaluate(new Function(state)))) };
  } finally {
    await browser.close();
  }
}

// WebKitGTK: WebKitWebDriver under xvfb-run, spoken to over W3C WebDriver's HTTP protocol.
async function viaWebKitWebDriver() {
  const port = 4400 + Math.floor(Math.random() * 500);
  const driver = spawn('xvfb-run', ['-a', 'WebKitWebDriver', `--port=${port}`], { stdio: 'ignore', detached: true });
  const call = async (method, path, body) => {
    const r = await fetch(`http://127.0.0.1:${port}${path}`, {
      method,
      headers: { 'content-type': 'application/json' },
      body: body && JSON.stringify(body),
    });
    return (await r.json()).value;
  };
  try {
    let session;
    for (let i = 0; !session; ++i) {
      try {
        session = await call('POST', '/session', {
          capabilities: {
            alwaysMatch: {
              'webkitgtk:browserOptions': {
                binary: '/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser',
                args: ['--automation'],
              },
            },
          },
        });
      } catch (e) {
        if (i > 40) throw e;
        await new Promise((r) => setTimeout(r, 250));
      }
    }
    const id = session.sessionId;
    const version = `WebKitGTK ${session.capabilities.browserVersion}`;
    try {
      await call('POST', `/session/${id}/url`, { url });
      return {
        version,
        ...(await poll(() => call('POST', `/session/${id}/execute/sync`, { script: state, args: [] }))),
      };
    } finally {
      await call('DELETE', `/session/${id}`);
    }
  } finally {
    process.kill(-driver.pid);
  }
}

try {
  const drive = { chromium: viaPlaywright, firefox: viaPuppeteerFirefox, webkit: viaWebKitWebDriver }[browserName];
  if (!drive) throw new Error(`--browser: chromium, firefox or webkit, not ${browserName}`);
  const { version, result, error } = await drive();
  if (error) throw new Error(error);
  console.log(formatGemmKernels(version, result));
  if (args.includes('--json')) console.log(JSON.stringify({ engine: version, ...result }));
} finally {
  server.close();
}
