// Finding non-finite values fast, and the largest magnitude, for validating inputs and
// results at the boundary.
#pragma once

#include <cstddef>

#include "wa/thread_pool.h"

namespace wa {

// x (n) -> the index of the first NaN or ±inf, or n when every value is finite.
size_t first_non_finite(const float* x, size_t n);

// The same over a pool (null: the one above on the caller): x in chunks, one task each, for
// the threads n values feed (threading.h); the first chunk that holds a culprit names it, so
// the answer is the same on any number of threads. Replaces
//   for (i = 0; i < n; ++i) if (!isfinite(x[i])) return i;  return n;
size_t first_non_finite(const float* x, size_t n, ThreadPool* pool);

// x (n), every value finite -> the largest |x[i]|, 0 when n is 0.
float max_abs(const float* x, size_t n);

}  // namespace wa
