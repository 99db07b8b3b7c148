// Helpers shared by the doctest suites: deterministic inputs, the odd sizes to sweep, and
// comparisons that report the largest difference seen.
#pragma once

#include <doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "tuning.h"
#include "wa/thread_pool.h"

namespace wa::test {

// Sizes that cross the small tile edges (tuning.h): 1, around the largest (kMaxMR-row) tile, past two
// kNR-column panels, past one attention row block, around the GEMM's kMC-row task block and
// past two of them. The suites that claim larger edges (kKC, kKeyBlock, runs, passes) derive
// their sizes from those constants where they sweep them.
inline const std::vector<size_t> kOddSizes = {
    1,
    2,
    kernels::kMaxMR - 1,
    kernels::kMaxMR + 1,
    2 * kernels::kNR + 1,
    kAttentionRowBlock + 1,
    kMC - 1,
    kMC,
    kMC + 1,
    2 * kMC + 1,
};

// Uniform floats in [lo, hi) from a fixed xorshift stream: identical natively and in wasm.
inline std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1.0f,
                                        float hi = 1.0f) {
  uint32_t s = seed * 2654435761u + 0x9E3779B9u;
  std::vector<float> v(n);
  for (float& x : v) {
    s ^= s << 13, s ^= s >> 17, s ^= s << 5;
    x = lo + (hi - lo) * static_cast<float>(s >> 8) * (1.0f / 16777216.0f);
  }
  return v;
}

struct Diff {
  double max_abs = 0;  // largest |a - b|
  size_t at = 0;       // where
  double a = 0, b = 0;
};
inline Diff max_abs_diff(const float* a, const float* b, size_t n) {
  Diff d;
  for (size_t i = 0; i < n; ++i) {
    const double e = std::fabs(static_cast<double>(a[i]) - b[i]);
    if (e > d.max_abs || std::isnan(e)) d = {std::isnan(e) ? INFINITY : e, i, a[i], b[i]};
  }
  return d;
}
inline Diff max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  return max_abs_diff(a.data(), b.data(), a.size());
}

inline bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

inline bool all_finite(const std::vector<float>& v) {
  for (float x : v)
    if (!std::isfinite(x)) return false;
  return true;
}

// A pool with workers, shared by the suites (threads start once per test run).
inline ThreadPool& test_pool() {
  static ThreadPool pool(3);
  return pool;
}

// The int8 kv kernels' own rounding (kv_i8.cpp), for the suites that hold decoding over an int8
// cache to a reference of the rows the cache holds:
//   int8_query(q, d): rows q (…, d) as the kernels read them, each block of kKvQuantBlock along
//     d in steps of its largest magnitude / 32767, ties to even
//   int8_weights_tolerance(n, v_max): what their rounding of the weights times scales to int16
//     may add to an output over n keys of values |v| <= v_max: per key at most half a step,
//     max|p·s| / 32767, times its int8 element (<= 127), so at most v_max·(127/126) / 65534
//     (weights <= 1 before the division by their sum, itself >= 1; a scale s holds its block's
//     largest |v| in 126 or 127 steps), independent and of zero mean over the keys; six
//     standard deviations of their sum
inline std::vector<float> int8_query(std::vector<float> q, size_t d) {
  for (size_t r = 0; r < q.size() / d; ++r)
    for (size_t t0 = 0; t0 < d; t0 += kKvQuantBlock) {
      float* block = q.data() + r * d + t0;
      const size_t n = std::min(kKvQuantBlock, d - t0);
      float amax = 0;
      for (size_t t = 0; t < n; ++t) amax = std::max(amax, std::fabs(block[t]));
      if (amax == 0) continue;
      const float inv = 32767.0f / amax, step = amax / 32767.0f;
      for (size_t t = 0; t < n; ++t) block[t] = std::nearbyint(block[t] * inv) * step;
    }
  return q;
}
inline double int8_weights_tolerance(size_t n, double v_max) {
  return 6 * std::sqrt(double(n) / 3) / 65534 * v_max * 127 / 126;
}

}  // namespace wa::test

// CHECK that two float arrays agree within tol, naming the largest difference.
#define CHECK_CLOSE(actual, expected, tol)                                                  \
  do {                                                                                      \
    const ::wa::test::Diff d_ = ::wa::test::max_abs_diff(actual, expected);                 \
    INFO("largest |difference| " << d_.max_abs << " at " << d_.at << ": " << d_.a << " vs " \
                                 << d_.b << " (tolerance " << (tol) << ")");                \
    CHECK(d_.max_abs <= (tol));                                                             \
  } while (0)
