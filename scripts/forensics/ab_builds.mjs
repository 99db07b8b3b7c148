// Two or three built copies of the package side by side, in Node and in each browser engine, at 1
// and 2 threads: a before/after check that a change made nothing slower. All builds load into ONE
// process or page and take turns round by round, so the machine's load falls on all alike.
//   node scripts/forensics/ab_builds.mjs --build new=DIR --build old=DIR [--build base=DIR] \
//     [--engines node,chromium,firefox,webkit] [--threads 1,2] [--isa simd128|relaxed-simd]
//     [--cases matmul1024,mha512,...,layerdecode4096] [--warm-ms 1500] [--rounds 5] [--round-ms 150] [--json out.json]
// DIR: a checkout whose web/lib/ is built, or a web/lib folder; the first build is the one
// compared. Prints each build's median and best ms and the first's time over each other's
// (> 1: the first is slower); first calls apart. Results: scripts/LAB.md ("Before and after").
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

// ---- the measurement: self-contained (it is sent into pages as text) ------------------------

// arg: { libs: [[label, url]], threads: [..], isa, cases: [..], warmMs, rounds, roundMs }
// log(text): progress. Resolves to { rows: [{ threads, case, builds: { label: {...} } }], backends }
export async function measure(arg, log = (s) => (globalThis.abLog ??= []).push(s)) {
  const median = (xs) => {
    const s = [...xs].sort((a, b) => a - b);
    const m = s.length >> 1;
    return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
  };
  const now = () => performance.now();
  // a busy wait, then a yield: WebKitGTK throttles a background tab's timers to ~1 s, and its page is one
  // (so that the page answers the progress polls; a MessageChannel's message is not throttled)
  const sleep = async (ms) => {
    for (const end = now() + ms; now() < end;);
    await new Promise((r) => {
      const { port1, port2 } = new MessageChannel();
      port1.onmessage = () => {
        port1.close();
        r();
      };
      port2.postMessage(0);
    });
  };
  function values(n, seed) {
    const x = new Float32Array(n);
    for (let i = 0; i < n; ++i) x[i] = (((i * 7919 + seed * 104729) % 1009) / 1009 - 0.5) * 0.5;
    return x;
  }
  // case -> (attn, lib) => { run, dispose? }
  const T = (lib, shape, seed) =>
    lib.tensor(
      values(
        shape.reduce((a, b) => a * b),
        seed,
      ),
      shape,
    );
  const mha = (n, dm, heads) => (attn, lib) => {
    const w = (seed) => T(lib, [dm, dm], seed);
    const layer = attn.multiHeadAttention({ dModel: dm, heads, weights: { wq: w(3), wk: w(4), wv: w(5), wo: w(6) } });
    const x = T(lib, [n, dm], 7);
    return { run: () => layer.forward(x), dispose: () => layer.dispose() };
  };
  const cachedLayer = (past, n) => (attn, lib) => {
    const dm = 1024,
      heads = 16,
      kvHeads = 4,
      d = dm / heads;
    const w = (cols, seed) => T(lib, [dm, cols], seed);
    const layer = attn.multiHeadAttention({
      dModel: dm,
      heads,
      kvHeads,
      weights: { wq: w(dm, 26), wk: w(kvHeads * d, 27), wv: w(kvHeads * d, 28), wo: w(dm, 29) },
    });
    const cache = attn.kvCache({ batch: 1, kvHeads, dK: d, dV: d, capacity: past + n });
    attn.attention(T(lib, [1, heads, 1, d], 30), T(lib, [1, kvHeads, past, d], 31), T(lib, [1, kvHeads, past, d], 32), {
      cache,
    });
    const x = T(lib, [n, dm], 33);
    return {
      run: () => {
        const r = layer.forward(x, { cache, causal: true });
        cache.truncate(past);
        return r;
      },
      dispose: () => {
        cache.dispose();
        layer.dispose();
      },
    };
  };
  const CASES = {
    matmul1024: (attn, lib) => {
      const a = T(lib, [1024, 1024], 1),
        b = T(lib, [1024, 1024], 2);
      return { run: () => attn.matmul(a, b) };
    },
    mha512: mha(512, 512, 8),
    mha1024: mha(1024, 1024, 16),
    decode8192: (attn, lib) => {
      const past = 8192;
      const cache = attn.kvCache({ batch: 1, kvHeads: 8, dK: 128, dV: 128, capacity: past + 1 });
      const q = T(lib, [1, 32, 1, 128], 11);
      attn.attention(q, T(lib, [1, 8, past, 128], 12), T(lib, [1, 8, past, 128], 13), { cache });
      const k = T(lib, [1, 8, 1, 128], 14),
        v = T(lib, [1, 8, 1, 128], 15);
      return {
        run: () => {
          const r = attn.attention(q, k, v, { cache, causal: true });
          cache.truncate(past);
          return r;
        },
        dispose: () => cache.dispose(),
      };
    },
    causal2048: (attn, lib) => {
      const q = T(lib, [2048, 64], 16),
        k = T(lib, [2048, 64], 17),
        v = T(lib, [2048, 64], 18);
      return { run: () => attn.attention(q, k, v, { causal: true }) };
    },
    prefill1024: (attn, lib) => {
      const q = T(lib, [1, 32, 1024, 128], 8),
        k = T(lib, [1, 8, 1024, 128], 9),
        v = T(lib, [1, 8, 1024, 128], 10);
      return { run: () => attn.attention(q, k, v, { causal: true }) };
    },
    bwd1024: (attn, lib) => {
      const s = [1024, 64];
      const q = T(lib, s, 19),
        k = T(lib, s, 20),
        v = T(lib, s, 21),
        d = T(lib, s, 22);
      return { run: () => attn.attentionBackward(q, k, v, d, {}) };
    },
    // a layer's cached forward (dModel 1024, 16 query heads over 4 kv heads, d 64): one new token
    // over 4096 cached, and a causal prompt of 128 over 1024 cached; the cache is cut back after each call
    layerdecode4096: cachedLayer(4096, 1),
    layerprefill1024: cachedLayer(1024, 128),
    small16: (attn, lib) => {
      const q = T(lib, [16, 16], 23),
        k = T(lib, [16, 16], 24),
        v = T(lib, [16, 16], 25);
      // 200 calls per timed sample (browsers' clocks tick in 5-100 µs); `per` divides it back
      return {
        one: () => attn.attention(q, k, v),
        run: () => {
          for (let i = 0; i < 200; ++i) attn.attention(q, k, v);
        },
        per: 200,
      };
    },
  };
  for (const c of arg.cases) if (!CASES[c]) throw new Error(`unknown case ${c}`);
  const libs = [];
  for (const [label, url] of arg.libs) libs.push({ label, lib: await import(url) });
  const rows = [];
  const backends = {};
  for (const threads of arg.threads) {
    const inst = [];
    for (const { label, lib } of libs) {
      const attn = await lib.createAttention({ threads, isa: arg.isa });
      const b = attn.backend;
      backends[`${label} ${threads}t`] = `${b.variant ?? b.gemmKernel ?? ''} ${b.isa} ${b.threads}t`;
      if (b.threads !== threads) log(`WARNING: ${label} asked ${threads} threads, got ${b.threads}`);
      inst.push({ label, lib, attn });
    }
    for (const name of arg.cases) {
      const t0 = now();
      const builds = {};
      const states = inst.map(({ label, lib, attn }) => {
        builds[label] = { first: NaN, rounds: [], calls: [] };
        return { label, c: CASES[name](attn, lib) };
      });
      for (const { label, c } of states) {
        await sleep(5);
        const s = now();
        (c.one ?? c.run)();
        builds[label].first = now() - s;
      }
      // warm-up: builds in turn, a call each, until each had warmMs of calls
      const spent = Object.fromEntries(states.map((s) => [s.label, 0]));
      while (states.some((s) => spent[s.label] < arg.warmMs)) {
        for (const { label, c } of states) {
          if (spent[label] >= arg.warmMs) continue;
          const s = now();
          c.run();
          spent[label] += now() - s; // (small16: its 200 calls)
        }
      }
      for (let r = 0; r < arg.rounds; ++r) {
        for (let j = 0; j < states.length; ++j) {
          const { label, c } = states[(j + r) % states.length];
          await sleep(5);
          const ms = [];
          for (const start = now(); ms.length === 0 || now() - start < arg.roundMs;) {
            const s = now();
            c.run();
            ms.push((now() - s) / (c.per ?? 1));
          }
          builds[label].rounds.push(median(ms));
          builds[label].calls.push(...ms);
        }
      }
      for (const { c } of states) c.dispose?.();
      const out = {};
      for (const [label, b] of Object.entries(builds)) {
        out[label] = {
          first: b.first,
          med: median(b.rounds),
          min: Math.min(...b.calls),
          spread: Math.max(...b.rounds) / Math.min(...b.rounds),
          calls: b.calls.length,
        };
      }
      rows.push({ threads, case: name, builds: out });
      const [l0] = arg.libs[0];
      log(
        `${threads}t ${name}: ` +
          Object.entries(out)
            .map(([l, b]) => `${l} ${b.med.toPrecision(3)} (min ${b.min.toPrecision(3)})`)
            .join(' | ') +
          ` ms; ` +
          arg.libs
            .slice(1)
            .map(([l]) => `${l0}/${l} ${(out[l0].med / out[l].med).toFixed(3)}`)
            .join(', ') +
          ` [${((now() - t0) / 1000).toFixed(1)} s]`,
      );
    }
    for (const { attn } of inst) attn.dispose();
  }
  return { rows, backends };
}

// ---- the command line (Node only) ----------------------------------------------------------

async function main() {
  const { values: args } = parseArgs({
    options: {
      build: { type: 'string', multiple: true },
      engines: { type: 'string', default: 'node,chromium,firefox,webkit' },
      threads: { type: 'string', default: '1,2' },
      isa: { type: 'string', default: 'simd128' },
      cases: {
        type: 'string',
        default: 'matmul1024,mha512,mha1024,decode8192,causal2048,prefill1024,bwd1024,small16',
      },
      'warm-ms': { type: 'string', default: '1500' },
      rounds: { type: 'string', default: '5' },
      'round-ms': { type: 'string', default: '150' },
      json: { type: 'string' },
    },
  });
  if (!args.build || args.build.length < 2) throw new Error('give two or three --build LABEL=DIR');
  const builds = args.build.map((b) => {
    const [label, dir] = b.split('=');
    let lib = resolve(dir);
    if (!existsSync(join(lib, 'index.js'))) lib = join(lib, 'web/lib');
    if (!existsSync(join(lib, 'wasm'))) throw new Error(`${lib}: not built (no wasm/)`);
    let commit = '';
    try {
      commit = execFileSync('git', ['-C', lib, 'log', '-1', '--format=%h'], { encoding: 'utf8' }).trim();
    } catch {
      // not in a checkout
    }
    return { label, lib, commit };
  });
  const arg = {
    threads: args.threads.split(',').map(Number),
    isa: args.isa,
    cases: args.cases.split(','),
    warmMs: Number(args['warm-ms']),
    rounds: Number(args.rounds),
    roundMs: Number(args['round-ms']),
  };
  const load = () =>
    loadavg()
      .map((x) => x.toFixed(2))
      .join(' ');
  console.log(`CPU ${cpus()[0].model} x${cpus().length}; ${new Date().toISOString()}`);
  console.log(`builds: ${builds.map((b) => `${b.label}=${b.lib} (${b.commit})`).join(', ')}`);
  console.log(`${JSON.stringify(arg)}`);
  const results = [];
  for (const engine of args.engines.split(',')) {
    const before = load();
    const t0 = Date.now();
    let out;
    if (engine === 'node') {
      out = await measure(
        { ...arg, libs: builds.map((b) => [b.label, pathToFileURL(join(b.lib, 'index.js')).href]) },
        (s) => console.log(`  [node] ${s}`),
      );
      out.engine = `Node ${process.version} (V8 ${process.versions.v8})`;
    } else {
      out = await inBrowser(engine, builds, arg);
    }
    out.load = `${before} -> ${load()}`;
    out.seconds = (Date.now() - t0) / 1000;
    console.log(`== ${out.engine}; load ${out.load}; ${out.seconds.toFixed(0)} s`);
    console.log(`   backends: ${JSON.stringify(out.backends)}`);
    results.push(out);
  }
  report(builds, results);
  if (args.json) writeFileSync(args.json, JSON.stringify({ cpu: cpus()[0].model, builds, arg, results }, null, 1));
}

async function engineLabel(engine, browser) {
  if (engine === 'chromium') return `Chromium ${browser.version()} (V8)`;
  if (engine === 'firefox')
    return `Firefox ${(await browser.puppeteer.version()).replace(/^firefox\//, '')} (SpiderMonkey)`;
  let v = '';
  try {
    v = execFileSync('dpkg-query', ['-W', '-f=${Version}', 'libwebkit2gtk-4.1-0'], { encoding: 'utf8' }).replace(
      /-.*/,
      '',
    );
  } catch {
    // not Debian
  }
  return `WebKitGTK ${v} MiniBrowser (JavaScriptCore)`;
}

async function inBrowser(engine, builds, arg) {
  const { launchBrowser, openPage } = await import('../lib/browser.mjs');
  const { startServer } = await import('../serve.mjs');
  const site = mkdtempSync(join(tmpdir(), 'ab-builds-'));
  writeFileSync(
    join(site, 'index.html'),
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,">' +
      '<title>ab builds</title></head><body></body></html>\n',
  );
  builds.forEach((b, i) => symlinkSync(b.lib, join(site, `b${i}`)));
  const server = await startServer({ port: 8790, quiet: true, root: site });
  const browser = await launchBrowser(engine, engine === 'webkit' ? { env: { JSC_useSharedArrayBuffer: 'true' } } : {});
  try {
    const { page } = await openPage(browser, server.url);
    const isolated = await page.evaluate(() => globalThis.crossOriginIsolated === true);
    if (!isolated) console.log(`  [${engine}] WARNING: page not cross-origin isolated (no threads)`);
    const libs = builds.map((b, i) => [b.label, `${server.url}b${i}/index.js`]);
    await page.evaluate(
      ([src, a]) => {
        const f = (0, eval)(`(${src})`);
        f(a).then(
          (r) => (window.abDone = { r }),
          (e) => (window.abDone = { error: String(e?.stack ?? e) }),
        );
      },
      [measure.toString(), { ...arg, libs }],
    );
    let printed = 0;
    for (;;) {
      await new Promise((r) => setTimeout(r, 2000));
      const { lines, done } = await page.evaluate(() => ({
        lines: globalThis.abLog ?? [],
        done: window.abDone ?? null,
      }));
      for (; printed < lines.length; ++printed) console.log(`  [${engine}] ${lines[printed]}`);
      if (done?.error) throw new Error(`${engine}: ${done.error}`);
      if (done) return { ...done.r, engine: await engineLabel(engine, browser) };
    }
  } finally {
    await browser.close();
    await server.close();
    rmSync(site, { recursive: true, force: true });
  }
}

function report(builds, results) {
  const [b0, ...rest] = builds.map((b) => b.label);
  const f = (x) => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x >= 1 ? x.toFixed(2) : x.toFixed(4));
  console.log(
    `\n| engine | t | case | ${[b0, ...rest].map((l) => `${l} med (min) ms`).join(' | ')} | ${rest.map((l) => `${b0}÷${l}`).join(' | ')} | spread |`,
  );
  console.log(`|${'---|'.repeat(4 + 2 * rest.length + 1)}`);
  for (const res of results) {
    for (const row of res.rows) {
      const b = row.builds;
      const spread = Math.max(...Object.values(b).map((x) => x.spread));
      console.log(
        `| ${res.engine.split(' (')[0]} | ${row.threads} | ${row.case} | ` +
          [b0, ...rest].map((l) => `${f(b[l].med)} (${f(b[l].min)})`).join(' | ') +
          ` | ` +
          rest.map((l) => (b[b0].med / b[l].med).toFixed(3)).join(' | ') +
          ` | ${spread.toFixed(2)} |`,
      );
    }
  }
  // compact: a row per engine x case, 1 and 2 threads side by side (the first build's ms and ratios)
  const threads = [...new Set(results.flatMap((r) => r.rows.map((x) => x.threads)))];
  console.log(
    `\n| engine | case | ${threads.map((t) => `${b0} ${t}t ms | ${rest.map((l) => `÷${l}`).join(' | ')}`).join(' | ')} |`,
  );
  console.log(`|${'---|'.repeat(2 + threads.length * (1 + rest.length))}`);
  for (const res of results) {
    for (const name of [...new Set(res.rows.map((x) => x.case))]) {
      const cells = threads.map((t) => {
        const b = res.rows.find((x) => x.case === name && x.threads === t)?.builds;
        return b ? [f(b[b0].med), ...rest.map((l) => (b[b0].med / b[l].med).toFixed(2))].join(' | ') : '';
      });
      console.log(`| ${res.engine.split(' (')[0]} | ${name} | ${cells.join(' | ')} |`);
    }
  }
  console.log(`\nfirst calls (ms; each case's first on a fresh instance, after the earlier cases):`);
  for (const res of results) {
    for (const row of res.rows) {
      console.log(
        `  ${res.engine.split(' (')[0]} ${row.threads}t ${row.case}: ` +
          Object.entries(row.builds)
            .map(([l, x]) => `${l} ${f(x.first)}`)
            .join(', '),
      );
    }
  }
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(new URL(import.meta.url).pathname)) {
  main().catch((e) => {
    console.error(e);
    process.exit(1);
  });
}
