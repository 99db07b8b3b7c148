// The bias passes of bias_rows.h. Both are memory-bound (one add per element read), so their
// thread count comes from the elements as if each were a multiply-add: fewer threads than the
// same count of a GEMM's multiply-adds would get, never more than the elements pay for.
#include "attention/bias_rows.h"

#include <algorithm>

#include "runtime/threading.h"
#include "tuning.h"

namespace wa {
namespace {

// Columns per task at least: a 64-byte cache line of floats, so no two tasks write one line.
constexpr size_t kMinColumns = 16;

// c rows [r0, r1) += bias
void add_bias(float* c, size_t r0, size_t r1, size_t cols, const float* bias) {
  for (size_t r = r0; r < r1; ++r)
    for (size_t j = 0; j < cols; ++j) c[r * cols + j] += bias[j];
}

// sums [j0, j1) = Σ over rows of m's columns j0..j1-1, rows in order
void sum_columns(const float* m, size_t rows, size_t cols, size_t j0, size_t j1, float* sums) {
  std::fill(sums + j0, sums + j1, 0.0f);
  for (size_t r = 0; r < rows; ++r)
    for (size_t j = j0; j < j1; ++j) sums[j] += m[r * cols + j];
}

}  // namespace

void add_bias_rows(float* c, size_t rows, size_t cols, const float* bias, ThreadPool* pool) {
  if (!bias || !rows || !cols) return;
  const size_t threads = threads_for(pool, static_cast<double>(rows) * cols);
  if (threads <= 1) return add_bias(c, 0, rows, cols, bias);
  const size_t per = (rows + threads * kTasksPerThread - 1) / (threads * kTasksPerThread);
  parallel_for(pool, (rows + per - 1) / per, threads,
               [&](size_t t) { add_bias(c, t * per, std::min(rows, (t + 1) * per), cols, bias); });
}

void column_sums(const float* m, size_t rows, size_t cols, float* sums, ThreadPool* pool) {
  if (!sums) return;
  const size_t threads =
      cols < 2 * kMinColumns ? 1 : threads_for(pool, static_cast<double>(rows) * cols);
  if (threads <= 1) return sum_columns(m, rows, cols, 0, cols, sums);
  // a whole number of kMinColumns: no two tasks write one cache line of sums
  const size_t share = (cols + threads * kTasksPerThread - 1) / (threads * kTasksPerThread);
  const size_t per = (share + kMinColumns - 1) / kMinColumns * kMinColumns;
  parallel_for(pool, (cols + per - 1) / per, threads, [&](size_t t) {
    sum_columns(m, rows, cols, t * per, std::min(cols, (t + 1) * per), sums);
  });
}

}  // namespace wa
