// float16 kv panels (packed_kv.h): float32's panels, element for element, as IEEE binary16
// (2 bytes), rounded to nearest even; no scales. One head, room for `stride` keys:
//   kᵀ  fp16 (d_k, stride) panels at packed_kt_at, from the head's start
//   v   fp16 (stride, d_v) panels at packed_v_at, from v_offset floats
// half the bytes of float32. The kernels read the fp16 panels and widen them in registers
// (simd::load_half8: 8 halves -> 2 × f32x4, integer shifts and one multiply each), then run
// float32's multiply-adds; nothing is widened in memory. A key or value beyond ±65504 (the
// largest half) is refused by the cache before it is written.
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "packed_kv.h"
#include "simd.h"

namespace wa {

namespace {

constexpr size_t kMR = kKvQuantRows;  // query rows per tile
using kernels::kNR;
using simd::f32x4;
static_assert(kMR == 4, "for_rows names the row counts 1 to 4");

// f(std::integral_constant<size_t, m>{}) for 1 <= m <= kMR: a tile's rows as a constant, so
// that its accumulators stay in registers.
template <class F>
void for_rows(size_t m, F f) {
  switch (m) {
    case 1:
      return f(std::integral_constant<size_t, 1>{});
    case 2:
      return f(std::integral_constant<size_t, 2>{});
    case 3:
      return f(std::integral_constant<size_t, 3>{});
    default:
      return f(std::integral_constant<size_t, kMR>{});
  }
}

// The kᵀ part is float32's in halves: an even count (d_k · stride rounded up to kNR), so the v
// part starts on a float.
size_t f16_v_offset(size_t stride, size_t d_k) { return packed_kv_v_offset(stride, d_k) / 2; }
size_t f16_head_floats(size_t stride, size_t d_k, size_t d_v) {
  return (packed_kv_floats(stride, d_k, d_v) + 1) / 2;
}

uint16_t* halves(const void* part) { return static_cast<uint16_t*>(const_cast<void*>(part)); }

void f16_write_rows(float* head, size_t stride, size_t d_k, size_t d_v, size_t j0, size_t n,
                    const float* k, size_t ldk, const float* v, size_t ldv) {
  uint16_t* kt = halves(head);
  uint16_t* vp = halves(head + f16_v_offset(stride, d_k));
  for (size_t i = 0; i < n; ++i) {
    const size_t j = j0 + i;
    for (size_t t = 0; t < d_k; ++t)
      kt[packed_kt_at(j, t, d_k)] = simd::float_to_half(k[i * ldk + t]);
    for (size_t c = 0; c < d_v; ++c)
      vp[packed_v_at(j, c, stride)] = simd::float_to_half(v[i * ldv + c]);
  }
}

void f16_read_rows(const float* head, size_t stride, size_t d_k, size_t d_v, size_t n, float* k,
                   size_t ldk, float* v, size_t ldv) {
  const uint16_t* kt = halves(head);
  const uint16_t* vp = halves(head + f16_v_offset(stride, d_k));
  for (size_t j = 0; j < n; ++j) {
    if (k)
      for (size_t t = 0; t < d_k; ++t)
        k[j * ldk + t] = simd::half_to_float(kt[packed_kt_at(j, t, d_k)]);
    if (v)
      for (size_t c = 0; c < d_v; ++c)
        v[j * ldv + c] = simd::half_to_float(vp[packed_v_at(j, c, stride)]);
  }
}

// a (R, kNR) += x (R,n) row stride ldx · panel (n, kNR): the one product of both kernels, a
// kᵀ panel's d_k steps against query rows, a v panel's keys against weight rows.
template <size_t R>
void panel_product(const uint16_t* panel, size_t n, const float* x, size_t ldx,
                   f32x4 (&a)[kMR][2]) {
  for (size_t i = 0; i < n; ++i) {
    f32x4 lo, hi;
    simd::load_half8(panel + i * kNR, lo, hi);
    for (size_t r = 0; r < R; ++r) {
      const f32x4 w = simd::load_splat(x + r * ldx + i);
      a[r][0] = simd::muladd(w, lo, a[r][0]);
      a[r][1] = simd::muladd(w, hi, a[r][1]);
    }
  }
}

// a (m, kNR) <- 0, or <- out (m,nc) row stride ld, zero past column nc
void load_tile(f32x4 (&a)[kMR][2], size_t m, size_t nc, const float* out, size_t ld,
               bool accumulate) {
  for (size_t r = 0; r < m; ++r) {
    if (!accumulate) {
      a[r][0] = a[r][1] = simd::splat(0);
    } else if (nc == kNR) {
      a[r][0] = simd::load(out + r * ld), a[r][1] = simd::load(out + r * ld + 4);
    } else {
      float row[kNR] = {};
      std::copy(out + r * ld, out + r * ld + nc, row);
      a[r][0] = simd::load(row), a[r][1] = simd::load(row + 4);
    }
  }
}

// out (m,nc) row stride ld <- the first nc columns of a (m, kNR)
void store_tile(const f32x4 (&a)[kMR][2], size_t m, size_t nc, float* out, size_t ld) {
  for (size_t r = 0; r < m; ++r) {
    if (nc == kNR) {
      simd::store(out + r * ld, a[r][0]), simd::store(out + r * ld + 4, a[r][1]);
    } else {
      float row[kNR];
      simd::store(row, a[r][0]), simd::store(row + 4, a[r][1]);
      std::copy(row, row + nc, out + r * ld);
    }
  }
}

// q (rows,d_k), keys [j0, j0 + cols) -> s (rows,cols) = q·kᵀ
void f16_scores(const PackedKV& kv, const float* q, size_t ldq, size_t rows, size_t j0, size_t cols,
                float* s, size_t lds) {
  for (size_t p0 = j0; p0 < j0 + cols; p0 += kNR) {
    const size_t n = std::min(kNR, j0 + cols - p0);
    const uint16_t* kp = halves(kv.kt) + (p0 - kv.k0) * kv.d_k;  // keys [p0, p0 + kNR)
    for (size_t r0 = 0; r0 < rows; r0 += kMR) {
      const size_t m = std::min(kMR, rows - r0);
      f32x4 a[kMR][2];
      load_tile(a, m, n, nullptr, 0, false);
      for_rows(
          m, [&](auto R) { panel_product<decltype(R)::value>(kp, kv.d_k, q + r0 * ldq, ldq, a); });
      store_tile(a, m, n, s + r0 * lds + (p0 - j0), lds);
    }
  }
}

// p (rows,cols), v rows [j0, j0 + cols) -> acc (rows,d_v) [+]= p·v
void f16_weighted_values(const PackedKV& kv, const float* p, size_t ldp, size_t rows, size_t j0,
                         size_t cols, float* acc, size_t ld_acc, bool accumulate) {
  for (size_t c0 = 0; c0 < kv.d_v; c0 += kNR) {
    const size_t nc = std::min(kNR, kv.d_v - c0);
    // columns [c0, c0 + kNR), keys from j0
    const uint16_t* vp = halves(kv.v) + c0 * kv.v_stride + (j0 - kv.k0) * kNR;
    for (size_t r0 = 0; r0 < rows; r0 += kMR) {
      const size_t m = std::min(kMR, rows - r0);
      float* out = acc + r0 * ld_acc + c0;
      f32x4 a[kMR][2];
      load_tile(a, m, nc, out, ld_acc, accumulate);
      for_rows(m,
               [&](auto R) { panel_product<decltype(R)::value>(vp, cols, p + r0 * ldp, ldp, a); });
      store_tile(a, m, nc, out, ld_acc);
    }
  }
}

}  // namespace

extern const KvKernels kKvF16Kernels;
const KvKernels kKvF16Kernels{"f16",          65504.0f,      f16_head_floats, f16_v_offset,
                              f16_write_rows, f16_read_rows, f16_scores,      f16_weighted_values};

}  // namespace wa
