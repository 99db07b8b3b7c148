// GEMM micro-kernels, and the packed layout they read: the one place it is defined.
//
// A packed a panel holds kc steps of kMR rows of op(a): step p at a + p·kMR. A packed b panel
// holds kc steps of kNR columns of op(b): step p at b + p·kNR. Rows or columns past the edge of
// the matrix are packed as zeros, so a kernel always runs whole tiles and stores only mr x nr.
// A whole packed op(b) (k,n) is its panels one after another (pack_b in gemm_packed.h).
#pragma once

#include <cstddef>

#include "tuning.h"  // kMR, kNR

namespace wa::kernels {

// c (mr,nr) [+]= a (mr,kc) · b (kc,nr), 1 <= mr <= kMR, 1 <= nr <= kNR, from a packed a panel
// (kc,kMR) and b panel (kc,kNR); c has row stride ldc. accumulate: add to c instead of
// overwriting it. kc = 0 leaves c as it was (accumulate) or zero.
void f32_gemm_4x8_vec128(size_t mr, size_t nr, size_t kc, const float* a, const float* b, float* c,
                         size_t ldc, bool accumulate);
// The same with fused multiply-adds (wasm relaxed SIMD); built only into the relaxed variants.
void f32_gemm_4x8_relaxed(size_t mr, size_t nr, size_t kc, const float* a, const float* b, float* c,
                          size_t ldc, bool accumulate);

// The kernel gemm.cpp runs: the relaxed one in the relaxed variants' core (CMake defines
// WA_RELAXED_SIMD there), SIMD128 everywhere else.
#if defined(WA_RELAXED_SIMD)
inline constexpr auto f32_gemm_4x8 = f32_gemm_4x8_relaxed;
#else
inline constexpr auto f32_gemm_4x8 = f32_gemm_4x8_vec128;
#endif

}  // namespace wa::kernels
