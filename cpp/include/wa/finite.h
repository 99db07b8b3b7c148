// Finding non-finite values fast, for validating inputs and results at the boundary.
#pragma once

#include <cstddef>

namespace wa {

// x (n) -> the index of the first NaN or ±inf, or n when every value is finite.
size_t first_non_finite(const float* x, size_t n);

}  // namespace wa
