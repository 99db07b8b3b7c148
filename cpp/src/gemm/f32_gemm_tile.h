// The body every f32 GEMM micro-kernel instantiates (the f32_gemm_<tile>[_<style>]_<isa>.cpp
// files, one kernel each), on the packed layout of gemm_kernels.h:
//   c (m,nr) [+]= a (m,kc) · b (kc,nr), a packed in (kc,MR) panels, b one (kc,kNR) panel,
//   c row stride ldc
//
// Template parameters: the tile's rows MR (its columns are always kNR = 8, two vectors); how a
// step's a values become vectors (Style); how many k steps one loop iteration runs (KU); and the
// multiply-add (Ops: SIMD128's mul then add, or relaxed SIMD's fused one).
//   Style::loadsplat  one v128.load32_splat per row and step (XNNPACK's "loadsplat")
//   Style::splat      one v128.load of the step's MR = 4 a values, then a lane shuffle per row
//                     (XNNPACK's "splat", on a packed a)
//   Style::bcast      one v128.load per row and step of an a panel packed already broadcast
//                     (each value 4 times: GemmKernel::a_copies), no broadcast in the loop
// Whatever the tile, style and unroll, c(i,j) is the same sum in the same order: its
// accumulator starts at c (accumulate) or 0 and adds a(i,p)·b(p,j) for p = 0, 1, ..., kc-1,
// one rounding per multiply and per add (SIMD128) or one per fused step (relaxed). So every
// kernel of one ISA gives bitwise the same c, and gemm.cpp may run whichever is fastest.
#pragma once

#include <cassert>
#include <cstddef>
#include <cstring>

#include "gemm/gemm_kernels.h"
#include "simd.h"

#if defined(__wasm_relaxed_simd__)
#include <wasm_simd128.h>
#endif

namespace wa::kernels {

enum class Style { loadsplat, splat, bcast };

// Floats per a value in a packed panel of the style.
template <Style S>
inline constexpr size_t kACopies = S == Style::bcast ? 4 : 1;

// SIMD128 (SSE natively): acc + a·b rounded twice, as everywhere else in the library.
struct MulAdd {
  static simd::f32x4 madd(simd::f32x4 a, simd::f32x4 b, simd::f32x4 acc) {
    return simd::muladd(a, b, acc);
  }
};

#if defined(__wasm_relaxed_simd__)
// Relaxed SIMD: f32x4.relaxed_madd, which engines lower to a fused multiply-add where the CPU
// has one (x86 FMA3, ARM) and to mul+add elsewhere.
struct RelaxedMadd {
  static v128_t madd(v128_t a, v128_t b, v128_t acc) { return wasm_f32x4_relaxed_madd(a, b, acc); }
};
#endif

// One tile: c (mr,nr) [+]= a panel (kc,MR) · b panel (kc,kNR), mr <= MR.
template <size_t MR, Style S, size_t KU, class Ops>
__attribute__((always_inline)) inline void f32_gemm_one_tile(size_t mr, size_t nr, size_t kc,
                                                             const float* a, const float* b,
                                                             float* c, size_t ldc,
                                                             bool accumulate) {
  using simd::f32x4;
  static_assert(S != Style::splat || MR == 4, "splat reads a step's a values as one vector");
  assert(mr >= 1 && mr <= MR && nr >= 1 && nr <= kNR);
  const bool full = mr == MR && nr == kNR;

  // A tail tile goes through this MR x 8 scratch so the loads and stores stay whole vectors.
  float tile[MR * kNR];
  float* ct = c;
  size_t ldt = ldc;
  if (!full) {
    ct = tile;
    ldt = kNR;
    if (accumulate) {
      std::memset(tile, 0, sizeof tile);
      for (size_t i = 0; i < mr; ++i) std::memcpy(tile + i * kNR, c + i * ldc, nr * sizeof(float));
    }
  }

  f32x4 acc[MR][2];  // acc[i][h]: row i, columns 4h..4h+3
  for (size_t i = 0; i < MR; ++i) {
    acc[i][0] = accumulate ? simd::load(ct + i * ldt) : simd::splat(0.0f);
    acc[i][1] = accumulate ? simd::load(ct + i * ldt + 4) : simd::splat(0.0f);
  }

  // One k step: b's 8 columns as two vectors, each row's a broadcast, 2·MR multiply-adds.
  auto step = [&](const float* ap, const float* bp) {
    const f32x4 b0 = simd::load(bp), b1 = simd::load(bp + 4);
    if constexpr (S == Style::splat) {
      const f32x4 va = simd::load(ap);
      const f32x4 va0 = simd::broadcast_lane<0>(va);
      acc[0][0] = Ops::madd(va0, b0, acc[0][0]), acc[0][1] = Ops::madd(va0, b1, acc[0][1]);
      const f32x4 va1 = simd::broadcast_lane<1>(va);
      acc[1][0] = Ops::madd(va1, b0, acc[1][0]), acc[1][1] = Ops::madd(va1, b1, acc[1][1]);
      const f32x4 va2 = simd::broadcast_lane<2>(va);
      acc[2][0] = Ops::madd(va2, b0, acc[2][0]), acc[2][1] = Ops::madd(va2, b1, acc[2][1]);
      const f32x4 va3 = simd::broadcast_lane<3>(va);
      acc[3][0] = Ops::madd(va3, b0, acc[3][0]), acc[3][1] = Ops::madd(va3, b1, acc[3][1]);
    } else if constexpr (S == Style::bcast) {
      for (size_t i = 0; i < MR; ++i) {
        const f32x4 vai = simd::load(ap + i * 4);
        acc[i][0] = Ops::madd(vai, b0, acc[i][0]);
        acc[i][1] = Ops::madd(vai, b1, acc[i][1]);
      }
    } else {
      for (size_t i = 0; i < MR; ++i) {
        const f32x4 vai = simd::load_splat(ap + i);
        acc[i][0] = Ops::madd(vai, b0, acc[i][0]);
        acc[i][1] = Ops::madd(vai, b1, acc[i][1]);
      }
    }
  };
  // The k loop steps the two panel pointers and stops at a's precomputed end: no counter, each
  // step's loads at constant offsets from the pointers (the wasm loop kernel_shape.mjs writes).
  // Emscripten passes clang -mllvm -disable-lsr, so the wasm keeps the loop in the form written
  // here (scripts/LAB.md, "Decode at one thread: the compute limit").
  constexpr size_t A = MR * kACopies<S>;  // floats of a per step
  const float* __restrict ap = a;
  const float* __restrict bp = b;
  const float* const a_body = a + kc / KU * KU * A;
  if (ap != a_body) {
    do {
      for (size_t u = 0; u < KU; ++u) step(ap + u * A, bp + u * kNR);
      ap += KU * A, bp += KU * kNR;
    } while (ap != a_body);
  }
  for (const float* const a_end = a + kc * A; ap != a_end; ap += A, bp += kNR) step(ap, bp);

  for (size_t i = 0; i < MR; ++i) {
    simd::store(ct + i * ldt, acc[i][0]);
    simd::store(ct + i * ldt + 4, acc[i][1]);
  }
  if (!full) {
    for (size_t i = 0; i < mr; ++i) std::memcpy(c + i * ldc, tile + i * kNR, nr * sizeof(float));
  }
}

// The kernel (gemm_kernels.h): b's panels outer, tiles down the rows inner. The loops are here,
// not in gemm.cpp, so that a kernel call does a whole block's work: one call per task and k
// slice, not one per tile, whose calls are a visible share of the GEMM's time in V8.
template <size_t MR, Style S, size_t KU, class Ops>
void f32_gemm_tile(size_t m, size_t n, size_t kc, const float* a, const float* b, size_t b_stride,
                   float* c, size_t ldc, bool accumulate) {
  for (size_t j = 0; j < n; j += kNR, b += b_stride, c += kNR) {
    const size_t nr = n - j < kNR ? n - j : kNR;
    const float* ai = a;
    float* ci = c;
    for (size_t i = 0; i < m; i += MR, ai += MR * kACopies<S> * kc, ci += MR * ldc)
      f32_gemm_one_tile<MR, S, KU, Ops>(m - i < MR ? m - i : MR, nr, kc, ai, b, ci, ldc,
                                        accumulate);
  }
}

}  // namespace wa::kernels
