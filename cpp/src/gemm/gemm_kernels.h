// GEMM micro-kernels, and the packed layout they read: the one place it is defined.
//
// A kernel computes one tile of c from a packed a panel and a packed b panel. A packed a panel
// holds kc steps of the kernel's mr rows of op(a): step p at a + p·mr (mr is the kernel's own:
// gemm.cpp packs a for the kernel it runs). A packed b panel holds kc steps of kNR columns of
// op(b): step p at b + p·kNR, the same for every kernel (attention and the KV cache keep packed
// operands). Rows or columns past the edge of the matrix are packed as zeros, so a kernel
// always runs whole tiles and stores only mr x nr. A whole packed op(b) (k,n) is its panels
// one after another (pack_b in gemm_packed.h).
#pragma once

#include <cstddef>

#include "tuning.h"  // kNR, kMaxMR

namespace wa::kernels {

// c (m,n) [+]= a (m,kc) · b (kc,n), m >= 1, n >= 1, from ceil(m/MR) packed a panels (kc,MR)
// one after another (MR: the kernel's tile rows) and ceil(n/kNR) packed b panels (kc,kNR),
// b_stride floats apart; c has row stride ldc. The kernel runs b's panels outer and its tiles
// down the rows inner (one b panel stays in L1 while a streams). accumulate: add to c instead of
// overwriting it. kc = 0 leaves c as it was (accumulate) or zero.
using GemmMicrokernel = void (*)(size_t m, size_t n, size_t kc, const float* a, const float* b,
                                 size_t b_stride, float* c, size_t ldc, bool accumulate);

// A kernel and its tiles' rows, by name (the function's, as in backend.gemmKernel). a_copies:
// how many times its packed a panels hold each value (1; 4 for a kernel that reads a step's
// a values as whole vectors, each value in all four lanes: step p of a panel then holds
// a(i, p) at a + (p·MR + i)·4 + 0..3).
struct GemmKernel {
  const char* name;
  size_t mr;
  GemmMicrokernel run;
  size_t a_copies = 1;
};

// The kernels, declared from their one list (f32_gemm_kernels.def; one file each,
// f32_gemm_<MR>x8[_<style>]_<isa>.cpp, one body: f32_gemm_tile.h). Every kernel of one ISA gives
// bitwise the same c. The relaxed-SIMD ones are built only into the relaxed_simd builds.
#define WA_GEMM_KERNEL_DECLARE(name, mr, a_copies)                                          \
  void name(size_t m, size_t n, size_t kc, const float* a, const float* b, size_t b_stride, \
            float* c, size_t ldc, bool accumulate);
#define WA_GEMM_KERNEL_SIMD128 WA_GEMM_KERNEL_DECLARE
#define WA_GEMM_KERNEL_RELAXED_SIMD WA_GEMM_KERNEL_DECLARE
#include "gemm/f32_gemm_kernels.def"
#undef WA_GEMM_KERNEL_SIMD128
#undef WA_GEMM_KERNEL_RELAXED_SIMD
#undef WA_GEMM_KERNEL_DECLARE

}  // namespace wa::kernels
