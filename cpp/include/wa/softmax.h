// ScoreMask: the masks and bias attention applies to its scaled scores before the row
// softmax, and what that softmax gives. Letters as in wa/attention.h. The scale (usually
// 1/sqrt(d_k)) is an argument of its own, beside the mask, in every call that takes one.
//
// For an (n_q,n_k) matrix of raw scores s = q·kᵀ, entry (i,j) becomes the softmax input
//   x_ij = s_ij·scale + bias_ij            if key j is kept for query i
//   x_ij = -inf                            if it is masked
// Key j is masked for query i when causal and j > i (rows and columns are aligned at 0, so
// query i sees keys 0..i, also when n_q != n_k), when keep_ij == 0, or when bias_ij == -inf.
// weights_ij = exp(x_ij - max_j x_ij) / sum_j exp(x_ij - max_j x_ij).
// A row whose keys are all masked has no distribution to take: its weights are all zero,
// so its attention output is a zero row, not NaN. A NaN or +inf input (q·kᵀ overflowing
// float32, or a +inf bias) is never taken for a masked key or a number: its row's weights are
// NaN, so callers see it.
#pragma once

#include <cstdint>

namespace wa {

struct ScoreMask {
  bool causal = false;            // query i sees keys j <= i
  const uint8_t* keep = nullptr;  // (n_q,n_k), 1 = keep, 0 = masked; null keeps all
  const float* bias = nullptr;    // (n_q,n_k), added after scaling; -inf masks; null adds 0
};

}  // namespace wa
