// float16 kv panels (packed_kv.h): float32's panels, element for element, as IEEE binary16
// (2 bytes), rounded to nearest even; no scales. One head, room for `stride` keys:
//   kᵀ  fp16 (d_k, stride) panels at packed_kt_at, from the head's start
//   v   fp16 (stride, d_v) blocks of panels at packed_v_at, from v_offset floats
// half the bytes of float32. The kernels read the fp16 panels and widen them in registers
// (simd::load_half8_small: 8 halves -> 2 × f32x4 by integer shifts and shuffles, no multiply;
// the rows they meet carry the exponent's rebias, below), then run float32's multiply-adds;
// nothing is widened in memory. A key or value beyond ±65504 (the largest half) is refused by
// the cache before it is written.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kv/packed_kv.h"
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

// One value each way, for appends and reads (a call per value: loops of these stay small
// rather than vectorized, and they are not where decoding spends its time).
__attribute__((noinline)) uint16_t to_half(float x) { return simd::float_to_half(x); }
__attribute__((noinline)) float from_half(uint16_t h) { return simd::half_to_float(h); }

void f16_write_rows(float* head, size_t stride, size_t d_k, size_t d_v, size_t j0, size_t n,
                    const float* k, size_t ldk, const float* v, size_t ldv) {
  uint16_t* kt = halves(head);
  uint16_t* vp = halves(head + f16_v_offset(stride, d_k));
  for (size_t i = 0; i < n; ++i) {
    const size_t j = j0 + i;
    for (size_t t = 0; t < d_k; ++t) kt[packed_kt_at(j, t, d_k)] = to_half(k[i * ldk + t]);
    for (size_t c = 0; c < d_v; ++c) vp[packed_v_at(j, c, stride, d_v)] = to_half(v[i * ldv + c]);
  }
}

void f16_read_rows(const float* head, size_t stride, size_t d_k, size_t d_v, size_t n, float* k,
                   size_t ldk, float* v, size_t ldv) {
  const uint16_t* kt = halves(head);
  const uint16_t* vp = halves(head + f16_v_offset(stride, d_k));
  for (size_t j = 0; j < n; ++j) {
    if (k)
      for (size_t t = 0; t < d_k; ++t) k[j * ldk + t] = from_half(kt[packed_kt_at(j, t, d_k)]);
    if (v)
      for (size_t c = 0; c < d_v; ++c)
        v[j * ldv + c] = from_half(vp[packed_v_at(j, c, stride, d_v)]);
  }
}

// The products run on the rows packed step by step and times 2^112, against the halves widened
// to 2^-112 of their value (simd::load_half8_small, no multiply per element): each product is
// the real x·h, rounded as x·h is. Packed per chunk of kChunk steps, kMR × kChunk floats (4 KiB)
// on the stack: a decode step's keys and a d_k up to 256 are one chunk.
constexpr float kRebias = 0x1p112f;
constexpr size_t kChunk = kKeyBlock;

// x (m,n) row stride ldx, m <= kMR, n <= kChunk -> xs (n, kMR): step i's rows at xs + i·kMR, times
// 2^112. False (xs unfinished) where some |x| >= 2^16 would overflow there, or is NaN.
bool pack_rows(const float* x, size_t ldx, size_t m, size_t n, float* xs) {
  for (size_t i = 0; i < n; ++i)
    for (size_t r = 0; r < m; ++r) {
      const float v = x[r * ldx + i];
      if (!(std::fabs(v) < 0x1p16f)) return false;
      xs[i * kMR + r] = v * kRebias;
    }
  return true;
}

// a (R, kNR) += x (R,n) · panel (n, kNR), x packed by pack_rows: the one product of both kernels,
// a kᵀ panel's d_k steps against query rows, a v panel's keys against weight rows. (Not inlined,
// nor the tiles' loads and stores below: one copy of each serves both kernels, and a call per
// panel is nothing beside its n steps.)
template <size_t R>
__attribute__((noinline)) void panel_product(const uint16_t* panel, size_t n, const float* xs,
                                             f32x4 (&a)[kMR][2]) {
  f32x4 acc[R][2];  // in registers through the loop
  for (size_t r = 0; r < R; ++r) acc[r][0] = a[r][0], acc[r][1] = a[r][1];
  for (size_t i = 0; i < n; ++i) {
    f32x4 lo, hi;
    simd::load_half8_small(panel + i * kNR, lo, hi);
    for (size_t r = 0; r < R; ++r) {
      const f32x4 w = simd::load_splat(xs + i * kMR + r);
      acc[r][0] = simd::muladd(w, lo, acc[r][0]);
      acc[r][1] = simd::muladd(w, hi, acc[r][1]);
    }
  }
  for (size_t r = 0; r < R; ++r) a[r][0] = acc[r][0], a[r][1] = acc[r][1];
}

// a (m, kNR) += x (m,n) row stride ldx · panel (n, kNR), one lane at a time in the same order:
// for rows pack_rows refuses (a |x| of 2^16 and more).
__attribute__((noinline)) void panel_product_scalar(const uint16_t* panel, size_t n, const float* x,
                                                    size_t ldx, size_t m, f32x4 (&a)[kMR][2]) {
  for (size_t r = 0; r < m; ++r) {
    float row[kNR];
    simd::store(row, a[r][0]), simd::store(row + 4, a[r][1]);
    for (size_t i = 0; i < n; ++i)
      for (size_t c = 0; c < kNR; ++c)
        row[c] += x[r * ldx + i] * simd::half_to_float(panel[i * kNR + c]);
    a[r][0] = simd::load(row), a[r][1] = simd::load(row + 4);
  }
}

// a (m, kNR) += x (m,n) · panel (n, kNR), x at xs as pack_rows left it (packed: it finished) and
// at x row stride ldx
void product(const uint16_t* panel, size_t n, bool packed, const float* xs, const float* x,
             size_t ldx, size_t m, f32x4 (&a)[kMR][2]) {
  if (packed)
    for_rows(m, [&](auto R) { panel_product<decltype(R)::value>(panel, n, xs, a); });
  else
    panel_product_scalar(panel, n, x, ldx, m, a);
}

// a (m, kNR) <- 0, or <- out (m,nc) row stride ld, zero past column nc
__attribute__((noinline)) void load_tile(f32x4 (&a)[kMR][2], size_t m, size_t nc, const float* out,
                                         size_t ld, bool accumulate) {
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
__attribute__((noinline)) void store_tile(const f32x4 (&a)[kMR][2], size_t m, size_t nc, float* out,
                                          size_t ld) {
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
  alignas(16) float xs[kMR * kChunk];
  for (size_t r0 = 0; r0 < rows; r0 += kMR) {
    const size_t m = std::min(kMR, rows - r0);
    // d_k a chunk at a time, the later chunks adding to the scores so far
    for (size_t t0 = 0; t0 < kv.d_k; t0 += kChunk) {
      const size_t nt = std::min(kChunk, kv.d_k - t0);
      const float* x = q + r0 * ldq + t0;
      const bool packed = pack_rows(x, ldq, m, nt, xs);
      for (size_t p0 = j0; p0 < j0 + cols; p0 += kNR) {
        const size_t n = std::min(kNR, j0 + cols - p0);
        // keys [p0, p0 + kNR), steps from t0
        const uint16_t* kp = halves(kv.kt) + (p0 - kv.k0) * kv.d_k + t0 * kNR;
        float* out = s + r0 * lds + (p0 - j0);
        f32x4 a[kMR][2];
        load_tile(a, m, n, out, lds, t0 > 0);
        product(kp, nt, packed, xs, x, ldq, m, a);
        store_tile(a, m, n, out, lds);
      }
    }
  }
}

// p (rows,cols), v rows [j0, j0 + cols) -> acc (rows,d_v) [+]= p·v
void f16_weighted_values(const PackedKV& kv, const float* p, size_t ldp, size_t rows, size_t j0,
                         size_t cols, float* acc, size_t ld_acc, bool accumulate) {
  alignas(16) float xs[kMR * kChunk];
  for (size_t r0 = 0; r0 < rows; r0 += kMR) {
    const size_t m = std::min(kMR, rows - r0);
    // the keys a chunk at a time, the later chunks adding to the outputs so far
    for (size_t jc = j0; jc < j0 + cols; jc += kChunk) {
      const size_t n = std::min(kChunk, j0 + cols - jc);
      const float* x = p + r0 * ldp + (jc - j0);
      const bool packed = pack_rows(x, ldp, m, n, xs);
      for (size_t c0 = 0; c0 < kv.d_v; c0 += kNR) {
        const size_t nc = std::min(kNR, kv.d_v - c0);
        float* out = acc + r0 * ld_acc + c0;
        f32x4 a[kMR][2];
        load_tile(a, m, nc, out, ld_acc, accumulate || jc > j0);
        // columns [c0, c0 + kNR), the chunk's keys a v block (packed_kv.h) at a time
        for (size_t i = 0; i < n;) {
          const size_t j = jc + i - kv.k0, in = j % kKeyBlock;
          const PackedVBlock b = packed_v_block(j, kv.v_stride, kv.d_v);
          const size_t piece = std::min(n - i, b.keys - in);
          const uint16_t* vp = halves(kv.v) + b.at + c0 * b.keys + in * kNR;
          product(vp, piece, packed, xs + i * kMR, x + i, ldp, m, a);
          i += piece;
        }
        store_tile(a, m, nc, out, ld_acc);
      }
    }
  }
}

}  // namespace

extern const KvKernels kKvF16Kernels;
const KvKernels kKvF16Kernels{"float16",      65504.0f,      f16_head_floats, f16_v_offset,
                              f16_write_rows, f16_read_rows, f16_scores,      f16_weighted_values};

}  // namespace wa
