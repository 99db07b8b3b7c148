// int8 kv panels (packed_kv.h), q8_0-like: each key's and each value's row in blocks of
// kKvQuantBlock along d (tuning.h says why 32), a block x stored as round(x / s) in [-127, 127]
// with its fp16 scale s = max|x| / 127 (symmetric: no zero point). Only a cache holds them
// (k0 = 0). One head, room for `stride` keys, P = stride rounded up to kNR, nb_k, nb_v blocks:
//   kᵀ  int8 (d_k, P) panels as float32's (packed_kt_at), then its scales, fp16, one panel's
//       at a time: key j, block b at  (j / kNR)·kNR·nb_k + b·kNR + j % kNR
//   v   (from v_offset floats, 4-byte aligned) int8 (stride, d_v) panels as float32's
//       (packed_v_at), then its scales, fp16: key j, block b at  b·stride + j
// The kernels read the int8 panels and widen them in registers (i8x8 -> 2 × f32x4); the scales
// apply once per block: a score sums q·k over a block and then takes its keys' scales, a
// weight takes its key's scale before it meets the block's v panels. Nothing is widened in
// memory.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "packed_kv.h"
#include "simd.h"
#include "sizes.h"

namespace wa {

namespace {

constexpr size_t kMR = kKvQuantRows;  // query rows per tile
using kernels::kNR;
using simd::f32x4;
constexpr size_t kB = kKvQuantBlock;

// The largest block scale fp16 holds is 65504: magnitudes up to 127 of it.
constexpr float kMaxAbs = 65504.0f * 127.0f;

size_t blocks(size_t d) { return (d + kB - 1) / kB; }
size_t panel_keys(size_t stride) { return (stride + kNR - 1) / kNR * kNR; }
size_t k_scale_at(size_t j, size_t b, size_t nb) { return j / kNR * kNR * nb + b * kNR + j % kNR; }

// IEEE half bits of x (finite, |x| <= 65504), rounded to nearest even.
uint16_t half_bits(float x) {
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

// One head's parts.
struct I8Head {
  int8_t* kt;
  uint16_t* k_scale;
  int8_t* v;
  uint16_t* v_scale;
};

size_t i8_v_offset(size_t stride, size_t d_k) {
  return (panel_keys(stride) * (d_k + 2 * blocks(d_k)) + 3) / 4;
}
size_t i8_head_floats(size_t stride, size_t d_k, size_t d_v) {
  const size_t v_bytes = checked_sum({checked_product({stride, (d_v + kNR - 1) / kNR * kNR}),
                                      checked_product({2 * blocks(d_v), stride})});
  return checked_sum({i8_v_offset(stride, d_k), (v_bytes + 3) / 4});
}

I8Head parts(const void* kt_part, const void* v_part, size_t stride, size_t d_k, size_t d_v) {
  auto* kt = static_cast<int8_t*>(const_cast<void*>(kt_part));
  auto* v = static_cast<int8_t*>(const_cast<void*>(v_part));
  return {kt, reinterpret_cast<uint16_t*>(kt + panel_keys(stride) * d_k), v,
          reinterpret_cast<uint16_t*>(v + stride * ((d_v + kNR - 1) / kNR * kNR))};
}
I8Head head_parts(const float* head, size_t stride, size_t d_k, size_t d_v) {
  return parts(head, head + i8_v_offset(stride, d_k), stride, d_k, d_v);
}

// x (d) -> its blocks' int8 at q(t) and fp16 scales at scale(b).
template <class Q, class S>
void quantize_row(const float* x, size_t d, Q q, S scale) {
  for (size_t b = 0; b * kB < d; ++b) {
    const size_t t0 = b * kB, t1 = std::min(d, t0 + kB);
    float amax = 0;
    for (size_t t = t0; t < t1; ++t) amax = std::max(amax, std::fabs(x[t]));
    const uint16_t h = half_bits(amax / 127.0f);
    const float s = simd::half_to_float(h);  // the step the block is read back with
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
        k + i * ldk, d_k, [&](size_t t) -> int8_t& { return h.kt[packed_kt_at(j, t, d_k)]; },
        [&](size_t b) -> uint16_t& { return h.k_scale[k_scale_at(j, b, nb_k)]; });
    quantize_row(
        v + i * ldv, d_v, [&](size_t c) -> int8_t& { return h.v[packed_v_at(j, c, stride)]; },
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
        k[j * ldk + t] = h.kt[packed_kt_at(j, t, d_k)] *
                         simd::half_to_float(h.k_scale[k_scale_at(j, t / kB, nb_k)]);
    if (v)
      for (size_t c = 0; c < d_v; ++c)
        v[j * ldv + c] =
            h.v[packed_v_at(j, c, stride)] * simd::half_to_float(h.v_scale[c / kB * stride + j]);
  }
}

// R query rows (R <= kMR) against one kᵀ panel of kNR keys -> s (R, kNR) at out, row stride
// lds. A block's sums take its scales in out, so that the loop over d keeps only 2·R
// accumulators in registers (16 would spill on x86's 16 vector registers).
template <size_t R>
void score_tile(const I8Head& h, size_t panel, size_t d_k, const float* q, size_t ldq, float* out,
                size_t lds) {
  const size_t nb = blocks(d_k);
  const int8_t* kp = h.kt + panel * kNR * d_k;
  const uint16_t* sp = h.k_scale + panel * kNR * nb;
  for (size_t b = 0; b < nb; ++b) {
    f32x4 part[R][2];
    for (size_t r = 0; r < R; ++r) part[r][0] = part[r][1] = simd::splat(0);
    for (size_t t = b * kB, t1 = std::min(d_k, t + kB); t < t1; ++t) {
      f32x4 lo, hi;
      simd::load_i8x8(kp + t * kNR, lo, hi);
      for (size_t r = 0; r < R; ++r) {
        const f32x4 x = simd::load_splat(q + r * ldq + t);
        part[r][0] = simd::muladd(x, lo, part[r][0]);
        part[r][1] = simd::muladd(x, hi, part[r][1]);
      }
    }
    const f32x4 s_lo = simd::load_half4(sp + b * kNR), s_hi = simd::load_half4(sp + b * kNR + 4);
    for (size_t r = 0; r < R; ++r) {
      float* o = out + r * lds;
      const f32x4 zero = simd::splat(0);
      simd::store(o, simd::muladd(part[r][0], s_lo, b ? simd::load(o) : zero));
      simd::store(o + 4, simd::muladd(part[r][1], s_hi, b ? simd::load(o + 4) : zero));
    }
  }
}

// q (rows,d_k), keys [j0, j0 + cols) -> s (rows,cols) = q·kᵀ
void i8_scores(const PackedKV& kv, const float* q, size_t ldq, size_t rows, size_t j0, size_t cols,
               float* s, size_t lds) {
  const I8Head h = parts(kv.kt, kv.v, kv.v_stride, kv.d_k, kv.d_v);
  float tail[kMR * kNR];
  for (size_t p0 = j0; p0 < j0 + cols; p0 += kNR) {
    const size_t n = std::min(kNR, j0 + cols - p0);
    for (size_t r0 = 0; r0 < rows; r0 += kMR) {
      const size_t m = std::min(kMR, rows - r0);
      // a whole panel straight into s, a last partial one through tail
      float* out = n == kNR ? s + r0 * lds + (p0 - j0) : tail;
      const size_t ld = n == kNR ? lds : kNR;
      const float* qr = q + r0 * ldq;
      switch (m) {
        case 1:
          score_tile<1>(h, p0 / kNR, kv.d_k, qr, ldq, out, ld);
          break;
        case 2:
          score_tile<2>(h, p0 / kNR, kv.d_k, qr, ldq, out, ld);
          break;
        case 3:
          score_tile<3>(h, p0 / kNR, kv.d_k, qr, ldq, out, ld);
          break;
        default:
          score_tile<kMR>(h, p0 / kNR, kv.d_k, qr, ldq, out, ld);
          break;
      }
      if (n < kNR)
        for (size_t r = 0; r < m; ++r)
          std::copy(tail + r * kNR, tail + r * kNR + n, s + (r0 + r) * lds + (p0 - j0));
    }
  }
}

// Keys per step of weighted_values: the weights times their keys' scales, (kMR, kChunk), 4 KiB;
// a key block (tuning.h), so that a step of attention is one chunk.
constexpr size_t kChunk = kKeyBlock;

// R weight rows w (R, n) (scales applied), row stride kChunk, keys [j, j + n) of the v panel at
// vp -> a (R, kNR) += w·v
template <size_t R>
void value_tile(const int8_t* vp, size_t j, size_t n, const float* w, f32x4 (&a)[kMR][2]) {
  for (size_t i = 0; i < n; ++i) {
    f32x4 lo, hi;
    simd::load_i8x8(vp + (j + i) * kNR, lo, hi);
    for (size_t r = 0; r < R; ++r) {
      const f32x4 x = simd::load_splat(w + r * kChunk + i);
      a[r][0] = simd::muladd(x, lo, a[r][0]);
      a[r][1] = simd::muladd(x, hi, a[r][1]);
    }
  }
}

// p (rows,cols), v rows [j0, j0 + cols) -> acc (rows,d_v) [+]= p·v
void i8_weighted_values(const PackedKV& kv, const float* p, size_t ldp, size_t rows, size_t j0,
                        size_t cols, float* acc, size_t ld_acc, bool accumulate) {
  const I8Head h = parts(kv.kt, kv.v, kv.v_stride, kv.d_k, kv.d_v);
  const size_t d_v = kv.d_v, stride = kv.v_stride;
  alignas(16) float w[kMR * kChunk];
  for (size_t r0 = 0; r0 < rows; r0 += kMR) {
    const size_t m = std::min(kMR, rows - r0);
    for (size_t b = 0; b * kB < d_v; ++b) {
      const uint16_t* scale = h.v_scale + b * stride;
      for (size_t jc = j0; jc < j0 + cols; jc += kChunk) {
        const size_t n = std::min(kChunk, j0 + cols - jc);
        // w = p · the keys' scales of block b, four keys at a time
        size_t i = 0;
        for (; i + 4 <= n; i += 4) {
          const f32x4 sc = simd::load_half4(scale + jc + i);
          for (size_t r = 0; r < m; ++r)
            simd::store(w + r * kChunk + i,
                        simd::mul(simd::load(p + (r0 + r) * ldp + (jc - j0) + i), sc));
        }
        for (; i < n; ++i)
          for (size_t r = 0; r < m; ++r)
            w[r * kChunk + i] =
                p[(r0 + r) * ldp + (jc - j0) + i] * simd::half_to_float(scale[jc + i]);
        for (size_t c0 = b * kB; c0 < std::min(d_v, (b + 1) * kB); c0 += kNR) {
          const size_t nc = std::min(kNR, d_v - c0);
          float* out = acc + r0 * ld_acc + c0;
          f32x4 a[kMR][2];
          float tail[kMR][kNR];
          const bool fresh = !accumulate && jc == j0;
          for (size_t r = 0; r < m; ++r) {
            if (fresh) {
              a[r][0] = a[r][1] = simd::splat(0);
            } else if (nc == kNR) {
              a[r][0] = simd::load(out + r * ld_acc), a[r][1] = simd::load(out + r * ld_acc + 4);
            } else {
              std::fill(tail[r], tail[r] + kNR, 0.0f);
              std::copy(out + r * ld_acc, out + r * ld_acc + nc, tail[r]);
              a[r][0] = simd::load(tail[r]), a[r][1] = simd::load(tail[r] + 4);
            }
          }
          const int8_t* vp = h.v + c0 / kNR * kNR * stride;
          switch (m) {
            case 1:
              value_tile<1>(vp, jc, n, w, a);
              break;
            case 2:
              value_tile<2>(vp, jc, n, w, a);
              break;
            case 3:
              value_tile<3>(vp, jc, n, w, a);
              break;
            default:
              value_tile<kMR>(vp, jc, n, w, a);
              break;
          }
          for (size_t r = 0; r < m; ++r) {
            if (nc == kNR) {
              simd::store(out + r * ld_acc, a[r][0]), simd::store(out + r * ld_acc + 4, a[r][1]);
            } else {
              simd::store(tail[r], a[r][0]), simd::store(tail[r] + 4, a[r][1]);
              std::copy(tail[r], tail[r] + nc, out + r * ld_acc);
            }
          }
        }
      }
    }
  }
}

}  // namespace

extern const KvKernels kKvI8Kernels;
const KvKernels kKvI8Kernels{"i8",          kMaxAbs,      i8_head_floats, i8_v_offset,
                             i8_write_rows, i8_read_rows, i8_scores,      i8_weighted_values};

}  // namespace wa
