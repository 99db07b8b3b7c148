// f32 GEMM micro-kernel, 4x8 tile, on an a panel packed already broadcast (each value in four
// lanes: a v128.load per row and step, no broadcast in the loop); 128-bit vectors (wasm SIMD128
// / SSE via simd.h), multiply then add. For JavaScriptCore, which turns three of a load-splat
// tile's four broadcasts into a scalar load and a splat on the vector pipes.
// 8 accumulators + 2 b vectors + 1 a vector = 11 live vectors.
#include "gemm/f32_gemm_tile.h"

namespace wa::kernels {

void f32_gemm_4x8_bcast_simd128(size_t m, size_t n, size_t kc, const float* a, const float* b,
                                size_t b_stride, float* c, size_t ldc, bool accumulate) {
  f32_gemm_tile<4, Style::bcast, 1, MulAdd>(m, n, kc, a, b, b_stride, c, ldc, accumulate);
}

}  // namespace wa::kernels
