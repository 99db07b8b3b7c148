// Gradient checks shared by the backward suites: central finite differences in double of a
// loss L(θ) = Σ d_out ⊙ forward(θ), and a relative comparison naming the worst entry.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

#include "reference.h"
#include "testing.h"

namespace wa::test {

using ref::Doubles;

inline Doubles to_doubles(const std::vector<float>& v) { return Doubles(v.begin(), v.end()); }

// Σ_e a_e·b_e
inline double dot(const Doubles& a, const Doubles& b) {
  double sum = 0;
  for (size_t e = 0; e < a.size(); ++e) sum += a[e] * b[e];
  return sum;
}

// ∂L/∂θ_e for every entry of theta by central differences, where loss() reads theta:
//   (L(θ + h·e) − L(θ − h·e)) / (the step actually taken, ≈ 2h).
template <class Loss>
Doubles central_differences(Doubles& theta, const Loss& loss, double h = 1e-5) {
  Doubles g(theta.size());
  for (size_t e = 0; e < theta.size(); ++e) {
    const double at = theta[e], up = at + h, down = at - h;
    theta[e] = up;
    const double l_up = loss();
    theta[e] = down;
    const double l_down = loss();
    theta[e] = at;
    g[e] = (l_up - l_down) / (up - down);
  }
  return g;
}

// The worst entry of got against want by |got − want| / max(|want|, floor): a relative error,
// measured against `floor` instead for entries smaller than it (near-zero gradients).
struct RelativeDiff {
  double worst = 0;
  size_t at = 0;
  double got = 0, want = 0;
};
inline RelativeDiff relative_diff(const std::vector<float>& got, const Doubles& want,
                                  double floor) {
  REQUIRE(got.size() == want.size());
  RelativeDiff d;
  for (size_t e = 0; e < got.size(); ++e) {
    const double err = std::fabs(got[e] - want[e]) / std::max(std::fabs(want[e]), floor);
    if (err > d.worst || std::isnan(err))
      d = {std::isnan(err) ? INFINITY : err, e, got[e], want[e]};
  }
  return d;
}

}  // namespace wa::test

// CHECK that a gradient matches its finite differences within a relative tolerance.
#define CHECK_GRADIENT(name, actual, finite_differences, rtol, floor)                              \
  do {                                                                                             \
    const ::wa::test::RelativeDiff d_ =                                                            \
        ::wa::test::relative_diff(actual, finite_differences, floor);                              \
    INFO(name << ": largest relative difference " << d_.worst << " at " << d_.at << ": " << d_.got \
              << " vs finite difference " << d_.want << " (tolerance " << (rtol) << ", floor "     \
              << (floor) << ")");                                                                  \
    CHECK(d_.worst <= (rtol));                                                                     \
  } while (0)
