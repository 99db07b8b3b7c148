// int8 kv panels (packed_kv.h), q8_0-like: each key's and each value's row in blocks of
// kKvQuantBlock along d (tuning.h says why 32), a block x stored as round(x / s) in [-127, 127]
// with its bfloat16 scale s = max|x| / 127 rounded up (symmetric: no zero point). bfloat16 has
// float32's exponent range, so any finite block has a scale: a block's error is at most s / 2,
// under max|x| / 252 (s rounded up by less than bfloat16's 2^-7, and never below max|x| / 127,
// so nothing clips), down to blocks of max|x| 127·2^-126 ≈ 1.5e-36, below which s is a
// subnormal (steps of 2^-133) and the error at most max|x| / 254 + 2^-134. Only a cache holds
// them (k0 = 0). One head, room for `stride` keys, P = stride rounded up to kNR, nb_k, nb_v
// blocks, D = d_k and S = stride rounded up to even:
//   kᵀ  int8 (D, P) panels of kNR keys, each element pair (t, t+1) of a key side by side:
//       key j, element t at  (j / kNR)·kNR·D + (t / 2)·2·kNR + (j % kNR)·2 + t % 2
//       then its scales, bfloat16, one panel's at a time: key j, block b at
//       (j / kNR)·kNR·nb_k + b·kNR + j % kNR
//   v   (from v_offset floats, 4-byte aligned) int8 (S, d_v) in float32's blocks of K =
//       kKeyBlock keys, each block's panels of kNR columns with each key pair (j, j+1) of a
//       column side by side: key j, column c at
//       (j / K)·K·C + (c / kNR)·kNR·S_j + (j % K / 2)·2·kNR + (c % kNR)·2 + j % 2
//       C = d_v rounded up to kNR, S_j = min(K, S − j / K·K) the keys of j's block
//       then its scales, bfloat16: key j, block b at  b·stride + j
// (pad elements, t = d_k or j = stride, are zero). The kernels multiply in integers: a score
// rounds its query row to int16 per block (step max|q| / 32767), and i32x4.dot_i16x8_s sums a
// pair of elements of 4 keys per operation, exactly; a block's int32 sums then become floats
// once, times the two scales. Weights times v rounds each row's weights times the keys' scales
// w = p·s of a block of columns to int16 over a step of kKeyBlock keys, the row's own step
// max|w| / 32767 of those keys and that block, sums pairs of keys the same way, and scales
// once per step. The int16 rounding errs by at most half a step, 2^-16 of the largest |w|
// (the int8 cache's own rounding is 2^-8 of its block's max|x|): a key with a large scale and
// a weight near 0 does not set the step, one with a weight near 1 dominates the output, and an
// outlier block coarsens only its own 32 values. The kernel test holds the kernels to that
// bound. Steps that float32 cannot hold as they are (a block of q or of w below 2^-96) are
// taken times 2^64 and the sums times 2^-64. The panels are read where they lie, 8 bytes at a
// time, widened to int16 in registers; nothing is widened in memory.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "kv/packed_kv.h"
#include "runtime/scratch.h"
#include "runtime/sizes.h"
#include "simd.h"

namespace wa {

namespace {

constexpr size_t kMR = kKvQuantRows;  // query rows per tile
using kernels::kNR;
using simd::f32x4;
using simd::i16x8;
using simd::i32x4;
constexpr size_t kB = kKvQuantBlock;

// Every finite float: a block past 127 times the largest scale, kScaleMax, clips to it by
// less than half its step.
constexpr float kMaxAbs = std::numeric_limits<float>::max();
// The largest bfloat16 scale whose 127 steps are finite, 2^121·(1 + 2^-7).
constexpr float kScaleMax = 0x1.02p121f;
// The int16 operands' largest magnitude: a query block's or a weight step's max|x|.
constexpr float kQ = 32767.0f;
// An operand block's max|x| below kTiny is rounded times kUp (exactly: a power of two), so that
// kQ / max|x| and max|x| / kQ stay normal floats, and its sums are taken times 1 / kUp.
constexpr float kTiny = 0x1p-96f, kUp = 0x1p64f;

size_t blocks(size_t d) { return (d + kB - 1) / kB; }
size_t even(size_t n) { return (n + 1) / 2 * 2; }
size_t panel_keys(size_t stride) { return (stride + kNR - 1) / kNR * kNR; }
size_t panel_cols(size_t d_v) { return (d_v + kNR - 1) / kNR * kNR; }
size_t kt_at(size_t j, size_t t, size_t d_k) {
  return j / kNR * kNR * even(d_k) + t / 2 * 2 * kNR + j % kNR * 2 + t % 2;
}
// The v block holding key j: float32's (packed_kv.h) over an even number of keys, in bytes.
PackedVBlock v_block(size_t j, size_t stride, size_t d_v) {
  return packed_v_block(j, even(stride), d_v);
}
size_t v_at(size_t j, size_t c, size_t stride, size_t d_v) {
  const PackedVBlock b = v_block(j, stride, d_v);
  return b.at + c / kNR * kNR * b.keys + j % kKeyBlock / 2 * 2 * kNR + c % kNR * 2 + j % 2;
}
size_t k_scale_at(size_t j, size_t b, size_t nb) { return j / kNR * kNR * nb + b * kNR + j % kNR; }

// One head's parts.
struct I8Head {
  int8_t* kt;
  uint16_t* k_scale;
  int8_t* v;
  uint16_t* v_scale;
};

size_t i8_v_offset(size_t stride, size_t d_k) {
  return (panel_keys(stride) * (even(d_k) + 2 * blocks(d_k)) + 3) / 4;
}
size_t i8_head_floats(size_t stride, size_t d_k, size_t d_v) {
  const size_t v_bytes = checked_sum({checked_product({even(stride), panel_cols(d_v)}),
                                      checked_product({2 * blocks(d_v), stride})});
  return checked_sum({i8_v_offset(stride, d_k), (v_bytes + 3) / 4});
}

I8Head parts(const void* kt_part, const void* v_part, size_t stride, size_t d_k, size_t d_v) {
  auto* kt = static_cast<int8_t*>(const_cast<void*>(kt_part));
  auto* v = static_cast<int8_t*>(const_cast<void*>(v_part));
  return {kt, reinterpret_cast<uint16_t*>(kt + panel_keys(stride) * even(d_k)), v,
          reinterpret_cast<uint16_t*>(v + even(stride) * panel_cols(d_v))};
}
I8Head head_parts(const float* head, size_t stride, size_t d_k, size_t d_v) {
  return parts(head, head + i8_v_offset(stride, d_k), stride, d_k, d_v);
}

// x (d, finite) -> its blocks' int8 at q(t) and bfloat16 scales at scale(b): s the least
// bfloat16 >= max|x| / 127 (at most kScaleMax).
template <class Q, class S>
void quantize_row(const float* x, size_t d, Q q, S scale) {
  for (size_t b = 0; b * kB < d; ++b) {
    const size_t t0 = b * kB, t1 = std::min(d, t0 + kB);
    float amax = 0;
    for (size_t t = t0; t < t1; ++t) amax = std::max(amax, std::fabs(x[t]));
    uint16_t h = simd::float_to_bf16_up(std::min(amax / 127.0f, kScaleMax));
    // amax / 127 as a float may lie below the real quotient: then one bfloat16 up
    if (127.0 * simd::bf16_to_float(h) < amax && simd::bf16_to_float(h) < kScaleMax) ++h;
    const float s = simd::bf16_to_float(h);  // the step the block is read back with
    scale(b) = h;
    for (size_t t = t0; t < t1; ++t)
      q(t) = static_cast<int8_t>(s > 0 ? std::clamp(std::nearbyint(x[t] / s), -127.0f, 127.0f) : 0);
  }
}

void i8_write_rows(float* head, size_t stride, size_t d_k, size_t d_v, size_t j0, size_t n,
                   const float* k, size_t ldk, const float* v, size_t ldv) {
  const I8Head h = head_parts(head, stride, d_k, d_v);
  const size_t nb_k = blocks(d_k);
  for (size_t i = 0; i < n; ++i) {
    const size_t j = j0 + i;
    quantize_row(
        k + i * ldk, d_k, [&](size_t t) -> int8_t& { return h.kt[kt_at(j, t, d_k)]; },
        [&](size_t b) -> uint16_t& { return h.k_scale[k_scale_at(j, b, nb_k)]; });
    quantize_row(
        v + i * ldv, d_v, [&](size_t c) -> int8_t& { return h.v[v_at(j, c, stride, d_v)]; },
        [&](size_t b) -> uint16_t& { return h.v_scale[b * stride + j]; });
  }
}

void i8_read_rows(const float* head, size_t stride, size_t d_k, size_t d_v, size_t n, float* k,
                  size_t ldk, float* v, size_t ldv) {
  const I8Head h = head_parts(head, stride, d_k, d_v);
  const size_t nb_k = blocks(d_k);
  for (size_t j = 0; j < n; ++j) {
    if (k)
      for (size_t t = 0; t < d_k; ++t)
        k[j * ldk + t] =
            h.kt[kt_at(j, t, d_k)] * simd::bf16_to_float(h.k_scale[k_scale_at(j, t / kB, nb_k)]);
    if (v)
      for (size_t c = 0; c < d_v; ++c)
        v[j * ldv + c] =
            h.v[v_at(j, c, stride, d_v)] * simd::bf16_to_float(h.v_scale[c / kB * stride + j]);
  }
}

// The two helpers below run once per block of a row, not per element: gnu::noinline keeps one
// copy of each (inlined at their four call sites, they made the .wasm 1.9 KB larger).

// x (n) -> max|x|, or NaN if an x is NaN or infinite.
[[gnu::noinline]] float max_abs(const float* x, size_t n) {
  f32x4 vmax = simd::splat(0), vbad = simd::splat(0);
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const f32x4 xi = simd::load(x + i);
    vmax = simd::max(vmax, simd::abs(xi));
    vbad = simd::add(vbad, simd::sub(xi, xi));  // 0, or NaN from a NaN or an infinity
  }
  float amax = simd::hmax(vmax), bad = simd::hsum(vbad);
  for (; i < n; ++i) amax = std::max(amax, std::fabs(x[i])), bad += x[i] - x[i];
  return bad == 0 ? amax : std::numeric_limits<float>::quiet_NaN();
}

// a (n), b (n), both finite -> max |a·b|, each product rounded to float as round_to_i16 has it.
[[gnu::noinline]] float max_abs_product(const float* a, const float* b, size_t n) {
  f32x4 vmax = simd::splat(0);
  size_t i = 0;
  for (; i + 4 <= n; i += 4)
    vmax = simd::max(vmax, simd::abs(simd::mul(simd::load(a + i), simd::load(b + i))));
  float amax = simd::hmax(vmax);
  for (; i < n; ++i) amax = std::max(amax, std::fabs(a[i] * b[i]));
  return amax;
}

// a (n) times b (n; null: ones) times c, each |a·b·c| <= kQ -> out (n, then a zero when n is
// odd: the pad of its last pair), rounded to the nearest integer, ties to even.
[[gnu::noinline]] void round_to_i16(const float* a, const float* b, float c, size_t n,
                                    int16_t* out) {
  const f32x4 vc = simd::splat(c);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    f32x4 lo = simd::load(a + i), hi = simd::load(a + i + 4);
    if (b) lo = simd::mul(lo, simd::load(b + i)), hi = simd::mul(hi, simd::load(b + i + 4));
    simd::store_rounded_i16x8(out + i, simd::mul(lo, vc), simd::mul(hi, vc));
  }
  for (; i < n; ++i) out[i] = static_cast<int16_t>(std::nearbyint(a[i] * (b ? b[i] : 1.0f) * c));
  if (n % 2) out[n] = 0;
}

// x (n) -> out (n rounded up to even) as int16 over a step of max|x| / kQ, amax = max|x|
// (NaN: zeros); -> the step, and in unit 1 or, for a max|x| below kTiny, 1 / kUp: the step is
// then that of x times kUp, and the int16 sums are to be taken times unit.
float to_i16_block(const float* x, size_t n, float amax, int16_t* out, float& unit) {
  unit = 1;
  if (!(amax >= kTiny)) {  // NaN, zero or tiny
    if (!(amax > 0)) {     // NaN: the sums NaN (a NaN step), the int16 zeros; zero: all zeros
      std::fill(out, out + even(n), int16_t{0});
      return amax == amax ? 0.0f : amax;
    }
    alignas(16) float up[kB];
    for (size_t i = 0; i < n; ++i) up[i] = x[i] * kUp;
    unit = 1 / kUp;
    round_to_i16(up, nullptr, kQ / (amax * kUp), n, out);
    return amax * kUp / kQ;
  }
  round_to_i16(x, nullptr, kQ / amax, n, out);
  return amax / kQ;
}

// R query rows (R <= kMR) as int16, row stride ldq, with their blocks' steps qs (R, nb) and
// units qu (R, nb), against one kᵀ panel of kNR keys -> s (R, kNR) at out, row stride lds.
// Each block's int32 sums (2·R accumulators) become floats once, times the keys' scales and
// the row's step (at most the largest float: a zero sum stays 0) and its unit.
template <size_t R>
void score_tile(const I8Head& h, size_t panel, size_t d_k, const int16_t* q, size_t ldq,
                const float* qs, const float* qu, float* out, size_t lds) {
  const size_t nb = blocks(d_k), d2 = even(d_k);
  const int8_t* kp = h.kt + panel * kNR * d2;
  const uint16_t* sp = h.k_scale + panel * kNR * nb;
  for (size_t b = 0; b < nb; ++b) {
    i32x4 acc[R][2];
    for (size_t r = 0; r < R; ++r) acc[r][0] = acc[r][1] = simd::zero_i32();
    for (size_t t = b * kB, t1 = std::min(d2, t + kB); t < t1; t += 2) {
      // elements t, t+1 of keys 0..3 (lo) and 4..7 (hi)
      const i16x8 lo = simd::load_i8x8_as_i16(kp + t * kNR);
      const i16x8 hi = simd::load_i8x8_as_i16(kp + t * kNR + kNR);
      for (size_t r = 0; r < R; ++r) {
        const i16x8 x = simd::load_i16_pair_splat(q + r * ldq + t);
        acc[r][0] = simd::dot_pairs_add(lo, x, acc[r][0]);
        acc[r][1] = simd::dot_pairs_add(hi, x, acc[r][1]);
      }
    }
    const f32x4 s_lo = simd::load_bf16x4(sp + b * kNR), s_hi = simd::load_bf16x4(sp + b * kNR + 4);
    const f32x4 most = simd::splat(std::numeric_limits<float>::max());
    for (size_t r = 0; r < R; ++r) {
      float* o = out + r * lds;
      const f32x4 step = simd::splat(qs[r * nb + b]), unit = simd::splat(qu[r * nb + b]);
      const f32x4 zero = simd::splat(0);
      const f32x4 f_lo = simd::mul(simd::min(simd::mul(s_lo, step), most), unit);
      const f32x4 f_hi = simd::mul(simd::min(simd::mul(s_hi, step), most), unit);
      simd::store(o, simd::muladd(simd::to_float(acc[r][0]), f_lo, b ? simd::load(o) : zero));
      simd::store(o + 4,
                  simd::muladd(simd::to_float(acc[r][1]), f_hi, b ? simd::load(o + 4) : zero));
    }
  }
}

// q (rows,d_k), keys [j0, j0 + cols) -> s (rows,cols) = q·kᵀ
void i8_scores(const PackedKV& kv, const float* q, size_t ldq, size_t rows, size_t j0, size_t cols,
               float* s, size_t lds) {
  const I8Head h = parts(kv.kt, kv.v, kv.v_stride, kv.d_k, kv.d_v);
  const size_t d_k = kv.d_k, nb = blocks(d_k), d2 = even(d_k);
  // q as int16: q16 (rows, d2), then the steps qs (rows, nb) and units qu (rows, nb)
  auto* q16 = reinterpret_cast<int16_t*>(
      thread_scratch(ScratchSlot::kv_operand, checked_product({rows, d2 / 2 + 2 * nb})));
  float* qs = reinterpret_cast<float*>(q16 + rows * d2);
  float* qu = qs + rows * nb;
  for (size_t r = 0; r < rows; ++r)
    for (size_t b = 0; b < nb; ++b) {
      const float* x = q + r * ldq + b * kB;
      const size_t n = std::min(kB, d_k - b * kB);
      // NaN or an infinity: the block's scores NaN
      qs[r * nb + b] = to_i16_block(x, n, max_abs(x, n), q16 + r * d2 + b * kB, qu[r * nb + b]);
    }
  float tail[kMR * kNR];
  for (size_t p0 = j0; p0 < j0 + cols; p0 += kNR) {
    const size_t n = std::min(kNR, j0 + cols - p0);
    for (size_t r0 = 0; r0 < rows; r0 += kMR) {
      const size_t m = std::min(kMR, rows - r0);
      // a whole panel straight into s, a last partial one through tail
      float* out = n == kNR ? s + r0 * lds + (p0 - j0) : tail;
      const size_t ld = n == kNR ? lds : kNR;
      const int16_t* qr = q16 + r0 * d2;
      const float* sr = qs + r0 * nb;
      const float* ur = qu + r0 * nb;
      switch (m) {
        case 1:
          score_tile<1>(h, p0 / kNR, d_k, qr, d2, sr, ur, out, ld);
          break;
        case 2:
          score_tile<2>(h, p0 / kNR, d_k, qr, d2, sr, ur, out, ld);
          break;
        case 3:
          score_tile<3>(h, p0 / kNR, d_k, qr, d2, sr, ur, out, ld);
          break;
        default:
          score_tile<kMR>(h, p0 / kNR, d_k, qr, d2, sr, ur, out, ld);
          break;
      }
      if (n < kNR)
        for (size_t r = 0; r < m; ++r)
          std::copy(tail + r * kNR, tail + r * kNR + n, s + (r0 + r) * lds + (p0 - j0));
    }
  }
}

// Keys per step of weighted_values: a key block (tuning.h), so that a step of attention is one
// step here. Its int32 sums hold a step's products: kChunk·127·32767 < 2^31.
constexpr size_t kChunk = kKeyBlock;
static_assert(kChunk * 127.0 * 32767.0 < 2147483648.0, "a step's int32 sums overflow");

// R weight rows w (R, n) as int16 (scales applied; a zero after an odd n), row stride kChunk,
// keys [j, j + n) (j even) of the v panel at vp -> a (R, kNR) += w·v, two keys per operation
template <size_t R>
void value_tile(const int8_t* vp, size_t j, size_t n, const int16_t* w, i32x4 (&a)[kMR][2]) {
  for (size_t i = 0; i < n; i += 2) {
    // keys j+i, j+i+1 of columns 0..3 (lo) and 4..7 (hi)
    const i16x8 lo = simd::load_i8x8_as_i16(vp + (j + i) * kNR);
    const i16x8 hi = simd::load_i8x8_as_i16(vp + (j + i) * kNR + kNR);
    for (size_t r = 0; r < R; ++r) {
      const i16x8 x = simd::load_i16_pair_splat(w + r * kChunk + i);
      a[r][0] = simd::dot_pairs_add(lo, x, a[r][0]);
      a[r][1] = simd::dot_pairs_add(hi, x, a[r][1]);
    }
  }
}

// p (rows,cols), v rows [j0, j0 + cols) -> acc (rows,d_v) [+]= p·v. Per step of kChunk keys,
// block b of columns and row, w = p·s (s: the keys' scales of block b) rounds to int16 over the
// row's own step max|w| / kQ, so a key's large scale sets the step only as far as its weight
// carries it; that costs one pass over the step's w for its largest before the rounding.
void i8_weighted_values(const PackedKV& kv, const float* p, size_t ldp, size_t rows, size_t j0,
                        size_t cols, float* acc, size_t ld_acc, bool accumulate) {
  const I8Head h = parts(kv.kt, kv.v, kv.v_stride, kv.d_k, kv.d_v);
  const size_t d_v = kv.d_v, stride = kv.v_stride;
  alignas(16) float sc[kChunk];
  alignas(16) float up[kChunk];
  alignas(16) int16_t w[kMR * kChunk];
  float p_max[kMR], step[kMR], unit[kMR];
  for (size_t r0 = 0; r0 < rows; r0 += kMR) {
    const size_t m = std::min(kMR, rows - r0);
    for (size_t jc = j0; jc < j0 + cols; jc += kChunk) {
      const size_t n = std::min(kChunk, j0 + cols - jc);
      const float* pc = p + r0 * ldp + (jc - j0);
      for (size_t r = 0; r < m; ++r) p_max[r] = max_abs(pc + r * ldp, n);  // NaN: a NaN row
      for (size_t b = 0; b * kB < d_v; ++b) {
        // sc = the keys' scales of block b
        const uint16_t* scale = h.v_scale + b * stride + jc;
        size_t i = 0;
        for (; i + 4 <= n; i += 4) simd::store(sc + i, simd::load_bf16x4(scale + i));
        for (; i < n; ++i) sc[i] = simd::bf16_to_float(scale[i]);
        for (size_t r = 0; r < m; ++r) {
          const float* pr = pc + r * ldp;
          int16_t* wr = w + r * kChunk;
          unit[r] = 1;
          if (p_max[r] != p_max[r]) {  // the row's outputs NaN (a NaN step), its int16 zeros
            step[r] = p_max[r];
            std::fill(wr, wr + even(n), int16_t{0});
            continue;
          }
          const float w_max = max_abs_product(pr, sc, n);
          if (w_max >= kTiny) {
            step[r] = w_max / kQ;
            round_to_i16(pr, sc, kQ / w_max, n, wr);
            continue;
          }
          // tiny or zero: w times kUp, the sums times unit = 1 / kUp (a p past 2^64 meets only
          // zero scales here: no Infinity times 0)
          for (i = 0; i < n; ++i) up[i] = pr[i] == 0 || sc[i] == 0 ? 0.0f : pr[i] * kUp * sc[i];
          const float up_max = max_abs(up, n);
          step[r] = up_max / kQ, unit[r] = 1 / kUp;
          round_to_i16(up, nullptr, up_max > 0 ? kQ / up_max : 0.0f, n, wr);
        }
        for (size_t c0 = b * kB; c0 < std::min(d_v, (b + 1) * kB); c0 += kNR) {
          const size_t nc = std::min(kNR, d_v - c0);
          float* out = acc + r0 * ld_acc + c0;
          i32x4 a[kMR][2];
          for (size_t r = 0; r < m; ++r) a[r][0] = a[r][1] = simd::zero_i32();
          // the step's keys a v block at a time
          for (size_t e = 0; e < n;) {
            const size_t j = jc + e - kv.k0, in = j % kKeyBlock;
            const PackedVBlock vb = v_block(j, stride, d_v);
            const size_t piece = std::min(n - e, vb.keys - in);
            const int8_t* vp = h.v + vb.at + c0 / kNR * kNR * vb.keys;
            switch (m) {
              case 1:
                value_tile<1>(vp, in, piece, w + e, a);
                break;
              case 2:
                value_tile<2>(vp, in, piece, w + e, a);
                break;
              case 3:
                value_tile<3>(vp, in, piece, w + e, a);
                break;
              default:
                value_tile<kMR>(vp, in, piece, w + e, a);
                break;
            }
            e += piece;
          }
          const bool fresh = !accumulate && jc == j0;
          float tail[kNR];
          for (size_t r = 0; r < m; ++r) {
            float* o = out + r * ld_acc;
            const f32x4 st = simd::splat(step[r]), u = simd::splat(unit[r]), zero = simd::splat(0);
            const f32x4 lo = simd::mul(simd::to_float(a[r][0]), u),
                        hi = simd::mul(simd::to_float(a[r][1]), u);
            if (nc == kNR) {
              simd::store(o, simd::muladd(lo, st, fresh ? zero : simd::load(o)));
              simd::store(o + 4, simd::muladd(hi, st, fresh ? zero : simd::load(o + 4)));
            } else {
              std::fill(tail, tail + kNR, 0.0f);
              if (!fresh) std::copy(o, o + nc, tail);
              simd::store(tail, simd::muladd(lo, st, simd::load(tail)));
              simd::store(tail + 4, simd::muladd(hi, st, simd::load(tail + 4)));
              std::copy(tail, tail + nc, o);
            }
          }
        }
      }
    }
  }
}

}  // namespace

extern const KvKernels kKvI8Kernels;
const KvKernels kKvI8Kernels{"int8",        kMaxAbs,      i8_head_floats, i8_v_offset,
                             i8_write_rows, i8_read_rows, i8_scores,      i8_weighted_values};

}  // namespace wa
