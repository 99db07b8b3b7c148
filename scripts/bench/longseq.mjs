// Long sequences: causal single-head attention, d = 64, n = 512 .. 16384, each
// implementation until it fails. Every (implementation, n) runs in a fresh child process:
// the peak memory is then that n's own (wasm memory only grows, and so does a process's),
// and an out-of-memory abort in a peer's wasm takes down only that child. An implementation
// stops at its first failure, or after a run that took over 20 s (the rows say which), so
// the section stays bounded.
import { LONG_SIZES, LONG_SIZES_QUICK, longCase } from './cases.mjs';
import { describe } from './runner.mjs';
import { runChild } from './spawn.mjs';

const STOP_AFTER_MS = 20000;

const LONG_CONFIGS = [
  { impl: 'ours', threads: 1 },
  { impl: 'ours', threads: 2 },
  { impl: 'tfjs', threads: 1 },
  { impl: 'tfjs', threads: 2 },
  { impl: 'ort', threads: 1 },
  { impl: 'ort', threads: 2 },
  { impl: 'js', threads: 1 },
];

export async function measureLong({ quick, peersOk, log }) {
  const sizes = quick ? LONG_SIZES_QUICK : LONG_SIZES;
  const rows = [];
  for (const c of LONG_CONFIGS) {
    const key = `${c.impl}-${c.threads}`;
    let stopped = null;
    for (const n of sizes) {
      const spec = longCase(n);
      const base = { case: spec.id, label: spec.label, n, section: 'long', impl: key, threads: c.threads };
      if (c.impl !== 'ours' && c.impl !== 'js' && !peersOk) {
        rows.push({ ...base, status: 'n/a', reason: 'peers not installed' });
        continue;
      }
      if (stopped) {
        rows.push({ ...base, status: 'skipped', reason: stopped });
        continue;
      }
      const r = await runChild(
        { mode: 'long', impl: c.impl, threads: c.threads, n, quick },
        { timeoutMs: 5 * 60 * 1000 },
      );
      const row = r.row ?? { ...base, status: 'failed', reason: r.error };
      row.n = n;
      rows.push(row);
      log(`long ${key} n=${n}: ${describe(row)}`);
      if (row.status === 'failed') stopped = `not run after the failure at n=${n}`;
      else if (row.status === 'skipped') stopped = `not run after the skip at n=${n}`;
      else if (row.status === 'ok' && row.ms > STOP_AFTER_MS)
        stopped = `not run: n=${n} took ${(row.ms / 1000).toFixed(0)} s (> ${STOP_AFTER_MS / 1000} s)`;
    }
  }
  return { sizes, rows };
}
