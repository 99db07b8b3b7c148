// Browsers for the tests, the benchmark and the forensics tools, one API for three engines, all
// from Debian (none downloaded). The tests' per-engine suites (describeEngines, ENGINE_GETS,
// WEBKIT_AS_SAFARI) are tests/js/helpers/engines.mjs.
//   'chromium'  V8             /usr/bin/chromium, driven by playwright-core
//   'firefox'   SpiderMonkey   /usr/bin/firefox-esr, driven by puppeteer-core over WebDriver BiDi
//   'webkit'    JavaScriptCore WebKitGTK's MiniBrowser, driven by WebKitWebDriver (classic W3C
//                              WebDriver: HTTP + JSON, spoken by the small client below) inside
//                              a private Xvfb display, as MiniBrowser has no headless mode
//
// API
//   ENGINES                      ['chromium', 'firefox', 'webkit']
//   engineMissing(engine)        null when the engine's programs are installed, else a sentence
//                                naming what is missing (for a test's `skip`;
//                                scripts/build/setup.sh installs them all)
//   launchBrowser(engine, { env })
//                                -> browser, with close(). Chromium's is playwright's Browser;
//                                the others carry only newPage() and close().
//                                env (WebKit): more environment for its processes, such as
//                                JavaScriptCore's options (JSC_useSharedArrayBuffer: 'true').
//                                close() ends every process the launch started (browser,
//                                driver, Xvfb); so does the test process's exit, if a test
//                                never gets to close().
//   engineOf(browser)            'chromium' | 'firefox' | 'webkit'
//   openPage(browser, url, { init })
//                                -> { page, errors, warnings }: a new page at url; errors()
//                                lists every console.error and uncaught error (exceptions and
//                                unhandled rejections) of the page so far, as
//                                'console.error: TEXT' or 'uncaught: MESSAGE'; warnings() the
//                                text of each console.warn. init (a function) runs in the page
//                                before its own scripts (Chromium and Firefox; WebDriver without
//                                BiDi cannot, so WebKit throws).
//   freePort() -> port           a TCP port free on 127.0.0.1 when asked (another process may
//                                take it before the caller does: a server given it moves on)
//   serveBlankPage({ port, isolation })
//                                scripts/serve.mjs's startServer for an empty page at / and the
//                                package at /lib/ (where the dev server has it): for tests of
//                                the package, which need no tutorial page loading beside them
//   page, in every engine        goto(url), evaluate(fn, arg), waitForFunction(fn, arg,
//                                { timeout }), click(selector), fill(selector, text),
//                                check(selector), uncheck(selector), keyboard.press(key),
//                                close() — Playwright's names and meanings. Chromium's page is
//                                playwright's Page and has the rest of its API too; code that
//                                runs on every engine keeps to this list.
//
// WebKit specifics: evaluate() results travel as JSON (undefined becomes null, typed arrays
// are not kept); errors and warnings are caught by a hook the driver puts into the page after
// each load (it wraps console.error and console.warn and listens for 'error' and
// 'unhandledrejection') and are read back with every evaluate(), so what the page reports
// while it loads, before the hook is in, is missed.
import { spawn } from 'node:child_process';
import { accessSync, constants, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { chromium } from 'playwright-core';
import puppeteer from 'puppeteer-core';

import { startServer } from '../serve.mjs';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const FIREFOX = process.env.FIREFOX_PATH ?? '/usr/bin/firefox-esr';
export const MINIBROWSER = process.env.MINIBROWSER_PATH ?? '/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser';

export const ENGINES = ['chromium', 'firefox', 'webkit'];

// engine -> [program, Debian package that has it]
const PROGRAMS = {
  chromium: [[CHROMIUM, 'chromium']],
  firefox: [[FIREFOX, 'firefox-esr']],
  webkit: [
    ['WebKitWebDriver', 'webkit2gtk-driver'],
    [MINIBROWSER, 'webkit2gtk-driver'],
    ['Xvfb', 'xvfb'],
  ],
};

const executable = (program) =>
  (program.includes('/') ? [program] : (process.env.PATH ?? '').split(delimiter).map((d) => join(d, program))).some(
    (path) => {
      try {
        accessSync(path, constants.X_OK);
        return true;
      } catch {
        return false;
      }
    },
  );

export function engineMissing(engine) {
  if (!PROGRAMS[engine])
    throw new RangeError(`engineMissing: engine must be one of ${ENGINES.join(', ')}, got '${engine}'`);
  const absent = PROGRAMS[engine].filter(([program]) => !executable(program));
  if (absent.length === 0) return null;
  const programs = absent.map(([program]) => program).join(', ');
  const packages = [...new Set(absent.map(([, pkg]) => pkg))].join(', ');
  return `${engine}: ${programs} not installed (Debian ${packages}; scripts/build/setup.sh installs them)`;
}

const engines = new WeakMap(); // browser -> engine
export const engineOf = (browser) => engines.get(browser);

// A folder with index.html (empty) and lib -> web/lib, made once per test process.
let blankSite;
export function serveBlankPage({ port, isolation = true } = {}) {
  if (!blankSite) {
    blankSite = mkdtempSync(join(tmpdir(), 'wasm-attention-blank-'));
    process.on('exit', () => rmSync(blankSite, { recursive: true, force: true }));
    writeFileSync(
      join(blankSite, 'index.html'),
      '<!doctype html><html lang="en"><head><meta charset="utf-8" /><link rel="icon" href="data:," />' +
        '<title>wasm-attention tests</title></head><body></body></html>\n',
    );
    symlinkSync(fileURLToPath(new URL('../../web/lib', import.meta.url)), join(blankSite, 'lib'));
  }
  return startServer({ port, isolation, quiet: true, root: blankSite });
}

export async function launchBrowser(engine = 'chromium', options = {}) {
  const missing = engineMissing(engine);
  if (missing) throw new Error(`launchBrowser: ${missing}`);
  const browser = await { chromium: launchChromium, firefox: launchFirefox, webkit: launchWebKit }[engine](options);
  engines.set(browser, engine);
  return browser;
}

export async function openPage(browser, url, { init } = {}) {
  const engine = engineOf(browser);
  if (engine === 'webkit') {
    if (init) throw new Error('openPage: init scripts need WebDriver BiDi, which WebKitWebDriver lacks');
    const page = await browser.newPage();
    await page.goto(url);
    return { page, errors: () => page.errors, warnings: () => page.warnings };
  }
  // Chromium (playwright) and Firefox (puppeteer) report console messages and uncaught errors
  // alike, but for console.warn's type: 'warning' in playwright, 'warn' in puppeteer.
  const page = await browser.newPage();
  const problems = [];
  const warnings = [];
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console.error: ${m.text()}`);
    if (m.type() === 'warning' || m.type() === 'warn') warnings.push(m.text());
  });
  page.on('pageerror', (e) => {
    // (Firefox's message starts with the error's name, Chromium's does not: without it in both)
    const named = e.message.startsWith(`${e.name}: `);
    problems.push(`uncaught: ${named ? e.message.slice(e.name.length + 2) : e.message}`);
  });
  if (init) await (engine === 'firefox' ? page.evaluateOnNewDocument(init) : page.addInitScript(init));
  await page.goto(url);
  return { page, errors: () => problems, warnings: () => warnings };
}

function launchChromium() {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    // --no-sandbox: we run as root; --disable-gpu: no GPU here; --disable-background-networking:
    // the machine has no network beyond localhost, and Chromium's background calls fail loudly.
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
}

// Firefox: puppeteer's Page under Playwright's names for the methods that differ.
async function launchFirefox() {
  const browser = await puppeteer.launch({ browser: 'firefox', executablePath: FIREFOX, headless: true });
  const newPage = async () => {
    const page = await browser.newPage();
    const isChecked = (selector) => page.$eval(selector, (e) => e.checked);
    return Object.assign(page, {
      waitForFunction: (fn, arg, { timeout = 30000 } = {}) => page.mainFrame().waitForFunction(fn, { timeout }, arg),
      fill: (selector, text) => page.locator(selector).fill(text),
      check: async (selector) => (await isChecked(selector)) || page.click(selector),
      uncheck: async (selector) => (await isChecked(selector)) && page.click(selector),
    });
  };
  return { newPage, close: () => browser.close(), puppeteer: browser };
}

// ---- WebKitGTK: Xvfb + WebKitWebDriver + MiniBrowser, over W3C WebDriver --------------------

// Processes this test process started and has not ended yet: killed when it exits, and when a
// signal ends it (the signal then goes on to its other listeners, or kills it as it would have).
const children = new Set();
const killChildren = () => {
  for (const child of children) child.kill('SIGKILL');
};
let watching = false;
function watchExit() {
  if (watching) return;
  watching = true;
  process.on('exit', killChildren);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'])
    process.once(signal, () => {
      killChildren();
      if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
    });
}

function start(program, args, options) {
  watchExit();
  const child = spawn(program, args, options);
  children.add(child);
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.once('exit', () => children.delete(child));
  child.once('error', () => children.delete(child));
  // SIGTERM, then SIGKILL if it has not gone within 5 s
  child.stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
  };
  return child;
}

// Xvfb on the first free display: -displayfd writes the number it took to fd 3.
async function startXvfb() {
  const xvfb = start('Xvfb', ['-displayfd', '3', '-nolisten', 'tcp', '-screen', '0', '1280x1024x24'], {
    stdio: ['ignore', 'ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  xvfb.stderr.on('data', (d) => (stderr += d));
  const display = await new Promise((resolve, reject) => {
    let out = '';
    xvfb.stdio[3].on('data', (d) => {
      out += d;
      if (out.includes('\n')) resolve(out.trim());
    });
    xvfb.once('exit', (code) => reject(new Error(`Xvfb exited (${code}) before it took a display: ${stderr}`)));
  });
  return { xvfb, display: `:${display}` };
}

export const freePort = () =>
  new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });

// WebKitWebDriver on a free port, once it answers /status; on another port if one it was
// given was taken in the meantime.
async function startDriver(display, env, tries = 3) {
  const port = await freePort();
  const driver = start('WebKitWebDriver', [`--port=${port}`], {
    env: { ...process.env, ...env, DISPLAY: display },
    stdio: 'ignore',
  });
  const url = `http://127.0.0.1:${port}`;
  for (const t0 = Date.now(); ;) {
    if (driver.exitCode !== null) {
      if (tries > 1) return startDriver(display, env, tries - 1);
      throw new Error(`WebKitWebDriver exited (${driver.exitCode}) on port ${port}`);
    }
    try {
      if ((await fetch(`${url}/status`)).ok) return { driver, url };
    } catch {
      // not listening yet
    }
    if (Date.now() - t0 > 10000) {
      await driver.stop();
      throw new Error(`WebKitWebDriver did not answer on port ${port} within 10 s`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function launchWebKit({ env = {} } = {}) {
  let xvfb, driver;
  try {
    let display;
    ({ xvfb, display } = await startXvfb());
    let url;
    ({ driver, url } = await startDriver(display, env));
    const session = await webDriver(url, 'POST', '/session', {
      capabilities: {
        alwaysMatch: {
          // --automation: MiniBrowser accepts the driver's control
          'webkitgtk:browserOptions': { binary: MINIBROWSER, args: ['--automation'] },
        },
      },
    });
    const base = `${url}/session/${session.sessionId}`;
    const browser = new WebKitBrowser(base, await webDriver(base, 'GET', '/window'), async () => {
      await driver.stop();
      await xvfb.stop();
    });
    // evaluate() waits for promises as long as the test lets it (the driver's default is 30 s)
    await browser.command(null, 'POST', '/timeouts', { script: 10 * 60 * 1000 });
    return browser;
  } catch (e) {
    await driver?.stop();
    await xvfb?.stop();
    throw e;
  }
}

async function webDriver(base, method, path, body) {
  const response = await fetch(base + path, {
    method,
    headers: { 'content-type': 'application/json; charset=utf-8' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const { value } = await response.json();
  if (!response.ok) throw new Error(`WebKitWebDriver ${method} ${path}: ${value?.error}: ${value?.message}`);
  return value;
}

// One MiniBrowser session; each page is a window (tab) of it. Commands run one at a time,
// each after switching to its page's window.
class WebKitBrowser {
  #base;
  #stop;
  #queue = Promise.resolve();
  #home; // the session's first window, which stays open (closing the last window ends the session)
  #current; // the window commands go to
  #closed = false;

  constructor(base, home, stop) {
    this.#base = base;
    this.#home = this.#current = home;
    this.#stop = stop;
  }

  // Runs method path body in the window `handle` (null: the first window) after earlier commands.
  command(handle, method, path, body) {
    handle ??= this.#home;
    const run = async () => {
      if (handle !== this.#current) {
        await webDriver(this.#base, 'POST', '/window', { handle });
        this.#current = handle;
      }
      const value = await webDriver(this.#base, method, path, body);
      if (method === 'DELETE' && path === '/window') this.#current = null;
      return value;
    };
    const result = this.#queue.then(run);
    this.#queue = result.catch(() => {});
    return result;
  }

  async newPage() {
    const { handle } = await this.command(null, 'POST', '/window/new', { type: 'tab' });
    return new WebKitPage(this, handle);
  }

  async close() {
    if (this.#closed) return;
    this.#closed = true;
    try {
      // ends the session with all its windows, after the commands before it, switching to none:
      // after a long run (a bench of ~8 minutes) the first window may be gone, and the switch
      // to it failed with "unknown error", losing the run's results
      await this.#queue.then(() => webDriver(this.#base, 'DELETE', ''));
    } catch {
      // the session's processes are stopped below either way
    } finally {
      await this.#stop();
    }
  }
}

// Puts the hook into the page (once) and returns what it caught since the last call:
// { errors, warnings } as openPage() reports them.
function drainConsole() {
  if (!window.__driverConsole) {
    const caught = (window.__driverConsole = { errors: [], warnings: [] });
    const text = (x) => (x instanceof Error ? x.message : String(x));
    const { error, warn } = console;
    console.error = function (...args) {
      caught.errors.push(`console.error: ${args.map(text).join(' ')}`);
      return error.apply(this, args);
    };
    console.warn = function (...args) {
      caught.warnings.push(args.map(text).join(' '));
      return warn.apply(this, args);
    };
    addEventListener('error', (e) =>
      caught.errors.push(`uncaught: ${e.error instanceof Error ? e.error.message : e.message}`),
    );
    addEventListener('unhandledrejection', (e) => caught.errors.push(`uncaught: ${text(e.reason)}`));
  }
  const { errors, warnings } = window.__driverConsole;
  return { errors: errors.splice(0), warnings: warnings.splice(0) };
}

// WebDriver key codes of the keys the tests press
const KEYS = { Enter: '\uE007', Tab: '\uE004', ArrowLeft: '\uE012', ArrowRight: '\uE014', Escape: '\uE00C' };

class WebKitPage {
  #browser;
  #handle;
  errors = [];
  warnings = [];

  constructor(browser, handle) {
    this.#browser = browser;
    this.#handle = handle;
    this.keyboard = {
      press: (key) => {
        const value = KEYS[key] ?? key;
        return this.#command('POST', '/actions', {
          actions: [
            {
              type: 'key',
              id: 'keyboard',
              actions: [
                { type: 'keyDown', value },
                { type: 'keyUp', value },
              ],
            },
          ],
        });
      },
    };
  }

  #command(method, path, body) {
    return this.#browser.command(this.#handle, method, path, body);
  }

  async goto(url) {
    await this.#command('POST', '/url', { url });
    await this.evaluate(() => null); // puts the console hook in
  }

  // fn(arg) in the page, awaited; its result as JSON. A throw in the page throws here.
  async evaluate(fn, arg) {
    const call = typeof fn === 'function' ? `(${fn})(arg)` : `(${fn})`;
    const script = `const [arg, done] = arguments;
      const drain = ${drainConsole};
      Promise.resolve()
        .then(() => ${call})
        .then((value) => done({ value, console: drain() }),
              (e) => done({ thrown: e instanceof Error ? e.name + ': ' + e.message : String(e), console: drain() }));`;
    const { value, thrown, console } = await this.#command('POST', '/execute/async', { script, args: [arg ?? null] });
    this.errors.push(...console.errors);
    this.warnings.push(...console.warnings);
    if (thrown !== undefined) throw new Error(`page.evaluate: ${thrown}`);
    return value;
  }

  async waitForFunction(fn, arg, { timeout = 30000 } = {}) {
    for (const t0 = Date.now(); ;) {
      const value = await this.evaluate(fn, arg);
      if (value) return value;
      if (Date.now() - t0 > timeout) throw new Error(`page.waitForFunction: not true within ${timeout} ms: ${fn}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  async #element(selector) {
    const element = await this.#command('POST', '/element', { using: 'css selector', value: selector });
    return `/element/${Object.values(element)[0]}`;
  }

  async click(selector) {
    await this.#command('POST', `${await this.#element(selector)}/click`, {});
  }

  async fill(selector, text) {
    const element = await this.#element(selector);
    await this.#command('POST', `${element}/clear`, {});
    await this.#command('POST', `${element}/value`, { text });
  }

  async #checked(selector) {
    return this.evaluate((s) => document.querySelector(s).checked, selector);
  }

  async check(selector) {
    if (!(await this.#checked(selector))) await this.click(selector);
  }

  async uncheck(selector) {
    if (await this.#checked(selector)) await this.click(selector);
  }

  async close() {
    await this.#command('DELETE', '/window');
  }
}
