// Element counts of buffers, computed without wrapping around. size_t has 32 bits in wasm32,
// where (n_q·n_k) floats pass 4 GB long before the inputs do: a count that would not fit
// throws std::bad_alloc, as allocating it would, instead of silently coming out small.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <new>

namespace wa {

// Largest count of floats whose size in bytes still fits in size_t.
constexpr size_t kMaxFloats = SIZE_MAX / sizeof(float);

inline size_t checked_product(std::initializer_list<size_t> factors) {
  size_t p = 1;
  for (size_t f : factors) {
    if (f != 0 && p > kMaxFloats / f) throw std::bad_alloc();
    p *= f;
  }
  return p;
}

inline size_t checked_sum(std::initializer_list<size_t> terms) {
  size_t s = 0;
  for (size_t t : terms) {
    if (t > kMaxFloats - s) throw std::bad_alloc();
    s += t;
  }
  return s;
}

}  // namespace wa
