// GEMM fast path against the double reference, over odd shapes, strides and k slices; and its
// split into tasks, which gives every thread of up to 16 work.
#include <cfloat>

#include "gemm/gemm_packed.h"
#include "reference.h"
#include "testing.h"
#include "wa/gemm.h"

namespace wa {
namespace {

using test::kOddSizes;

struct Case {
  Transpose ta, tb;
  size_t m, n, k;
  size_t pad = 0;  // extra floats per row: ld = cols + pad
  bool accumulate = false;
};

// Runs one case against the reference. The bound is the classic one for float sums of k
// products, |error| <= 2·k·eps·Σ|a||b| (+ |c| when accumulating): any wrong element or
// missed tail is O(1) off, far outside it.
void check_case(const Case& t, ThreadPool* pool, uint32_t seed) {
  const size_t a_rows = t.ta == Transpose::yes ? t.k : t.m,
               a_cols = t.ta == Transpose::yes ? t.m : t.k;
  const size_t b_rows = t.tb == Transpose::yes ? t.n : t.k,
               b_cols = t.tb == Transpose::yes ? t.k : t.n;
  const size_t lda = a_cols + t.pad, ldb = b_cols + t.pad, ldc = t.n + t.pad;
  const std::vector<float> a = test::random_floats(a_rows * lda, seed);
  const std::vector<float> b = test::random_floats(b_rows * ldb, seed + 1);
  std::vector<float> c = test::random_floats(t.m * ldc, seed + 2);
  std::vector<float> expected = c;

  gemm(t.ta, t.tb, t.m, t.n, t.k, a.data(), lda, b.data(), ldb, c.data(), ldc, t.accumulate, pool);
  ref::gemm(t.ta, t.tb, t.m, t.n, t.k, a.data(), lda, b.data(), ldb, expected.data(), ldc,
            t.accumulate);

  // bound = Σ|a||b| (+ |c|), by the reference on absolute values
  std::vector<float> abs_a = a, abs_b = b, bound = test::random_floats(t.m * ldc, seed + 2);
  for (float& x : abs_a) x = std::fabs(x);
  for (float& x : abs_b) x = std::fabs(x);
  for (float& x : bound) x = std::fabs(x);
  ref::gemm(t.ta, t.tb, t.m, t.n, t.k, abs_a.data(), lda, abs_b.data(), ldb, bound.data(), ldc,
            t.accumulate);

  double worst = 0;  // the largest error as a fraction of its bound
  size_t worst_at = 0;
  for (size_t i = 0; i < t.m; ++i)
    for (size_t j = 0; j < t.n; ++j) {
      const size_t e = i * ldc + j;
      const double err = std::fabs(static_cast<double>(c[e]) - expected[e]);
      const double allowed = 2.0 * (t.k + 1) * FLT_EPSILON * bound[e] + 1e-30;
      if (!(err / allowed <= worst))
        worst = std::isnan(err) ? INFINITY : err / allowed, worst_at = e;
    }
  // the padding between rows is never written
  for (size_t i = 0; i < t.m; ++i)
    for (size_t j = t.n; j < ldc; ++j) REQUIRE(c[i * ldc + j] == expected[i * ldc + j]);

  INFO("ta=" << bool(t.ta) << " tb=" << bool(t.tb) << " m=" << t.m << " n=" << t.n << " k=" << t.k
             << " pad=" << t.pad << " accumulate=" << t.accumulate << ": worst error is " << worst
             << "x its bound, at row " << worst_at / ldc << " col " << worst_at % ldc << " ("
             << c[worst_at] << " vs " << expected[worst_at] << ")");
  CHECK(worst <= 1.0);
}

TEST_CASE("gemm matches the reference for every form over odd m, n, k") {
  uint32_t seed = 1;
  for (Transpose ta : {Transpose::no, Transpose::yes})
    for (Transpose tb : {Transpose::no, Transpose::yes})
      for (size_t m : kOddSizes)
        for (size_t n : kOddSizes)
          for (size_t k : {size_t{1}, size_t{3}, size_t{17}, size_t{64}, size_t{129}})
            check_case({ta, tb, m, n, k}, nullptr, seed++);
}

TEST_CASE("gemm handles k past one packed slice, wide c and strided rows, with threads") {
  uint32_t seed = 100;
  for (Transpose ta : {Transpose::no, Transpose::yes})
    for (Transpose tb : {Transpose::no, Transpose::yes})
      for (size_t k : {kKC - 1, kKC, kKC + 1, 2 * kKC + 76}) {
        // past one kMC-row block, columns in groups on 3 threads; past two row blocks, one
        // panel wide
        check_case({ta, tb, kMC + 1, 300, k, 3}, &test::test_pool(), seed++);
        check_case({ta, tb, 2 * kMC + 1, 2 * kernels::kNR + 1, k, 0, true}, &test::test_pool(),
                   seed++);
      }
  // rows enough for tasks over whole rows of blocks (8 row blocks and more), with row, column
  // and k tails
  static_assert(523 > 8 * kMC);
  for (Transpose ta : {Transpose::no, Transpose::yes})
    for (Transpose tb : {Transpose::no, Transpose::yes})
      check_case({ta, tb, 523, 530, 41, 1, ta == tb}, &test::test_pool(), seed++);
}

TEST_CASE("gemm accumulate adds to c, and k = 0 gives zero or leaves c") {
  uint32_t seed = 200;
  for (size_t m : {1, 5, 64, 65})
    for (size_t n : {1, 9, 63})
      check_case({Transpose::no, Transpose::yes, m, n, 33, 1, true}, nullptr, seed++);

  std::vector<float> c(6, 7.0f);
  gemm_nn(2, 3, 0, nullptr, 0, nullptr, 3, c.data(), 3, true);
  CHECK(c == std::vector<float>(6, 7.0f));
  gemm_nn(2, 3, 0, nullptr, 0, nullptr, 3, c.data(), 3, false);
  CHECK(c == std::vector<float>(6, 0.0f));
}

TEST_CASE("gemm gives exact small integer products") {
  // a (2,3)·b (3,2) by hand: [1 2 3; 4 5 6]·[7 8; 9 10; 11 12] = [58 64; 139 154]
  const std::vector<float> a = {1, 2, 3, 4, 5, 6}, b = {7, 8, 9, 10, 11, 12};
  std::vector<float> c(4);
  gemm_nn(2, 2, 3, a.data(), 3, b.data(), 2, c.data(), 2);
  CHECK(c == std::vector<float>{58, 64, 139, 154});
  // aᵀ·a with a (2,3): [1 4;2 5;3 6]·[1 2 3;4 5 6] = [17 22 27; 22 29 36; 27 36 45]
  std::vector<float> g(9);
  gemm_tn(3, 3, 2, a.data(), 3, a.data(), 3, g.data(), 3);
  CHECK(g == std::vector<float>{17, 22, 27, 22, 29, 36, 27, 36, 45});
  // a·aᵀ: [14 32; 32 77]
  std::vector<float> h(4);
  gemm_nt(2, 2, 3, a.data(), 3, a.data(), 3, h.data(), 2);
  CHECK(h == std::vector<float>{14, 32, 32, 77});
}

// The products of the scaling cases (matmul 1024³, the projections of multi-head attention
// n 512 / d_model 512 and n 1024 / d_model 1024) and odd ones: on T threads, at least
// kTasksPerThread tasks per thread unless each is a single tile, every row and column in
// exactly one task (blocks of whole tiles and panels), and one thread keeps kMC-row blocks over
// every column (its a rows packed once per k slice).
TEST_CASE("gemm_split feeds every thread: 2-D tiles, kTasksPerThread per thread") {
  using kernels::kNR;
  struct Product {
    size_t m, n, tile_mr;
  };
  for (const Product& p :
       {Product{1024, 1024, 6}, Product{512, 512, 6}, Product{512, 512, 4}, Product{2048, 64, 6},
        Product{97, 1029, 5}, Product{1, 4096, 3}, Product{7, 9, 6}}) {
    const size_t tiles = (p.m + p.tile_mr - 1) / p.tile_mr, panels = (p.n + kNR - 1) / kNR;
    const GemmSplit one = gemm_split(p.m, p.n, p.tile_mr, 1);
    CHECK(one.col_parts == 1);
    CHECK(one.row_parts == std::min(tiles, (p.m + kMC - 1) / kMC));
    for (size_t threads : {2, 3, 4, 8, 16}) {
      const GemmSplit s = gemm_split(p.m, p.n, p.tile_mr, threads);
      INFO("m " << p.m << " n " << p.n << " tile_mr " << p.tile_mr << " on " << threads
                << " threads: " << s.row_parts << " x " << s.col_parts << " tasks");
      CHECK(s.row_parts <= tiles);
      CHECK(s.col_parts <= panels);
      CHECK((s.tasks() >= kTasksPerThread * threads || s.tasks() == tiles * panels));
    }
  }
  // 1024³ on 16 threads: 64 equal tiles of 64 rows x 256 columns, 4 per thread
  const GemmSplit big = gemm_split(1024, 1024, 4, 16);
  CHECK(big.row_parts == 16);
  CHECK(big.col_parts == 4);
}

}  // namespace
}  // namespace wa
