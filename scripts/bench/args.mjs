// Command line: `node scripts/bench.mjs [--quick] [--only s1,s2,...] [--help]`.
// Sections can be picked one by one because a full run takes about 6 minutes (scripts/bench.mjs)
// and most work on one kernel only needs its own rows.

import { CASES, caseById, QUICK_CASES } from './cases.mjs';

const SECTIONS = {
  matmul: 'matmul 512³',
  attention: 'single-head attention n=512 d=64, plain and causal',
  mha: 'multi-head attention n=512 dModel=512 8 heads, plain and causal',
  backward: 'backward of the attention and multi-head cases',
  decode:
    'decoding one token over a KV cache of 512 .. 8192 (GQA 32/8 heads, d 128), a causal GQA prefill n=2048, the memory read probe',
  startup: 'time to a ready module, in fresh processes',
  firstcall: 'first attention call (19×100) on a fresh instance vs later calls, in fresh processes',
  sizes: 'sizes of the .wasm files',
  long: 'long sequences: causal attention d=64, n = 512 .. 16384',
};

// The sections a browser run has: the kernels (startup, sizes and long sequences are Node's).
export const BROWSER_SECTIONS = ['matmul', 'attention', 'mha', 'backward'];

// The browsers a run can use (--browser=NAME; --browser alone is chromium), as
// scripts/lib/browser.mjs launches them.
export const BROWSERS = ['chromium', 'firefox', 'webkit'];

const USAGE = `usage: node scripts/bench.mjs [--quick] [--browser[=chromium|firefox|webkit]] [--only ${Object.keys(SECTIONS).join(',')}] [--cases id,...]
  --quick    few runs and a small subset of every section: a smoke test of under a minute
  --browser  the kernel sections in a browser, in a cross-origin-isolated page (web/bench.html,
             served as npm start serves it): chromium (V8; the default), firefox (SpiderMonkey)
             or webkit (WebKitGTK's MiniBrowser: JavaScriptCore), Debian's, never downloaded
  --only     run only these sections (the SIMD peak probe always runs: the % columns need it)
  --cases    run only these cases of the kernel sections (ids in scripts/bench/cases.mjs;
             matmul-small is a tiny one for tests)
sections:
${Object.entries(SECTIONS)
  .map(([k, v]) => `  ${k.padEnd(10)} ${v}`)
  .join('\n')}`;

export function parseArgs(argv) {
  const options = { quick: false, browser: false, cases: null, sections: Object.keys(SECTIONS) };
  for (let i = 0; i < argv.length; ++i) {
    const arg = argv[i];
    if (arg === '--quick') options.quick = true;
    else if (arg === '--browser') options.browser = 'chromium';
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
    } else if (arg === '--help' || arg === '-h') {
      console.log(USAGE);
      process.exit(0);
    } else fail(`unknown argument ${arg}`);
  }
  if (options.browser) options.sections = options.sections.filter((s) => BROWSER_SECTIONS.includes(s));
  if (options.cases) {
    const picked = options.cases.map((id) => caseById(id).section);
    options.sections = options.sections.filter((s) => picked.includes(s));
  }
  return options;
}

// The kernel cases a run measures, in order.
export function caseIdsOf(options) {
  if (options.cases) return options.cases;
  return CASES.filter(
    (c) => options.sections.includes(c.section) && (!options.quick || QUICK_CASES.includes(c.id)),
  ).map((c) => c.id);
}

function fail(message) {
  console.error(`bench: ${message}\n${USAGE}`);
  process.exit(2);
}
