// first_non_finite finds the first NaN or infinity wherever it is, blocks and tails alike,
// and over a pool of 1, 2, 3, 4, 8 or 16 threads the same one, with culprits in every chunk
// position and a later one in another chunk; max_abs the largest magnitude wherever it is.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "testing.h"
#include "wa/finite.h"

namespace wa {
namespace {

TEST_CASE("first_non_finite finds the first NaN or infinity at any position") {
  const float bad[] = {std::numeric_limits<float>::quiet_NaN(),
                       std::numeric_limits<float>::infinity(),
                       -std::numeric_limits<float>::infinity()};
  for (size_t n :
       {size_t{1}, size_t{3}, size_t{4}, size_t{63}, size_t{64}, size_t{65}, size_t{200}}) {
    std::vector<float> x = test::random_floats(n, 3, -1e30f, 1e30f);
    CHECK(first_non_finite(x.data(), n) == n);
    for (size_t at : {size_t{0}, n / 2, n - 1})
      for (float b : bad) {
        std::vector<float> y = x;
        y[at] = b;
        if (at + 1 < n) y[n - 1] = bad[0];  // a later one must not hide the first
        INFO("n=" << n << " at=" << at << " value=" << b);
        CHECK(first_non_finite(y.data(), n) == at);
      }
  }
  CHECK(first_non_finite(nullptr, 0) == 0);
}

TEST_CASE("first_non_finite over a pool names the same first culprit on any thread count") {
  // enough values to feed 16 threads (threading.h: one per 2^17), not a whole number of chunks
  const size_t n = 16 * (size_t{1} << 17) + 37;
  const std::vector<float> x = test::random_floats(n, 7, -1e30f, 1e30f);
  std::vector<std::unique_ptr<ThreadPool>> pools;
  for (int t : {2, 3, 4, 8, 16}) pools.emplace_back(new ThreadPool(t));
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (size_t at : {size_t{0}, size_t{63}, size_t{64}, n / 3, n / 2 + 1, n - 37, n - 1, n}) {
    std::vector<float> y = x;
    if (at < n) y[at] = std::numeric_limits<float>::infinity();
    if (at + 1 < n) y[n - 1] = nan;  // a later one, in the last chunk, must not hide it
    if (at < n / 2) y[n / 2] = nan;  // nor one in a middle chunk
    INFO("culprit at " << at << " of " << n);
    CHECK(first_non_finite(y.data(), n, nullptr) == at);
    for (const auto& pool : pools) {
      std::vector<ThreadPool::Call> calls;
      pool->record_calls(&calls);
      const size_t found = first_non_finite(y.data(), n, pool.get());
      pool->record_calls(nullptr);
      INFO(pool->threads() << " threads");
      CHECK(found == at);
      if (pool->threads() > 1) {  // the scan ran on several threads, not on the caller alone
        REQUIRE(calls.size() == 1);
        CHECK(std::min(calls[0].tasks, calls[0].threads) > 1);
      }
    }
  }
}

TEST_CASE("max_abs finds the largest magnitude at any position, either sign") {
  for (size_t n : {size_t{1}, size_t{3}, size_t{4}, size_t{5}, size_t{64}, size_t{67}}) {
    const std::vector<float> x = test::random_floats(n, 5, -1.0f, 1.0f);
    float want = 0;
    for (float v : x) want = std::max(want, std::fabs(v));
    CHECK(max_abs(x.data(), n) == want);
    for (size_t at : {size_t{0}, n / 2, n - 1})
      for (float big : {3e38f, -3e38f}) {
        std::vector<float> y = x;
        y[at] = big;
        INFO("n=" << n << " at=" << at << " value=" << big);
        CHECK(max_abs(y.data(), n) == 3e38f);
      }
  }
  CHECK(max_abs(nullptr, 0) == 0);
}

}  // namespace
}  // namespace wa
