// The forward units of attention work (attention_blocks.h): blocks of query rows over k and v
// packed once per attention (so every block runs the GEMM kernel on ready-made panels).
//   attention_rows         every score of the block at once, into a trace
//   attention_rows_online  one key block at a time with an online softmax: (rows, kKeyBlock)
//                          scores at most, never (n_q,n_k), so long sequences fit in memory
#include <algorithm>
#include <limits>

#include "attention_blocks.h"
#include "gemm_packed.h"
#include "scratch.h"
#include "sizes.h"
#include "softmax_rows.h"
#include "wa/gemm.h"
#include "wa/thread_pool.h"

namespace wa {

size_t packed_kv_floats(size_t n_k, size_t d_k, size_t d_v) {
  return checked_sum({packed_b_floats(d_k, n_k), packed_b_floats(n_k, d_v)});
}

PackedKV pack_kv(ConstMatrix k, ConstMatrix v, float* buffer, ThreadPool* pool) {
  const size_t n_k = k.rows, d_k = k.cols, d_v = v.cols;
  float* kt = buffer;
  float* vp = buffer + packed_b_floats(d_k, n_k);
  pack_b(Transpose::yes, d_k, n_k, k.data, k.ld, kt, pool);  // kᵀ (d_k,n_k): panels of keys
  pack_b(Transpose::no, n_k, d_v, v.data, v.ld, vp, pool);   // v (n_k,d_v): panels of columns
  return {kt, vp, n_k, d_k, d_v, 0, n_k};
}

PackedKV PackedHeads::at(size_t b, size_t g, size_t n_k, size_t d_k, size_t d_v) const {
  const float* kt = base + (b * kv_heads + g) * head_floats;
  return {kt, kt + packed_b_floats(d_k, capacity), n_k, d_k, d_v, 0, capacity};
}

PackedKV pack_kv_keys(ConstMatrix k, ConstMatrix v, size_t k0, size_t keys, float* buffer,
                      ThreadPool* pool) {
  const ConstMatrix kc{k.data + k0 * k.ld, keys, k.cols, k.ld};
  const ConstMatrix vc{v.data + k0 * v.ld, keys, v.cols, v.ld};
  PackedKV kv = pack_kv(kc, vc, buffer, pool);
  kv.n_k = k.rows, kv.k0 = k0;
  return kv;
}

void attention_rows(ConstMatrix q, const PackedKV& kv, Matrix out, float scale,
                    const ScoreMask& mask, size_t r0, size_t r1, const AttentionTrace& trace) {
  // A trace shows every score, causal or not: all n_k keys are scored.
  const size_t rows = r1 - r0, n_k = kv.n_k, ld = n_k;
  float* scores = trace.scores + r0 * ld;
  float* weights = trace.weights + r0 * ld;

  // q_block (rows,d_k), kᵀ (d_k,n_k) -> scores (rows,n_k)
  gemm_packed_b(Transpose::no, rows, n_k, kv.d_k, q.data + r0 * q.ld, q.ld, kv.kt, kv.d_k, scores,
                ld, false);
  score_trace_rows(scores, ld, trace.scaled + r0 * ld,
                   trace.capped ? trace.capped + r0 * ld : nullptr, trace.masked + r0 * ld, r0,
                   rows, n_k, scale, mask);
  // scores (rows,n_k) -> weights (rows,n_k)
  softmax_rows(scores, ld, weights, ld, r0, rows, n_k, n_k, scale, mask);
  // weights (rows,n_k), v (n_k,d_v) -> out_block (rows,d_v)
  gemm_packed_b(Transpose::no, rows, kv.d_v, n_k, weights, ld, kv.v, kv.v_stride,
                out.data + r0 * out.ld, out.ld, false);
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
  float* p = thread_scratch(ScratchSlot::attention_scores, rows * kKeyBlock + rows);
  float* rescale = p + rows * kKeyBlock;

  for (size_t j0 = first; j0 < last; j0 += kKeyBlock) {
    const size_t cols = std::min(kKeyBlock, last - j0);
    // q rows (rows,d_k), kᵀ columns [j0,j0+cols) -> s (rows,cols)
    gemm_packed_b(Transpose::no, rows, cols, kv.d_k, t.q, t.ldq,
                  packed_b_block(kv.kt, kv.d_k, 0, j0 - kv.k0), kv.d_k, p, kKeyBlock, false);
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
    gemm_packed_b(Transpose::no, rows, kv.d_v, cols, p, kKeyBlock,
                  packed_b_block(kv.v, kv.v_stride, j0 - kv.k0, 0), kv.v_stride, t.acc, t.ld_acc,
                  true);
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
  // for (b = 0; b < blocks; ++b) rows [b·B, (b+1)·B) of P
  parallel_for(pool, blocks, [&](size_t b) {
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
