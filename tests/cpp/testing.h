// Helpers shared by the doctest suites: deterministic inputs, the odd sizes to sweep, and
// comparisons that report the largest difference seen.
#pragma once

#include <doctest.h>

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

}  // namespace wa::test

// CHECK that two float arrays agree within tol, naming the largest difference.
#define CHECK_CLOSE(actual, expected, tol)                                                  \
  do {                                                                                      \
    const ::wa::test::Diff d_ = ::wa::test::max_abs_diff(actual, expected);                 \
    INFO("largest |difference| " << d_.max_abs << " at " << d_.at << ": " << d_.a << " vs " \
                                 << d_.b << " (tolerance " << (tol) << ")");                \
    CHECK(d_.max_abs <= (tol));                                                             \
  } while (0)
