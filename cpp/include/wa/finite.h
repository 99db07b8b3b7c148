// Finding non-finite values fast, and the largest magnitude, for validating inputs and
// results at the boundary.
#pragma once

#include <cstddef>

namespace wa {

// x (n) -> the index of the first NaN or ±inf, or n when every value is finite.
size_t first_non_finite(const float* x, size_t n);

// x (n), every value finite -> the largest |x[i]|, 0 when n is 0.
float max_abs(const float* x, size_t n);

}  // namespace wa
