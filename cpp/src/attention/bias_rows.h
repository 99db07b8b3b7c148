// The projections' bias passes (multi_head_attention.cpp), split over rows or columns for the
// threads their size feeds (threading.h), so that they do not stay on the caller while the
// GEMMs around them run on every thread. Each element is computed by one task in the order the
// serial loop uses, so the results are the same on any number of threads.
#pragma once

#include <cstddef>

#include "wa/thread_pool.h"

namespace wa {

// c (rows,cols) += bias (cols) on every row; no-op for a null bias. Replaces
//   for (r = 0; r < rows; ++r) for (j = 0; j < cols; ++j) c[r·cols + j] += bias[j]
// in tasks of whole rows.
void add_bias_rows(float* c, size_t rows, size_t cols, const float* bias, ThreadPool* pool);

// Σ over rows: m (rows,cols) -> sums (cols), rows added in order; no-op for a null sums.
// Replaces
//   sums = 0; for (r = 0; r < rows; ++r) for (j = 0; j < cols; ++j) sums[j] += m[r·cols + j]
// in tasks of whole columns (each column's sum is one task's, in row order).
void column_sums(const float* m, size_t rows, size_t cols, float* sums, ThreadPool* pool);

}  // namespace wa
