// Choosing the GEMM micro-kernel where the code runs. The kernels of one ISA differ only in
// how fast an engine's code generator makes them (tile rows, loadsplat or splat, k unroll):
// their results are bitwise the same (f32_gemm_tile.h), so the choice changes speed alone.
//
// The first gemm_kernel() call picks the kernel measured fastest in the JavaScript engine that
// runs the module (preferred_kernel), a table lookup: a probe at start would time the baseline
// compilers' code, whose ranking is not the optimized code's (performance.md, "The GEMM
// micro-kernel per engine"). scripts/forensics/gemm_kernels.mjs times every kernel once
// optimized, to derive the table on other CPUs.
#include "gemm/gemm_select.h"

#if defined(__EMSCRIPTEN__)
// js_engine.js: 100 + V8's major version, 1 SpiderMonkey, 2 JavaScriptCore, 0 unknown
extern "C" int wa_js_engine();
#endif

#include <atomic>
#include <cstring>
#include <mutex>

namespace wa::kernels {
namespace {

// Every kernel compiled in, from the one list (f32_gemm_kernels.def) in its order: the SIMD128
// ones (every build), then the relaxed ones (relaxed_simd builds). Each ISA's first is its default.
#define WA_GEMM_KERNEL_ENTRY(name, mr, a_copies) {#name, mr, name, a_copies},
#define WA_GEMM_KERNEL_SIMD128 WA_GEMM_KERNEL_ENTRY
#if defined(WA_RELAXED_SIMD)
#define WA_GEMM_KERNEL_RELAXED_SIMD WA_GEMM_KERNEL_ENTRY
#else
#define WA_GEMM_KERNEL_RELAXED_SIMD(name, mr, a_copies)
#endif
const GemmKernel kAllKernels[] = {
#include "gemm/f32_gemm_kernels.def"
};
#undef WA_GEMM_KERNEL_SIMD128
#undef WA_GEMM_KERNEL_RELAXED_SIMD
#undef WA_GEMM_KERNEL_ENTRY
constexpr size_t kAllCount = sizeof kAllKernels / sizeof kAllKernels[0];
// The SIMD128 kernels: one per WA_GEMM_KERNEL_SIMD128 line of the list.
#define WA_GEMM_KERNEL_SIMD128(name, mr, a_copies) +1
#define WA_GEMM_KERNEL_RELAXED_SIMD(name, mr, a_copies)
constexpr size_t kSimd128Count = 0
#include "gemm/f32_gemm_kernels.def"
    ;
#undef WA_GEMM_KERNEL_SIMD128
#undef WA_GEMM_KERNEL_RELAXED_SIMD
// Every listed kernel's tile is at most kMaxMR rows (tuning.h): the tests cross the tiles' row
// edges with sizes around kMaxMR (tests/cpp/testing.h).
#define WA_GEMM_KERNEL_FITS(name, mr, a_copies) \
  static_assert((mr) >= 1 && (mr) <= kMaxMR, #name ": tile rows past kMaxMR (tuning.h)");
#define WA_GEMM_KERNEL_SIMD128 WA_GEMM_KERNEL_FITS
#define WA_GEMM_KERNEL_RELAXED_SIMD WA_GEMM_KERNEL_FITS
#include "gemm/f32_gemm_kernels.def"
#undef WA_GEMM_KERNEL_SIMD128
#undef WA_GEMM_KERNEL_RELAXED_SIMD
#undef WA_GEMM_KERNEL_FITS
// This build's ISA's: the last kCount (the relaxed build's have no twin of the broadcast-panel
// kernel: it is for JavaScriptCore, which has no relaxed SIMD)
#if defined(WA_RELAXED_SIMD)
constexpr size_t kCount = kAllCount - kSimd128Count;
static_assert(kCount == kSimd128Count - 1,
              "a relaxed twin of each SIMD128 tile but the broadcast one");
#else
constexpr size_t kCount = kAllCount;
static_assert(kAllCount == kSimd128Count);
#endif
const GemmKernel* const kKernels = kAllKernels + (kAllCount - kCount);

// The JavaScript engine this module runs in (js_engine.js says how it is told): kV8 + V8's
// major version, or one of the others.
enum Engine : int { kUnknown = 0, kSpiderMonkey = 1, kJavaScriptCore = 2, kV8 = 100 };
#if defined(__EMSCRIPTEN__)
int js_engine() { return wa_js_engine(); }
#else
// natively: the default kernel
int js_engine() { return kUnknown; }
#endif

// The kernel for engine, by name: the fastest on matmul 512³, 1 thread, side by side in one
// instance (scripts/forensics/gemm_kernels.mjs); where no other is clearly faster, or the engine
// was not measured, the default. The engines, versions and figures: performance.md, "The GEMM
// micro-kernel per engine".
const char* preferred_kernel(int engine) {
#if defined(WA_RELAXED_SIMD)
  // V8 before 15 spills this tile's registers
  if (engine >= kV8 + 15 || engine == kSpiderMonkey) return "f32_gemm_6x8_relaxed_simd";
#else
  if (engine >= kV8 + 15) return "f32_gemm_4x8_k2_simd128";
  // JavaScriptCore makes three of the default's four broadcasts a scalar load and a splat; this
  // kernel's a panels come broadcast
  if (engine == kJavaScriptCore) return "f32_gemm_4x8_bcast_simd128";
#endif
  return kKernels[0].name;
}

const GemmKernel* choose() {
  const char* name = preferred_kernel(js_engine());
  for (const GemmKernel& kernel : gemm_kernels())
    if (std::strcmp(kernel.name, name) == 0) return &kernel;
  return &kKernels[0];
}

std::atomic<const GemmKernel*> chosen{nullptr};
std::atomic<bool> pinned{false};  // use_gemm_kernel named it: every product runs it
std::once_flag chosen_once;

// Rows from which a product runs the chosen kernel even where its tile does not divide them:
// the last tile's unused rows are then at most (mr - 1) / 128 of the work. Below, and not
// divided, the default 4x8 runs instead (bitwise the same): on attention's 32-row blocks a taller
// tile's unused rows cost more than it gains (scripts/forensics/gemm_kernels.mjs --shape).
constexpr size_t kWideTileMinRows = 128;

}  // namespace

GemmKernels gemm_kernels() { return {kKernels, kCount}; }
GemmKernels all_gemm_kernels() { return {kAllKernels, kAllCount}; }

const GemmKernel& gemm_kernel() {
  std::call_once(chosen_once, [] {
    const GemmKernel* none = nullptr;
    const GemmKernel* fastest = choose();
    chosen.compare_exchange_strong(none, fastest);  // use_gemm_kernel may have come first
  });
  return *chosen.load();
}

const GemmKernel& gemm_kernel_for_rows(size_t m) {
  const GemmKernel& kernel = gemm_kernel();
  if (pinned.load() || m % kernel.mr == 0 || m >= kWideTileMinRows) return kernel;
  return kKernels[0];
}

bool use_gemm_kernel(const char* name) {
  for (const GemmKernel& kernel : gemm_kernels())
    if (std::strcmp(kernel.name, name) == 0) {
      std::call_once(chosen_once, [] {});  // no lookup once a kernel is named
      chosen.store(&kernel);
      pinned.store(true);
      return true;
    }
  return false;
}

}  // namespace wa::kernels
