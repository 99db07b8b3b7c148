// The scaling section's work inside a child process (child.mjs), one thread count each:
//   runScaling   one implementation's rows (ours on SIMD128, or a peer), every case warmed up
//                for 1.5 s (timing.mjs SCALING) with its first call reported apart
//   traceScaling our pool-trace build (pool_trace.mjs): a few traced calls per case, warmed
//                up the same way, for the scaling model (scaling_model.mjs)
import { caseById } from './cases.mjs';
import { makeInputs } from './inputs.mjs';
import { createImpl } from './impls.mjs';
import { create as createOurs } from './impl_ours.mjs';
import { traceCalls, traceLib } from './pool_trace.mjs';
import { describe, runCase } from './runner.mjs';
import { QUICK, SCALING } from './timing.mjs';

const settle = () => new Promise((resolve) => setTimeout(resolve, 400)); // as groups.mjs's

const log = (text) => process.stderr.write(`${text}\n`);

export async function runScaling({ impl: name, threads, caseIds, quick }) {
  const impl = await createImpl(name, { threads, isa: 'simd128' });
  const rows = [];
  for (const id of caseIds) {
    await settle();
    const row = await runCase(impl, caseById(id), quick ? QUICK : SCALING);
    rows.push(row);
    log(`${id} ${impl.key}: ${describe(row)}`);
  }
  impl.dispose();
  return rows;
}

// -> { threads (as the module reports them), cases: { [id]: { firstMs, calls } | { error } } }
export async function traceScaling({ threads, caseIds, quick }) {
  const impl = await createOurs({ threads, isa: 'simd128', libUrl: traceLib() });
  const cases = {};
  for (const id of caseIds) {
    const spec = caseById(id);
    await settle();
    let prepared;
    try {
      prepared = await impl.prepare(spec, makeInputs(spec));
      cases[id] = await traceCalls(prepared.variants[0].run, quick ? { warmupMs: 100, calls: 2 } : {});
      const c = cases[id].calls[0];
      log(`${id} traced on ${impl.threads} thread(s): ${c.sections.length} sections, ${c.ms.toFixed(1)} ms`);
    } catch (e) {
      cases[id] = { error: String(e?.message ?? e) };
    } finally {
      await prepared?.release?.();
    }
  }
  impl.dispose();
  return { threads: impl.threads, cases };
}
