// f32 GEMM micro-kernel, 6x8 tile, loadsplat; wasm relaxed SIMD's fused multiply-add (compiled by
// clang-19 for the relaxed_simd builds only, see CMakeLists.txt).
// 12 accumulators + 2 b vectors + 1 broadcast a = 15 live vectors.
#include "gemm/f32_gemm_tile.h"

#if !defined(__wasm_relaxed_simd__)
#error "f32_gemm_6x8_relaxed_simd.cpp needs -mrelaxed-simd"
#endif

namespace wa::kernels {

void f32_gemm_6x8_relaxed_simd(size_t m, size_t n, size_t kc, const float* a, const float* b,
                               size_t b_stride, float* c, size_t ldc, bool accumulate) {
  f32_gemm_tile<6, Style::loadsplat, 1, RelaxedMadd>(m, n, kc, a, b, b_stride, c, ldc, accumulate);
}

}  // namespace wa::kernels
