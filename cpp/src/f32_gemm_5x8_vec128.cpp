// f32 GEMM micro-kernel, 5x8 tile, loadsplat; 128-bit vectors (wasm SIMD128 / SSE via simd.h),
// multiply then add.
// 10 accumulators + 2 b vectors + 1 broadcast a = 13 live vectors.
#include "f32_gemm_tile.h"

namespace wa::kernels {

void f32_gemm_5x8_vec128(size_t mr, size_t nr, size_t kc, const float* a, const float* b, float* c,
                         size_t ldc, bool accumulate) {
  f32_gemm_tile<5, Style::loadsplat, 1, MulAdd>(mr, nr, kc, a, b, c, ldc, accumulate);
}

}  // namespace wa::kernels
