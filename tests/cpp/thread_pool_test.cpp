// The persistent pool runs every task once, lets no more threads into a call than it asks for,
// and threads never change a result: 1, 2, 3, 4, 8 and 16 threads give bitwise the same GEMM,
// attention and layer, at sizes that cross every tuning constant's edge.
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "mha_layer.h"
#include "testing.h"
#include "tuning.h"
#include "wa/attention.h"
#include "wa/attention_heads.h"
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

// The N-d loops hand each index tuple to one task: on a pool of 4, every (i, j[, l]) once, at
// shapes with an extent of 0 and 1 among them; serially (a null pool, and a pool of 1) in the
// order of the nested serial loops they replace, the last index fastest.
TEST_CASE("parallel_for_2d and _3d run every index once, row-major on one thread") {
  ThreadPool pool(4), one(1);
  const std::array<size_t, 5> extents{0, 1, 2, 3, 7};
  for (size_t n0 : extents)
    for (size_t n1 : extents) {
      std::vector<std::atomic<int>> runs(n0 * n1);
      std::atomic<int> outside{0};  // tasks given an index past its extent
      parallel_for_2d(&pool, n0, n1, SIZE_MAX, [&](size_t i, size_t j) {
        if (i < n0 && j < n1)
          runs[i * n1 + j].fetch_add(1);
        else
          outside.fetch_add(1);
      });
      REQUIRE(outside.load() == 0);
      for (size_t t = 0; t < n0 * n1; ++t) REQUIRE(runs[t].load() == 1);
      for (ThreadPool* serial : {static_cast<ThreadPool*>(nullptr), &one}) {
        std::vector<size_t> order;
        parallel_for_2d(serial, n0, n1, SIZE_MAX,
                        [&](size_t i, size_t j) { order.push_back(i * n1 + j); });
        REQUIRE(order.size() == n0 * n1);
        for (size_t t = 0; t < order.size(); ++t) REQUIRE(order[t] == t);
      }
      for (size_t n2 : extents) {
        std::vector<std::atomic<int>> runs3(n0 * n1 * n2);
        parallel_for_3d(&pool, n0, n1, n2, 3, [&](size_t i, size_t j, size_t l) {
          if (i < n0 && j < n1 && l < n2)
            runs3[(i * n1 + j) * n2 + l].fetch_add(1);
          else
            outside.fetch_add(1);
        });
        REQUIRE(outside.load() == 0);
        for (size_t t = 0; t < runs3.size(); ++t) REQUIRE(runs3[t].load() == 1);
        for (ThreadPool* serial : {static_cast<ThreadPool*>(nullptr), &one}) {
          std::vector<size_t> order;
          parallel_for_3d(serial, n0, n1, n2, SIZE_MAX, [&](size_t i, size_t j, size_t l) {
            order.push_back((i * n1 + j) * n2 + l);
          });
          REQUIRE(order.size() == runs3.size());
          for (size_t t = 0; t < order.size(); ++t) REQUIRE(order[t] == t);
        }
      }
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

// Each task sleeps a little, so that every worker a call lets in has time to join it (the
// verdict does not depend on it: a correct pool never lets more in).
TEST_CASE("parallel_for runs a call on at most max_threads threads, the caller included") {
  ThreadPool pool(8);
  for (size_t max_threads : {1, 2, 3, 5}) {
    for (int call = 0; call < 20; ++call) {
      std::mutex m;
      std::set<std::thread::id> ran_on;
      std::atomic<int> runs{0};
      pool.parallel_for(64, max_threads, [&](size_t) {
        runs.fetch_add(1);
        std::this_thread::sleep_for(std::chrono::microseconds(100));
        std::lock_guard<std::mutex> lock(m);
        ran_on.insert(std::this_thread::get_id());
      });
      REQUIRE(runs.load() == 64);
      REQUIRE(ran_on.size() <= max_threads);
    }
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

// run(pool) on no pool, then on pools of 2, 3, 4, 8 and 16 threads: bitwise the same each time.
void same_on_every_thread_count(const char* what,
                                const std::function<std::vector<float>(ThreadPool*)>& run) {
  static std::vector<std::unique_ptr<ThreadPool>> pools;
  if (pools.empty())
    for (int t : {2, 3, 4, 8, 16}) pools.emplace_back(new ThreadPool(t));
  const std::vector<float> serial = run(nullptr);
  for (const auto& pool : pools) {
    const std::vector<float> threaded = run(pool.get());
    const test::Diff d = test::max_abs_diff(serial, threaded);
    INFO(std::string(what) << " on " << pool->threads() << " threads: largest difference "
                           << d.max_abs << " at " << d.at);
    CHECK(test::bitwise_equal(serial, threaded));
  }
}

TEST_CASE("GEMM, attention and a layer are bitwise the same on 1, 2, 3, 4, 8 and 16 threads") {
  using kernels::kMaxMR;
  using kernels::kNR;
  // GEMMs in tiles of rows and columns: row tiles of every kernel height and a row tail, column
  // panels and a column tail, k past one or two kKC slices; tall, wide and a few-row product
  struct Gemm {
    Transpose ta, tb;
    size_t m, n, k;
  };
  for (const Gemm& g :
       {Gemm{Transpose::no, Transpose::no, 8 * kMC + kMaxMR + 1, 37 * kNR + 3, kKC + 5},
        Gemm{Transpose::yes, Transpose::no, 5 * kMaxMR + 1, 129 * kNR + 1, 2 * kKC + 3},
        Gemm{Transpose::no, Transpose::yes, 2, 128 * kNR + 5, kKC + 1}}) {
    const std::vector<float> a = test::random_floats(g.m * g.k, 11),
                             b = test::random_floats(g.k * g.n, 12);
    const size_t lda = g.ta == Transpose::yes ? g.m : g.k, ldb = g.tb == Transpose::yes ? g.k : g.n;
    same_on_every_thread_count("gemm", [&](ThreadPool* pool) {
      std::vector<float> c(g.m * g.n, 0.5f);
      gemm(g.ta, g.tb, g.m, g.n, g.k, a.data(), lda, b.data(), ldb, c.data(), g.n, true, pool);
      return c;
    });
  }

  // attention over heads, causal GQA: row blocks and a row tail, 2 sequences of 2 kv heads of 2
  const HeadsShape rows{2, 4, 2, 3 * kAttentionRowBlock + 5, 3 * kAttentionRowBlock + 5, 16, 8};
  // decode: 1 query row over runs of keys and a tail run, 8 query heads on 2 kv heads
  const HeadsShape decode{1, 8, 2, 1, 4 * kDecodeMinRun + 7, 16, 16};
  for (const HeadsShape& s : {rows, decode}) {
    const std::vector<float> q = test::random_floats(s.batch * s.n_q * s.q_heads * s.d_k, 13),
                             k = test::random_floats(s.batch * s.n_k * s.kv_heads * s.d_k, 14),
                             v = test::random_floats(s.batch * s.n_k * s.kv_heads * s.d_v, 15);
    HeadsMask mask{};
    mask.mask.causal = s.n_q > 1;  // (a causal decode row would see key 0 alone)
    same_on_every_thread_count(s.n_q == 1 ? "decode" : "causal GQA attention", [&](ThreadPool* p) {
      std::vector<float> out(s.batch * s.n_q * s.q_heads * s.d_v);
      attention_heads_forward(s, heads_3d(q.data(), s.q_heads, s.n_q, s.d_k),
                              heads_3d(k.data(), s.kv_heads, s.n_k, s.d_k),
                              heads_3d(v.data(), s.kv_heads, s.n_k, s.d_v),
                              heads_3d(out.data(), s.q_heads, s.n_q, s.d_v), 0.25f, mask, nullptr,
                              p);
      return out;
    });
  }

  // a layer forward and backward, causal: one head (the backward's passes spread over the
  // threads) and 4 query heads on 2 kv heads in 2 sequences (kv heads spread), weights saved
  // and recomputed; n large enough for the attention to take several threads (threading.h)
  const size_t n = 4 * kAttentionRowBlock + 9;
  static_assert((4 * kAttentionRowBlock + 9) * (4 * kAttentionRowBlock + 9) * 32 >
                2 * kSerialFlops);
  for (const MhaShape& s :
       {MhaShape{1, n, n, 24, 1, 16, 16}, MhaShape{2, n, n, 24, 4, 16, 16, 2}}) {
    const test::MhaBackwardLayer l(s, false, true, 21);
    for (bool keep_weights : {true, false}) {
      same_on_every_thread_count("layer forward and backward", [&](ThreadPool* pool) {
        test::MhaTraceBuffers saved(l.s);
        MhaSaved trace = saved.trace();
        if (!keep_weights) trace.scores = trace.scaled = trace.masked = trace.weights = nullptr;
        std::vector<float> out(l.d_out.size());
        mha_forward(l.s, l.weights(), l.x.data(), nullptr, out.data(), l.scale(), l.mask(true),
                    &trace, pool);
        test::MhaGradBuffers g(l);
        mha_backward(l.s, l.weights(), l.x.data(), nullptr, trace, l.d_out.data(), l.scale(),
                     l.mask(true), g.grads(), pool);
        for (const std::vector<float>* part : {&g.dx, &g.dwq, &g.dwk, &g.dwv, &g.dwo, &g.dbq})
          out.insert(out.end(), part->begin(), part->end());
        return out;
      });
    }
  }
}

// The scaling cases of issue 29 on a 16-thread pool: every parallel call of each, as the pool
// saw it (tasks / threads), printed, and each feeds its threads: kTasksPerThread tasks per
// thread, or a whole number of tasks per thread (equal tasks, or causal ones dealt out largest
// first).
TEST_CASE("the scaling cases give every one of 16 threads tasks enough, pass after pass") {
  ThreadPool pool(16);
  if (pool.threads() < 16) return;  // a build without threads: nothing to split
  std::vector<ThreadPool::Call> calls;
  const auto check = [&](const char* what, const std::function<void()>& run) {
    pool.record_calls(&calls);
    run();
    pool.record_calls(nullptr);
    std::string seen;
    for (const ThreadPool::Call& c : calls) {
      seen += " " + std::to_string(c.tasks) + "/" + std::to_string(c.threads);
      INFO(std::string(what) << ": " << c.tasks << " tasks on " << c.threads << " threads");
      CHECK((c.tasks >= kTasksPerThread * c.threads || c.tasks % c.threads == 0));
    }
    MESSAGE(std::string(what) << " on 16 threads, tasks/threads of each call:" << seen);
    CHECK(!calls.empty());
    calls.clear();
  };
  const auto floats = [](size_t n, uint32_t seed) { return test::random_floats(n, seed); };

  {  // matmul 1024³
    const size_t n = 1024;
    const std::vector<float> a = floats(n * n, 1), b = floats(n * n, 2);
    std::vector<float> c(n * n);
    check("matmul 1024³",
          [&] { gemm_nn(n, n, n, a.data(), n, b.data(), n, c.data(), n, false, &pool); });
  }
  for (const auto& [n, dm, h] : {std::array<size_t, 3>{512, 512, 8}, {1024, 1024, 16}}) {
    const MhaShape s{1, n, n, dm, h, dm / h, dm / h};
    const test::MhaLayer l(s, false, false, 31);
    std::vector<float> out(n * dm);
    check(h == 8 ? "multi-head n 512, dModel 512, 8 heads"
                 : "multi-head n 1024, dModel 1024, 16 heads",
          [&] {
            mha_forward(l.s, l.weights(), l.x.data(), nullptr, out.data(), l.scale(), l.mask(false),
                        nullptr, &pool);
          });
  }
  // attention over heads: decode over 8192 keys (32/8 heads, d 128), causal n 2048 d 64, causal
  // GQA prefill n 1024 (32/8 heads, d 128)
  struct Heads {
    const char* what;
    HeadsShape s;
    bool causal;
  };
  for (const Heads& c :
       {Heads{"decode over 8192 keys, 32/8 heads, d 128", {1, 32, 8, 1, 8192, 128, 128}, false},
        Heads{"causal attention n 2048, d 64", {1, 1, 1, 2048, 2048, 64, 64}, true},
        Heads{"causal GQA prefill n 1024, 32/8 heads, d 128",
              {1, 32, 8, 1024, 1024, 128, 128},
              true}}) {
    const HeadsShape& s = c.s;
    const std::vector<float> q = floats(s.n_q * s.q_heads * s.d_k, 3),
                             k = floats(s.n_k * s.kv_heads * s.d_k, 4),
                             v = floats(s.n_k * s.kv_heads * s.d_v, 5);
    std::vector<float> out(s.n_q * s.q_heads * s.d_v);
    HeadsMask mask{};
    mask.mask.causal = c.causal;
    check(c.what, [&] {
      attention_heads_forward(s, heads_3d(q.data(), s.q_heads, s.n_q, s.d_k),
                              heads_3d(k.data(), s.kv_heads, s.n_k, s.d_k),
                              heads_3d(v.data(), s.kv_heads, s.n_k, s.d_v),
                              heads_3d(out.data(), s.q_heads, s.n_q, s.d_v), 0.125f, mask, nullptr,
                              &pool);
    });
  }
  {  // causal attention backward n 1024, d 64, weights recomputed
    const HeadsShape s{1, 1, 1, 1024, 1024, 64, 64};
    const std::vector<float> q = floats(1024 * 64, 6), k = floats(1024 * 64, 7),
                             v = floats(1024 * 64, 8), d_out = floats(1024 * 64, 9);
    std::vector<float> dq(q.size()), dk(k.size()), dv(v.size());
    HeadsMask mask{};
    mask.mask.causal = true;
    const auto t = [](auto* x) { return heads_3d(x, 1, 1024, 64); };
    check("causal attention backward n 1024, d 64", [&] {
      attention_heads_backward(s, t(q.data()), t(k.data()), t(v.data()), t(d_out.data()),
                               t(dq.data()), t(dk.data()), t(dv.data()), 0.125f, mask, nullptr,
                               &pool);
    });
  }
}

}  // namespace
}  // namespace wa
