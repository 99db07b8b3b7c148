// Forms of the mul+add peak probe (scripts/bench/peak_probe.mjs) side by side, per engine: how
// many chains, the loop unrolled 4×, 2× or 1×, m and a as locals or as v128.const operands. The
// probe must be an upper bound of the mul+add rate in every engine: this says which form each
// engine runs fastest (the probe takes the fastest of its three loops). The FMA forms where the
// engine runs relaxed SIMD (Node: with --experimental-wasm-relaxed-simd).
//
//   node [--experimental-wasm-relaxed-simd] scripts/forensics/peak_forms.mjs [--rounds N] [--json]
//   node_modules/.bin/bun scripts/forensics/peak_forms.mjs ...
//   node scripts/forensics/peak_forms.mjs --browser chromium|firefox|webkit ...
//
// peak_probe.mjs's measureRuns: every round calls every loop once (~50 ms each), so a busy
// neighbour slows them alike; bests of the rounds (a neighbour only ever adds time, and page
// clocks are wall time).
import { measureRuns, probeModule, probeRuns } from '../bench/peak_probe.mjs';

const FORMS = {
  '14 chains (the probe)': { chains: 14 },
  '14 chains, constants': { chains: 14, constants: true },
  '12 chains': { chains: 12 },
  '8 chains': { chains: 8 },
  'FMA x = x + m·a, 14 chains (the FMA probe)': { chains: 14, fma: true },
  'FMA x = x·m + a, 14 chains': { chains: 14, fma: true, fmaAddend: 'a' },
};

// forms: { name: [bytes as an array of numbers, chains] } -> [['name, unroll u', GFLOP/s], ...]
// (pairs: WebKit's WebDriver does not keep an object's key order)
export async function measureForms({ forms, rounds = 7 }) {
  const runs = {};
  const flops = {};
  for (const [name, [bytes, chains]] of Object.entries(forms)) {
    if (!WebAssembly.validate(new Uint8Array(bytes))) continue; // FMA: where relaxed SIMD runs
    for (const [exported, run] of Object.entries(probeRuns(new Uint8Array(bytes)))) {
      const key = `${name}, ${exported.replace('run_unroll', 'unroll ')}`;
      runs[key] = run;
      flops[key] = chains * 2 * 4;
    }
  }
  // one measureRuns per flops value would split the rounds: scale instead, run(steps) per chain step
  const rates = measureRuns(runs, 1, rounds);
  return Object.entries(rates).map(([key, rate]) => [key, rate * flops[key]]);
}

export function formatForms(engine, rates, load) {
  const lines = [`${engine}${load ? `, load ${load}` : ''}: GFLOP/s, best of the rounds`];
  for (const [name, g] of rates) lines.push(`  ${name.padEnd(52)} ${g.toFixed(1)}`);
  return lines.join('\n');
}

async function main() {
  const { argument, measureAndPrint } = await import('./in_page.mjs');
  const forms = {};
  for (const [name, form] of Object.entries(FORMS))
    forms[name] = [Array.from(new Uint8Array(await probeModule(form))), form.chains];
  await measureAndPrint({
    moduleUrl: '/scripts/forensics/peak_forms.mjs',
    exportName: 'measureForms',
    measureHere: measureForms,
    format: formatForms,
    options: { forms, rounds: Number(argument('--rounds', 7)) },
  });
}

if (typeof process === 'object' && process.argv?.[1] && new URL(import.meta.url).pathname === process.argv[1])
  await main();
