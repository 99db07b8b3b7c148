// The units of attention work (internal): what a thread-pool task runs, forward (for
// attention_heads.cpp, which every forward goes through) and backward (attention.cpp,
// attention_heads.cpp).
//   forward   attention_forward_blocks.cpp: k and v packed once (packed_kv.h); a block of query rows, with
//             every score in memory (traced) or fused with an online softmax; the weights again
//   backward  attention_backward_blocks.cpp: the backward from the forward's weights
// Letters as in wa/attention.h.
#pragma once

#include <cstddef>

#include "kv/packed_kv.h"  // PackedKV, PackedHeads: k and v as the blocks read them
#include "tuning.h"        // kAttentionRowBlock, kKeyBlock
#include "wa/attention.h"
#include "wa/attention_heads.h"

namespace wa {

// ---- forward: attention_forward_blocks.cpp ----

// attention_heads_forward (wa/attention_heads.h) with every kv head read from its panels
// instead of k and v: what attending over a KvCache runs (attention_heads.cpp).
void attention_heads_forward(const HeadsShape& shape, HeadTensor<const float> q,
                             const PackedHeads& kv, HeadTensor<float> out, float scale,
                             const HeadsMask& mask, const HeadsTrace* trace, ThreadPool* pool);

// Rows [r0,r1) of attention_forward(q, k, v, out, scale, mask, &trace), on the calling thread,
// with every score of the block in memory: trace points at the full (n_q,n_k) matrices.
void attention_rows(ConstMatrix q, const PackedKV& kv, Matrix out, float scale,
                    const ScoreMask& mask, size_t r0, size_t r1, const AttentionTrace& trace);

// Query rows in the middle of an online softmax over the keys of one kv head: rows
// [row0, row0+rows) of `heads` query heads that read it, stacked head after head so that the
// heads of a GQA group share every read of a key panel.
//   q        (heads·rows, d_k) row stride ldq
//   acc      (heads·rows, d_v) row stride ld_acc: Σ_j exp(x_j − max)·v_j so far; starts at 0
//   row_max, row_sum (heads·rows): running max and Σ exp(x − max); start at -inf and 0
//   masks    (heads): head t's mask
struct OnlineRows {
  const float* q;
  size_t ldq;
  float* acc;
  size_t ld_acc;
  float* row_max;
  float* row_sum;
  size_t heads, rows, row0;
  const ScoreMask* masks;
};
// Adds keys [lo, hi) of kv (held by its panels; lo a multiple of kNR) to the rows' state, one
// (heads·rows, kKeyBlock) block of scores at a time; keys every row's mask hides are skipped.
void attention_rows_online(const OnlineRows& t, const PackedKV& kv, size_t lo, size_t hi,
                           float scale);
// acc (rows, d_v) -> out = acc / row_sum (a zero row where every key was masked). out may be acc.
void attention_online_finish(const float* acc, size_t ld_acc, const float* row_sum, size_t rows,
                             size_t d_v, float* out, size_t ld_out);

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
// mask: the forward's (wa/score_mask.h): where it hides keys (causal, windows, limits) P is zero and
// that part is skipped; a softcap adds its tanh′. d_weights, d_scores (n_q,n_k), when not null,
// receive dP and dS (AttentionBackwardTrace), computed in full. d_sink, when not null, receives
// ∂L/∂mask.sink (0 without a sink), summed over the rows in order.
void attention_backward_from_weights(ConstMatrix q, ConstMatrix k, ConstMatrix v, ConstMatrix p,
                                     ConstMatrix d_out, Matrix dq, Matrix dk, Matrix dv,
                                     float scale, const ScoreMask& mask, ThreadPool* pool,
                                     float* d_weights = nullptr, float* d_scores = nullptr,
                                     float* d_sink = nullptr);

}  // namespace wa
