// Every GEMM micro-kernel compiled in (gemm_select.h: all_gemm_kernels, the SIMD128 ones and,
// in the relaxed test build, the relaxed-SIMD ones), each against a double reference
// (gemm_microkernel_tester.h): on one tile, every m from 1 to the kernel's tile rows, every n
// from 1 to kNR (the tails); on several tiles down the rows and several b panels across the
// columns, whole and with tails, the panels packed together or apart; k below, at and past the
// kernels' 2-step unroll, the packing's 4-step one and the kKC-step k slice, odd row strides of
// c, with and without accumulation. A fused
// multiply-add rounds once, not twice: the same bound holds.
#include <vector>

#include "gemm/gemm_kernels.h"
#include "gemm/gemm_select.h"
#include "gemm_microkernel_tester.h"
#include "testing.h"

namespace wa {
namespace {

using kernels::GemmKernel;
using kernels::kNR;
using test::GemmMicrokernelTester;

const std::vector<size_t> kDepths = {1, 2, 3, 4, 5, 8, 17, 63, 64, 65, 129, kKC - 1, kKC, kKC + 1};

// Runs test(kernel) for every kernel compiled in, its name in the failure messages.
template <class Test>
void for_each_kernel(Test&& test) {
  for (const GemmKernel& kernel : kernels::all_gemm_kernels()) {
    INFO(kernel.name);
    test(kernel);
  }
}

TEST_CASE("f32 gemm micro-kernels: a whole tile, every k") {
  for_each_kernel([](const GemmKernel& kernel) {
    for (size_t k : kDepths)
      GemmMicrokernelTester().m(kernel.mr).n(kNR).k(k).seed(static_cast<uint32_t>(k)).Test(kernel);
  });
}

TEST_CASE("f32 gemm micro-kernels: every m and n below the tile (row and column tails)") {
  for_each_kernel([](const GemmKernel& kernel) {
    uint32_t seed = 100;
    for (size_t m = 1; m <= kernel.mr; ++m)
      for (size_t n = 1; n <= kNR; ++n)
        for (size_t k : kDepths) GemmMicrokernelTester().m(m).n(n).k(k).seed(seed++).Test(kernel);
  });
}

TEST_CASE("f32 gemm micro-kernels: several tiles down the rows, whole and with a row tail") {
  for_each_kernel([](const GemmKernel& kernel) {
    uint32_t seed = 1000;
    const size_t mr = kernel.mr;
    for (size_t m : {mr + 1, 2 * mr, 3 * mr - 1, 10 * mr + 2})
      for (size_t n : {size_t{1}, size_t{5}, kNR})
        for (size_t k : {size_t{1}, size_t{17}, size_t{513}})
          for (bool accumulate : {false, true})
            GemmMicrokernelTester()
                .m(m)
                .n(n)
                .k(k)
                .cm_stride(n + 2)
                .accumulate(accumulate)
                .seed(seed++)
                .Test(kernel);
  });
}

TEST_CASE("f32 gemm micro-kernels: several b panels across the columns, together and apart") {
  for_each_kernel([](const GemmKernel& kernel) {
    uint32_t seed = 1500;
    const size_t mr = kernel.mr;
    for (size_t m : {size_t{1}, mr, 2 * mr + 1})
      for (size_t n : {kNR + 1, 2 * kNR, 3 * kNR - 3, 5 * kNR})
        for (size_t k : {size_t{1}, size_t{17}, kKC + 1})
          for (size_t gap : {size_t{0}, kNR, size_t{3}})
            GemmMicrokernelTester()
                .m(m)
                .n(n)
                .k(k)
                .cm_stride(n + 1)
                .b_gap(gap)
                .accumulate(gap == kNR)
                .seed(seed++)
                .Test(kernel);
  });
}

TEST_CASE("f32 gemm micro-kernels: c with a row stride past n") {
  for_each_kernel([](const GemmKernel& kernel) {
    uint32_t seed = 2000;
    for (size_t m = 1; m <= kernel.mr; ++m)
      for (size_t n = 1; n <= kNR; ++n)
        for (size_t stride : {n + 1, size_t{11}, size_t{37}})
          GemmMicrokernelTester().m(m).n(n).k(17).cm_stride(stride).seed(seed++).Test(kernel);
  });
}

TEST_CASE("f32 gemm micro-kernels: accumulate adds to c, full tiles and tails, strided") {
  for_each_kernel([](const GemmKernel& kernel) {
    uint32_t seed = 3000;
    for (size_t m = 1; m <= kernel.mr; ++m)
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

TEST_CASE("f32 gemm micro-kernels: k = 0 leaves c as it was when accumulating, zero when not") {
  for_each_kernel([](const GemmKernel& kernel) {
    const size_t mr = kernel.mr;
    std::vector<float> c(mr * kNR, 3.0f);
    const float unused = 0.0f;  // no step is read
    kernel.run(mr, kNR, 0, &unused, &unused, 0, c.data(), kNR, true);
    for (float x : c) CHECK(x == 3.0f);
    kernel.run(2, 5, 0, &unused, &unused, 0, c.data(), kNR, false);
    for (size_t i = 0; i < mr; ++i)
      for (size_t j = 0; j < kNR; ++j) CHECK(c[i * kNR + j] == (i < 2 && j < 5 ? 0.0f : 3.0f));
  });
}

}  // namespace
}  // namespace wa
