// The row softmax of attention, forward and backward, on blocks of score rows (internal).
// What it computes, masks and scale included, is defined in wa/score_mask.h.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "wa/score_mask.h"

namespace wa {

// The keys [lo, hi) that query i may see at most: what causal, the window, key_limit and
// mask_cols leave (keep and bias may mask more inside). lo >= hi: none. lo and hi never decrease
// as i grows, so rows [r0,r1) together see at most keys [lo(r0), hi(r1 − 1)).
struct KeyRange {
  size_t lo, hi;
};
// Positions are worked out in 64 bits: long is 32 bits in wasm32, where a window side near
// 2^31 − 1 (a natural "unbounded") or one reaching back from a query before key 0 would wrap.
inline KeyRange visible_keys(const ScoreMask& m, size_t n_k, size_t i) {
  const int64_t p = static_cast<int64_t>(i) + m.offset;  // the query's key position
  const auto clamp = [n_k](int64_t j) {
    return j <= 0 ? size_t{0}
                  : static_cast<size_t>(std::min<uint64_t>(n_k, static_cast<uint64_t>(j)));
  };
  size_t lo = m.left >= 0 ? clamp(p - m.left) : 0, hi = n_k;
  if (m.causal) hi = std::min(hi, clamp(p + 1));
  if (m.right >= 0) hi = std::min(hi, clamp(p + m.right + 1));
  hi = std::min(hi, m.key_limit);
  if (m.keep || m.bias) hi = std::min(hi, m.mask_cols);
  return {std::min(lo, hi), hi};
}

// Row i of keep or bias, n_k keys in all.
template <class T>
const T* mask_row(const T* mask, const ScoreMask& m, size_t n_k, size_t i) {
  return mask + i * (m.mask_ld == kAllKeys ? n_k : m.mask_ld);
}

// Whether key j is masked for query i by the rules of wa/score_mask.h, the bias's -inf aside (it
// is found where the bias is added). Shared by the fast path, the trace and the reference.
inline bool is_masked(const ScoreMask& m, size_t n_k, size_t i, size_t j) {
  const KeyRange r = visible_keys(m, n_k, i);
  return j < r.lo || j >= r.hi || (m.keep && mask_row(m.keep, m, n_k, i)[j] == 0);
}

// cap(y) of wa/score_mask.h: softcap·tanh(y/softcap), or y without a softcap.
inline float cap(float y, float softcap) {
  return softcap > 0 ? softcap * std::tanh(y / softcap) : y;
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
// and row_sum[r] (set by softmax_online_start first) carry the running max and Σ exp(x - max), and
// rescale[r] = exp(old max - new max) is the factor by which whatever was accumulated from
// earlier blocks must be multiplied. After the last block, weights = p / row_sum (a row_sum of
// 0 means every key was masked: a zero row). scores == p is allowed.
void softmax_online_block(const float* scores, size_t ld_scores, float* p, size_t ld_p, size_t row0,
                          size_t rows, size_t j0, size_t cols, size_t n_k, float scale,
                          const ScoreMask& mask, float* row_max, float* row_sum, float* rescale);

// Throws std::invalid_argument, naming where and the query head, when sink is NaN or +inf
// (wa/score_mask.h: a sink is finite, or -inf for none).
void check_sink(const char* where, float sink, size_t head);

// The online state of rows before their first key: the sink alone (max = sink, Σ = exp(0) =
// 1; wa/score_mask.h), or nothing (max = -inf, Σ = 0) for sink = -inf. A row's keys may be
// split into runs whose states are merged later: only the first run starts from the sink,
// the others from -inf, so that the sink is in the denominator once.
inline void softmax_online_start(float sink, float* row_max, float* row_sum, size_t rows) {
  std::fill(row_max, row_max + rows, sink);
  std::fill(row_sum, row_sum + rows, sink == -std::numeric_limits<float>::infinity() ? 0.0f : 1.0f);
}

// For a trace: scores (rows,n_k) -> scaled = s·scale, capped = cap(scaled) (when not null),
// masked = x (with -inf where masked).
void score_trace_rows(const float* scores, size_t ld, float* scaled, float* capped, float* masked,
                      size_t row0, size_t rows, size_t n_k, float scale, const ScoreMask& mask);

// ---- backward ----

// The backward of softmax_rows for one row, with the scale, in place over dP:
//   w = softmax(x), x = s·scale + bias  ->  ds = w ⊙ (dw − Σ_j dw_j·w_j) · scale
// p (n) the row's weights, dp (n) = ∂L/∂w -> ds (n) = ∂L/∂s. Masked keys have p = 0: ds = 0.
// The sink's weight has no value and so no dw: the formula is the same with a sink (p then
// sums to 1 − p_sink). Returns Σ_j dw_j·w_j, from which the sink's gradient follows:
//   ∂L/∂sink = Σ_j dw_j·∂w_j/∂sink = −p_sink·Σ_j dw_j·w_j.
float softmax_backward_row(const float* p, float* dp, size_t n, float scale);

}  // namespace wa
