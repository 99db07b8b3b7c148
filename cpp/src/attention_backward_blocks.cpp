// The backward of attention from the forward's weights, in blocks: per block of query rows
// (dP, dS, dq), then per block of keys over the queries that see them (dk, dv). dk and dv sum
// over every query, so they are GEMMs over the block's queries, not per-row-block sums.
#include <algorithm>
#include <vector>

#include "attention_blocks.h"
#include "sizes.h"
#include "softmax_rows.h"
#include "wa/gemm.h"
#include "wa/thread_pool.h"

namespace wa {

void attention_backward_from_weights(ConstMatrix q, ConstMatrix k, ConstMatrix v, ConstMatrix p,
                                     ConstMatrix d_out, Matrix dq, Matrix dk, Matrix dv,
                                     float scale, bool causal, ThreadPool* pool, float* d_weights,
                                     float* d_scores) {
  const size_t n_q = q.rows, n_k = k.rows, d_k = q.cols, d_v = v.cols;
  constexpr size_t B = kAttentionRowBlock;
  // Causal, without a trace to fill: query rows [r0,r1) see keys [0, min(n_k,r1)) only, and
  // keys [c0,c1) are seen by queries [c0, n_q) only; the rest of P and dS is zero. So each
  // pass covers just its triangle (about half the work).
  const bool skip = causal && !d_weights && !d_scores;
  std::vector<float> ds(checked_product({n_q, n_k}));  // dP, then dS; zero where skipped

  // Per block of query rows (for (b < row blocks) rows [b·B, (b+1)·B)):
  //   out = P·v             -> dP = d_out·vᵀ: d_out (rows,d_v), v (cols,d_v) -> (rows,cols)
  //   P = softmax(x)        -> dS = P ⊙ (dP − rowsum(dP ⊙ P))·scale (x = s·scale + bias)
  //   s = q·kᵀ              -> dq = dS·k: dS (rows,cols), k (cols,d_k) -> (rows,d_k)
  parallel_for(pool, (n_q + B - 1) / B, [&](size_t b) {
    const size_t r0 = b * B, r1 = std::min(n_q, r0 + B), rows = r1 - r0;
    const size_t cols = skip ? std::min(n_k, r1) : n_k;
    float* ds_block = ds.data() + r0 * n_k;
    gemm_nt(rows, cols, d_v, d_out.data + r0 * d_out.ld, d_out.ld, v.data, v.ld, ds_block, n_k);
    if (d_weights) std::copy(ds_block, ds_block + rows * n_k, d_weights + r0 * n_k);
    for (size_t i = r0; i < r1; ++i)
      softmax_backward_row(p.data + i * p.ld, ds.data() + i * n_k, cols, scale);
    if (d_scores) std::copy(ds_block, ds_block + rows * n_k, d_scores + r0 * n_k);
    gemm_nn(rows, d_k, cols, ds_block, n_k, k.data, k.ld, dq.data + r0 * dq.ld, dq.ld);
  });
  // Per block of keys (for (b < key blocks) keys [b·B, (b+1)·B)), over the queries that see them:
  //   s = q·kᵀ  -> dk = dSᵀ·q:     dS (queries,keys), q (queries,d_k) -> (keys,d_k)
  //   out = P·v -> dv = Pᵀ·d_out:  P (queries,keys), d_out (queries,d_v) -> (keys,d_v)
  parallel_for(pool, (n_k + B - 1) / B, [&](size_t b) {
    const size_t c0 = b * B, keys = std::min(n_k, c0 + B) - c0;
    const size_t i0 = skip ? std::min(c0, n_q) : 0, queries = n_q - i0;
    gemm_tn(keys, d_k, queries, ds.data() + i0 * n_k + c0, n_k, q.data + i0 * q.ld, q.ld,
            dk.data + c0 * dk.ld, dk.ld);
    gemm_tn(keys, d_v, queries, p.data + i0 * p.ld + c0, p.ld, d_out.data + i0 * d_out.ld, d_out.ld,
            dv.data + c0 * dv.ld, dv.ld);
  });
}

}  // namespace wa
