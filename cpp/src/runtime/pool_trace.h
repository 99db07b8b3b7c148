// The pool's trace: a record of every parallel section (one ThreadPool::parallel_for) and of
// each of its tasks, for the bench's scaling model (scripts/bench/scaling_model.mjs), which
// schedules a 1-thread trace's tasks onto T threads. Compiled in only where WA_POOL_TRACE is
// defined: the bench-only modules of CMakeLists.txt ("pool trace"). Everywhere else the two
// scopes below are empty and the pool is the shipped one.
//
//   SectionScope section(n, max_threads);  // in parallel_for, around the whole call: its n
//                                          // tasks, the threads it may use, its wall
//   TaskScope task(i);        // around task i, on whichever thread runs it
//
// Times are steady_clock microseconds (in Node's wasm one clock for every thread). Only one
// thread calls the pool at a time (it is not re-entrant), so sections never overlap.
#pragma once

#include <cstddef>
#include <vector>

namespace wa::pool_trace {

#ifdef WA_POOL_TRACE

struct Task {
  double start_us = 0, end_us = 0;
  int thread = -1;  // a small id per thread, in the order threads first ran a task
};
struct Section {
  double begin_us = 0, end_us = 0;  // the caller entering and leaving parallel_for
  int caller = -1;                  // the caller's thread id
  size_t max_threads = 0;           // parallel_for's max_threads: the most threads it may use
  std::vector<Task> tasks;          // task i at index i
};

class SectionScope {
 public:
  SectionScope(size_t n, size_t max_threads);
  ~SectionScope();
  SectionScope(const SectionScope&) = delete;
  SectionScope& operator=(const SectionScope&) = delete;
};

class TaskScope {
 public:
  explicit TaskScope(size_t i);
  ~TaskScope();
  TaskScope(const TaskScope&) = delete;
  TaskScope& operator=(const TaskScope&) = delete;

 private:
  Task* task_;
};

// The sections recorded since the last take(), oldest first; the record starts empty again.
std::vector<Section> take();

// The trace's clock, in µs: the bench reads it around a call to place the call's serial
// stretches (before, between and after its sections).
double now_us();

#else

struct SectionScope {
  SectionScope(size_t, size_t) {}
};
struct TaskScope {
  explicit TaskScope(size_t) {}
};

#endif

}  // namespace wa::pool_trace
