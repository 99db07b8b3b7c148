// The inputs every implementation gets: generated from a seed derived from the case's name,
// so a child process regenerates exactly the bytes the parent used, with nothing to ship.
// Plus a small evenly spaced sample of outputs, enough to see that two implementations
// computed the same thing without sending whole tensors between processes.

// seededRandom(seed): mulberry32 -> uniform floats in [0, 1), the package's own seeded generator
import { seededRandom } from '../../web/lib/index.js';

// FNV-1a of the name: a stable 32-bit seed per case.
function seedOf(name) {
  let h = 0x811c9dc5;
  for (const c of name) h = Math.imul(h ^ c.charCodeAt(0), 0x01000193);
  return h >>> 0;
}

function uniform(next, count, amplitude) {
  const out = new Float32Array(count);
  for (let i = 0; i < count; ++i) out[i] = (2 * next() - 1) * amplitude;
  return out;
}

// spec (see cases.mjs) -> named Float32Arrays, row-major:
//   matmul: a [m,k], b [k,n]
//   attention: q, k, v [n,d], dOut [n,d]
//   decode, prefill: see there (4-D, batch 1)
//   mha: x [n,dModel], wq, wk, wv, wo [dModel,dModel] (Xavier-uniform range), dOut [n,dModel]
// dOut is made for forward cases too: it costs little and keeps the stream of numbers, hence
// the inputs, identical between a case and its backward twin.
export function makeInputs(spec) {
  const next = seededRandom(seedOf(spec.inputsKey));
  if (spec.op === 'matmul') {
    return { a: uniform(next, spec.m * spec.k, 1), b: uniform(next, spec.k * spec.n, 1) };
  }
  if (spec.op === 'attention') {
    const size = spec.n * spec.d;
    return {
      q: uniform(next, size, 1),
      k: uniform(next, size, 1),
      v: uniform(next, size, 1),
      dOut: uniform(next, size, 1),
    };
  }
  if (spec.op === 'mha') {
    const dm = spec.dModel;
    const xavier = Math.sqrt(6 / (dm + dm));
    return {
      x: uniform(next, spec.n * dm, 1),
      wq: uniform(next, dm * dm, xavier),
      wk: uniform(next, dm * dm, xavier),
      wv: uniform(next, dm * dm, xavier),
      wo: uniform(next, dm * dm, xavier),
      dOut: uniform(next, spec.n * dm, 1),
    };
  }
  if (spec.op === 'decode') {
    // 4-D, batch 1: q [1,Hq,1,d]; the new token's k, v [1,Hkv,1,d]; the cache's pastK, pastV [1,Hkv,past,d]
    const { qHeads, kvHeads, d, past } = spec;
    return {
      q: uniform(next, qHeads * d, 1),
      k: uniform(next, kvHeads * d, 1),
      v: uniform(next, kvHeads * d, 1),
      pastK: uniform(next, kvHeads * past * d, 1),
      pastV: uniform(next, kvHeads * past * d, 1),
    };
  }
  if (spec.op === 'prefill') {
    // 4-D, batch 1: q [1,Hq,n,d], k, v [1,Hkv,n,d]
    const { qHeads, kvHeads, d, n } = spec;
    return {
      q: uniform(next, qHeads * n * d, 1),
      k: uniform(next, kvHeads * n * d, 1),
      v: uniform(next, kvHeads * n * d, 1),
    };
  }
  throw new Error(`makeInputs: unknown op ${spec.op}`);
}

// What the peers add to the scores for a causal mask: 0 where key j <= query i, else -1e9
// (not -Infinity: a large finite value is what frameworks use, and keeps every peer's
// softmax and gradient free of inf - inf). exp(-1e9 - max) is 0 in float32, so the result is
// the same as masking.
export function causalMask(n) {
  const mask = new Float32Array(n * n);
  for (let i = 0; i < n; ++i) mask.fill(-1e9, i * n + i + 1, (i + 1) * n);
  return mask;
}

// ~256 evenly spaced values across the outputs, in order: cheap to send from a child, and
// enough to catch a wrong transpose or a missing scale.
export function sample(outputs, count = 256) {
  const total = outputs.reduce((n, o) => n + o.length, 0);
  const step = Math.max(1, Math.floor(total / count));
  const out = [];
  let base = 0;
  for (const o of outputs) {
    for (let i = (step - (base % step)) % step; i < o.length; i += step) out.push(o[i]);
    base += o.length;
  }
  return out;
}

// Largest |a - b| over the two samples, relative to the largest |b| (the reference), so
// one tolerance fits outputs of any scale.
export function relativeDiff(a, b) {
  if (!a || !b || a.length !== b.length || a.length === 0) return null;
  let diff = 0,
    scale = 0;
  for (let i = 0; i < a.length; ++i) {
    diff = Math.max(diff, Math.abs(a[i] - b[i]));
    scale = Math.max(scale, Math.abs(b[i]));
  }
  return diff / (scale || 1);
}
