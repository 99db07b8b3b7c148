// The GEMM's kernel choice (gemm_select.h): whichever kernel of the build's ISA runs, the GEMM
// gives bitwise the same c, for every form, odd shapes (tails of every tile height), k past one
// packed slice, accumulation and threads; naming a kernel makes the GEMM run it.
#include <cstring>
#include <string>
#include <vector>

#include "gemm/gemm_select.h"
#include "testing.h"
#include "wa/gemm.h"

namespace wa {
namespace {

using kernels::GemmKernel;

struct Shape {
  Transpose ta, tb;
  size_t m, n, k;
  bool accumulate;
};

// c of every shape below, one after another, with the kernel now chosen.
std::vector<float> products(ThreadPool* pool) {
  const Transpose no = Transpose::no, yes = Transpose::yes;
  const Shape shapes[] = {{no, no, 67, 45, 600, false},    {yes, no, 31, 70, 130, true},
                          {no, yes, 129, 17, 1030, false}, {yes, yes, 5, 9, 3, true},
                          {no, no, 1, 300, 513, true},     {no, no, 130, 130, 64, false}};
  std::vector<float> all;
  uint32_t seed = 40;
  for (const Shape& s : shapes) {
    const std::vector<float> a = test::random_floats(s.m * s.k, seed++);
    const std::vector<float> b = test::random_floats(s.k * s.n, seed++);
    std::vector<float> c = test::random_floats(s.m * s.n, seed++);
    const size_t lda = s.ta == Transpose::yes ? s.m : s.k, ldb = s.tb == Transpose::yes ? s.k : s.n;
    gemm(s.ta, s.tb, s.m, s.n, s.k, a.data(), lda, b.data(), ldb, c.data(), s.n, s.accumulate,
         pool);
    all.insert(all.end(), c.begin(), c.end());
  }
  return all;
}

TEST_CASE("gemm: every kernel of the build gives bitwise the same c, on 1 and N threads") {
  const std::string before = kernels::gemm_kernel().name;
  const auto kernels = kernels::gemm_kernels();
  REQUIRE(kernels.count >= 2);
  REQUIRE(kernels::use_gemm_kernel(kernels.first[0].name));
  const std::vector<float> expected = products(nullptr);
  for (const GemmKernel& kernel : kernels) {
    INFO(kernel.name);
    REQUIRE(kernels::use_gemm_kernel(kernel.name));
    CHECK(std::string(kernels::gemm_kernel().name) == kernel.name);
    for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &test::test_pool()}) {
      const std::vector<float> c = products(pool);
      REQUIRE(c.size() == expected.size());
      CHECK(std::memcmp(c.data(), expected.data(), c.size() * sizeof(float)) == 0);
    }
  }
  REQUIRE(kernels::use_gemm_kernel(before.c_str()));
}

TEST_CASE("gemm kernels: naming one the build lacks changes nothing") {
  const std::string before = kernels::gemm_kernel().name;
  CHECK_FALSE(kernels::use_gemm_kernel("f32_gemm_9x8_none"));
  CHECK(std::string(kernels::gemm_kernel().name) == before);
}

}  // namespace
}  // namespace wa
