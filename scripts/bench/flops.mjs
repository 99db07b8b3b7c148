// FLOP counts, one multiply-add = 2 FLOPs, GEMMs only (softmax, scaling and masking are
// O(n²) or less against the GEMMs' O(n²·d) and are not counted):
//
//   matmul [m,k]·[k,n]                    2·m·n·k
//   attention, n queries and keys, width d  4·n²·d   (q·kᵀ and p·v: 2·n²·d each)
//   causal attention                      the same nominal 4·n²·d, although half the score
//                                         matrix is masked: every implementation is credited
//                                         with the same work, so GFLOP/s compare like ms do,
//                                         and an implementation that skips masked blocks
//                                         shows it as a higher rate
//   multi-head attention, n tokens, width dModel, h heads of dK = dModel/h:
//                                         4 projections · 2·n·dModel²  +  h · 4·n²·dK
//   decode, one token over past+1 keys, Hq heads of width d:  4·Hq·(past+1)·d
//   prefill (GQA), n tokens, Hq heads of width d:              4·Hq·n²·d (causal nominal, as above)
//   backward (any of the above)           2 × the forward's GEMM FLOPs: each forward GEMM
//                                         C = A·B needs dA = dC·Bᵀ and dB = Aᵀ·dC.
//                                         Nominal again: the timed call goes from inputs and
//                                         dOut to gradients, so it also contains whatever
//                                         forward work each implementation redoes or needs
//                                         (tf.grads runs the forward; our layer's backward
//                                         needs its forward first, which is timed with it).

export function forwardFlops(spec) {
  switch (spec.op) {
    case 'matmul':
      return 2 * spec.m * spec.n * spec.k;
    case 'attention':
      return 4 * spec.n * spec.n * spec.d;
    case 'mha': {
      const dK = spec.dModel / spec.heads;
      return 4 * 2 * spec.n * spec.dModel * spec.dModel + spec.heads * 4 * spec.n * spec.n * dK;
    }
    case 'decode':
      return 4 * spec.qHeads * (spec.past + 1) * spec.d;
    case 'prefill':
      return 4 * spec.qHeads * spec.n * spec.n * spec.d;
    default:
      throw new Error(`forwardFlops: unknown op ${spec.op}`);
  }
}

export function flops(spec) {
  return spec.backward ? 2 * forwardFlops(spec) : forwardFlops(spec);
}
