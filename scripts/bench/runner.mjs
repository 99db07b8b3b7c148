// One row of results: one case on one implementation. Prepares the inputs (seeded, the same
// in every process), lets the implementation set up its variants, keeps the fastest, times
// it, and keeps a sample of the outputs for the cross-check. Never throws: a failure is a
// row that says why.
import { flops } from './flops.mjs';
import { makeInputs, sample } from './inputs.mjs';
import { NotAvailable } from './not_available.mjs';
import { fmtMs } from './table.mjs';
import { measure, pickFastest } from './timing.mjs';

export const message = (e) =>
  String(e?.message ?? e)
    .split('\n')[0]
    .slice(0, 300);

// a row in a progress line
export const describe = (r) =>
  r.status === 'ok' ? `${fmtMs(r.ms)} ms, ${r.gflops.toFixed(1)} GFLOP/s` : `${r.status}: ${r.reason}`;

export async function runCase(impl, spec, settings, { firstOnly = false } = {}) {
  const row = {
    case: spec.id,
    label: spec.label,
    section: spec.section,
    impl: impl.key,
    name: impl.name,
    threads: impl.threads,
    detail: impl.detail,
    flops: flops(spec),
    status: 'ok',
  };
  let prepared;
  try {
    prepared = await impl.prepare(spec, makeInputs(spec), { firstOnly });
    const { index, probes } = await pickFastest(prepared.variants);
    const chosen = prepared.variants[index];
    const m = await measure(chosen.run, settings);
    Object.assign(row, {
      formulation: chosen.name,
      ms: m.ms,
      minMs: m.minMs,
      maxMs: m.maxMs,
      runs: m.runs,
      gflops: row.flops / m.ms / 1e6,
      sample: sample(m.out),
      // the chosen formulation's first call: in the look at every formulation where there were several
      firstMs: probes.length ? probes[index].firstMs : m.firstMs,
    });
    if (m.note) row.note = m.note;
    if (probes.length) row.probes = probes.map((p) => ({ ...p, ms: Number.isFinite(p.ms) ? p.ms : null }));
    const bytes = impl.wasmBytes();
    if (bytes != null) row.wasmBytes = bytes;
  } catch (e) {
    row.status = e instanceof NotAvailable ? e.kind : 'failed';
    row.reason = message(e);
    if (row.status === 'failed') {
      try {
        const bytes = impl.wasmBytes(); // how far memory got before the failure
        if (bytes != null) row.wasmBytes = bytes;
      } catch {
        /* the module may be gone */
      }
    }
  } finally {
    try {
      await prepared?.release?.();
    } catch {
      /* a failed release must not hide the row */
    }
  }
  return row;
}
