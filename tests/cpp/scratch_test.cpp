// Per-thread scratch: small buffers are kept across release_large_scratch(), large ones
// are given back on every thread (the pool's workers included), and results stay right.
#include <atomic>
#include <cstring>
#include <vector>

#include "runtime/scratch.h"
#include "testing.h"
#include "wa/attention.h"
#include "wa/thread_pool.h"

namespace wa {
namespace {

constexpr size_t kKeepFloats = kScratchKeepBytes / sizeof(float);

TEST_CASE("scratch up to kScratchKeepBytes is kept; release_large_scratch leaves it") {
  float* small = thread_scratch(ScratchSlot::gemm_a, kKeepFloats);
  small[0] = 1.5f;
  release_large_scratch();
  CHECK(thread_scratch(ScratchSlot::gemm_a, kKeepFloats) == small);
  CHECK(thread_scratch(ScratchSlot::gemm_a, 16)[0] == 1.5f);  // same buffer, contents kept
}

TEST_CASE("scratch past kScratchKeepBytes is given back and made again on demand") {
  float* big = thread_scratch(ScratchSlot::packed_kv, kKeepFloats + 1);
  std::memset(big, 0, (kKeepFloats + 1) * sizeof(float));
  release_large_scratch();
  // The buffer was freed: a request of any size makes a new one that holds it all.
  float* again = thread_scratch(ScratchSlot::packed_kv, 8);
  again[7] = 2.0f;
  CHECK(again[7] == 2.0f);
  float* large = thread_scratch(ScratchSlot::packed_kv, 3 * kKeepFloats);
  large[3 * kKeepFloats - 1] = 3.0f;
  CHECK(large[3 * kKeepFloats - 1] == 3.0f);
  release_large_scratch();
}

TEST_CASE("workers' large scratch is released between calls and calls stay right") {
  // k, v long enough that the packed k,v (scratch) passes kScratchKeepBytes: 4096·2·64 floats.
  const size_t n_q = 33, n_k = 4096, d = 64;
  const std::vector<float> q = test::random_floats(n_q * d, 1), k = test::random_floats(n_k * d, 2),
                           v = test::random_floats(n_k * d, 3);
  std::vector<float> first(n_q * d), out(n_q * d);
  ThreadPool pool(3);
  const ScoreMask mask;
  const float scale = 0.125f;
  attention_forward({q.data(), n_q, d, d}, {k.data(), n_k, d, d}, {v.data(), n_k, d, d},
                    {first.data(), n_q, d, d}, scale, mask, nullptr, &pool);
  for (int call = 0; call < 5; ++call) {
    release_large_scratch();
    // Every thread's slots grown past the bound, then released again while they are idle.
    std::atomic<int> touched{0};
    pool.parallel_for(64, [&](size_t) {
      float* p = thread_scratch(ScratchSlot::gemm_b, 2 * kKeepFloats);
      p[2 * kKeepFloats - 1] = 1.0f;
      touched.fetch_add(1);
    });
    REQUIRE(touched.load() == 64);
    release_large_scratch();
    attention_forward({q.data(), n_q, d, d}, {k.data(), n_k, d, d}, {v.data(), n_k, d, d},
                      {out.data(), n_q, d, d}, scale, mask, nullptr, &pool);
    REQUIRE(std::memcmp(out.data(), first.data(), out.size() * sizeof(float)) == 0);
  }
}

TEST_CASE("threads that exit leave the scratch registry") {
  for (int round = 0; round < 3; ++round) {
    ThreadPool pool(4);  // workers register their scratch, then exit with the pool
    pool.parallel_for(16, [](size_t) {
      thread_scratch(ScratchSlot::attention_scores, 2 * kKeepFloats)[0] = 1.0f;
    });
  }
  release_large_scratch();  // would touch the exited threads' scratch if they had stayed listed
  CHECK(true);
}

}  // namespace
}  // namespace wa
