// f32 GEMM micro-kernel, 4x8 tile, loadsplat, two k steps per loop iteration; wasm relaxed SIMD's
// fused multiply-add (compiled by clang-19 for the relaxed_simd builds only, see CMakeLists.txt).
// 8 accumulators + 2 b vectors + 1 broadcast a = 11 live vectors.
#include "gemm/f32_gemm_tile.h"

#if !defined(__wasm_relaxed_simd__)
#error "f32_gemm_4x8_k2_relaxed_simd.cpp needs -mrelaxed-simd"
#endif

namespace wa::kernels {

void f32_gemm_4x8_k2_relaxed_simd(size_t m, size_t n, size_t kc, const float* a, const float* b,
                                  size_t b_stride, float* c, size_t ldc, bool accumulate) {
  f32_gemm_tile<4, Style::loadsplat, 2, RelaxedMadd>(m, n, kc, a, b, b_stride, c, ldc, accumulate);
}

}  // namespace wa::kernels
