// GEMM attribution probes, compiled into a bench-only module per ISA (CMakeLists.txt:
// gemm_probe_simd128, gemm_probe_relaxed_simd; never shipped) and timed by gemm_probe.mjs. Each call
// runs its piece `reps` times, so the time JS measures is the piece's, not the call's.
//   wab_setup      inputs of one shape in slot `slot` (a small hot one and the 512³ one live side
//                  by side): a (m,k), b (k,n), c (m,n), and b packed
//   wab_packed     gemm_packed_b on a slot's packed b: pack_a + the kernel over the blocking
//   wab_pack_b     pack_b of a slot's b
//   wab_gemm       gemm: pack_b + gemm_packed_b, what matmul runs inside the module
// Everything single-threaded (no pool). Only gemm.cpp's own functions call the kernel here, so
// wasm-opt inlines it into gemm_packed_b as in the shipped module, and V8 compiles the same loop.
#include <emscripten.h>

#include <vector>

#include "gemm/gemm_packed.h"
#include "wa/gemm.h"

namespace {

struct Inputs {
  size_t m = 0, n = 0, k = 0;
  std::vector<float> a, b, c, packed_b;
};
Inputs slots[2];

float value(size_t i) { return static_cast<float>((i * 7919) % 1000) / 1000.0f - 0.5f; }

}  // namespace

extern "C" {

EMSCRIPTEN_KEEPALIVE void wab_setup(int slot, int m, int n, int k) {
  Inputs& in = slots[slot];
  in.m = m, in.n = n, in.k = k;
  in.a.resize(in.m * in.k), in.b.resize(in.k * in.n), in.c.assign(in.m * in.n, 0.0f);
  for (size_t i = 0; i < in.a.size(); ++i) in.a[i] = value(i);
  for (size_t i = 0; i < in.b.size(); ++i) in.b[i] = value(i + 17);
  in.packed_b.resize(wa::packed_b_floats(in.k, in.n));
  wa::pack_b(wa::Transpose::no, in.k, in.n, in.b.data(), in.n, in.packed_b.data());
}

EMSCRIPTEN_KEEPALIVE float wab_packed(int slot, int reps) {
  Inputs& in = slots[slot];
  for (int r = 0; r < reps; ++r)
    wa::gemm_packed_b(wa::Transpose::no, in.m, in.n, in.k, in.a.data(), in.k, in.packed_b.data(),
                      in.k, in.c.data(), in.n, false);
  return in.c[0];
}

EMSCRIPTEN_KEEPALIVE float wab_pack_b(int slot, int reps) {
  Inputs& in = slots[slot];
  for (int r = 0; r < reps; ++r)
    wa::pack_b(wa::Transpose::no, in.k, in.n, in.b.data(), in.n, in.packed_b.data());
  return in.packed_b[1];
}

EMSCRIPTEN_KEEPALIVE float wab_gemm(int slot, int reps) {
  Inputs& in = slots[slot];
  for (int r = 0; r < reps; ++r)
    wa::gemm_nn(in.m, in.n, in.k, in.a.data(), in.k, in.b.data(), in.n, in.c.data(), in.n);
  return in.c[0];
}

}  // extern "C"
