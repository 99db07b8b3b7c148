// The SIMD layer's own arithmetic: the vector exp used by softmax, the 4x4 transpose used by
// packing, and the integer lanes of the int8 kv kernels. Internal header, so this test reaches into cpp/src.
#include <cfloat>
#include <cmath>
#include <cstdint>
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

TEST_CASE("integer lanes: int8 widened, pairs of int16 dotted exactly, floats rounded to int16") {
  const int8_t k[8] = {-127, -1, 0, 1, 2, 64, 126, 127};
  const int16_t q[2] = {-32767, 32767};
  // lane i: k[2i]·q[0] + k[2i+1]·q[1], at most 2·127·32767 in magnitude
  const f32x4 sums =
      to_float(dot_pairs_add(load_i8x8_as_i16(k), load_i16_pair_splat(q), zero_i32()));
  float f[4];  // exact: below 2^24
  store(f, sums);
  for (int i = 0; i < 4; ++i) CHECK(f[i] == k[2 * i] * q[0] + k[2 * i + 1] * q[1]);
  // ties go to even; the extremes and negative values round as nearbyint does
  const float x[8] = {0.5f, 1.5f, -2.5f, -32767.0f, 32767.0f, 3.49f, -3.51f, 0.0f};
  int16_t r[8];
  store_rounded_i16x8(r, load(x), load(x + 4));
  for (int i = 0; i < 8; ++i) CHECK(r[i] == static_cast<int16_t>(std::nearbyint(x[i])));
}

}  // namespace
}  // namespace wa
