// The cross-check's reference: the tests' float64 attention reference (scripts/lib/reference.mjs)
// on a case's seeded inputs, sampled as every row's outputs are (inputs.mjs). Node only (the
// bench page does not serve the tests' modules). A case whose reference would take more than a
// few seconds has none: the cross-check then holds the rows to ours on 1 thread (compare.mjs).
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
export function referenceSample(spec) {
  // a backward recomputes the forward and then does twice its work
  if (forwardFlops(spec) * (spec.backward ? 3 : 1) > LIMIT_FLOPS) return null;
  return sample(referenceOutputs(spec, makeInputs(spec)));
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
