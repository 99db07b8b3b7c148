// x - x is 0 for a finite x and NaN for NaN and ±inf: one subtraction and one unordered
// compare per four values, checked a block at a time; the scalar scan only locates the
// first culprit in a block that has one. Over a pool, each chunk is scanned so by one task and
// the lowest chunk with a culprit answers. The largest magnitude: |x| and a max per four values.
#include "wa/finite.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "runtime/threading.h"
#include "simd.h"
#include "tuning.h"

namespace wa {

size_t first_non_finite(const float* x, size_t n) {
  using namespace simd;
  constexpr size_t kBlock = 64;
  size_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    f32x4 bad = splat(0.0f);
    for (size_t j = i; j < i + kBlock; j += 4) {
      const f32x4 v = load(x + j);
      bad = bit_or(bad, nan_lanes(sub(v, v)));
    }
    if (any_lane(bad)) break;
  }
  for (; i < n; ++i)
    if (!std::isfinite(x[i])) return i;
  return n;
}

size_t first_non_finite(const float* x, size_t n, ThreadPool* pool) {
  const size_t threads = threads_for(pool, static_cast<double>(n));
  if (threads <= 1) return first_non_finite(x, n);
  // chunks of whole 64-value blocks, kTasksPerThread per thread
  const size_t tasks = threads * kTasksPerThread;
  const size_t per = ((n + tasks - 1) / tasks + 63) / 64 * 64;
  const size_t chunks = (n + per - 1) / per;
  std::vector<size_t> found(chunks);  // chunk c: its first culprit's index, or n
  parallel_for(pool, chunks, threads, [&](size_t c) {
    const size_t begin = c * per, len = std::min(per, n - begin);
    const size_t i = first_non_finite(x + begin, len);
    found[c] = i == len ? n : begin + i;
  });
  for (size_t i : found)
    if (i != n) return i;
  return n;
}

float max_abs(const float* x, size_t n) {
  using namespace simd;
  f32x4 m = splat(0.0f);
  size_t i = 0;
  for (; i + 4 <= n; i += 4) m = max(m, abs(load(x + i)));
  float out = hmax(m);
  for (; i < n; ++i) out = std::max(out, std::fabs(x[i]));
  return out;
}

}  // namespace wa
