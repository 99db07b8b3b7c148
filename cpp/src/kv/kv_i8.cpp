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
// (pad elements, t = d_k or j = stride, are zero). The kernels keep their float operands (q;
// the weights times the values' scales) in float and make the int8 floats in registers, 8 at a
// time (a pair panel's step pair: 4 lanes × 2 steps), nothing widened in memory: every product
// is the float product of the operand and the cached element, so an output errs as float32's
// does over what the cache holds (read()), per column, whatever one key's, one channel's or one
// query element's magnitude (the int8 rounding, 2^-8 of a block's max|x|, is the cache's own
// error, which read() shows). Scores: per block of d_k, the sums of each key's 4-lane half
// panel times its scale. Weights times v: w = p·s per key and block of columns. Each operand
// block is first taken times a power of two (block_unit) so that no product passes the largest
// float where its result would not.
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
constexpr size_t kB = kKvQuantBlock;

// Every finite float: a block past 127 times the largest scale, kScaleMax, clips to it by
// less than half its step.
constexpr float kMaxAbs = std::numeric_limits<float>::max();
// The largest bfloat16 scale whose 127 steps are finite, 2^121·(1 + 2^-7).
constexpr float kScaleMax = 0x1.02p121f;

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

// x (n) -> max|x|, or NaN if an x is NaN or infinite. (Once per block of a row, not per
// element: gnu::noinline keeps one copy.)
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

// An operand block's unit, from its max|x|: the power of two 2^e just above it (e held to
// [-kUnitExp, kUnitExp]); the block is taken times 1 / unit, |x / unit| < 1, and its sums times
// unit, both exact, so that a huge block's products do not pass the largest float nor a tiny
// one's fall to subnormals. 1 for a block of zeros; NaN for one with a NaN or an infinity (its
// results NaN).
constexpr int kUnitExp = 100;
float block_unit(float amax) {
  if (amax != amax || !(amax > 0)) return amax != amax ? amax : 1.0f;
  int e;
  std::frexp(amax, &e);  // amax = f·2^e, f in [0.5, 1)
  return std::ldexp(1.0f, std::clamp(e, -kUnitExp, kUnitExp));
}

// a (R, 4 lanes) += 2^24 · x (R, 2·pairs) row stride ldx · half a pair panel: step pair i
// (steps 2i, 2i+1) at p + i·2·kNR, 8 bytes, lanes 0..3 each with its two steps side by side.
// The int8 become floats 2^24 times their value in registers (simd::load_i8x8_top), exactly;
// each product is the float x·v·2^24, so the sums err as float32's do, whatever the steps'
// magnitudes. Lane l's two sums stay apart in a[r][l / 2] (lanes 2·(l % 2), 2·(l % 2) + 1)
// until add_pairs joins them.
template <size_t R>
[[gnu::noinline]] void pair_product(const int8_t* p, size_t pairs, const float* x, size_t ldx,
                                    f32x4 (&a)[kMR][2]) {
  f32x4 acc[R][2];  // in registers through the loop
  for (size_t r = 0; r < R; ++r) acc[r][0] = a[r][0], acc[r][1] = a[r][1];
  for (size_t i = 0; i < pairs; ++i) {
    f32x4 lo, hi;  // lanes 0, 1 and 2, 3, each lane's steps 2i, 2i+1
    simd::load_i8x8_top(p + i * 2 * kNR, lo, hi);
    for (size_t r = 0; r < R; ++r) {
      const f32x4 xr = simd::load_pair_splat(x + r * ldx + 2 * i);
      acc[r][0] = simd::muladd(xr, lo, acc[r][0]);
      acc[r][1] = simd::muladd(xr, hi, acc[r][1]);
    }
  }
  for (size_t r = 0; r < R; ++r) a[r][0] = acc[r][0], a[r][1] = acc[r][1];
}

// pair_product for m rows (1 <= m <= kMR), a zeroed first
void pair_rows(size_t m, const int8_t* p, size_t pairs, const float* x, size_t ldx,
               f32x4 (&a)[kMR][2]) {
  switch (m) {
    case 1:
      return pair_product<1>(p, pairs, x, ldx, a);
    case 2:
      return pair_product<2>(p, pairs, x, ldx, a);
    case 3:
      return pair_product<3>(p, pairs, x, ldx, a);
    default:
      return pair_product<kMR>(p, pairs, x, ldx, a);
  }
}

// out (m, 4) row stride ld [+]= the first nc (<= 4) lanes of add_pairs(a[r]) times g (a power
// of two: 2^-24 takes pair_product's sums back to x·v) times f[r]
void store_lanes(const f32x4 (&a)[kMR][2], size_t m, f32x4 g, const f32x4* f, size_t nc, float* out,
                 size_t ld, bool fresh) {
  for (size_t r = 0; r < m; ++r) {
    float* o = out + r * ld;
    const f32x4 sum = simd::mul(simd::add_pairs(a[r][0], a[r][1]), g);
    if (nc == 4) {
      simd::store(o, simd::muladd(sum, f[r], fresh ? simd::splat(0) : simd::load(o)));
      continue;
    }
    float row[4] = {};
    if (!fresh) std::copy(o, o + nc, row);
    simd::store(row, simd::muladd(sum, f[r], simd::load(row)));
    std::copy(row, row + nc, o);
  }
}

// m query rows (m <= kMR) xq (m, d2) row stride ldx, taken times their blocks' 1 / unit, with
// units qu (m, nb), against one kᵀ panel of kNR keys -> s (m, kNR) at out, row stride lds.
// Per block and half panel (4 keys), the float sums, times the keys' scales and the row's
// unit (at most the largest float: a zero sum stays 0), added up over the blocks.
void score_tile(const I8Head& h, size_t panel, size_t d_k, const float* xq, size_t ldx,
                const float* qu, size_t m, float* out, size_t lds) {
  const size_t nb = blocks(d_k), d2 = even(d_k);
  const int8_t* kp = h.kt + panel * kNR * d2;
  const uint16_t* sp = h.k_scale + panel * kNR * nb;
  const f32x4 most = simd::splat(std::numeric_limits<float>::max());
  for (size_t b = 0; b < nb; ++b) {
    const size_t t0 = b * kB, pairs = (std::min(d2, t0 + kB) - t0) / 2;
    for (size_t half = 0; half < 2; ++half) {  // keys 0..3, then 4..7
      f32x4 a[kMR][2], f[kMR];
      for (size_t r = 0; r < m; ++r) a[r][0] = a[r][1] = simd::splat(0);
      pair_rows(m, kp + t0 * kNR + half * kNR, pairs, xq + t0, ldx, a);
      const f32x4 scale = simd::load_bf16x4(sp + b * kNR + half * 4);
      for (size_t r = 0; r < m; ++r)
        f[r] = simd::min(simd::mul(scale, simd::splat(qu[r * nb + b])), most);
      store_lanes(a, m, simd::splat(0x1p-24f), f, 4, out + half * 4, lds, b == 0);
    }
  }
}

// q (rows,d_k), keys [j0, j0 + cols) -> s (rows,cols) = q·kᵀ, q kept in float
void i8_scores(const PackedKV& kv, const float* q, size_t ldq, size_t rows, size_t j0, size_t cols,
               float* s, size_t lds) {
  const I8Head h = parts(kv.kt, kv.v, kv.v_stride, kv.d_k, kv.d_v);
  const size_t d_k = kv.d_k, nb = blocks(d_k), d2 = even(d_k);
  // xq (rows, d2): q times its blocks' 1 / unit, a zero after an odd d_k; units qu (rows, nb)
  float* xq = thread_scratch(ScratchSlot::kv_operand, checked_product({rows, d2 + nb}));
  float* qu = xq + rows * d2;
  for (size_t r = 0; r < rows; ++r) {
    for (size_t b = 0; b < nb; ++b) {
      const float* x = q + r * ldq + b * kB;
      const size_t n = std::min(kB, d_k - b * kB);
      const float unit = block_unit(max_abs(x, n)), down = 1 / unit;
      qu[r * nb + b] = unit;
      for (size_t t = 0; t < n; ++t) xq[r * d2 + b * kB + t] = x[t] * down;
    }
    if (d_k % 2) xq[r * d2 + d_k] = 0;
  }
  float tail[kMR * kNR];
  for (size_t p0 = j0; p0 < j0 + cols; p0 += kNR) {
    const size_t n = std::min(kNR, j0 + cols - p0);
    for (size_t r0 = 0; r0 < rows; r0 += kMR) {
      const size_t m = std::min(kMR, rows - r0);
      // a whole panel straight into s, a last partial one through tail
      float* out = n == kNR ? s + r0 * lds + (p0 - j0) : tail;
      const size_t ld = n == kNR ? lds : kNR;
      score_tile(h, (p0 - kv.k0) / kNR, d_k, xq + r0 * d2, d2, qu + r0 * nb, m, out, ld);
      if (n < kNR)
        for (size_t r = 0; r < m; ++r)
          std::copy(tail + r * kNR, tail + r * kNR + n, s + (r0 + r) * lds + (p0 - j0));
    }
  }
}

// Keys per step of weighted_values: a key block (tuning.h), so that a step of attention is one
// step here.
constexpr size_t kChunk = kKeyBlock;

// p (rows,cols), v rows [j0, j0 + cols) -> acc (rows,d_v) [+]= p·v. Per step of kChunk keys and
// row, p taken times 1 / unit (its unit from the step's max|p|); per block b of columns, w = p·s
// (s: the keys' scales of block b, times 1 / their unit) in float, against the int8 values made
// floats in registers: each key's product is its own, so a key with a large scale or weight leaves
// every other key's share, in every column, as float32 has it.
void i8_weighted_values(const PackedKV& kv, const float* p, size_t ldp, size_t rows, size_t j0,
                        size_t cols, float* acc, size_t ld_acc, bool accumulate) {
  const I8Head h = parts(kv.kt, kv.v, kv.v_stride, kv.d_k, kv.d_v);
  const size_t d_v = kv.d_v, stride = kv.v_stride;
  alignas(16) float sc[kChunk];
  alignas(16) float w[kMR * kChunk];
  float unit[kMR];
  for (size_t r0 = 0; r0 < rows; r0 += kMR) {
    const size_t m = std::min(kMR, rows - r0);
    for (size_t jc = j0; jc < j0 + cols; jc += kChunk) {
      const size_t n = std::min(kChunk, j0 + cols - jc);
      const float* pc = p + r0 * ldp + (jc - j0);
      f32x4 f[kMR];  // the rows' units
      for (size_t r = 0; r < m; ++r) {
        unit[r] = block_unit(max_abs(pc + r * ldp, n));  // NaN: a NaN row
        f[r] = simd::splat(unit[r]);
      }
      const bool fresh = !accumulate && jc == j0;
      for (size_t b = 0; b * kB < d_v; ++b) {
        // sc = the keys' scales of block b; w (m, n, then a zero after an odd n) = p / unit · sc
        const uint16_t* scale = h.v_scale + b * stride + (jc - kv.k0);
        size_t i = 0;
        for (; i + 4 <= n; i += 4) simd::store(sc + i, simd::load_bf16x4(scale + i));
        for (; i < n; ++i) sc[i] = simd::bf16_to_float(scale[i]);
        // sc taken times 1 / u, u = the block's unit of the scales (exact), so that w·v·2^24
        // stays far below the largest float; g takes the sums back
        const float u = block_unit(max_abs(sc, n)), down_sc = 1 / u;
        for (i = 0; i < n; ++i) sc[i] *= down_sc;
        const f32x4 g = simd::splat(0x1p-24f * u);
        for (size_t r = 0; r < m; ++r) {
          const float* pr = pc + r * ldp;
          float* wr = w + r * kChunk;
          const f32x4 down = simd::splat(1 / unit[r]);
          for (i = 0; i + 4 <= n; i += 4)
            simd::store(wr + i, simd::mul(simd::mul(simd::load(pr + i), down), simd::load(sc + i)));
          for (; i < n; ++i) wr[i] = pr[i] * (1 / unit[r]) * sc[i];
          if (n % 2) wr[n] = 0;
        }
        for (size_t c0 = b * kB; c0 < std::min(d_v, (b + 1) * kB); c0 += kNR) {
          const size_t nc = std::min(kNR, d_v - c0);
          for (size_t half = 0; half < 2 && half * 4 < nc; ++half) {  // columns 0..3, 4..7
            f32x4 a[kMR][2];
            for (size_t r = 0; r < m; ++r) a[r][0] = a[r][1] = simd::splat(0);
            // the step's keys a v block at a time (a block's keys are even)
            for (size_t e = 0; e < n;) {
              const size_t j = jc + e - kv.k0, in = j % kKeyBlock;
              const PackedVBlock vb = v_block(j, stride, d_v);
              const size_t piece = std::min(n - e, vb.keys - in);
              const int8_t* vp = h.v + vb.at + c0 / kNR * kNR * vb.keys + in * kNR + half * kNR;
              pair_rows(m, vp, (piece + 1) / 2, w + e, kChunk, a);
              e += piece;
            }
            store_lanes(a, m, g, f, std::min<size_t>(4, nc - half * 4),
                        acc + r0 * ld_acc + c0 + half * 4, ld_acc, fresh);
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
