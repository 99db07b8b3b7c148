// f32 GEMM micro-kernel, 4x8 tile, one load of the step's 4 a values, a lane shuffle per row;
// 128-bit vectors (wasm SIMD128 / SSE via simd.h), multiply then add.
// 8 accumulators + 2 b vectors + the a vector and a broadcast = 12 live vectors.
#include "gemm/f32_gemm_tile.h"

namespace wa::kernels {

void f32_gemm_4x8_splat_simd128(size_t m, size_t n, size_t kc, const float* a, const float* b,
                                size_t b_stride, float* c, size_t ldc, bool accumulate) {
  f32_gemm_tile<4, Style::splat, 1, MulAdd>(m, n, kc, a, b, b_stride, c, ldc, accumulate);
}

}  // namespace wa::kernels
