// Per-thread scratch buffers, grown on demand, so the hot paths allocate nothing once warm.
// Each slot has one user at a time on a given thread. Buffers up to kScratchKeepBytes are
// kept for the thread's life; larger ones are given back by release_large_scratch(), which
// the bindings call when each call ends, so one huge call does not hold its scratch forever.
#pragma once

#include <cstddef>

namespace wa {

// attention_rows: an online softmax's per-row state and stacked query rows;
// attention_partials: a split-key decode's partial results (attention/attention_heads.cpp);
// kv_operand: the int16 query rows of an int8 cache's scores (kv_i8.cpp).
enum class ScratchSlot {
  gemm_a,
  gemm_b,
  attention_scores,
  attention_rows,
  attention_partials,
  packed_kv,
  kv_operand,
  count
};

// What a thread keeps between calls, per slot: 1 MiB covers the warm working set of
// ordinary shapes (a 4096-key packed k,v of d 64 is 2 MiB and is re-made per call).
constexpr size_t kScratchKeepBytes = size_t(1) << 20;

// At least `floats` floats for this thread and slot; valid until the next call for that
// slot on this thread, or until release_large_scratch().
float* thread_scratch(ScratchSlot slot, size_t floats);

// Frees every thread's buffers larger than kScratchKeepBytes. Only between calls: no other
// thread may be using its scratch (the pool's workers are idle once parallel_for returned).
void release_large_scratch();

}  // namespace wa
