// Row softmax as named passes over a row: x = scale/mask/bias of the scores and their max;
// w = exp(x - max) and their sum; w *= 1/sum. The online form runs the same passes over one
// key block at a time, carrying each row's max and sum. Then the backward of a row, which
// reads the forward's weights. Vectorized with simd.h throughout.
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "attention/softmax_rows.h"
#include "simd.h"

namespace wa {
namespace {

using namespace simd;

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr float kPosInf = std::numeric_limits<float>::infinity();

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// x (cols) = the softmax inputs of keys [j0, j0+cols) for query i; returns their max
// (-inf when every one is masked), or NaN when a kept input is NaN or +inf: then the row's
// weights become NaN, so an overflow in q·kᵀ (inf, or inf - inf) shows instead of passing for
// a masked key or for a number. Both forms of the softmax see it the same way.
float masked_scaled_row(const float* s, float* x, size_t i, size_t j0, size_t cols, size_t n_k,
                        float scale, const ScoreMask& m) {
  // Keys [a, b) of the block are left by the structural masks; the rest are -inf.
  const KeyRange r = visible_keys(m, n_k, i);
  const size_t b = std::min(std::max(r.hi, j0), j0 + cols) - j0;
  const size_t a = std::min(std::max(r.lo, j0) - j0, b);
  bool nan = false;
  float row_max = kNegInf;
  std::fill(x, x + a, kNegInf);
  if (!m.keep && !m.bias && !(m.softcap > 0)) {
    const f32x4 vscale = splat(scale);
    f32x4 vmax = splat(kNegInf), vnan = splat(0.0f);
    size_t j = a;
    for (; j + 4 <= b; j += 4) {
      const f32x4 vx = mul(load(s + j), vscale);
      store(x + j, vx);
      vmax = max(vmax, vx);
      vnan = bit_or(vnan, nan_lanes(sub(vx, vx)));  // x - x: NaN for NaN and ±inf
    }
    row_max = hmax(vmax);
    nan = any_lane(vnan);
    for (; j < b; ++j) {
      x[j] = s[j] * scale;
      row_max = std::max(row_max, x[j]);
      nan |= !std::isfinite(x[j]);
    }
  } else {
    // keep, bias or softcap: one key at a time (softcap's tanh is scalar)
    const uint8_t* keep = m.keep ? mask_row(m.keep, m, n_k, i) + j0 : nullptr;
    const float* bias = m.bias ? mask_row(m.bias, m, n_k, i) + j0 : nullptr;
    for (size_t j = a; j < b; ++j) {
      float v = kNegInf;
      if (!keep || keep[j]) {
        v = cap(s[j] * scale, m.softcap);
        if (bias) v += bias[j];
      }
      x[j] = v;
      row_max = std::max(row_max, v);
      nan |= v != v || v == kPosInf;  // -inf is a mask, not an overflow
    }
  }
  std::fill(x + b, x + cols, kNegInf);
  return nan ? kNaN : row_max;
}

// w (cols) = exp(w - max); returns their sum. Lanes are summed in a fixed order; the tail goes
// through the same vector exp, padded with -inf.
float exp_minus_max(float* w, size_t cols, float row_max) {
  const f32x4 vmax = splat(row_max);
  f32x4 vsum = splat(0.0f);
  size_t j = 0;
  for (; j + 4 <= cols; j += 4) {
    const f32x4 e = exp_nonpositive(sub(load(w + j), vmax));  // exp(-inf) = 0 for masked keys
    store(w + j, e);
    vsum = add(vsum, e);
  }
  if (j < cols) {
    float tail[4] = {kNegInf, kNegInf, kNegInf, kNegInf};
    for (size_t t = 0; j + t < cols; ++t) tail[t] = w[j + t];
    const f32x4 e = exp_nonpositive(sub(load(tail), vmax));
    store(tail, e);
    vsum = add(vsum, e);
    for (size_t t = 0; j + t < cols; ++t) w[j + t] = tail[t];
  }
  return hsum(vsum);
}

// w (cols) *= factor
void scale_row(float* w, size_t cols, float factor) {
  const f32x4 vf = splat(factor);
  size_t j = 0;
  for (; j + 4 <= cols; j += 4) store(w + j, mul(load(w + j), vf));
  for (; j < cols; ++j) w[j] *= factor;
}

}  // namespace

void check_sink(const char* where, float sink, size_t head) {
  if (sink == sink && sink != kPosInf) return;
  throw std::invalid_argument(std::string(where) + ": the sink of query head " +
                              std::to_string(head) + " is " + (sink != sink ? "NaN" : "+inf") +
                              ": a sink is finite, or -inf for none");
}

void softmax_rows(const float* scores, size_t ld_scores, float* weights, size_t ld_weights,
                  size_t row0, size_t rows, size_t cols, size_t n_k, float scale,
                  const ScoreMask& mask) {
  for (size_t r = 0; r < rows; ++r) {
    float* w = weights + r * ld_weights;
    const float row_max =
        masked_scaled_row(scores + r * ld_scores, w, row0 + r, 0, cols, n_k, scale, mask);
    // the sink joins the max and the sum (wa/score_mask.h); exp(-inf) = 0 without one
    const float m = std::max(row_max, mask.sink);
    if (row_max != row_max) {  // a NaN or +inf input: NaN weights, never a plausible-looking row
      std::fill(w, w + cols, kNaN);
    } else if (m == kNegInf) {  // every key masked, no sink: a zero row (wa/score_mask.h)
      std::fill(w, w + cols, 0.0f);
    } else {  // sum >= 1: exp(0) is in it, a key's or the sink's
      scale_row(w, cols, 1.0f / (exp_minus_max(w, cols, m) + std::exp(mask.sink - m)));
    }
  }
}

void softmax_online_block(const float* scores, size_t ld_scores, float* p, size_t ld_p, size_t row0,
                          size_t rows, size_t j0, size_t cols, size_t n_k, float scale,
                          const ScoreMask& mask, float* row_max, float* row_sum, float* rescale) {
  for (size_t r = 0; r < rows; ++r) {
    float* pr = p + r * ld_p;
    const float block_max =
        masked_scaled_row(scores + r * ld_scores, pr, row0 + r, j0, cols, n_k, scale, mask);
    const float new_max = block_max != block_max ? block_max : std::max(row_max[r], block_max);
    if (new_max != new_max) {  // a NaN score: the row's output becomes NaN (see masked_scaled_row)
      std::fill(pr, pr + cols, kNaN);
      rescale[r] = row_max[r] = row_sum[r] = kNaN;
      continue;
    }
    if (new_max == kNegInf) {  // nothing visible yet: p = 0, nothing to rescale
      std::fill(pr, pr + cols, 0.0f);
      rescale[r] = 1.0f;
      continue;
    }
    rescale[r] = std::exp(row_max[r] - new_max);  // exp(-inf) = 0 on the first visible block
    row_sum[r] = row_sum[r] * rescale[r] + exp_minus_max(pr, cols, new_max);
    row_max[r] = new_max;
  }
}

void score_trace_rows(const float* scores, size_t ld, float* scaled, float* capped, float* masked,
                      size_t row0, size_t rows, size_t n_k, float scale, const ScoreMask& mask) {
  for (size_t r = 0; r < rows; ++r) {
    masked_scaled_row(scores + r * ld, masked + r * ld, row0 + r, 0, n_k, n_k, scale, mask);
    for (size_t j = 0; j < n_k; ++j) scaled[r * ld + j] = scores[r * ld + j] * scale;
    if (capped)
      for (size_t j = 0; j < n_k; ++j) capped[r * ld + j] = cap(scaled[r * ld + j], mask.softcap);
  }
}

// The backward of softmax_rows' passes, in reverse (the 1/sum and exp passes together):
//   w = e / Σe, e = exp(x - max)  ->  dx = w ⊙ (dw − Σ_j dw_j·w_j)   (max cancels)
//   x = s·scale + bias            ->  ds = dx·scale
float softmax_backward_row(const float* p, float* dp, size_t n, float scale) {
  f32x4 vdot = splat(0.0f);
  size_t j = 0;
  for (; j + 4 <= n; j += 4) vdot = muladd(load(dp + j), load(p + j), vdot);
  float dot = hsum(vdot);
  for (; j < n; ++j) dot += dp[j] * p[j];

  const f32x4 vsub = splat(dot), vscale = splat(scale);
  for (j = 0; j + 4 <= n; j += 4) {
    const f32x4 vds = mul(load(p + j), sub(load(dp + j), vsub));
    store(dp + j, mul(vds, vscale));
  }
  for (; j < n; ++j) dp[j] = p[j] * (dp[j] - dot) * scale;
  return dot;
}

}  // namespace wa
