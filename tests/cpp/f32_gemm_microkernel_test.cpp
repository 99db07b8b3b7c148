// The 4x8 GEMM micro-kernel itself, on one tile, against a double reference
// (gemm_microkernel_tester.h): every m from 1 to kMR, every n from 1 to kNR (the tails), k
// below, at and past the 4-step unroll of the packing and the kKC-step k slice, odd row
// strides of c, with and without accumulation. Every kernel this build has: the SIMD128 one
// everywhere, and the relaxed-SIMD (FMA) one in the relaxed test build (CMake defines
// WA_RELAXED_SIMD for it), within the same bound (a fused multiply-add rounds once, not twice).
#include <utility>
#include <vector>

#include "gemm_kernels.h"
#include "gemm_microkernel_tester.h"
#include "testing.h"

namespace wa {
namespace {

using kernels::kMR;
using kernels::kNR;
using test::GemmMicrokernelTester;

const std::vector<size_t> kDepths = {1, 2, 3, 4, 5, 8, 17, 63, 64, 65, 129, kKC - 1, kKC, kKC + 1};

const std::vector<std::pair<const char*, test::GemmMicrokernel>> kKernels = {
    {"f32_gemm_4x8_vec128", kernels::f32_gemm_4x8_vec128},
#if defined(WA_RELAXED_SIMD)
    {"f32_gemm_4x8_relaxed", kernels::f32_gemm_4x8_relaxed},
#endif
};

// Runs test(kernel) for every kernel of kKernels, its name in the failure messages.
template <class Test>
void for_each_kernel(Test&& test) {
  for (const auto& [name, kernel] : kKernels) {
    const char* kernel_name = name;  // INFO captures by reference: not a structured binding
    INFO(kernel_name);
    test(kernel);
  }
}

TEST_CASE("f32 gemm 4x8: a whole tile, every k") {
  for_each_kernel([](test::GemmMicrokernel kernel) {
    for (size_t k : kDepths)
      GemmMicrokernelTester().m(kMR).n(kNR).k(k).seed(static_cast<uint32_t>(k)).Test(kernel);
  });
}

TEST_CASE("f32 gemm 4x8: every m and n below the tile (row and column tails)") {
  for_each_kernel([](test::GemmMicrokernel kernel) {
    uint32_t seed = 100;
    for (size_t m = 1; m <= kMR; ++m)
      for (size_t n = 1; n <= kNR; ++n)
        for (size_t k : kDepths) GemmMicrokernelTester().m(m).n(n).k(k).seed(seed++).Test(kernel);
  });
}

TEST_CASE("f32 gemm 4x8: c with a row stride past n") {
  for_each_kernel([](test::GemmMicrokernel kernel) {
    uint32_t seed = 2000;
    for (size_t m = 1; m <= kMR; ++m)
      for (size_t n = 1; n <= kNR; ++n)
        for (size_t stride : {n + 1, size_t{11}, size_t{37}})
          GemmMicrokernelTester().m(m).n(n).k(17).cm_stride(stride).seed(seed++).Test(kernel);
  });
}

TEST_CASE("f32 gemm 4x8: accumulate adds to c, full tiles and tails, strided") {
  for_each_kernel([](test::GemmMicrokernel kernel) {
    uint32_t seed = 3000;
    for (size_t m = 1; m <= kMR; ++m)
      for (size_t n = 1; n <= kNR; ++n)
        for (size_t k : {size_t{1}, size_t{5}, size_t{64}, size_t{129}})
          for (size_t stride : {n, n + 3})
            GemmMicrokernelTester()
                .m(m)
                .n(n)
                .k(k)
                .cm_stride(stride)
                .accumulate(true)
                .seed(seed++)
                .Test(kernel);
  });
}

TEST_CASE("f32 gemm 4x8: k = 0 leaves c as it was when accumulating, zero when not") {
  for_each_kernel([](test::GemmMicrokernel kernel) {
    std::vector<float> c(kMR * kNR, 3.0f);
    const float unused = 0.0f;  // no step is read
    kernel(kMR, kNR, 0, &unused, &unused, c.data(), kNR, true);
    for (float x : c) CHECK(x == 3.0f);
    kernel(2, 5, 0, &unused, &unused, c.data(), kNR, false);
    for (size_t i = 0; i < kMR; ++i)
      for (size_t j = 0; j < kNR; ++j) CHECK(c[i * kNR + j] == (i < 2 && j < 5 ? 0.0f : 3.0f));
  });
}

}  // namespace
}  // namespace wa
