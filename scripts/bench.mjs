#!/usr/bin/env node
// `npm run bench`: our attention kernels against tfjs-wasm, onnxruntime-web and plain JS loops on
// the same inputs, each stated as a share of this machine's wasm SIMD peak measured in the same run.
//   node scripts/bench.mjs            everything (about 6 minutes on 2 cores)
//   node scripts/bench.mjs --quick    a smoke test: few runs, a subset of every section
//   node scripts/bench.mjs --only matmul,attention
//   node scripts/bench.mjs --only scaling [--threads 1,2,4,8,16] [--peers ort]   a process per thread count
//   node scripts/bench.mjs --browser[=chromium|firefox|webkit]   the kernel and decode sections in a browser page
// A table on stdout, build/bench/results*.json and .svg; the peers install on first use into
// build/bench-peers/. Each module of scripts/bench/ says what it does; scripts/LAB.md what the runs found.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { caseIdsOf, parseArgs } from './bench/args.mjs';
import { measureReadBandwidth } from './bench/bandwidth.mjs';
import { caseById } from './bench/cases.mjs';
import { compareRows } from './bench/compare.mjs';
import { emptyResults } from './bench/results.mjs';
import { runKernels } from './bench/kernels.mjs';
import { measureLong } from './bench/longseq.mjs';
import { machineInfo } from './bench/machine.mjs';
import { measurePeak } from './bench/peak.mjs';
import { ensurePeers, installedVersion, PEER_PACKAGES, PEER_VERSIONS, ROOT } from './bench/peers.mjs';
import { wasmSizes } from './bench/sizes.mjs';
import { referenceSample } from './bench/reference_sample.mjs';
import { rerunWithRelaxedSimd } from './bench/spawn.mjs';
import { measureFirstCall, measureStartup } from './bench/startup.mjs';
import { measureScaling, renderScaling } from './bench/scaling.mjs';
import { renderChart } from './bench/svg.mjs';
import { renderReport } from './bench/table.mjs';
import { checkTargets, renderTargets } from './bench/targets.mjs';
import { peerNotes } from './bench/notes.mjs';

const options = parseArgs(process.argv.slice(2));
// Our relaxed-SIMD rows run in this process: Node 20 needs the V8 flag from the start.
if (!options.browser) rerunWithRelaxedSimd();
const t0 = performance.now();
const log = (text) =>
  process.stderr.write(`[bench ${((performance.now() - t0) / 1000).toFixed(0).padStart(4)} s] ${text}\n`);
const want = (section) => options.sections.includes(section);

if (options.browser) {
  const { runInBrowser } = await import('./bench/browser_run.mjs');
  const results = await runInBrowser({ options, caseIds: caseIdsOf(options), log });
  results.durationSeconds = Math.round((performance.now() - t0) / 1000);
  finish(results, options.browser === 'chromium' ? 'results-browser' : `results-${options.browser}`);
}

const results = emptyResults(options, machineInfo());
const { machine } = results;
if (machine.loadAverage[0] > 0.25 * machine.cores) {
  results.notes.push(
    `the machine was busy when the run started (1-minute load average ${machine.loadAverage[0]} on ${machine.cores} cores): the figures are noisy`,
  );
}

let peersOk = false;
if (options.sections.some((s) => !['sizes', 'firstcall'].includes(s) && !(s === 'scaling' && !options.peers.length))) {
  // the sections with peers' rows; the scaling section alone needs only its --peers
  const scalingOnly = options.sections.every((s) => s === 'scaling');
  const r = ensurePeers(log, scalingOnly ? options.peers.flatMap((p) => PEER_PACKAGES[p]) : undefined);
  peersOk = r.ok;
  if (!r.ok) results.notes.push(`the peers could not be installed (${r.error}): their rows are n/a`);
}
for (const name of Object.keys(PEER_VERSIONS)) results.peers[name] = installedVersion(name);

log('measuring the wasm SIMD peak');
results.peak = await measurePeak();
log(
  `peak: ${results.peak.perCoreGflops.toFixed(1)} GFLOP/s per core, ${results.peak.allCoresGflops.toFixed(1)} on ${results.peak.cores} cores` +
    (results.peak.fmaPerCoreGflops ? `; FMA (relaxed_madd) ${results.peak.fmaPerCoreGflops.toFixed(1)} per core` : ''),
);

if (want('decode')) {
  // the read probe at each thread count the decode rows run at: a row is stated as % of its own
  log('measuring the memory read bandwidth');
  results.bandwidth = await measureReadBandwidth();
  const two = await measureReadBandwidth({ threads: 2 });
  results.bandwidth.byThreads = { 1: results.bandwidth.gbPerSecond, 2: two.gbPerSecond };
  results.bandwidth.methods = { 1: results.bandwidth.method, 2: two.method };
  log(
    `read bandwidth: ${results.bandwidth.gbPerSecond.toFixed(1)} GB/s on one thread, ${two.gbPerSecond.toFixed(1)} on two`,
  );
}

const caseIds = caseIdsOf(options);
if (caseIds.length) {
  // the decode rows' own read probes (groups.mjs), fewer passes than the one above
  const probe = async (threads) => (await measureReadBandwidth({ threads, passes: 7 })).gbPerSecond;
  const rows = await runKernels({ caseIds, quick: options.quick, peersOk, log, probe });
  log('computing the float64 reference of the cases small enough for it');
  const references = new Map();
  for (const id of caseIds) {
    const sampled = await referenceSample(caseById(id));
    if (sampled) references.set(id, sampled);
  }
  results.rows = compareRows(rows, references);
}
if (want('sizes')) results.sizes = wasmSizes();
if (want('startup')) results.startup = await measureStartup({ quick: options.quick, peersOk, log });
if (want('firstcall')) results.firstCall = await measureFirstCall({ quick: options.quick, peersOk, log });
if (want('long')) results.long = await measureLong({ quick: options.quick, peersOk, log });
if (want('scaling')) results.scaling = await measureScaling({ options, machine, peersOk, log });
results.notes.push(...peerNotes(results));
results.targets = checkTargets(results);
results.durationSeconds = Math.round((performance.now() - t0) / 1000);

// a scaling run alone keeps the last full run's files
finish(results, options.sections.every((s) => s === 'scaling') ? 'results-scaling' : 'results');

// Writes build/bench/<name>.json and .svg, prints the report and leaves.
function finish(results, name) {
  const outDir = join(ROOT, 'build', 'bench');
  mkdirSync(outDir, { recursive: true });
  // the output samples were only for the cross-check: leave them out of the file; add the
  // % of peak the table shows
  const strip = (rows) =>
    rows.map(({ sample: _sample, ...rest }) =>
      rest.gflops ? { ...rest, pctPeak: (100 * rest.gflops) / results.peak.forThreads(rest.threads) } : rest,
    );
  const saved = {
    ...results,
    rows: strip(results.rows),
    long: results.long && { ...results.long, rows: strip(results.long.rows) },
  };
  writeFileSync(join(outDir, `${name}.json`), `${JSON.stringify(saved, null, 2)}\n`);
  writeFileSync(join(outDir, `${name}.svg`), renderChart(results));

  // the kernel report and its targets, unless the scaling section ran alone (it has its own)
  if (!options.sections.every((s) => s === 'scaling'))
    process.stdout.write(`${renderReport(results)}\n${renderTargets(results.targets, results.machine)}\n`);
  if (results.scaling) process.stdout.write(`\n${renderScaling(results.scaling, results.machine)}\n`);
  log(`done in ${results.durationSeconds} s: build/bench/${name}.json, build/bench/${name}.svg`);
  // pthread pools (ours, the peers') must not keep the process alive
  process.exit(0);
}
