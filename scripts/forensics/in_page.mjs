// Runs a forensics measurement in a browser engine's page: Chromium (V8), Firefox
// (SpiderMonkey) or WebKitGTK's MiniBrowser (JavaScriptCore), through scripts/lib/browser.mjs, or in
// this process, and prints it.
//   inPage(engine, moduleUrl, exportName, arg) -> { engine, result }
//     serves the repository (cross-origin isolated, so SharedArrayBuffer and threads are there),
//     opens a blank page written into build/wasm/bench/, imports moduleUrl (a path from the
//     repository's root, '/scripts/forensics/x.mjs') there and returns what its export
//     exportName(arg) resolves to
//   argument(name, fallback)   the value after --name on the command line, else fallback
//   measureAndPrint({ moduleUrl, exportName, measureHere, format, options })
//     a forensics script's command line: with --browser ENGINE, exportName(options) in that
//     engine's page, else measureHere(options) in this process (Node or Bun); prints
//     format(engine, result, load), load the machine's load average before -> after, and with
//     --json the result as JSON
import { mkdir, writeFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { startServer } from '../serve.mjs';
import { launchBrowser, openPage } from '../lib/browser.mjs';

const repo = new URL('../../', import.meta.url);

export async function inPage(engine, moduleUrl, exportName, arg) {
  await mkdir(new URL('build/wasm/bench/', repo), { recursive: true });
  await writeFile(
    new URL('build/wasm/bench/blank.html', repo),
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>forensics</title></head><body></body></html>\n',
  );
  const server = await startServer({ port: 8700, quiet: true, root: repo.pathname });
  const browser = await launchBrowser(engine);
  try {
    const { page } = await openPage(browser, `${server.url}build/wasm/bench/blank.html`);
    // started here, polled below: a measurement outlasts WebDriver's script timeout
    await page.evaluate(
      ([url, name, a]) => {
        import(url)
          .then((m) => m[name](a))
          .then((result) => (window.forensics = { result, userAgent: navigator.userAgent }))
          .catch((e) => (window.forensics = { error: String(e?.stack ?? e) }));
      },
      [moduleUrl, exportName, arg],
    );
    await page.waitForFunction(() => Boolean(window.forensics), null, { timeout: 600000 });
    const out = await page.evaluate(() => window.forensics);
    if (out.error) throw new Error(out.error);
    return { engine: `${engine} (${out.userAgent})`, result: out.result };
  } finally {
    await browser.close();
    await server.close();
  }
}

export function argument(name, fallback) {
  const args = process.argv.slice(2);
  return args.includes(name) ? args[args.indexOf(name) + 1] : fallback;
}

const loadAverage = () =>
  loadavg()
    .map((x) => x.toFixed(1))
    .join(' ');

export async function measureAndPrint({ moduleUrl, exportName, measureHere, format, options }) {
  const before = loadAverage();
  const browserName = argument('--browser', null);
  let engine, result;
  if (browserName) {
    ({ engine, result } = await inPage(browserName, moduleUrl, exportName, options));
  } else {
    engine = process.versions.bun ? `Bun ${process.versions.bun} (JavaScriptCore)` : `Node ${process.version} (V8)`;
    result = await measureHere(options);
  }
  console.log(format(engine, result, `${before} -> ${loadAverage()}`));
  if (process.argv.includes('--json')) console.log(JSON.stringify({ engine, result }));
}
