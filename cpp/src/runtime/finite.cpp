// x - x is 0 for a finite x and NaN for NaN and ±inf: one subtraction and one unordered
// compare per four values, checked a block at a time; the scalar scan only locates the
// first culprit in a block that has one. The largest magnitude: |x| and a max per four values.
#include "wa/finite.h"

#include <algorithm>
#include <cmath>

#include "simd.h"

namespace wa {

size_t first_non_finite(const float* x, size_t n) {
  using namespace simd;
  constexpr size_t kBlock = 64;
  size_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    f32x4 bad = splat(0.0f);
    for (size_t j = i; j < i + kBlock; j += 4) {
      const f32x4 v = load(x + j);
      bad = bit_or(bad, nan_lanes(sub(v, v)));
    }
    if (any_lane(bad)) break;
  }
  for (; i < n; ++i)
    if (!std::isfinite(x[i])) return i;
  return n;
}

float max_abs(const float* x, size_t n) {
  using namespace simd;
  f32x4 m = splat(0.0f);
  size_t i = 0;
  for (; i + 4 <= n; i += 4) m = max(m, abs(load(x + i)));
  float out = hmax(m);
  for (; i < n; ++i) out = std::max(out, std::fabs(x[i]));
  return out;
}

}  // namespace wa
