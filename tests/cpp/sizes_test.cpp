// Buffer counts never wrap around: past what size_t can hold in bytes they throw bad_alloc
// (in wasm32 that is 4 GB, which (n_q,n_k) scores reach at n = 32768).
#include <new>

#include "runtime/sizes.h"
#include "testing.h"

namespace wa {
namespace {

TEST_CASE("checked sizes multiply and add exactly, and throw instead of wrapping") {
  CHECK(checked_product({3, 5, 7}) == 105);
  CHECK(checked_product({}) == 1);
  CHECK(checked_product({0, kMaxFloats, 9}) == 0);
  CHECK(checked_product({kMaxFloats, 1}) == kMaxFloats);
  CHECK_THROWS_AS(checked_product({kMaxFloats / 2 + 1, 2}), std::bad_alloc);
  CHECK(checked_sum({1, 2, 3}) == 6);
  CHECK(checked_sum({kMaxFloats - 1, 1}) == kMaxFloats);
  CHECK_THROWS_AS(checked_sum({kMaxFloats, 1}), std::bad_alloc);
}

}  // namespace
}  // namespace wa
