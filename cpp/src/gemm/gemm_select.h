// Which GEMM micro-kernel gemm.cpp runs: this build's kernels, and the one chosen where the
// code runs (gemm_select.cpp says how). Dispatch only; the arithmetic is in the kernels.
#pragma once

#include <cstddef>

#include "gemm/gemm_kernels.h"

namespace wa::kernels {

struct GemmKernels {
  const GemmKernel* first;
  size_t count;
  const GemmKernel* begin() const { return first; }
  const GemmKernel* end() const { return first + count; }
};

// This build's kernels, those of its ISA: the relaxed-SIMD ones in the relaxed_simd builds
// (WA_RELAXED_SIMD), the SIMD128 ones everywhere else. The first is the default.
GemmKernels gemm_kernels();
// Every kernel compiled in: also the SIMD128 ones in the relaxed_simd builds (the tests run all).
GemmKernels all_gemm_kernels();

// The kernel the GEMM runs. The first call chooses it (a table lookup by JavaScript engine, once
// per module instance); every call after returns the same kernel unless use_gemm_kernel changes it.
const GemmKernel& gemm_kernel();

// The kernel for a product of m rows: gemm_kernel() where its tile rows divide m or m is at
// least 128, else the default (kernels[0], 4 rows): a short product would spend a share of its
// work on the last tile's unused rows. Always gemm_kernel() once use_gemm_kernel named one.
const GemmKernel& gemm_kernel_for_rows(size_t m);

// Runs the kernel of that name from now on, for every product (tests and benchmarks); false,
// and nothing changes, if this build has none of that name.
bool use_gemm_kernel(const char* name);

}  // namespace wa::kernels
