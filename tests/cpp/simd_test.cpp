// The SIMD layer's own arithmetic: the vector exp used by softmax, the 4x4 transpose used by
// packing, the half <-> float conversions of the compressed kv caches, and the integer lanes of
// the int8 kv kernels. Internal header, so this test reaches into cpp/src.
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <ios>
#include <limits>
#include <vector>

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

// The value of IEEE half bits h (finite), from its fields.
double half_value(uint16_t h) {
  const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  const double magnitude = e ? std::ldexp(1024 + m, e - 25) : std::ldexp(m, -24);
  return h & 0x8000 ? -magnitude : magnitude;
}

TEST_CASE(
    "every finite half widens to its value: load_half8 lane by lane, half_to_float, and "
    "load_half8_small to 2^-112 of it") {
  size_t wrong = 0, first_wrong = 0;
  for (uint32_t h0 = 0; h0 < 0x10000; h0 += 8) {
    uint16_t h[8];
    for (uint32_t i = 0; i < 8; ++i) h[i] = static_cast<uint16_t>(h0 + i);
    float lanes[8], small[8];
    f32x4 lo, hi;
    load_half8(h, lo, hi);
    store(lanes, lo), store(lanes + 4, hi);
    load_half8_small(h, lo, hi);
    store(small, lo), store(small + 4, hi);
    for (uint32_t i = 0; i < 8; ++i) {
      if ((h[i] & 0x7c00) == 0x7c00) continue;  // Inf and NaN: never in a cache
      const double want = half_value(h[i]);
      if (lanes[i] != want || half_to_float(h[i]) != want || small[i] != std::ldexp(want, -112) ||
          std::signbit(lanes[i]) != (h[i] >> 15) || std::signbit(small[i]) != (h[i] >> 15))
        wrong += !wrong ? (first_wrong = h[i], 1) : 1;
    }
  }
  INFO(wrong << " halves widened wrong, the first 0x" << std::hex << first_wrong);
  CHECK(wrong == 0);
}

TEST_CASE("float_to_half rounds to the nearest half, ties to even, subnormals included") {
  // every finite half comes back as itself
  size_t wrong = 0;
  for (uint32_t h = 0; h < 0x10000; ++h)
    if ((h & 0x7c00) != 0x7c00)
      wrong += float_to_half(half_to_float(static_cast<uint16_t>(h))) != h;
  CHECK(wrong == 0);
  // ties between two halves go to the even one, normal and subnormal
  CHECK(float_to_half(1.0f + 0x1p-11f) == 0x3c00);      // 1
  CHECK(float_to_half(1.0f + 3 * 0x1p-11f) == 0x3c02);  // 1 + 2^-9
  CHECK(float_to_half(0x1p-25f) == 0x0000);             // 0.5 of 2^-24: 0
  CHECK(float_to_half(3 * 0x1p-25f) == 0x0002);         // 1.5 of 2^-24: 2
  CHECK(float_to_half(-5 * 0x1p-25f) == 0x8002);        // -2.5 of 2^-24: -2
  CHECK(float_to_half(0x1p-14f - 0x1p-25f) == 0x0400);  // up to the least normal
  CHECK(float_to_half(1e-7f) == 0x0002);                // 1.68 of 2^-24
  CHECK(float_to_half(0x1p-26f) == 0x0000);             // below half a step
  CHECK(float_to_half(65504.0f) == 0x7bff);             // the largest half
  CHECK(float_to_half(-0.0f) == 0x8000);
  // off ties: the nearer one, either side, at random
  const std::vector<float> xs = test::random_floats(100000, 7, -70000.0f, 70000.0f);
  wrong = 0;
  for (float x : xs) {
    for (float y : {x, x * 0x1p-20f}) {
      if (std::fabs(y) > 65504.0f) continue;
      const uint16_t h = float_to_half(y);
      const double got = half_value(h), err = std::fabs(got - y);
      // no half nearer: both neighbours (one step either way along the magnitudes) are farther
      const uint16_t mag = h & 0x7fff;
      for (uint16_t other : {uint16_t(mag + 1), uint16_t(mag ? mag - 1 : 0)}) {
        if ((other & 0x7c00) == 0x7c00) continue;
        const double o = half_value(static_cast<uint16_t>(other | (h & 0x8000)));
        wrong += std::fabs(o - y) < err;
      }
    }
  }
  CHECK(wrong == 0);
}

TEST_CASE("bfloat16: rounded up to the least one >= x, widened exactly, four at a time") {
  // every bfloat16 below Infinity widens to the float of its bits and rounds up to itself
  int wrong = 0;
  for (uint32_t b = 0; b < 0x7f80; ++b) wrong += float_to_bf16_up(bf16_to_float(uint16_t(b))) != b;
  CHECK(wrong == 0);
  CHECK(bf16_to_float(0x3f80) == 1.0f);
  CHECK(bf16_to_float(0x0001) == 0x1p-133f);           // the least subnormal
  CHECK(float_to_bf16_up(1.0f + 0x1p-23f) == 0x3f81);  // 1 + 2^-7
  CHECK(float_to_bf16_up(0x1p-149f) == 0x0001);        // up, never to 0
  CHECK(float_to_bf16_up(0x1.02p121f) == 0x7c01);      // 2^121·(1 + 2^-7)
  CHECK(float_to_bf16_up(3.4028235e38f) == 0x7f80);    // past the largest: Infinity
  // off the grid: the least bfloat16 >= x, at random over float32's exponents
  const std::vector<float> xs = test::random_floats(100000, 8, 0.0f, 1.0f);
  wrong = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const float x = std::ldexp(xs[i], int(i % 250) - 140);
    const uint16_t b = float_to_bf16_up(x);
    wrong += !(bf16_to_float(b) >= x) || (b > 0 && bf16_to_float(uint16_t(b - 1)) >= x);
  }
  CHECK(wrong == 0);
  const uint16_t four[4] = {0x3f80, 0xbf81, 0x0001, 0x7f7f};
  float lanes[4];
  store(lanes, load_bf16x4(four));
  for (int i = 0; i < 4; ++i) CHECK(lanes[i] == bf16_to_float(four[i]));
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
