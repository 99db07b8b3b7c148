// The persistent pool runs every task once, and threads never change a result.
#include <atomic>
#include <cmath>
#include <stdexcept>

#include "testing.h"
#include "wa/attention.h"
#include "wa/build_info.h"
#include "wa/gemm.h"

namespace wa {
namespace {

TEST_CASE("parallel_for runs each task exactly once, call after call") {
  ThreadPool pool(4);
  CHECK(pool.threads() == (threads_available() ? 4 : 1));
  for (size_t n : {0, 1, 2, 3, 7, 100, 1000}) {
    std::vector<std::atomic<int>> runs(n);
    pool.parallel_for(n, [&](size_t i) { runs[i].fetch_add(1); });
    for (size_t i = 0; i < n; ++i) REQUIRE(runs[i].load() == 1);
  }
}

// Calls of a few tasks, back to back: a worker may wake for a call the caller has already
// finished alone, or join it late; either way each task runs once, on the call's own state.
TEST_CASE("parallel_for runs each task exactly once over thousands of short calls") {
  ThreadPool pool(3);
  std::vector<std::atomic<int>> runs(5);
  for (int call = 0; call < 4000; ++call) {
    const size_t n = 2 + call % 4;
    pool.parallel_for(n, [&](size_t i) { runs[i].fetch_add(1, std::memory_order_relaxed); });
    for (size_t i = 0; i < n; ++i) REQUIRE(runs[i].exchange(0) == 1);
    for (size_t i = n; i < runs.size(); ++i) REQUIRE(runs[i].load() == 0);
  }
}

TEST_CASE("an exception in a task reaches the caller and the pool keeps working") {
  ThreadPool pool(3);
  CHECK_THROWS_AS(pool.parallel_for(50,
                                    [](size_t i) {
                                      if (i == 17) throw std::runtime_error("task 17");
                                    }),
                  std::runtime_error);
  std::atomic<size_t> sum{0};
  pool.parallel_for(10, [&](size_t i) { sum += i; });
  CHECK(sum.load() == 45);
}

TEST_CASE("1 thread and N threads give bitwise identical results") {
  // In the single-thread wasm build every pool has one thread and this compares serial runs;
  // the native and threaded wasm runs are the ones that test threads.
  ThreadPool one(1), three(3), two(2);
  if (three.threads() == 1) MESSAGE("no threads in this build: serial runs compared");
  // gemm large enough to be split over tasks
  const size_t m = 150, n = 270, k = 300;
  const std::vector<float> a = test::random_floats(m * k, 1), b = test::random_floats(n * k, 2);
  std::vector<float> c1(m * n), c3(m * n), cn(m * n);
  gemm_nt(m, n, k, a.data(), k, b.data(), k, c1.data(), n, false, &one);
  gemm_nt(m, n, k, a.data(), k, b.data(), k, c3.data(), n, false, &three);
  gemm_nt(m, n, k, a.data(), k, b.data(), k, cn.data(), n, false, nullptr);
  CHECK(test::bitwise_equal(c1, c3));
  CHECK(test::bitwise_equal(c1, cn));
  // tall enough for tasks over whole rows of blocks
  const size_t tall = 523;
  const std::vector<float> at = test::random_floats(tall * k, 8);
  std::vector<float> t1(tall * n), t2(tall * n);
  gemm_nt(tall, n, k, at.data(), k, b.data(), k, t1.data(), n, false, nullptr);
  gemm_nt(tall, n, k, at.data(), k, b.data(), k, t2.data(), n, false, &two);
  CHECK(test::bitwise_equal(t1, t2));

  // multi-head attention, causal, batch of 2
  const MhaShape s{2, 97, 97, 32, 4, 8, 8};
  const std::vector<float> wq = test::random_floats(32 * 32, 3, -0.2f, 0.2f),
                           wk = test::random_floats(32 * 32, 4, -0.2f, 0.2f),
                           wv = test::random_floats(32 * 32, 5, -0.2f, 0.2f),
                           wo = test::random_floats(32 * 32, 6, -0.2f, 0.2f),
                           x = test::random_floats(2 * 97 * 32, 7);
  const MhaWeights w{wq.data(), wk.data(), wv.data(), wo.data()};
  ScoreMask mask;
  const float scale = 1 / std::sqrt(8.0f);
  mask.causal = true;
  std::vector<float> o1(x.size()), o2(x.size()), o3(x.size());
  mha_forward(s, w, x.data(), nullptr, o1.data(), scale, mask, nullptr, &one);
  mha_forward(s, w, x.data(), nullptr, o2.data(), scale, mask, nullptr, &two);
  mha_forward(s, w, x.data(), nullptr, o3.data(), scale, mask, nullptr, &three);
  CHECK(test::bitwise_equal(o1, o2));
  CHECK(test::bitwise_equal(o1, o3));
}

}  // namespace
}  // namespace wa
