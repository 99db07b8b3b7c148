// The benchmark in a browser page: the same cases, implementations and timing as `npm run
// bench` (scripts/bench/, served at /bench-src/), each group of configurations of groups.mjs in
// a frame of its own (frame.html; a library's thread count is global to its page), the SIMD
// peak on this page and one Web Worker per core. -> the results record scripts/bench.mjs makes,
// which the same table.mjs, svg.mjs and targets.mjs render.
import { compareRows } from '/bench-src/compare.mjs';
import { GROUPS, failedRows } from '/bench-src/groups.mjs';
import { peerNotes } from '/bench-src/notes.mjs';
import { emptyResults } from '/bench-src/results.mjs';
import { measureOneThread, peakRecord, probeModule } from '/bench-src/peak_probe.mjs';
import { checkTargets } from '/bench-src/targets.mjs';

// Whether the server has the peers (scripts/serve.mjs serves them once `npm run bench` has
// installed them) and the tfjs bundle (scripts/bench/browser_bundles.mjs).
async function peersServed() {
  const found = async (path) => (await fetch(path, { method: 'HEAD' })).ok;
  const all = await Promise.all(['/vendor/onnxruntime-web/ort.wasm.min.mjs', '/vendor/tfjs.mjs'].map(found));
  return all.every(Boolean);
}

// One core on this page (the best of several calls), then one worker per core at once, summed.
async function measurePeak(cores) {
  let bytes;
  try {
    bytes = await probeModule(); // assembled by wabt, bundled into /vendor/wabt.mjs
  } catch (e) {
    throw new Error(
      `the SIMD peak probe did not assemble (${e?.message ?? e}): the server needs build/bench-browser/ ` +
        '(node scripts/bench/browser_bundles.mjs; npm start makes it)',
      { cause: e },
    );
  }
  const worker = () =>
    new Promise((resolve, reject) => {
      const w = new Worker(new URL('./peak_worker.js', import.meta.url), { type: 'module' });
      w.onmessage = (e) => {
        resolve(e.data);
        w.terminate();
      };
      w.onerror = (e) => reject(new Error(`peak worker: ${e.message}`));
      w.postMessage(bytes);
    });
  const rates = cores > 1 ? await Promise.all(Array.from({ length: cores }, worker)) : [0];
  const allCoresGflops = rates.reduce((s, r) => s + r, 0);
  return peakRecord({ perCoreGflops: measureOneThread(bytes), allCoresGflops, cores });
}

// Runs a group of groups.mjs in a fresh frame -> its rows.
async function inFrame(group, args) {
  const frame = document.createElement('iframe');
  frame.hidden = true;
  frame.title = `benchmark: ${group}`;
  const loaded = new Promise((resolve, reject) => {
    frame.addEventListener('load', resolve, { once: true });
    frame.addEventListener('error', () => reject(new Error('the frame did not load')), { once: true });
  });
  frame.src = new URL('./frame.html', import.meta.url).href;
  document.body.append(frame);
  try {
    await loaded;
    if (typeof frame.contentWindow.runGroup !== 'function') throw new Error("the frame's modules did not load");
    return await frame.contentWindow.runGroup(group, args);
  } finally {
    frame.remove(); // ends its libraries' thread pools
  }
}

// "Chromium 156.0.8078.79", or the user agent where the browser does not say
async function browserName() {
  const data = navigator.userAgentData;
  if (data?.getHighEntropyValues) {
    const { fullVersionList = [] } = await data.getHighEntropyValues(['fullVersionList']);
    const brand =
      fullVersionList.find((b) => b.brand === 'Chromium') ??
      fullVersionList.find((b) => !/Not.?A.?Brand/i.test(b.brand));
    if (brand) return `${brand.brand} ${brand.version}`;
  }
  return navigator.userAgent;
}

// options: { quick, caseIds }; log(text) for progress. -> results (see scripts/bench.mjs)
export async function runBench({ quick = true, caseIds, log = () => {} }) {
  const started = performance.now();
  const cores = navigator.hardwareConcurrency || 1;
  const results = emptyResults(
    { quick, browser: true, cases: caseIds },
    {
      browser: await browserName(),
      userAgent: navigator.userAgent,
      cpuModel: null, // a page cannot see it
      cores,
      crossOriginIsolated: globalThis.crossOriginIsolated === true,
    },
  );
  if (!results.machine.crossOriginIsolated)
    results.notes.push('the page is not cross-origin isolated: every library runs one thread');
  const peersOk = await peersServed();
  if (!peersOk)
    results.notes.push(
      'the server has no tfjs-wasm / onnxruntime-web: their rows are n/a (`npm run bench -- --browser` installs them)',
    );
  log('measuring the wasm SIMD peak');
  results.peak = await measurePeak(cores);
  log(
    `peak: ${results.peak.perCoreGflops.toFixed(1)} GFLOP/s per core, ${results.peak.allCoresGflops.toFixed(1)} on ${cores}`,
  );
  const rows = [];
  for (const group of Object.keys(GROUPS)) {
    if (group !== 'main' && !peersOk) {
      rows.push(...failedRows(group, GROUPS[group][0].threads, caseIds, 'n/a', 'peers not installed'));
      continue;
    }
    log(`${group}: ${caseIds.length} case(s) in a frame of its own`);
    try {
      rows.push(...(await inFrame(group, { caseIds, quick, peersOk, log })));
    } catch (e) {
      rows.push(...failedRows(group, GROUPS[group][0].threads, caseIds, 'failed', String(e?.message ?? e)));
    }
  }
  results.rows = compareRows(rows);
  results.notes.push(...peerNotes(results));
  results.targets = checkTargets(results);
  results.durationSeconds = Math.round((performance.now() - started) / 1000);
  return results;
}
