// First-call latency, paid at creation instead of on the user's first call.
//
// The first call into a fresh instance costs far more than the next ones (a (19,100)
// attention: milliseconds, then hundredths of one): V8 compiles each wasm function when it is
// first called and each JS function of this package when it first runs, embind builds its
// argument converters, the kernels allocate their scratch buffers, and the pool's threads take
// their first task. None of that depends on the sizes, so createAttention() runs one small
// attention and one small multi-head forward through the public API before it resolves.

// q (65,13), k (37,13), v (37,13): three row blocks of 32 (the pool hands them to its threads,
// the last one short) and sizes off every SIMD width, so that the tail code runs too. Zeros:
// the values do not matter, only which code runs.
const zeros = (rows, cols) => ({ data: new Float32Array(rows * cols), shape: [rows, cols] });

export function warmUp(attention) {
  attention.attention(zeros(65, 13), zeros(37, 13), zeros(37, 13));
  // one query: the decode path (its stacked rows and partial results)
  attention.attention(zeros(1, 13), zeros(37, 13), zeros(37, 13));
  // x (37,12) -> (37,12) through 2 heads of d_k 6: the projections and the per-head kernels.
  const layer = attention.multiHeadAttention({ dModel: 12, heads: 2, seed: 1 });
  try {
    layer.forward(zeros(37, 12));
  } finally {
    layer.dispose();
  }
}
