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

// Replaces the serial loops
//   for (size_t i = 0; i < n0; ++i)
//     for (size_t j = 0; j < n1; ++j) task(i, j);
// as parallel_for(pool, n0·n1, max_threads, ...): task t is (t / n1, t % n1), the indices in
// row-major order, the last fastest. n0·n1 must fit in size_t.
template <class Task>
void parallel_for_2d(ThreadPool* pool, size_t n0, size_t n1, size_t max_threads, Task&& task) {
  parallel_for(pool, n0 * n1, max_threads, [&](size_t t) { task(t / n1, t % n1); });
}

// Replaces the serial loops
//   for (size_t i = 0; i < n0; ++i)
//     for (size_t j = 0; j < n1; ++j)
//       for (size_t l = 0; l < n2; ++l) task(i, j, l);
// as parallel_for(pool, n0·n1·n2, max_threads, ...), row-major as parallel_for_2d.
template <class Task>
void parallel_for_3d(ThreadPool* pool, size_t n0, size_t n1, size_t n2, size_t max_threads,
                     Task&& task) {
  parallel_for(pool, n0 * n1 * n2, max_threads,
               [&](size_t t) { task(t / (n1 * n2), t / n2 % n1, t % n2); });
}

}  // namespace wa
