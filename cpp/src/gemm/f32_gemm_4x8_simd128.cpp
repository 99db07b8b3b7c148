// f32 GEMM micro-kernel, 4x8 tile, one load32_splat of a per row and step; 128-bit vectors (wasm
// SIMD128 / SSE via simd.h), multiply then add.
// 8 accumulators + 2 b vectors + 1 broadcast a = 11 live vectors.
#include "gemm/f32_gemm_tile.h"

namespace wa::kernels {

void f32_gemm_4x8_simd128(size_t m, size_t n, size_t kc, const float* a, const float* b,
                          size_t b_stride, float* c, size_t ldc, bool accumulate) {
  f32_gemm_tile<4, Style::loadsplat, 1, MulAdd>(m, n, kc, a, b, b_stride, c, ldc, accumulate);
}

}  // namespace wa::kernels
