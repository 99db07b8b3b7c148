// The pool's trace (pool_trace.h): compiled into the bench-only modules alone, with
// WA_POOL_TRACE defined.
#include "runtime/pool_trace.h"

#ifdef WA_POOL_TRACE

#include <atomic>
#include <chrono>
#include <utility>

namespace wa::pool_trace {
namespace {

std::vector<Section> sections;  // written by the pool's caller only
Section* current = nullptr;     // the open section; its tasks are written by whoever runs them
std::atomic<int> next_thread{0};

int this_thread_id() {
  thread_local const int id = next_thread.fetch_add(1, std::memory_order_relaxed);
  return id;
}

}  // namespace

double now_us() {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The section is set up before the caller publishes the call to the workers: its release of
// the generation makes current and the task slots visible to them.
SectionScope::SectionScope(size_t n, size_t max_threads) {
  sections.emplace_back();
  Section& s = sections.back();
  s.caller = this_thread_id();
  s.max_threads = max_threads;
  s.tasks.resize(n);
  current = &s;
  s.begin_us = now_us();
}

// Runs after the caller waited for every worker that joined: their task records are done.
SectionScope::~SectionScope() {
  current->end_us = now_us();
  current = nullptr;
}

TaskScope::TaskScope(size_t i) : task_(&current->tasks[i]) {
  task_->thread = this_thread_id();
  task_->start_us = now_us();
}

TaskScope::~TaskScope() { task_->end_us = now_us(); }

std::vector<Section> take() { return std::exchange(sections, {}); }

}  // namespace wa::pool_trace

#endif
