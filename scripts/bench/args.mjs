// Command line: `node scripts/bench.mjs [--quick] [--only s1,s2,...] [--help]`.
// Sections can be picked one by one because a full run takes about 6 minutes (scripts/bench.mjs)
// and most work on one kernel only needs its own rows.

import { CASES, caseById, QUICK_CASES, SCALING_CASES } from './cases.mjs';

const SECTIONS = {
  matmul: 'matmul 512³',
  attention: 'single-head attention n=512 d=64, plain and causal',
  mha: 'multi-head attention n=512 dModel=512 8 heads, plain and causal',
  backward: 'backward of the attention and multi-head cases',
  decode:
    'decoding one token over a KV cache of 512 .. 16384 (GQA 32/8 heads, d 128; float32, float16, int8), a causal GQA prefill n=2048, the memory read probe (once per run, and beside each of our decode rows)',
  startup: 'time to a ready module, in fresh processes',
  firstcall: 'first attention call (19×100) on a fresh instance vs later calls, in fresh processes',
  sizes: 'sizes of the .wasm files',
  long: 'long sequences: causal attention d=64, n = 512 .. 16384',
  scaling:
    'matmul 1024³, MHA n 512 and 1024, decode 8192, causal attention n 2048, GQA prefill n 1024, attention backward n 1024 at 1..16 threads, each count in its own process, with the scaling model (not in the default run: --only scaling)',
};

// Sections a run without --only leaves out: scaling takes a process per thread count and
// implementation, several minutes even on 2 cores.
const ON_REQUEST = ['scaling'];

// The thread counts of the scaling section, and the peers it can run beside ours.
export const SCALING_THREADS = [1, 2, 4, 8, 16];
export const SCALING_PEERS = ['ort', 'tfjs'];
const MAX_THREADS = 64; // createAttention's limit

// The sections a browser run has: the kernels and the decode (its read probe, startup, sizes and
// long sequences are Node's).
export const BROWSER_SECTIONS = ['matmul', 'attention', 'mha', 'backward', 'decode'];

// The browsers a run can use (--browser=NAME; --browser alone is chromium), as
// scripts/lib/browser.mjs launches them.
export const BROWSERS = ['chromium', 'firefox', 'webkit'];

const USAGE = `usage: node scripts/bench.mjs [--quick] [--browser[=chromium|firefox|webkit]] [--only ${Object.keys(SECTIONS).join(',')}] [--cases id,...]
  --quick    few runs and a small subset of every section: a smoke test of under a minute
  --browser  the kernel and decode sections in a browser, in a cross-origin-isolated page (web/bench.html,
             served as npm start serves it): chromium (V8; the default), firefox (SpiderMonkey)
             or webkit (WebKitGTK's MiniBrowser: JavaScriptCore), Debian's, never downloaded
  --only     run only these sections (the SIMD peak probe always runs: the % columns need it)
  --cases    run only these cases of the kernel sections (ids in scripts/bench/cases.mjs;
             matmul-small is a tiny one for tests), or of the scaling section
  --threads  the scaling section's thread counts, e.g. 1,2,4,8,16 (default: those of
             ${SCALING_THREADS.join(', ')} up to the machine's cores); counts above the cores run too
  --peers    the peers the scaling section runs beside ours: ${SCALING_PEERS.join(',')} (the default) or
             fewer, or none
sections:
${Object.entries(SECTIONS)
  .map(([k, v]) => `  ${k.padEnd(10)} ${v}`)
  .join('\n')}`;

// -> the list after `--name=` or in the next argument, split at commas
function listArg(argv, i, name) {
  const arg = argv[i];
  const list = arg.includes('=') ? arg.slice(arg.indexOf('=') + 1) : argv[i + 1];
  if (list === undefined || list.startsWith('--')) fail(`${name} needs a list`);
  return {
    next: arg.includes('=') ? i : i + 1,
    items: list
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  };
}
const isArg = (arg, name) => arg === name || arg.startsWith(`${name}=`);

export function parseArgs(argv) {
  const options = {
    quick: false,
    browser: false,
    cases: null,
    sections: Object.keys(SECTIONS).filter((s) => !ON_REQUEST.includes(s)),
    threads: null,
    peers: SCALING_PEERS,
  };
  let only = null;
  for (let i = 0; i < argv.length; ++i) {
    const arg = argv[i];
    if (arg === '--quick') options.quick = true;
    else if (isArg(arg, '--threads')) {
      const { next, items } = listArg(argv, i, '--threads');
      i = next;
      options.threads = items.map(Number);
      const bad = items.filter(
        (t, j) => !Number.isInteger(options.threads[j]) || options.threads[j] < 1 || options.threads[j] > MAX_THREADS,
      );
      if (bad.length || !items.length)
        fail(
          `--threads: integers from 1 to ${MAX_THREADS}, comma-separated (e.g. 1,2,4,8,16), not ${bad.join(',') || 'nothing'}`,
        );
      options.threads = [...new Set(options.threads)].sort((a, b) => a - b);
    } else if (isArg(arg, '--peers')) {
      const { next, items } = listArg(argv, i, '--peers');
      i = next;
      options.peers = items.includes('none') ? [] : items;
      const unknown = options.peers.filter((p) => !SCALING_PEERS.includes(p));
      if (unknown.length) fail(`--peers: some of ${SCALING_PEERS.join(', ')}, or none; not ${unknown.join(', ')}`);
    } else if (arg === '--browser') options.browser = 'chromium';
    else if (arg.startsWith('--browser=')) {
      options.browser = arg.slice('--browser='.length);
      if (!BROWSERS.includes(options.browser)) fail(`--browser: one of ${BROWSERS.join(', ')}, not ${options.browser}`);
    } else if (arg === '--cases' || arg.startsWith('--cases=')) {
      const list = arg.includes('=') ? arg.slice(arg.indexOf('=') + 1) : argv[++i];
      if (!list) fail('--cases needs a list of case ids');
      options.cases = list
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
      for (const id of options.cases) {
        try {
          caseById(id);
        } catch {
          fail(`unknown case ${id}`);
        }
      }
    } else if (arg === '--only' || arg.startsWith('--only=')) {
      const list = arg.includes('=') ? arg.slice(arg.indexOf('=') + 1) : argv[++i];
      if (!list) fail('--only needs a list of sections');
      const picked = list
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
      const unknown = picked.filter((s) => !(s in SECTIONS));
      if (unknown.length) fail(`unknown section${unknown.length > 1 ? 's' : ''}: ${unknown.join(', ')}`);
      options.sections = Object.keys(SECTIONS).filter((s) => picked.includes(s));
      only = options.sections;
    } else if (arg === '--help' || arg === '-h') {
      console.log(USAGE);
      process.exit(0);
    } else fail(`unknown argument ${arg}`);
  }
  if (options.browser) options.sections = options.sections.filter((s) => BROWSER_SECTIONS.includes(s));
  if (options.cases) {
    const picked = options.cases.map((id) => caseById(id).section);
    // the scaling section runs picked cases of any section, when --only names it
    const scaling = only?.includes('scaling') || picked.includes('scaling');
    options.sections = options.sections.filter((s) => picked.includes(s) && s !== 'scaling');
    if (scaling && !options.browser) options.sections.push('scaling');
  }
  if ((options.threads || argv.some((a) => isArg(a, '--peers'))) && !options.sections.includes('scaling'))
    fail("--threads and --peers are the scaling section's: add --only scaling");
  // (the page would take an empty list of cases for all of them)
  if (options.browser && !options.sections.length)
    fail(`--browser runs the sections ${BROWSER_SECTIONS.join(', ')}: none of them is picked`);
  return options;
}

// The scaling section's thread counts: --threads as given, else the default counts up to
// the machine's cores.
export function scalingThreads(options, cores) {
  return options.threads ?? SCALING_THREADS.filter((t) => t <= cores);
}

// The scaling section's cases: the picked ones (--cases), else its own list.
export function scalingCaseIds(options) {
  return options.cases ?? SCALING_CASES;
}

// The kernel cases a run measures, in order.
export function caseIdsOf(options) {
  if (options.cases) {
    // a scaling case is the scaling section's alone
    const kernel = (section) => section !== 'scaling' && options.sections.includes(section);
    return options.cases.filter((id) => kernel(caseById(id).section));
  }
  return CASES.filter(
    (c) => options.sections.includes(c.section) && (!options.quick || QUICK_CASES.includes(c.id)),
  ).map((c) => c.id);
}

function fail(message) {
  console.error(`bench: ${message}\n${USAGE}`);
  process.exit(2);
}
