// f32 GEMM micro-kernel, 4x8 tile, 128-bit vectors (wasm SIMD128 / SSE via simd.h).
// 8 accumulators + 2 b vectors + 1 broadcast a = 11 live vectors: fits the 16 registers V8
// has on x86-64 (a 6x8 tile spills).
#include <cassert>
#include <cstring>

#include "gemm_kernels.h"
#include "simd.h"

namespace wa::kernels {

using namespace wa::simd;

void f32_gemm_4x8_vec128(size_t mr, size_t nr, size_t kc, const float* a, const float* b, float* c,
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

  f32x4 vacc0x0123, vacc0x4567, vacc1x0123, vacc1x4567;
  f32x4 vacc2x0123, vacc2x4567, vacc3x0123, vacc3x4567;
  if (accumulate) {
    vacc0x0123 = load(ct + 0 * ldt), vacc0x4567 = load(ct + 0 * ldt + 4);
    vacc1x0123 = load(ct + 1 * ldt), vacc1x4567 = load(ct + 1 * ldt + 4);
    vacc2x0123 = load(ct + 2 * ldt), vacc2x4567 = load(ct + 2 * ldt + 4);
    vacc3x0123 = load(ct + 3 * ldt), vacc3x4567 = load(ct + 3 * ldt + 4);
  } else {
    vacc0x0123 = vacc0x4567 = vacc1x0123 = vacc1x4567 = splat(0.0f);
    vacc2x0123 = vacc2x4567 = vacc3x0123 = vacc3x4567 = splat(0.0f);
  }

  for (size_t p = 0; p < kc; ++p) {
    const f32x4 vb0123 = load(b);
    const f32x4 vb4567 = load(b + 4);
    b += 8;
    const f32x4 va0 = load_splat(a + 0);
    vacc0x0123 = muladd(va0, vb0123, vacc0x0123);
    vacc0x4567 = muladd(va0, vb4567, vacc0x4567);
    const f32x4 va1 = load_splat(a + 1);
    vacc1x0123 = muladd(va1, vb0123, vacc1x0123);
    vacc1x4567 = muladd(va1, vb4567, vacc1x4567);
    const f32x4 va2 = load_splat(a + 2);
    vacc2x0123 = muladd(va2, vb0123, vacc2x0123);
    vacc2x4567 = muladd(va2, vb4567, vacc2x4567);
    const f32x4 va3 = load_splat(a + 3);
    vacc3x0123 = muladd(va3, vb0123, vacc3x0123);
    vacc3x4567 = muladd(va3, vb4567, vacc3x4567);
    a += 4;
  }

  store(ct + 0 * ldt, vacc0x0123), store(ct + 0 * ldt + 4, vacc0x4567);
  store(ct + 1 * ldt, vacc1x0123), store(ct + 1 * ldt + 4, vacc1x4567);
  store(ct + 2 * ldt, vacc2x0123), store(ct + 2 * ldt + 4, vacc2x4567);
  store(ct + 3 * ldt, vacc3x0123), store(ct + 3 * ldt + 4, vacc3x4567);

  if (!full) {
    for (size_t i = 0; i < mr; ++i) std::memcpy(c + i * ldc, tile + i * 8, nr * sizeof(float));
  }
}

}  // namespace wa::kernels
