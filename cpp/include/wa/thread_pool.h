// A persistent pool of worker threads, started once and reused by every call.
//
// Everywhere in this library a null ThreadPool* means "run serially on the caller".
// Work is split into tasks whose results do not depend on which thread runs them,
// so outputs are bitwise identical for 1 and N threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace wa {

class ThreadPool {
 public:
  // threads: how many threads run tasks, the caller included (1 = no workers).
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const;

  // Replaces the serial loop
  //   for (size_t i = 0; i < n; ++i) task(i);
  // Tasks run on the caller and the workers in any order and return when all are done; at
  // most min(n, max_threads) threads run them, the caller included (the other workers are
  // neither woken nor waited for). An exception thrown by a task is rethrown here (the first
  // one, after all tasks end). Not re-entrant: a task must not call parallel_for on the same
  // pool.
  void parallel_for(size_t n, size_t max_threads, const std::function<void(size_t)>& task);
  void parallel_for(size_t n, const std::function<void(size_t)>& task) {
    parallel_for(n, SIZE_MAX, task);
  }

  // A call as parallel_for saw it: its tasks, and the threads it was given to run them
  // (min(max_threads, threads()): the caller included, more than the tasks maybe).
  struct Call {
    size_t tasks, threads;
  };
  // Appends every later call to *log (on the caller's thread, before it runs); null stops.
  // For tests and forensics: how an entry point splits its work at this pool's size.
  void record_calls(std::vector<Call>* log) { log_ = log; }

 private:
  struct State;
  std::unique_ptr<State> state_;
  std::vector<Call>* log_ = nullptr;
};

// pool->parallel_for(n, max_threads, task), or the serial loop itself when pool is null.
void parallel_for(ThreadPool* pool, size_t n, size_t max_threads,
                  const std::function<void(size_t)>& task);
inline void parallel_for(ThreadPool* pool, size_t n, const std::function<void(size_t)>& task) {
  parallel_for(pool, n, SIZE_MAX, task);
}

}  // namespace wa
