// The SIMD layer's own arithmetic: the vector exp used by softmax, and the 4x4 transpose
// used by packing. Internal header, so this test reaches into cpp/src.
#include <cfloat>
#include <cmath>
#include <limits>

#include "simd.h"
#include "testing.h"

namespace wa {
namespace {

using namespace simd;

float exp_lane0(float x) { return lane0(exp_nonpositive(splat(x))); }

TEST_CASE("vector exp is within 3 ulp of exp on [-87, 0], and 0 below") {
  double worst_ulps = 0, worst_x = 0;
  for (double x = 0; x >= -87.0; x -= 0.000731) {
    const float xf = static_cast<float>(x);
    const double exact = std::exp(static_cast<double>(xf));
    const double ulp =
        std::nextafter(static_cast<float>(exact), INFINITY) - static_cast<float>(exact);
    const double ulps = std::fabs(exp_lane0(xf) - exact) / ulp;
    if (ulps > worst_ulps) worst_ulps = ulps, worst_x = x;
  }
  INFO("worst error " << worst_ulps << " ulp at x = " << worst_x);
  CHECK(worst_ulps <= 3.0);
  CHECK(exp_lane0(0.0f) == 1.0f);
  CHECK(exp_lane0(-88.0f) == 0.0f);
  CHECK(exp_lane0(-1e30f) == 0.0f);
  CHECK(exp_lane0(-std::numeric_limits<float>::infinity()) == 0.0f);
}

TEST_CASE("transpose4x4 turns rows into columns") {
  float m[16];
  for (int i = 0; i < 16; ++i) m[i] = static_cast<float>(i);
  f32x4 r0 = load(m), r1 = load(m + 4), r2 = load(m + 8), r3 = load(m + 12);
  transpose4x4(r0, r1, r2, r3);
  float t[16];
  store(t, r0), store(t + 4, r1), store(t + 8, r2), store(t + 12, r3);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) CHECK(t[i * 4 + j] == m[j * 4 + i]);
}

}  // namespace
}  // namespace wa
