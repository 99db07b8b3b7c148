// The forward units of attention work (attention_blocks.h): blocks of query rows over k and v
// packed once per attention (packed_kv.h), through the kernels of their element type.
//   attention_rows         every score of the block at once, into a trace
//   attention_rows_online  one key block at a time with an online softmax: (rows, kKeyBlock)
//                          scores at most, never (n_q,n_k), so long sequences fit in memory
#include <algorithm>
#include <limits>

#include "attention/attention_blocks.h"
#include "attention/softmax_rows.h"
#include "gemm/gemm_packed.h"
#include "runtime/scratch.h"
#include "runtime/sizes.h"
#include "runtime/threading.h"
#include "wa/gemm.h"
#include "wa/thread_pool.h"

namespace wa {

void attention_rows(ConstMatrix q, const PackedKV& kv, Matrix out, float scale,
                    const ScoreMask& mask, size_t r0, size_t r1, const AttentionTrace& trace) {
  // A trace shows every score, causal or not: all n_k keys are scored.
  const size_t rows = r1 - r0, n_k = kv.n_k, ld = n_k;
  float* scores = trace.scores + r0 * ld;
  float* weights = trace.weights + r0 * ld;

  const KvKernels& kern = kv_kernels(kv.type);
  // q_block (rows,d_k), kᵀ (d_k,n_k) -> scores (rows,n_k)
  kern.scores(kv, q.data + r0 * q.ld, q.ld, rows, 0, n_k, scores, ld);
  score_trace_rows(scores, ld, trace.scaled + r0 * ld,
                   trace.capped ? trace.capped + r0 * ld : nullptr, trace.masked + r0 * ld, r0,
                   rows, n_k, scale, mask);
  // scores (rows,n_k) -> weights (rows,n_k)
  softmax_rows(scores, ld, weights, ld, r0, rows, n_k, n_k, scale, mask);
  // weights (rows,n_k), v (n_k,d_v) -> out_block (rows,d_v)
  kern.weighted_values(kv, weights, ld, rows, 0, n_k, out.data + r0 * out.ld, out.ld, false);
}

void attention_rows_online(const OnlineRows& t, const PackedKV& kv, size_t lo, size_t hi,
                           float scale) {
  const size_t rows = t.heads * t.rows, n_k = kv.n_k;
  // Keys outside [first, last) are masked for every row: not computed. first is rounded down
  // to a panel of the packed operands (lo is on one).
  size_t first = hi, last = lo;
  for (size_t h = 0; h < t.heads; ++h) {
    first = std::min(first, visible_keys(t.masks[h], n_k, t.row0).lo);
    last = std::max(last, visible_keys(t.masks[h], n_k, t.row0 + t.rows - 1).hi);
  }
  last = std::min(last, hi);
  first = std::max(first / kernels::kNR * kernels::kNR, lo);
  if (first >= last) return;
  const KvKernels& kern = kv_kernels(kv.type);
  float* p = thread_scratch(ScratchSlot::attention_scores, rows * kKeyBlock + rows);
  float* rescale = p + rows * kKeyBlock;

  for (size_t j0 = first; j0 < last; j0 += kKeyBlock) {
    const size_t cols = std::min(kKeyBlock, last - j0);
    // q rows (rows,d_k), kᵀ columns [j0,j0+cols) -> s (rows,cols)
    kern.scores(kv, t.q, t.ldq, rows, j0, cols, p, kKeyBlock);
    // s -> p = exp(x - running max), head by head (each its own mask); acc rescaled to the new max
    for (size_t h = 0; h < t.heads; ++h) {
      const size_t at = h * t.rows;
      softmax_online_block(p + at * kKeyBlock, kKeyBlock, p + at * kKeyBlock, kKeyBlock, t.row0,
                           t.rows, j0, cols, n_k, scale, t.masks[h], t.row_max + at, t.row_sum + at,
                           rescale + at);
    }
    for (size_t r = 0; r < rows; ++r)
      if (rescale[r] != 1.0f)
        for (size_t c = 0; c < kv.d_v; ++c) t.acc[r * t.ld_acc + c] *= rescale[r];
    // p (rows,cols), v rows [j0,j0+cols) (cols,d_v) -> acc (rows,d_v), summed over blocks
    kern.weighted_values(kv, p, kKeyBlock, rows, j0, cols, t.acc, t.ld_acc, true);
  }
}

void attention_online_finish(const float* acc, size_t ld_acc, const float* row_sum, size_t rows,
                             size_t d_v, float* out, size_t ld_out) {
  // out = acc / Σ exp(x - max); a row with every key masked has the sum 0 and becomes a zero row
  // (its acc is 0, or NaN where a NaN score was seen: NaN stays NaN)
  for (size_t r = 0; r < rows; ++r) {
    const float inv = row_sum[r] > 0 ? 1.0f / row_sum[r] : 0.0f;
    for (size_t c = 0; c < d_v; ++c) out[r * ld_out + c] = acc[r * ld_acc + c] * inv;
  }
}

void attention_weights(ConstMatrix q, ConstMatrix k, float scale, const ScoreMask& mask, Matrix p,
                       ThreadPool* pool) {
  const size_t n_q = q.rows, n_k = k.rows, d_k = q.cols;
  const size_t blocks = (n_q + kAttentionRowBlock - 1) / kAttentionRowBlock;
  const size_t threads = threads_for(pool, static_cast<double>(n_q) * n_k * d_k);
  // for (t = 0; t < blocks; ++t) rows [b·B, (b+1)·B) of P, b = blocks − 1 − t: the last rows
  // first, which see the most keys under a causal mask, so that the threads end together
  parallel_for(pool, blocks, threads, [&](size_t t) {
    const size_t b = blocks - 1 - t;
    const size_t r0 = b * kAttentionRowBlock, r1 = std::min(n_q, r0 + kAttentionRowBlock);
    const size_t rows = r1 - r0;
    // keys from the last row's limit on are masked for the whole block: zero weights, not computed
    const size_t cols = visible_keys(mask, n_k, r1 - 1).hi;
    float* p_block = p.data + r0 * p.ld;
    gemm_nt(rows, cols, d_k, q.data + r0 * q.ld, q.ld, k.data, k.ld, p_block, p.ld);
    softmax_rows(p_block, p.ld, p_block, p.ld, r0, rows, cols, n_k, scale, mask);
    for (size_t r = 0; r < rows; ++r)
      std::fill(p_block + r * p.ld + cols, p_block + r * p.ld + n_k, 0.0f);
  });
}

}  // namespace wa
