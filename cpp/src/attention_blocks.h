// The units of attention work (internal), shared by attention.cpp and
// multi_head_attention.cpp: what a thread-pool task runs, forward and backward.
//   forward   attention_forward_blocks.cpp: k and v packed once; a block of query rows, with
//             every score in memory (traced) or fused with an online softmax; the weights again
//   backward  attention_backward_blocks.cpp: the backward from the forward's weights
// Letters as in wa/attention.h.
#pragma once

#include <cstddef>

#include "wa/attention.h"

namespace wa {

// Query rows per task. Small enough to give two threads several tasks at n_q = 64, large
// enough to keep the GEMM kernel's row tiles full.
constexpr size_t kAttentionRowBlock = 32;

// ---- forward: attention_forward_blocks.cpp ----

// k and v of one attention, packed once as GEMM b operands (gemm_packed.h) and shared by every
// row block:
//   kt  kᵀ (d_k,n_k), packed with k = d_k
//   v   v (n_k,d_v), packed with k = n_k
struct PackedKV {
  const float* kt;
  const float* v;
  size_t n_k, d_k, d_v;
};
size_t packed_kv_floats(size_t n_k, size_t d_k, size_t d_v);
// k (n_k,d_k), v (n_k,d_v) -> packed into buffer (packed_kv_floats of them). pool: as pack_b.
PackedKV pack_kv(ConstMatrix k, ConstMatrix v, float* buffer, ThreadPool* pool);

// Rows [r0,r1) of attention_forward(q, k, v, out, scale, mask, &trace), on the calling thread,
// with every score of the block in memory: trace points at the full (n_q,n_k) matrices.
void attention_rows(ConstMatrix q, const PackedKV& kv, Matrix out, float scale,
                    const ScoreMask& mask, size_t r0, size_t r1, const AttentionTrace& trace);

// The same rows, fused: one block of keys at a time with an online softmax, never more than
// a (rows, 256) block of scores. The result matches attention_rows within float rounding.
void attention_rows_fused(ConstMatrix q, const PackedKV& kv, Matrix out, float scale,
                          const ScoreMask& mask, size_t r0, size_t r1);

// The forward's weights again: q (n_q,d_k), k (n_k,d_k) -> p (n_q,n_k) =
// softmax(mask(q·kᵀ·scale)), bitwise as attention_forward computes them. pool spreads the
// row blocks (null: all on the calling thread).
void attention_weights(ConstMatrix q, ConstMatrix k, float scale, const ScoreMask& mask, Matrix p,
                       ThreadPool* pool);

// ---- backward: attention_backward_blocks.cpp ----

// attention_backward given the forward's weights instead of recomputing them:
// q (n_q,d_k), k (n_k,d_k), v (n_k,d_v), p (n_q,n_k) softmax weights, d_out (n_q,d_v)
//   -> dq (n_q,d_k), dk (n_k,d_k), dv (n_k,d_v).
// pool spreads each pass (null: all on the calling thread, as inside a pool task).
// mask: the forward's (wa/softmax.h): where it hides keys (causal, windows, limits) P is zero and
// that part is skipped; a softcap adds its tanh′. d_weights, d_scores (n_q,n_k), when not null,
// receive dP and dS (AttentionBackwardTrace), computed in full.
void attention_backward_from_weights(ConstMatrix q, ConstMatrix k, ConstMatrix v, ConstMatrix p,
                                     ConstMatrix d_out, Matrix dq, Matrix dk, Matrix dv,
                                     float scale, const ScoreMask& mask, ThreadPool* pool,
                                     float* d_weights = nullptr, float* d_scores = nullptr);

}  // namespace wa
