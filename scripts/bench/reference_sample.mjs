// The cross-check's reference: the tests' float64 attention reference (scripts/lib/reference.mjs)
// on a case's seeded inputs, sampled as every row's outputs are (inputs.mjs). Node only (the
// bench page does not serve the tests' modules). A case whose reference would take more than a
// few seconds has none: the cross-check then holds the rows to ours on 1 thread (compare.mjs).
// A decode over a float16 or int8 cache is held to the reference over the values the cache
// stores (its read(), as the tests hold it): the rounding to those is the dtype's, not an error.
import {
  attentionBackwardRef,
  attentionRef,
  matmulRef,
  mhaBackwardRef,
  mhaRef,
  onnxAttentionRef,
} from '../lib/reference.mjs';
import { forwardFlops } from './flops.mjs';
import { makeInputs, sample } from './inputs.mjs';

// Nominal FLOPs past which a case gets no reference: the float64 loops run at a few hundred
// MFLOP/s, so this is a few seconds (the forward MHA rows; their backward twins are over it).
const LIMIT_FLOPS = 2e9;

// spec (cases.mjs) -> the reference's output sample, or null over the limit
export async function referenceSample(spec) {
  // a backward recomputes the forward and then does twice its work
  if (forwardFlops(spec) * (spec.backward ? 3 : 1) > LIMIT_FLOPS) return null;
  const x = makeInputs(spec);
  if (spec.op === 'decode' && spec.dtype !== 'float32') Object.assign(x, await storedValues(spec, x));
  return sample(referenceOutputs(spec, x));
}

// A decode case's cache keys and values as a cache of its dtype stores them: the past tokens
// and the new one appended as the bench's run appends them (impl_ours.mjs), then read back ->
// { pastK, pastV, k, v } in the inputs' layouts.
async function storedValues(spec, x) {
  const { createAttention, tensor } = await import('../../web/lib/index.js');
  const { batch, qHeads, kvHeads, d, past, dtype } = spec;
  const attn = await createAttention({ threads: 1 });
  try {
    const cache = attn.kvCache({ batch, kvHeads, dK: d, dV: d, capacity: past + 1, dtype });
    const q = tensor(x.q, [batch, qHeads, 1, d]);
    attn.attention(q, tensor(x.pastK, [batch, kvHeads, past, d]), tensor(x.pastV, [batch, kvHeads, past, d]), {
      cache,
    });
    attn.attention(q, tensor(x.k, [batch, kvHeads, 1, d]), tensor(x.v, [batch, kvHeads, 1, d]), {
      cache,
      causal: true,
    });
    const { key, value } = cache.read();
    // [batch,kvHeads,past+1,d] -> the first past rows of each head, and its last
    const split = (all) => {
      const first = new Float32Array(batch * kvHeads * past * d),
        last = new Float32Array(batch * kvHeads * d);
      for (let h = 0; h < batch * kvHeads; ++h) {
        first.set(all.subarray(h * (past + 1) * d, (h * (past + 1) + past) * d), h * past * d);
        last.set(all.subarray((h * (past + 1) + past) * d, (h + 1) * (past + 1) * d), h * d);
      }
      return [first, last];
    };
    const [pastK, k] = split(key.data),
      [pastV, v] = split(value.data);
    return { pastK, pastV, k, v };
  } finally {
    attn.dispose();
  }
}

// The outputs every implementation returns for the case (impl_ours.mjs), in float64.
function referenceOutputs(spec, x) {
  switch (spec.op) {
    case 'matmul':
      return [matmulRef(x.a, x.b, spec.m, spec.k, spec.n)];
    case 'attention': {
      const t = (data) => ({ data, shape: [spec.n, spec.d] });
      const options = { causal: spec.causal };
      if (!spec.backward) return [attentionRef(t(x.q), t(x.k), t(x.v), options).output];
      const g = attentionBackwardRef(t(x.q), t(x.k), t(x.v), x.dOut, options);
      return [g.dq, g.dk, g.dv];
    }
    case 'mha': {
      const weights = { wq: x.wq, wk: x.wk, wv: x.wv, wo: x.wo };
      const options = { nQ: spec.n, dModel: spec.dModel, heads: spec.heads, causal: spec.causal };
      if (!spec.backward) return [mhaRef(x.x, weights, options).output];
      return [mhaBackwardRef(x.x, weights, options, x.dOut).dx];
    }
    case 'decode':
    case 'prefill': {
      // decode: one new token after `past` cached ones; prefill: n tokens, no past
      const { batch, qHeads, kvHeads, d } = spec;
      const past = spec.op === 'decode' ? { nPast: spec.past, pastKey: x.pastK, pastValue: x.pastV } : {};
      const nQ = spec.op === 'decode' ? 1 : spec.n;
      const a = { batch, qHeads, kvHeads, nQ, nNew: nQ, dK: d, dV: d, q: x.q, k: x.k, v: x.v, causal: true, ...past };
      return [onnxAttentionRef(a).y];
    }
    default:
      throw new Error(`referenceSample: unknown op ${spec.op}`);
  }
}
