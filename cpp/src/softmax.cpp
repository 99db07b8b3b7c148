// Row softmax as three named passes over a row: x = scale/mask/bias of the scores and their
// max; w = exp(x - max) and their sum; w *= 1/sum. Vectorized with simd.h throughout.
#include <algorithm>
#include <cmath>
#include <limits>

#include "simd.h"
#include "wa/softmax.h"

namespace wa {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr float kPosInf = std::numeric_limits<float>::infinity();

// x (cols) = the softmax inputs of row i; returns max x (-inf when every key is masked).
float masked_scaled_row(const float* s, float* x, size_t i, size_t cols, size_t n_k,
                        const ScoreMask& m) {
  if (!m.keep && !m.bias) {
    // Only the causal mask: keys [0, visible) are kept, the rest are -inf.
    const size_t visible = m.causal ? std::min(cols, i + 1) : cols;
    const simd::f32x4 vscale = simd::splat(m.scale);
    simd::f32x4 vmax = simd::splat(kNegInf);
    size_t j = 0;
    for (; j + 4 <= visible; j += 4) {
      const simd::f32x4 vx = simd::mul(simd::load(s + j), vscale);
      simd::store(x + j, vx);
      vmax = simd::max(vmax, vx);
    }
    float max = simd::hmax(vmax);
    for (; j < visible; ++j) {
      x[j] = s[j] * m.scale;
      max = std::max(max, x[j]);
    }
    for (; j < cols; ++j) x[j] = kNegInf;
    return max;
  }
  float max = kNegInf;
  for (size_t j = 0; j < cols; ++j) {
    float v = kNegInf;
    if (!is_masked(m, n_k, i, j)) {
      v = s[j] * m.scale;
      if (m.bias) v += m.bias[i * n_k + j];
    }
    x[j] = v;
    max = std::max(max, v);
  }
  return max;
}

// w (cols) = exp(w - max) / sum: the exp pass with its sum, then the 1/sum pass. Lanes are
// summed in a fixed order; the tail goes through the same vector exp, padded with -inf.
void exp_minus_max_and_scale(float* w, size_t cols, float max) {
  using namespace simd;
  const f32x4 vmax = splat(max);
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
  const f32x4 vinv = splat(1.0f / hsum(vsum));  // sum >= 1: the max contributes exp(0)
  for (j = 0; j + 4 <= cols; j += 4) store(w + j, mul(load(w + j), vinv));
  for (; j < cols; ++j) w[j] *= lane0(vinv);
}

}  // namespace

void softmax_rows(const float* scores, size_t ld_scores, float* weights, size_t ld_weights,
                  size_t row0, size_t rows, size_t cols, size_t n_k, const ScoreMask& mask) {
  for (size_t r = 0; r < rows; ++r) {
    const float* s = scores + r * ld_scores;
    float* w = weights + r * ld_weights;
    const float max = masked_scaled_row(s, w, row0 + r, cols, n_k, mask);

    if (max == kNegInf) {  // every key masked: a zero row, by definition (see softmax.h)
      for (size_t j = 0; j < cols; ++j) w[j] = 0.0f;
      continue;
    }
    if (max == kPosInf) {  // the limit: equal shares for the +inf entries
      float count = 0;
      for (size_t j = 0; j < cols; ++j) count += w[j] == kPosInf;
      for (size_t j = 0; j < cols; ++j) w[j] = w[j] == kPosInf ? 1.0f / count : 0.0f;
      continue;
    }
    exp_minus_max_and_scale(w, cols, max);
  }
}

void score_trace_rows(const float* scores, size_t ld, float* scaled, float* masked, size_t row0,
                      size_t rows, size_t n_k, const ScoreMask& mask) {
  for (size_t r = 0; r < rows; ++r) {
    const size_t i = row0 + r;
    masked_scaled_row(scores + r * ld, masked + r * ld, i, n_k, n_k, mask);
    for (size_t j = 0; j < n_k; ++j) scaled[r * ld + j] = scores[r * ld + j] * mask.scale;
  }
}

}  // namespace wa
