// ScoreMask: the masks and bias attention applies to its scaled scores before the row
// softmax, and what that softmax gives. Letters as in wa/attention.h. The scale (usually
// 1/sqrt(d_k)) is an argument of its own, beside the mask, in every call that takes one.
//
// For an (n_q,n_k) matrix of raw scores s = q·kᵀ, entry (i,j) becomes the softmax input
//   x_ij = cap(s_ij·scale) + bias_ij       if key j is kept for query i
//   x_ij = -inf                            if it is masked
// cap(y) = softcap·tanh(y/softcap) when softcap > 0 (scores bounded to ±softcap), else y.
// Query i stands at key position p_i = i + offset: offset 0 aligns rows and columns at 0 (query
// i sees keys 0..i when causal, also when n_q != n_k); offset n_k − n_q aligns them at the
// bottom right, as when the keys are a cache of n_k − n_q earlier tokens followed by the n_q new
// ones. Key j is masked for query i when
//   causal and j > p_i;   left >= 0 and p_i − j > left;   right >= 0 and j − p_i > right
//   (a sliding window of left keys before p_i and right after; -1 leaves a side unbounded);
//   j >= key_limit (padding: only the first key_limit keys are real);
//   keep or bias is set and j >= mask_cols (a mask narrower than the keys masks the rest);
//   keep_ij == 0; or bias_ij == -inf.
// keep and bias are read at row i·mask_ld: mask_ld 0 broadcasts one row to every query.
// weights_ij = exp(x_ij - m_i) / (sum_j exp(x_ij - m_i) + exp(sink - m_i)),
//   m_i = max(max_j x_ij, sink).
// The sink (gpt-oss; onnxruntime's GroupQueryAttention head_sink; ggml's add_sinks) is one more
// logit in every row's denominator, in the space of the x_ij (after scale, cap and bias, not
// scaled itself), with no value: the weights of a row sum to less than 1 and its output is
// pulled toward zero. Its own weight is p_sink,i = exp(sink - m_i) / (the same denominator).
// sink = -inf (the default) is no sink.
// A row whose keys are all masked has no distribution over keys to take: its weights are all
// zero (with a sink, all its weight is on the sink), so its attention output is a zero row,
// not NaN. A NaN or +inf input (q·kᵀ overflowing
// float32, or a +inf bias) is never taken for a masked key or a number: its row's weights are
// NaN, so callers see it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>

namespace wa {

constexpr size_t kAllKeys = static_cast<size_t>(-1);  // no limit, for key_limit and mask_cols

struct ScoreMask {
  bool causal = false;            // query i sees keys j <= i + offset
  const uint8_t* keep = nullptr;  // (n_q,mask_cols), 1 = keep, 0 = masked; null keeps all
  const float* bias = nullptr;    // (n_q,mask_cols), added after cap(); -inf masks; null adds 0
  long offset = 0;                // key position of query 0 (causal and window alignment)
  long left = -1, right = -1;     // sliding window around i + offset; -1: unbounded side
  size_t key_limit = kAllKeys;    // keys j >= key_limit are masked
  size_t mask_ld = kAllKeys;      // row stride of keep and bias: kAllKeys = n_k; 0 = one row
  size_t mask_cols = kAllKeys;    // keys j >= mask_cols are masked where keep or bias is set
  float softcap = 0;              // > 0: scaled scores become softcap·tanh(y/softcap)
  // a logit in every row's softmax denominator with no value; finite or -inf (none)
  float sink = -std::numeric_limits<float>::infinity();
};

}  // namespace wa
