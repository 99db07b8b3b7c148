// The kernel sections (matmul, attention, mha, backward) in Node: every case on every
// configuration of groups.mjs. The main group (ours on 1 and 2 threads and with relaxed
// SIMD, tfjs-wasm and onnxruntime-web on 1 thread, the plain JS loops) runs in this process;
// each 2-thread peer runs all its cases in a child process of its own (thread counts fixed
// at start; tfjs's threaded build needs global patches), on the same seeded inputs.
import { failedRows, GROUPS, runGroup } from './groups.mjs';
import { runChild } from './spawn.mjs';

export async function runKernels({ caseIds, quick, peersOk, log, probe }) {
  const rows = await runGroup('main', { caseIds, quick, peersOk, log, probe });
  for (const name of Object.keys(GROUPS).filter((g) => g !== 'main')) {
    const [c] = GROUPS[name];
    if (!peersOk) {
      rows.push(...failedRows(name, c.threads, caseIds, 'n/a', 'peers not installed'));
      continue;
    }
    log(`${name}: running ${caseIds.length} case(s) in a child process`);
    const r = await runChild(
      { mode: 'group', group: name, caseIds, quick },
      {
        timeoutMs: 20 * 60 * 1000, // the prefill row alone takes minutes for a peer on a busy machine
        onStderr: (text) =>
          text
            .split('\n')
            .filter(Boolean)
            .forEach((l) => log(`  [${name}] ${l.trim()}`)),
      },
    );
    if (r.error) rows.push(...failedRows(name, c.threads, caseIds, 'failed', r.error));
    else rows.push(...r.rows);
  }
  return rows;
}
