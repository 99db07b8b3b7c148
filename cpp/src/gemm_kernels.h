// GEMM micro-kernels: one tile of c from packed panels of a and b.
// Packed layouts (see gemm.cpp): a panel holds kc steps of MR rows, step p at a + p*MR;
// a b panel holds kc steps of NR columns, step p at b + p*NR. Rows/columns past the edge of
// the matrix are packed as zeros, so a kernel always runs full tiles and stores only mr x nr.
#pragma once

#include <cstddef>

namespace wa::kernels {

constexpr size_t kGemmMR = 4;  // rows of c per tile
constexpr size_t kGemmNR = 8;  // columns of c per tile: two f32x4

// c (mr,nr) [+]= a (mr,kc) · b (kc,nr), mr <= 4, nr <= 8, from packed a (kc,4), b (kc,8).
void f32_gemm_4x8_vec128(size_t mr, size_t nr, size_t kc, const float* a, const float* b,
                         float* c, size_t ldc, bool accumulate);
// The same with fused multiply-adds (wasm relaxed SIMD); built only into the relaxed variants.
void f32_gemm_4x8_relaxed(size_t mr, size_t nr, size_t kc, const float* a, const float* b,
                          float* c, size_t ldc, bool accumulate);

// The kernel gemm.cpp runs: the relaxed one in the relaxed variants' core (CMake defines
// WA_RELAXED_SIMD there), SIMD128 everywhere else.
#if defined(WA_RELAXED_SIMD)
inline constexpr auto f32_gemm_4x8 = f32_gemm_4x8_relaxed;
#else
inline constexpr auto f32_gemm_4x8 = f32_gemm_4x8_vec128;
#endif

}  // namespace wa::kernels
