// f32x4: four float lanes, the one vector type of this library.
// wasm SIMD128 under Emscripten (-msimd128), SSE on x86 natively (so the native tests run
// vector code too), plain scalar lanes anywhere else. No fused multiply-add: SIMD128 has none
// without relaxed SIMD, and keeping mul+add on every target keeps the roundings alike.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__wasm_simd128__)
#include <wasm_simd128.h>
#define WA_SIMD_NAME "simd128"
#elif defined(__SSE2__)
#include <emmintrin.h>
#define WA_SIMD_NAME "sse2"
#else
#include <algorithm>
#include <cmath>
#define WA_SIMD_NAME "scalar"
#endif

namespace wa::simd {

#if defined(__wasm_simd128__)

using f32x4 = v128_t;
inline f32x4 load(const float* p) { return wasm_v128_load(p); }
inline void store(float* p, f32x4 v) { wasm_v128_store(p, v); }
inline f32x4 splat(float x) { return wasm_f32x4_splat(x); }
inline f32x4 load_splat(const float* p) { return wasm_v128_load32_splat(p); }
inline f32x4 add(f32x4 a, f32x4 b) { return wasm_f32x4_add(a, b); }
inline f32x4 sub(f32x4 a, f32x4 b) { return wasm_f32x4_sub(a, b); }
inline f32x4 mul(f32x4 a, f32x4 b) { return wasm_f32x4_mul(a, b); }
inline f32x4 max(f32x4 a, f32x4 b) { return wasm_f32x4_pmax(a, b); }
inline f32x4 min(f32x4 a, f32x4 b) { return wasm_f32x4_pmin(a, b); }
inline float lane0(f32x4 v) { return wasm_f32x4_extract_lane(v, 0); }
inline f32x4 swap_pairs(f32x4 v) { return wasm_i32x4_shuffle(v, v, 2, 3, 0, 1); }
inline f32x4 swap_lanes(f32x4 v) { return wasm_i32x4_shuffle(v, v, 1, 0, 3, 2); }
// (p[0], p[1], p[0], p[1]): two floats in every pair of lanes.
inline f32x4 load_pair_splat(const float* p) { return wasm_v128_load64_splat(p); }
// (a0 + a1, a2 + a3, b0 + b1, b2 + b3): the sums of lane pairs.
inline f32x4 add_pairs(f32x4 a, f32x4 b) {
  return wasm_f32x4_add(wasm_i32x4_shuffle(a, b, 0, 2, 4, 6), wasm_i32x4_shuffle(a, b, 1, 3, 5, 7));
}
// Lane L of v in all four lanes.
template <int L>
inline f32x4 broadcast_lane(f32x4 v) {
  return wasm_i32x4_shuffle(v, v, L, L, L, L);
}
// All-ones lanes where v is NaN; lanes or'ed; whether any lane of a mask is set. The empty
// asm (as in zero_where_less) keeps clang 14 from folding or(m, v != v) into a bitselect.
inline f32x4 nan_lanes(f32x4 v) {
  v128_t nan = wasm_f32x4_ne(v, v);
  __asm__("" : "+r"(nan));
  return nan;
}
inline f32x4 bit_or(f32x4 a, f32x4 b) { return wasm_v128_or(a, b); }
inline bool any_lane(f32x4 mask) { return wasm_v128_any_true(mask); }
// The float whose bits are v's shifted left by 23 (an integer in the exponent field).
inline f32x4 shl23(f32x4 v) { return wasm_i32x4_shl(v, 23); }
// Lanes where a < b keep 0, the others keep x. The empty asm hides the compare from clang 14,
// which would otherwise fold the andnot into v128.bitselect(0, x, a < b): V8 lowers a
// bitselect to three instructions (vpandn, vpand, vpor), an andnot to one vpandn, in an exp
// loop of about 30 per four values (7 % of the exp's time in V8 11, rows_probe.mjs).
inline f32x4 zero_where_less(f32x4 a, f32x4 b, f32x4 x) {
  v128_t less = wasm_f32x4_lt(a, b);
  __asm__("" : "+r"(less));
  return wasm_v128_andnot(x, less);
}
// Rows r0..r3 of a 4x4 block become its columns.
inline void transpose4x4(f32x4& r0, f32x4& r1, f32x4& r2, f32x4& r3) {
  const f32x4 t0 = wasm_i32x4_shuffle(r0, r1, 0, 4, 1, 5),
              t1 = wasm_i32x4_shuffle(r0, r1, 2, 6, 3, 7);
  const f32x4 t2 = wasm_i32x4_shuffle(r2, r3, 0, 4, 1, 5),
              t3 = wasm_i32x4_shuffle(r2, r3, 2, 6, 3, 7);
  r0 = wasm_i64x2_shuffle(t0, t2, 0, 2), r1 = wasm_i64x2_shuffle(t0, t2, 1, 3);
  r2 = wasm_i64x2_shuffle(t1, t3, 0, 2), r3 = wasm_i64x2_shuffle(t1, t3, 1, 3);
}

// Eight int8 at p -> lanes 0..3 in lo, 4..7 in hi, as floats: sign-extended to i16x8, then
// i32x4, then made floats by adding the bits of 1.5·2^23 and subtracting it as a float (exact
// for |i| < 2^22). Not f32x4.convert_i32x4: clang 14 folds the extend into it, a convert of
// i16 lanes, which it lowers to four scalar converts (3× slower decoding).
inline f32x4 small_ints_to_floats(v128_t i) {
  return wasm_f32x4_sub(wasm_i32x4_add(i, wasm_i32x4_splat(0x4B400000)),
                        wasm_f32x4_splat(12582912.0f));
}
inline void load_i8x8(const int8_t* p, f32x4& lo, f32x4& hi) {
  const v128_t h = wasm_i16x8_load8x8(p);
  lo = small_ints_to_floats(wasm_i32x4_extend_low_i16x8(h));
  hi = small_ints_to_floats(wasm_i32x4_extend_high_i16x8(h));
}
// Eight int8 at p -> lanes 0..3 in lo, 4..7 in hi, as floats 2^24 times their value: each
// byte swizzled into the top byte of an i32 lane (index 0x80: a zero byte), which converts
// exactly (7 significant bits). Two instructions per four values in V8 (a constant swizzle
// whose indices are below 16 or have the top bit set is one pshufb), against load_i8x8's four.
inline void load_i8x8_top(const int8_t* p, f32x4& lo, f32x4& hi) {
  const v128_t b = wasm_v128_load64_zero(p);
  constexpr int8_t z = -128;
  lo = wasm_f32x4_convert_i32x4(
      wasm_i8x16_swizzle(b, wasm_i8x16_const(z, z, z, 0, z, z, z, 1, z, z, z, 2, z, z, z, 3)));
  hi = wasm_f32x4_convert_i32x4(
      wasm_i8x16_swizzle(b, wasm_i8x16_const(z, z, z, 4, z, z, z, 5, z, z, z, 6, z, z, z, 7)));
}
// Four IEEE halves at p (finite; subnormals too) -> floats: the magnitude's bits moved into a
// float's place, times 2^112 to rebias the exponent, the sign or'ed back.
inline f32x4 load_half4(const uint16_t* p) {
  const v128_t h = wasm_u32x4_load16x4(p);
  const v128_t mag = wasm_i32x4_shl(wasm_v128_and(h, wasm_i32x4_splat(0x7fff)), 13);
  const v128_t sign = wasm_i32x4_shl(wasm_v128_and(h, wasm_i32x4_splat(0x8000)), 16);
  return wasm_v128_or(wasm_f32x4_mul(mag, wasm_f32x4_splat(0x1p112f)), sign);
}
// Four bfloat16 at p -> floats: each one's bits become a float's top 16 bits.
inline f32x4 load_bf16x4(const uint16_t* p) { return wasm_i32x4_shl(wasm_u32x4_load16x4(p), 16); }
// Eight IEEE halves at p (finite; subnormals too) -> lanes 0..3 in lo, 4..7 in hi, as floats
// 2^-112 times their value (load_half8, below, multiplies them back), widened in i16 lanes
// (XNNPACK's f16-f32-vcvt wasmsimd-int16, without its Inf/NaN cases): each float's bits are
// s000 eeeee mmmmmmmmmm 0…0 (13 zeros), its high i16 the half shifted right by 3 with the sign
// kept in place (arithmetic shift, then the sign's copies cleared), its low i16 the half's last
// three bits shifted left by 13, the two interleaved. Exact: a half's exponent lands 112 below
// its own, a subnormal half on a subnormal float.
inline void load_half8_small(const uint16_t* p, f32x4& lo, f32x4& hi) {
  const v128_t h = wasm_v128_load(p);
  const v128_t low = wasm_i16x8_shl(h, 13);
  const v128_t high = wasm_v128_and(wasm_i16x8_shr(h, 3), wasm_i16x8_splat(int16_t(0x8fff)));
  lo = wasm_i16x8_shuffle(low, high, 0, 8, 1, 9, 2, 10, 3, 11);
  hi = wasm_i16x8_shuffle(low, high, 4, 12, 5, 13, 6, 14, 7, 15);
}

// ---- integer lanes, for the int8 kv kernels (kv_i8.cpp) ----
// i16x8 and i32x4: eight int16 and four int32 lanes, the operands and sums of dot_pairs_add.
using i16x8 = v128_t;
using i32x4 = v128_t;
// Eight int8 at p -> i16x8, sign-extended.
inline i16x8 load_i8x8_as_i16(const int8_t* p) { return wasm_i16x8_load8x8(p); }
// The two int16 at p repeated in every pair of lanes.
inline i16x8 load_i16_pair_splat(const int16_t* p) { return wasm_v128_load32_splat(p); }
inline i32x4 zero_i32() { return wasm_i32x4_splat(0); }
// c + lane i: a[2i]·b[2i] + a[2i+1]·b[2i+1] (i32x4.dot_i16x8_s; exact while it fits in int32).
inline i32x4 dot_pairs_add(i16x8 a, i16x8 b, i32x4 c) {
  return wasm_i32x4_add(wasm_i32x4_dot_i16x8(a, b), c);
}
inline f32x4 to_float(i32x4 v) { return wasm_f32x4_convert_i32x4(v); }
inline f32x4 abs(f32x4 v) { return wasm_f32x4_abs(v); }
// lo, hi (|x| <= 32767) rounded to the nearest integer, ties to even -> eight int16 at p: x
// plus 1.5·2^23 as a float rounds x into the low mantissa bits, whose integer is then the bits
// less those of 1.5·2^23 (small_ints_to_floats backwards). Not nearest and trunc_sat: V8 lowers
// trunc_sat to about eight x86 instructions.
inline void store_rounded_i16x8(int16_t* p, f32x4 lo, f32x4 hi) {
  const f32x4 magic = wasm_f32x4_splat(12582912.0f);
  const v128_t bits = wasm_i32x4_splat(0x4B400000);
  wasm_v128_store(p, wasm_i16x8_narrow_i32x4(wasm_i32x4_sub(wasm_f32x4_add(lo, magic), bits),
                                             wasm_i32x4_sub(wasm_f32x4_add(hi, magic), bits)));
}

#elif defined(__SSE2__)

using f32x4 = __m128;
inline f32x4 load(const float* p) { return _mm_loadu_ps(p); }
inline void store(float* p, f32x4 v) { _mm_storeu_ps(p, v); }
inline f32x4 splat(float x) { return _mm_set1_ps(x); }
inline f32x4 load_splat(const float* p) { return _mm_load1_ps(p); }
inline f32x4 add(f32x4 a, f32x4 b) { return _mm_add_ps(a, b); }
inline f32x4 sub(f32x4 a, f32x4 b) { return _mm_sub_ps(a, b); }
inline f32x4 mul(f32x4 a, f32x4 b) { return _mm_mul_ps(a, b); }
inline f32x4 max(f32x4 a, f32x4 b) { return _mm_max_ps(b, a); }  // a < b ? b : a, as pmax
inline f32x4 min(f32x4 a, f32x4 b) { return _mm_min_ps(b, a); }  // b < a ? b : a, as pmin
inline float lane0(f32x4 v) { return _mm_cvtss_f32(v); }
inline f32x4 swap_pairs(f32x4 v) { return _mm_shuffle_ps(v, v, _MM_SHUFFLE(1, 0, 3, 2)); }
inline f32x4 swap_lanes(f32x4 v) { return _mm_shuffle_ps(v, v, _MM_SHUFFLE(2, 3, 0, 1)); }
inline f32x4 load_pair_splat(const float* p) {
  return _mm_castpd_ps(_mm_load1_pd(reinterpret_cast<const double*>(p)));
}
inline f32x4 add_pairs(f32x4 a, f32x4 b) {
  return _mm_add_ps(_mm_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0)),
                    _mm_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1)));
}
template <int L>
inline f32x4 broadcast_lane(f32x4 v) {
  return _mm_shuffle_ps(v, v, _MM_SHUFFLE(L, L, L, L));
}
inline f32x4 nan_lanes(f32x4 v) { return _mm_cmpunord_ps(v, v); }
inline f32x4 bit_or(f32x4 a, f32x4 b) { return _mm_or_ps(a, b); }
inline bool any_lane(f32x4 mask) { return _mm_movemask_ps(mask) != 0; }
inline f32x4 shl23(f32x4 v) { return _mm_castsi128_ps(_mm_slli_epi32(_mm_castps_si128(v), 23)); }
inline f32x4 zero_where_less(f32x4 a, f32x4 b, f32x4 x) {
  return _mm_andnot_ps(_mm_cmplt_ps(a, b), x);
}
inline void transpose4x4(f32x4& r0, f32x4& r1, f32x4& r2, f32x4& r3) {
  _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
}

inline void load_i8x8(const int8_t* p, f32x4& lo, f32x4& hi) {
  const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  const __m128i h = _mm_srai_epi16(_mm_unpacklo_epi8(b, b), 8);
  lo = _mm_cvtepi32_ps(_mm_srai_epi32(_mm_unpacklo_epi16(h, h), 16));
  hi = _mm_cvtepi32_ps(_mm_srai_epi32(_mm_unpackhi_epi16(h, h), 16));
}
inline void load_i8x8_top(const int8_t* p, f32x4& lo, f32x4& hi) {
  load_i8x8(p, lo, hi);
  lo = _mm_mul_ps(lo, _mm_set1_ps(0x1p24f)), hi = _mm_mul_ps(hi, _mm_set1_ps(0x1p24f));
}
inline f32x4 load_half4(const uint16_t* p) {
  const __m128i h =
      _mm_unpacklo_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)), _mm_setzero_si128());
  const __m128i mag = _mm_slli_epi32(_mm_and_si128(h, _mm_set1_epi32(0x7fff)), 13);
  const __m128i sign = _mm_slli_epi32(_mm_and_si128(h, _mm_set1_epi32(0x8000)), 16);
  return _mm_or_ps(_mm_mul_ps(_mm_castsi128_ps(mag), _mm_set1_ps(0x1p112f)),
                   _mm_castsi128_ps(sign));
}
inline f32x4 load_bf16x4(const uint16_t* p) {
  const __m128i h = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  return _mm_castsi128_ps(_mm_unpacklo_epi16(_mm_setzero_si128(), h));
}
inline void load_half8_small(const uint16_t* p, f32x4& lo, f32x4& hi) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  const __m128i low = _mm_slli_epi16(h, 13);
  const __m128i high = _mm_and_si128(_mm_srai_epi16(h, 3), _mm_set1_epi16(int16_t(0x8fff)));
  lo = _mm_castsi128_ps(_mm_unpacklo_epi16(low, high));
  hi = _mm_castsi128_ps(_mm_unpackhi_epi16(low, high));
}

using i16x8 = __m128i;
using i32x4 = __m128i;
inline i16x8 load_i8x8_as_i16(const int8_t* p) {
  const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  return _mm_srai_epi16(_mm_unpacklo_epi8(b, b), 8);
}
inline i16x8 load_i16_pair_splat(const int16_t* p) {
  int32_t pair;
  std::memcpy(&pair, p, 4);
  return _mm_set1_epi32(pair);
}
inline i32x4 zero_i32() { return _mm_setzero_si128(); }
inline i32x4 dot_pairs_add(i16x8 a, i16x8 b, i32x4 c) {
  return _mm_add_epi32(_mm_madd_epi16(a, b), c);
}
inline f32x4 to_float(i32x4 v) { return _mm_cvtepi32_ps(v); }
inline f32x4 abs(f32x4 v) { return _mm_andnot_ps(_mm_set1_ps(-0.0f), v); }
// cvtps rounds as the MXCSR says: to nearest, ties to even, unless a host changed it
inline void store_rounded_i16x8(int16_t* p, f32x4 lo, f32x4 hi) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p),
                   _mm_packs_epi32(_mm_cvtps_epi32(lo), _mm_cvtps_epi32(hi)));
}

#else

struct f32x4 {
  float v[4];
};
inline f32x4 load(const float* p) { return {{p[0], p[1], p[2], p[3]}}; }
inline void store(float* p, f32x4 a) {
  for (int i = 0; i < 4; ++i) p[i] = a.v[i];
}
inline f32x4 splat(float x) { return {{x, x, x, x}}; }
inline f32x4 load_splat(const float* p) { return splat(*p); }
#define WA_LANEWISE(name, expr)                  \
  inline f32x4 name(f32x4 a, f32x4 b) {          \
    f32x4 r;                                     \
    for (int i = 0; i < 4; ++i) r.v[i] = (expr); \
    return r;                                    \
  }
WA_LANEWISE(add, a.v[i] + b.v[i])
WA_LANEWISE(sub, a.v[i] - b.v[i])
WA_LANEWISE(mul, a.v[i] * b.v[i])
WA_LANEWISE(max, a.v[i] < b.v[i] ? b.v[i] : a.v[i])
WA_LANEWISE(min, b.v[i] < a.v[i] ? b.v[i] : a.v[i])
#undef WA_LANEWISE
inline float lane0(f32x4 a) { return a.v[0]; }
inline f32x4 swap_pairs(f32x4 a) { return {{a.v[2], a.v[3], a.v[0], a.v[1]}}; }
inline f32x4 swap_lanes(f32x4 a) { return {{a.v[1], a.v[0], a.v[3], a.v[2]}}; }
inline f32x4 load_pair_splat(const float* p) { return {{p[0], p[1], p[0], p[1]}}; }
inline f32x4 add_pairs(f32x4 a, f32x4 b) {
  return {{a.v[0] + a.v[1], a.v[2] + a.v[3], b.v[0] + b.v[1], b.v[2] + b.v[3]}};
}
template <int L>
inline f32x4 broadcast_lane(f32x4 a) {
  return splat(a.v[L]);
}
inline f32x4 nan_lanes(f32x4 a) {
  f32x4 r;
  for (int i = 0; i < 4; ++i) r.v[i] = a.v[i] != a.v[i] ? 1.0f : 0.0f;  // nonzero = set
  return r;
}
inline f32x4 bit_or(f32x4 a, f32x4 b) {
  for (int i = 0; i < 4; ++i) a.v[i] = (a.v[i] != 0.0f || b.v[i] != 0.0f) ? 1.0f : 0.0f;
  return a;
}
inline bool any_lane(f32x4 mask) {
  return mask.v[0] != 0 || mask.v[1] != 0 || mask.v[2] != 0 || mask.v[3] != 0;
}
inline f32x4 shl23(f32x4 a) {
  f32x4 r;
  for (int i = 0; i < 4; ++i) {
    uint32_t bits;
    std::memcpy(&bits, &a.v[i], 4);
    bits <<= 23;
    std::memcpy(&r.v[i], &bits, 4);
  }
  return r;
}
inline f32x4 zero_where_less(f32x4 a, f32x4 b, f32x4 x) {
  for (int i = 0; i < 4; ++i) x.v[i] = a.v[i] < b.v[i] ? 0.0f : x.v[i];
  return x;
}
inline void transpose4x4(f32x4& r0, f32x4& r1, f32x4& r2, f32x4& r3) {
  f32x4* r[4] = {&r0, &r1, &r2, &r3};
  for (int i = 0; i < 4; ++i)
    for (int j = i + 1; j < 4; ++j) std::swap(r[i]->v[j], r[j]->v[i]);
}

inline void load_i8x8(const int8_t* p, f32x4& lo, f32x4& hi) {
  for (int i = 0; i < 4; ++i) lo.v[i] = p[i], hi.v[i] = p[4 + i];
}
inline void load_i8x8_top(const int8_t* p, f32x4& lo, f32x4& hi) {
  for (int i = 0; i < 4; ++i) lo.v[i] = p[i] * 0x1p24f, hi.v[i] = p[4 + i] * 0x1p24f;
}
inline float half_to_float(uint16_t h);
inline f32x4 load_half4(const uint16_t* p) {
  return {{half_to_float(p[0]), half_to_float(p[1]), half_to_float(p[2]), half_to_float(p[3])}};
}
inline void load_half8_small(const uint16_t* p, f32x4& lo, f32x4& hi) {
  lo = mul(load_half4(p), splat(0x1p-112f)), hi = mul(load_half4(p + 4), splat(0x1p-112f));
}
inline float bf16_to_float(uint16_t b);
inline f32x4 load_bf16x4(const uint16_t* p) {
  return {{bf16_to_float(p[0]), bf16_to_float(p[1]), bf16_to_float(p[2]), bf16_to_float(p[3])}};
}

struct i16x8 {
  int16_t v[8];
};
struct i32x4 {
  int32_t v[4];
};
inline i16x8 load_i8x8_as_i16(const int8_t* p) {
  i16x8 r;
  for (int i = 0; i < 8; ++i) r.v[i] = p[i];
  return r;
}
inline i16x8 load_i16_pair_splat(const int16_t* p) {
  i16x8 r;
  for (int i = 0; i < 8; ++i) r.v[i] = p[i % 2];
  return r;
}
inline i32x4 zero_i32() { return {{0, 0, 0, 0}}; }
inline i32x4 dot_pairs_add(i16x8 a, i16x8 b, i32x4 c) {
  for (int i = 0; i < 4; ++i) c.v[i] += a.v[2 * i] * b.v[2 * i] + a.v[2 * i + 1] * b.v[2 * i + 1];
  return c;
}
inline f32x4 to_float(i32x4 v) {
  return {{float(v.v[0]), float(v.v[1]), float(v.v[2]), float(v.v[3])}};
}
inline f32x4 abs(f32x4 a) {
  for (int i = 0; i < 4; ++i) a.v[i] = std::fabs(a.v[i]);
  return a;
}
inline void store_rounded_i16x8(int16_t* p, f32x4 lo, f32x4 hi) {
  for (int i = 0; i < 4; ++i)
    p[i] = int16_t(std::nearbyint(lo.v[i])), p[4 + i] = int16_t(std::nearbyint(hi.v[i]));
}

#endif

// One IEEE half (finite; subnormals too) -> float, as load_half4 does lane by lane. (Scalar on
// every target: clang 14 loops forever folding wasm's load16x4 of a vector built from one half.)
inline float half_to_float(uint16_t h) {
  const uint32_t mag = uint32_t(h & 0x7fff) << 13, sign = uint32_t(h & 0x8000) << 16;
  float m;
  std::memcpy(&m, &mag, 4);
  m *= 0x1p112f;
  uint32_t bits;
  std::memcpy(&bits, &m, 4);
  bits |= sign;
  std::memcpy(&m, &bits, 4);
  return m;
}

// IEEE half bits of x (finite, |x| <= 65504), rounded to nearest even; below 2^-14 a subnormal
// half (steps of 2^-24), below 2^-25 zero.
inline uint16_t float_to_half(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000);
  u &= 0x7fffffff;
  if (u >= 0x38800000) {                                          // at least 2^-14: a normal half
    u += 0x0fff + ((u >> 13) & 1);                                // round the 23-bit mantissa to 10
    return sign | static_cast<uint16_t>((u - 0x38000000) >> 13);  // exponent bias 127 -> 15
  }
  float m;
  std::memcpy(&m, &u, 4);
  return sign | static_cast<uint16_t>(std::nearbyint(m * 0x1p24f));  // subnormal: units of 2^-24
}

// One bfloat16 (float32's sign, exponent and top 7 mantissa bits) -> float, exactly.
inline float bf16_to_float(uint16_t b) {
  const uint32_t bits = uint32_t(b) << 16;
  float x;
  std::memcpy(&x, &bits, 4);
  return x;
}

// bfloat16 bits of x (finite, x >= 0) rounded up: the least bfloat16 >= x (float32's range:
// from the subnormal 2^-133 to 2^127·(2 - 2^-7); a finite x past that gives Infinity's bits).
inline uint16_t float_to_bf16_up(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if (u & 0xffff) u += 0x10000;  // a mantissa bit below bfloat16's: the next one up
  return static_cast<uint16_t>(u >> 16);
}

// c + a·b, as a separate multiply and add on every target.
inline f32x4 muladd(f32x4 a, f32x4 b, f32x4 c) { return add(mul(a, b), c); }

// Eight IEEE halves at p (finite; subnormals too) -> lanes 0..3 in lo, 4..7 in hi, as floats.
inline void load_half8(const uint16_t* p, f32x4& lo, f32x4& hi) {
  load_half8_small(p, lo, hi);
  lo = mul(lo, splat(0x1p112f)), hi = mul(hi, splat(0x1p112f));
}
// exp(x) for x <= 0 (softmax's x - max), within 3 ulp (2.2 worst seen by simd_test.cpp);
// lanes below -87.3 (and -inf) give 0.
// Range reduction x = n·ln2 + t, |t| <= ln2/2, with n rounded by a magic bias whose low
// mantissa bits become 2^n's exponent field; exp(t) by a degree-5 polynomial (the constants of
// XNNPACK's rr2-p5 kernels).
inline f32x4 exp_nonpositive(f32x4 x) {
  const f32x4 magic = splat(0x1.8000FEp23f);
  f32x4 n = muladd(x, splat(0x1.715476p+0f), magic);  // x·log2(e), rounded
  const f32x4 s = shl23(n);                           // 2^n
  n = sub(n, magic);
  f32x4 t = muladd(n, splat(-0x1.62E400p-1f), x);  // x - n·ln2, in two parts
  t = muladd(n, splat(-0x1.7F7D1Cp-20f), t);
  f32x4 p = muladd(splat(0x1.0F9F9Cp-7f), t, splat(0x1.573A1Ap-5f));
  p = muladd(p, t, splat(0x1.555A80p-3f));
  p = muladd(p, t, splat(0x1.FFFDC6p-2f));
  p = muladd(p, t, splat(0x1.FFFFF6p-1f));
  t = mul(t, s);
  return zero_where_less(x, splat(-0x1.5D589Ep6f), muladd(t, p, s));  // s·(1 + t·p)
}

// The largest lane / the sum of the lanes, in a fixed order.
inline float hmax(f32x4 v) {
  v = max(v, swap_pairs(v));
  return lane0(max(v, swap_lanes(v)));
}
inline float hsum(f32x4 v) {
  v = add(v, swap_pairs(v));
  return lane0(add(v, swap_lanes(v)));
}

}  // namespace wa::simd
