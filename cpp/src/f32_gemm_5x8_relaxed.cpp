// f32 GEMM micro-kernel, 5x8 tile, loadsplat; wasm relaxed SIMD's fused multiply-add (compiled by
// clang-19 for the relaxed variants only, see CMakeLists.txt).
// 10 accumulators + 2 b vectors + 1 broadcast a = 13 live vectors.
#include "f32_gemm_tile.h"

#if !defined(__wasm_relaxed_simd__)
#error "f32_gemm_5x8_relaxed.cpp needs -mrelaxed-simd"
#endif

namespace wa::kernels {

void f32_gemm_5x8_relaxed(size_t mr, size_t nr, size_t kc, const float* a, const float* b, float* c,
                          size_t ldc, bool accumulate) {
  f32_gemm_tile<5, Style::loadsplat, 1, RelaxedMadd>(mr, nr, kc, a, b, c, ldc, accumulate);
}

}  // namespace wa::kernels
