// The serial unit of attention work that the thread pool spreads: a block of query rows.
#pragma once

#include <cstddef>

#include "wa/attention.h"

namespace wa {

// Query rows per task. Small enough to give two threads several tasks at n_q = 64, large
// enough that packing k and v for the block stays a few percent of its work.
constexpr size_t kAttentionRowBlock = 32;

// Rows [r0,r1) of attention_forward(q, k, v, out, mask, trace), on the calling thread.
// trace, when set, points at the full (n_q,n_k) matrices of this attention.
void attention_rows(ConstMatrix q, ConstMatrix k, ConstMatrix v, Matrix out,
                    const ScoreMask& mask, size_t r0, size_t r1, const AttentionTrace* trace);

}  // namespace wa
