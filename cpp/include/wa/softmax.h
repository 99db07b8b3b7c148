// Row softmax over attention scores, with the scale, masks and bias of attention.
//
// Letters (here and in every header of this library):
//   n_q  queries (rows of a score matrix)       n_k  keys = values (columns of a score matrix)
//   d_k  width of one query/key                 d_v  width of one value
//   h    heads                                  d_model  width of a token vector
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

#include <cstddef>
#include <cstdint>

namespace wa {

struct ScoreMask {
  float scale = 1.0f;              // usually 1/sqrt(d_k)
  bool causal = false;             // query i sees keys j <= i
  const uint8_t* keep = nullptr;   // (n_q,n_k), 1 = keep, 0 = masked; null keeps all
  const float* bias = nullptr;     // (n_q,n_k), added after scaling; -inf masks; null adds 0
};

// The softmax input x_ij above for one entry; shared by the fast path, trace and reference.
// i and j are positions in the full (n_q,n_k) matrix.
inline bool is_masked(const ScoreMask& m, size_t n_k, size_t i, size_t j) {
  return (m.causal && j > i) || (m.keep && m.keep[i * n_k + j] == 0);
}

// Rows [row0, row0+rows) of an (n_q,n_k) score matrix, only the first `cols` keys present:
// scores (rows,cols) raw q·kᵀ -> weights (rows,cols); scores == weights is allowed.
// Keys cols..n_k-1 must be masked for every row given (the causal skip uses this).
void softmax_rows(const float* scores, size_t ld_scores, float* weights, size_t ld_weights,
                  size_t row0, size_t rows, size_t cols, size_t n_k, const ScoreMask& mask);

// The online form, for attention that never holds a whole score row: one block of keys
// [j0, j0+cols) for rows [row0, row0+rows). scores (rows,cols) raw q·kᵀ -> p (rows,cols) =
// exp(x - m), where m is the row's running max over the keys seen so far; per row r, row_max[r]
// and row_sum[r] (start at -inf and 0) carry the running max and Σ exp(x - max), and
// rescale[r] = exp(old max - new max) is the factor by which whatever was accumulated from
// earlier blocks must be multiplied. After the last block, weights = p / row_sum (a row_sum of
// 0 means every key was masked: a zero row). scores == p is allowed.
void softmax_online_block(const float* scores, size_t ld_scores, float* p, size_t ld_p,
                          size_t row0, size_t rows, size_t j0, size_t cols, size_t n_k,
                          const ScoreMask& mask, float* row_max, float* row_sum, float* rescale);

// For a trace: scores (rows,n_k) -> scaled = s·scale, masked = x (with -inf where masked).
void score_trace_rows(const float* scores, size_t ld, float* scaled, float* masked,
                      size_t row0, size_t rows, size_t n_k, const ScoreMask& mask);

}  // namespace wa
