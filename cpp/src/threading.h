// When threads pay: the one rule every entry point uses to decide between its pool and the
// caller alone. Results never depend on it (every split is thread-count independent); only
// speed does.
#pragma once

#include "tuning.h"  // kSerialFlops
#include "wa/thread_pool.h"

namespace wa {

// pool, or null (serial on the caller) for work of fewer than kSerialFlops multiply-adds.
inline ThreadPool* pool_for(ThreadPool* pool, double multiply_adds) {
  return multiply_adds < kSerialFlops ? nullptr : pool;
}

}  // namespace wa
