// When threads pay: the one rule every entry point uses to decide between its pool and the
// caller alone, and how many of the pool's threads a call wakes. Results never depend on it
// (every split is thread-count independent); only speed does.
#pragma once

#include <algorithm>

#include "tuning.h"  // kSerialFlops
#include "wa/thread_pool.h"

namespace wa {

// pool, or null (serial on the caller) for work of fewer than kSerialFlops multiply-adds.
inline ThreadPool* pool_for(ThreadPool* pool, double multiply_adds) {
  return multiply_adds < kSerialFlops ? nullptr : pool;
}

// Threads that work of multiply_adds keeps busy, the caller included: 1 without a pool or
// below kSerialFlops, then one per kSerialFlops / 2 (each thread woken gets at least half a 64³
// product, about as long as waking and joining a spinning worker: tuning.h), at most the
// pool's. Pass it to parallel_for, and size the tasks for it. A memory-bound pass (a scan, a
// bias add) counts its elements as multiply-adds: each costs more than a GEMM's, so it wakes
// fewer threads than its time would pay for, never more. So threads: 'auto' (the cores, up
// to 16: web/lib/loader.js) gives a small call no more threads than a smaller pool would;
// whether a large one is never slower on 16 threads than on fewer, the tasks slowing down as
// more cores share the caches and memory, only a 16-core run can say
// (scripts/bench/device_scaling.sh reports 'auto' against every smaller count).
inline size_t threads_for(ThreadPool* pool, double multiply_adds) {
  if (!pool || multiply_adds < kSerialFlops) return 1;
  const double feeds = std::min(multiply_adds / (kSerialFlops / 2), 1e6);
  return std::max<size_t>(1, std::min(static_cast<size_t>(pool->threads()), size_t(feeds)));
}

}  // namespace wa
