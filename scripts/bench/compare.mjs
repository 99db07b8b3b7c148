// Cross-checks and ratios over the rows of one case:
//   check    each row's output sample against a reference: the tests' float64 reference
//            (reference_sample.mjs) where the case has one, else ours on 1 thread; the largest
//            difference relative to the largest reference value; over 1e-3 means the row did
//            not compute the same thing.
//   speedup  for every other row, its time ÷ ours at the same thread count (ours on 1
//            thread for the plain JS loops): how many times faster ours is. Our relaxed-SIMD
//            row too, against our SIMD128 row: under 1 means the relaxed build is faster.
import { relativeDiff } from './inputs.mjs';

export const TOLERANCE = 1e-3;

// rows -> the same rows with check and oursSpeedup; references: case id -> the float64
// reference's sample (a Map; a case missing from it falls back to ours on 1 thread).
export function compareRows(rows, references = new Map()) {
  const byCase = new Map();
  for (const r of rows) {
    if (!byCase.has(r.case)) byCase.set(r.case, []);
    byCase.get(r.case).push(r);
  }
  for (const list of byCase.values()) {
    const ok = (key) => list.find((r) => r.impl === key && r.status === 'ok' && r.sample?.length);
    const float64 = references.get(list[0].case);
    const reference = float64 ? { impl: 'float64 reference', sample: float64 } : (ok('ours-1') ?? ok('ours-2'));
    if (reference && !float64) reference.check = { reference: true };
    for (const r of list) {
      if (r.status !== 'ok') continue;
      if (reference && r !== reference && r.sample?.length) {
        const diff = relativeDiff(r.sample, reference.sample);
        if (diff !== null) r.check = { against: reference.impl, relDiff: diff, ok: diff <= TOLERANCE };
      }
      const relaxed = r.impl.startsWith('ours-relaxed-');
      if (!r.impl.startsWith('ours-') || relaxed) {
        const threads = r.impl === 'js-1' ? 1 : r.threads;
        const ours = list.find((o) => o.impl === `ours-${threads}` && o.status === 'ok');
        if (ours) r.oursSpeedup = { vs: ours.impl, factor: r.ms / ours.ms };
      }
    }
  }
  return rows;
}
