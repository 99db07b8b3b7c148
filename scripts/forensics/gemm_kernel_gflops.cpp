// gemmKernelGflops, the micro-kernel probe of gemm_kernels.mjs: linked with cpp/bindings/embind.cpp
// into a bench-only module per ISA (CMakeLists.txt: wasm_attention_forensics_simd128,
// wasm_attention_forensics_relaxed_simd; never shipped), so the tool has the package's whole
// surface plus this one function.
//   gemmKernelGflops(name, rounds, batch_ms) -> GFLOP/s of this build's kernel of that name on
//   cache-resident panels, the best of rounds batches of at least batch_ms each; -1 if this
//   build has none of that name.
#include <emscripten/bind.h>

#include <chrono>
#include <string>
#include <vector>

#include "gemm/gemm_select.h"

namespace {

using wa::kernels::GemmKernel;
using wa::kernels::kNR;

// The probe's problem: c (60, 4·kNR) = a (60,kc) · b (kc, 4·kNR), packed. 60 rows divide into
// whole tiles of 3 to 6 rows; a's panels (60·kc floats, 60 KB) and b's four (32 KB) stay in
// L2, a b panel and an a panel in L1, as in gemm.cpp's inner loops.
constexpr size_t kProbeRows = 60, kProbePanels = 4, kProbeK = 256;

double now_ms() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double, std::milli>(clock::now().time_since_epoch()).count();
}

struct Probe {
  std::vector<float> a = std::vector<float>(kProbeRows * kProbeK * 4);  // room for a_copies 4
  std::vector<float> b = std::vector<float>(kProbePanels * kNR * kProbeK);
  std::vector<float> c = std::vector<float>(kProbeRows * kProbePanels * kNR);
  Probe() {
    for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i % 17) * 0.01f;
    for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(i % 13) * 0.01f;
  }
  // One pass over the problem with kernel: its FLOPs.
  double run(const GemmKernel& kernel) {
    const size_t ldc = kProbePanels * kNR;
    kernel.run(kProbeRows, kProbePanels * kNR, kProbeK, a.data(), b.data(), kNR * kProbeK, c.data(),
               ldc, false);
    return 2.0 * kProbeRows * kProbePanels * kNR * kProbeK;
  }
  // Passes for at least batch_ms, timed from a tick of the clock (whose resolution may be
  // coarse in a browser: the count of passes is then what resolves the speed): GFLOP/s.
  double batch(const GemmKernel& kernel, double batch_ms) {
    const double edge = now_ms();
    double start = edge;
    while (start == edge) start = now_ms();
    double flops = 0, elapsed = 0;
    do {
      flops += run(kernel);
      elapsed = now_ms() - start;
    } while (elapsed < batch_ms);
    return flops / elapsed * 1e-6;
  }
};

double gemm_kernel_gflops(const std::string& name, int rounds, double batch_ms) {
  for (const GemmKernel& kernel : wa::kernels::gemm_kernels()) {
    if (name != kernel.name) continue;
    Probe probe;
    double best = 0;
    for (int round = 0; round < rounds; ++round) {
      const double gflops = probe.batch(kernel, batch_ms);
      if (gflops > best) best = gflops;
    }
    return best;
  }
  return -1;
}

}  // namespace

EMSCRIPTEN_BINDINGS(wasm_attention_forensics) {
  emscripten::function("gemmKernelGflops", &gemm_kernel_gflops);
}
