// f32 GEMM micro-kernel, 4x8 tile, wasm relaxed SIMD: f32x4.relaxed_madd, which engines lower
// to a fused multiply-add where the CPU has one (x86 FMA3, ARM) and to mul+add elsewhere.
// Same tile, packing and registers as f32_gemm_4x8_vec128.cpp (11 live vectors), so gemm.cpp
// runs either; one instruction per step and accumulator instead of two.
//
// Compiled only by clang-19 for the relaxed module variants (see CMakeLists.txt): the
// Emscripten 3.1.6 compiler predates relaxed SIMD's final opcodes.
#include <cassert>
#include <cstring>

#include <wasm_simd128.h>

#include "gemm_kernels.h"

#if !defined(__wasm_relaxed_simd__)
#error "f32_gemm_4x8_relaxed.cpp needs -mrelaxed-simd"
#endif

namespace wa::kernels {

void f32_gemm_4x8_relaxed(size_t mr, size_t nr, size_t kc, const float* a, const float* b, float* c,
                          size_t ldc, bool accumulate) {
  assert(mr >= 1 && mr <= 4 && nr >= 1 && nr <= 8);
  const bool full = mr == 4 && nr == 8;

  // A tail tile goes through this 4x8 scratch so the loads and stores stay whole vectors.
  float tile[4 * 8];
  float* ct = c;
  size_t ldt = ldc;
  if (!full) {
    ct = tile;
    ldt = 8;
    if (accumulate) {
      std::memset(tile, 0, sizeof tile);
      for (size_t i = 0; i < mr; ++i) std::memcpy(tile + i * 8, c + i * ldc, nr * sizeof(float));
    }
  }

  v128_t vacc0x0123, vacc0x4567, vacc1x0123, vacc1x4567;
  v128_t vacc2x0123, vacc2x4567, vacc3x0123, vacc3x4567;
  if (accumulate) {
    vacc0x0123 = wasm_v128_load(ct + 0 * ldt), vacc0x4567 = wasm_v128_load(ct + 0 * ldt + 4);
    vacc1x0123 = wasm_v128_load(ct + 1 * ldt), vacc1x4567 = wasm_v128_load(ct + 1 * ldt + 4);
    vacc2x0123 = wasm_v128_load(ct + 2 * ldt), vacc2x4567 = wasm_v128_load(ct + 2 * ldt + 4);
    vacc3x0123 = wasm_v128_load(ct + 3 * ldt), vacc3x4567 = wasm_v128_load(ct + 3 * ldt + 4);
  } else {
    vacc0x0123 = vacc0x4567 = vacc1x0123 = vacc1x4567 = wasm_f32x4_const_splat(0.0f);
    vacc2x0123 = vacc2x4567 = vacc3x0123 = vacc3x4567 = wasm_f32x4_const_splat(0.0f);
  }

  // vacc = va·vb + vacc, fused where the CPU can
  for (size_t p = 0; p < kc; ++p) {
    const v128_t vb0123 = wasm_v128_load(b);
    const v128_t vb4567 = wasm_v128_load(b + 4);
    b += 8;
    const v128_t va0 = wasm_v128_load32_splat(a + 0);
    vacc0x0123 = wasm_f32x4_relaxed_madd(va0, vb0123, vacc0x0123);
    vacc0x4567 = wasm_f32x4_relaxed_madd(va0, vb4567, vacc0x4567);
    const v128_t va1 = wasm_v128_load32_splat(a + 1);
    vacc1x0123 = wasm_f32x4_relaxed_madd(va1, vb0123, vacc1x0123);
    vacc1x4567 = wasm_f32x4_relaxed_madd(va1, vb4567, vacc1x4567);
    const v128_t va2 = wasm_v128_load32_splat(a + 2);
    vacc2x0123 = wasm_f32x4_relaxed_madd(va2, vb0123, vacc2x0123);
    vacc2x4567 = wasm_f32x4_relaxed_madd(va2, vb4567, vacc2x4567);
    const v128_t va3 = wasm_v128_load32_splat(a + 3);
    vacc3x0123 = wasm_f32x4_relaxed_madd(va3, vb0123, vacc3x0123);
    vacc3x4567 = wasm_f32x4_relaxed_madd(va3, vb4567, vacc3x4567);
    a += 4;
  }

  wasm_v128_store(ct + 0 * ldt, vacc0x0123), wasm_v128_store(ct + 0 * ldt + 4, vacc0x4567);
  wasm_v128_store(ct + 1 * ldt, vacc1x0123), wasm_v128_store(ct + 1 * ldt + 4, vacc1x4567);
  wasm_v128_store(ct + 2 * ldt, vacc2x0123), wasm_v128_store(ct + 2 * ldt + 4, vacc2x4567);
  wasm_v128_store(ct + 3 * ldt, vacc3x0123), wasm_v128_store(ct + 3 * ldt + 4, vacc3x4567);

  if (!full) {
    for (size_t i = 0; i < mr; ++i) std::memcpy(c + i * ldc, tile + i * 8, nr * sizeof(float));
  }
}

}  // namespace wa::kernels
