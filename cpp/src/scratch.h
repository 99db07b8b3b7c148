// Per-thread scratch buffers, grown on demand and kept for the thread's life, so the hot
// paths allocate nothing once warm. Each slot has one user at a time on a given thread.
#pragma once

#include <cstddef>

namespace wa {

enum class ScratchSlot { gemm_a, gemm_b, attention_scores, packed_kv, count };

// At least `floats` floats for this thread and slot; valid until the next call for that slot.
float* thread_scratch(ScratchSlot slot, size_t floats);

}  // namespace wa
