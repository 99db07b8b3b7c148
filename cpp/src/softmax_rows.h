// The row softmax of attention, forward and backward, on blocks of score rows (internal).
// What it computes, masks and scale included, is defined in wa/softmax.h.
#pragma once

#include <cstddef>

#include "wa/softmax.h"

namespace wa {

// Whether key j is masked for query i by the causal rule or the keep mask; a -inf bias masks
// too, but is found where it is added. i and j are positions in the full (n_q,n_k) matrix.
// Shared by the fast path, the trace and the reference.
inline bool is_masked(const ScoreMask& m, size_t n_k, size_t i, size_t j) {
  return (m.causal && j > i) || (m.keep && m.keep[i * n_k + j] == 0);
}

// ---- forward ----

// Rows [row0, row0+rows) of an (n_q,n_k) score matrix, only the first `cols` keys present:
// scores (rows,cols) raw q·kᵀ -> weights (rows,cols); scores == weights is allowed.
// Keys cols..n_k-1 must be masked for every row given (the causal skip uses this).
void softmax_rows(const float* scores, size_t ld_scores, float* weights, size_t ld_weights,
                  size_t row0, size_t rows, size_t cols, size_t n_k, float scale,
                  const ScoreMask& mask);

// The online form, for attention that never holds a whole score row: one block of keys
// [j0, j0+cols) for rows [row0, row0+rows). scores (rows,cols) raw q·kᵀ -> p (rows,cols) =
// exp(x - m), where m is the row's running max over the keys seen so far; per row r, row_max[r]
// and row_sum[r] (start at -inf and 0) carry the running max and Σ exp(x - max), and
// rescale[r] = exp(old max - new max) is the factor by which whatever was accumulated from
// earlier blocks must be multiplied. After the last block, weights = p / row_sum (a row_sum of
// 0 means every key was masked: a zero row). scores == p is allowed.
void softmax_online_block(const float* scores, size_t ld_scores, float* p, size_t ld_p, size_t row0,
                          size_t rows, size_t j0, size_t cols, size_t n_k, float scale,
                          const ScoreMask& mask, float* row_max, float* row_sum, float* rescale);

// For a trace: scores (rows,n_k) -> scaled = s·scale, masked = x (with -inf where masked).
void score_trace_rows(const float* scores, size_t ld, float* scaled, float* masked, size_t row0,
                      size_t rows, size_t n_k, float scale, const ScoreMask& mask);

// ---- backward ----

// The backward of softmax_rows for one row, with the scale, in place over dP:
//   w = softmax(x), x = s·scale + bias  ->  ds = w ⊙ (dw − Σ_j dw_j·w_j) · scale
// p (n) the row's weights, dp (n) = ∂L/∂w -> ds (n) = ∂L/∂s. Masked keys have p = 0: ds = 0.
void softmax_backward_row(const float* p, float* dp, size_t n, float scale);

}  // namespace wa
