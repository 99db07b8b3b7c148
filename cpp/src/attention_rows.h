// The units of attention work shared by attention.cpp and multi_head_attention.cpp: the
// forward for a block of query rows, and the backward from the forward's weights.
#pragma once

#include <cstddef>

#include "wa/attention.h"

namespace wa {

// Query rows per task. Small enough to give two threads several tasks at n_q = 64, large
// enough that packing k and v for the block stays a few percent of its work.
constexpr size_t kAttentionRowBlock = 32;

// Rows [r0,r1) of attention_forward(q, k, v, out, mask, trace), on the calling thread.
// trace, when set, points at the full (n_q,n_k) matrices of this attention.
void attention_rows(ConstMatrix q, ConstMatrix k, ConstMatrix v, Matrix out,
                    const ScoreMask& mask, size_t r0, size_t r1, const AttentionTrace* trace);

// The forward's weights again: q (n_q,d_k), k (n_k,d_k) -> p (n_q,n_k) =
// softmax(mask(q·kᵀ·scale)), bitwise as attention_forward computes them. pool spreads the
// row blocks (null: all on the calling thread).
void attention_weights(ConstMatrix q, ConstMatrix k, const ScoreMask& mask, Matrix p,
                       ThreadPool* pool);

// attention_backward given the forward's weights instead of recomputing them:
// q (n_q,d_k), k (n_k,d_k), v (n_k,d_v), p (n_q,n_k) softmax weights, d_out (n_q,d_v)
//   -> dq (n_q,d_k), dk (n_k,d_k), dv (n_k,d_v).
// pool spreads each pass (null: all on the calling thread, as inside a pool task).
void attention_backward_from_weights(ConstMatrix q, ConstMatrix k, ConstMatrix v, ConstMatrix p,
                                     ConstMatrix d_out, Matrix dq, Matrix dk, Matrix dv,
                                     float scale, ThreadPool* pool);

}  // namespace wa
