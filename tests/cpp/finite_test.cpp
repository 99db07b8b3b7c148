// first_non_finite finds the first NaN or infinity wherever it is, blocks and tails alike.
#include <limits>

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

}  // namespace
}  // namespace wa
