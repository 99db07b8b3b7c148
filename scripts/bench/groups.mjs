// The implementation configurations of the kernel sections, in groups: a group's
// configurations live in one process (Node) or one page (a browser frame) and take turns case
// by case. A configuration whose thread count is global to its library (onnxruntime-web's
// numThreads, tfjs-wasm's pool; tfjs's threaded build needs patches in Node) has a group of
// its own, run in a child process (kernels.mjs) or a frame of its own (web/bench/page.js),
// all on the same seeded inputs.
//   isa    ours only: 'simd128' (the rows the peers are compared with) or 'relaxed-simd'
//   cases  the case ids the configuration runs (default: all)
//   peer   needs the peers installed
import { caseById, RELAXED_CASES } from './cases.mjs';
import { flops } from './flops.mjs';
import { createImpl } from './impls.mjs';
import { oursKey } from './impl_ours.mjs';
import { IMPLS_HERE } from './platform.mjs';
import { describe, message, runCase } from './runner.mjs';
import { FULL, LONG_QUICK, PREFILL, QUICK } from './timing.mjs';
import { relaxedSimdAvailable } from '../../web/lib/internal.js';

export const GROUPS = {
  main: [
    { impl: 'ours', threads: 1, isa: 'simd128' },
    { impl: 'ours', threads: 2, isa: 'simd128' },
    { impl: 'ours', threads: 1, isa: 'relaxed-simd', cases: RELAXED_CASES },
    { impl: 'tfjs', threads: 1, peer: true },
    { impl: 'ort', threads: 1, peer: true },
    { impl: 'js', threads: 1 },
  ],
  'tfjs-2': [{ impl: 'tfjs', threads: 2, peer: true }],
  'ort-2': [{ impl: 'ort', threads: 2, peer: true }],
};

export const configKey = (c) => (c.impl === 'ours' ? oursKey(c.threads, c.isa) : `${c.impl}-${c.threads}`);

// Rows that say why a configuration did not run its cases.
export const failedRows = (key, threads, caseIds, status, reason) =>
  caseIds.map((id) => {
    const spec = caseById(id);
    return {
      case: id,
      label: spec.label,
      section: spec.section,
      impl: key,
      threads,
      flops: flops(spec),
      status,
      reason,
    };
  });

// A pause before each timed case: V8 compiles hot wasm functions on background threads, and
// the previous implementation's compiles (onnxruntime-web's module is 14 MB) would otherwise
// take a core from the next one's measurement.
const settle = () => new Promise((resolve) => setTimeout(resolve, 400));

// The configurations of a group that run here -> rows (never throws). probe(threads) -> GB/s,
// where given (Node: bandwidth.mjs): the read probe at a decode row's thread count, measured
// just before and just after our row, the better kept as the row's probeGbs, so that its % of
// the probe is of memory as fast as it was while the row ran (a shared machine's bandwidth
// moves by a fifth from one minute to the next).
export async function runGroup(name, { caseIds, quick, peersOk, log = () => {}, probe = null }) {
  const settings = quick ? QUICK : FULL;
  const rows = [];
  const impls = [];
  for (const c of GROUPS[name].filter((c) => IMPLS_HERE.includes(c.impl))) {
    const key = configKey(c);
    const ids = caseIds.filter((id) => !c.cases || c.cases.includes(id));
    if (!ids.length) continue;
    if (c.peer && !peersOk) {
      rows.push(...failedRows(key, c.threads, ids, 'n/a', 'peers not installed'));
      continue;
    }
    if (c.isa === 'relaxed-simd' && !relaxedSimdAvailable()) {
      const why = 'this WebAssembly engine has no relaxed SIMD (Node: --experimental-wasm-relaxed-simd)';
      rows.push(...failedRows(key, c.threads, ids, 'n/a', why));
      continue;
    }
    try {
      impls.push({ impl: await createImpl(c.impl, { threads: c.threads, isa: c.isa }), ids });
    } catch (e) {
      rows.push(...failedRows(key, c.threads, ids, 'failed', `could not start: ${message(e)}`));
    }
  }
  for (const id of caseIds) {
    const spec = caseById(id);
    for (const { impl, ids } of impls) {
      if (!ids.includes(id)) continue;
      await settle();
      // the prefill takes seconds per call for the peers: the long-sequence settings
      const probed = probe && spec.op === 'decode' && impl.key.startsWith('ours-');
      const before = probed ? await probe(impl.threads) : null;
      const row = await runCase(impl, spec, spec.op === 'prefill' ? (quick ? LONG_QUICK : PREFILL) : settings);
      if (probed) row.probeGbs = Math.max(before, await probe(impl.threads));
      rows.push(row);
      log(`${spec.id} ${impl.key}: ${describe(row)}`);
    }
  }
  for (const { impl } of impls) impl.dispose();
  return rows;
}
