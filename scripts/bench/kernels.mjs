// The kernel sections (matmul, attention, mha, backward): every case on every
// configuration. Same process where possible: ours on 1 and 2 threads (two instances),
// tfjs-wasm and onnxruntime-web on 1 thread, and the plain JS loops all live in this
// process and take turns case by case. The 2-thread peers each need a process of their own
// (thread counts fixed at start; tfjs's threaded build needs global patches), so they run
// all their cases in one child each, on the same seeded inputs.
import { caseById } from './cases.mjs';
import { flops } from './flops.mjs';
import { createImpl } from './impls.mjs';
import { describe, message, runCase } from './runner.mjs';
import { runChild } from './spawn.mjs';
import { FULL, LONG_QUICK, PREFILL, QUICK } from './timing.mjs';

const IN_PROCESS = [
  { impl: 'ours', threads: 1 },
  { impl: 'ours', threads: 2 },
  { impl: 'tfjs', threads: 1, peer: true },
  { impl: 'ort', threads: 1, peer: true },
  { impl: 'js', threads: 1 },
];
const IN_CHILDREN = [
  { impl: 'tfjs', threads: 2 },
  { impl: 'ort', threads: 2 },
];

const failedRows = (key, threads, caseIds, status, reason) =>
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

export async function runKernels({ caseIds, quick, peersOk, log }) {
  const settings = quick ? QUICK : FULL;
  const rows = [];
  const impls = [];
  for (const c of IN_PROCESS) {
    const key = `${c.impl}-${c.threads}`;
    if (c.peer && !peersOk) {
      rows.push(...failedRows(key, c.threads, caseIds, 'n/a', 'peers not installed'));
      continue;
    }
    try {
      impls.push(await createImpl(c.impl, { threads: c.threads }));
    } catch (e) {
      rows.push(...failedRows(key, c.threads, caseIds, 'failed', `could not start: ${message(e)}`));
    }
  }
  for (const id of caseIds) {
    const spec = caseById(id);
    for (const impl of impls) {
      await settle();
      // the prefill takes seconds per call for the peers: the long-sequence settings
      const row = await runCase(impl, spec, spec.op === 'prefill' ? (quick ? LONG_QUICK : PREFILL) : settings);
      rows.push(row);
      log(`${spec.id} ${impl.key}: ${describe(row)}`);
    }
  }
  for (const impl of impls) impl.dispose();

  for (const c of IN_CHILDREN) {
    const key = `${c.impl}-${c.threads}`;
    if (!peersOk) {
      rows.push(...failedRows(key, c.threads, caseIds, 'n/a', 'peers not installed'));
      continue;
    }
    log(`${key}: running ${caseIds.length} case(s) in a child process`);
    const r = await runChild(
      { mode: 'cases', impl: c.impl, threads: c.threads, caseIds, quick },
      {
        timeoutMs: 20 * 60 * 1000, // the prefill row alone takes minutes for a peer on a busy machine
        onStderr: (text) =>
          text
            .split('\n')
            .filter(Boolean)
            .forEach((l) => log(`  [${key}] ${l.trim()}`)),
      },
    );
    if (r.error) rows.push(...failedRows(key, c.threads, caseIds, 'failed', r.error));
    else rows.push(...r.rows);
  }
  return rows;
}
