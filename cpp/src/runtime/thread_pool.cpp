// Workers sleep on a condition variable between calls. A call publishes (task, n), opens an
// entry for the new generation and wakes them; whoever joins through the entry while it is open,
// the caller included, takes task indices from one atomic counter. The caller then closes the
// entry and waits only for the workers that joined: one the OS has not scheduled never touches
// the call, so the caller never waits on the scheduler.
// The caller never blocks (in a browser it is the main thread): try_lock, then spinning on an
// atomic count. A call that feeds fewer threads (threading.h) lets only that many join.
// A finished worker spins kSpin before it sleeps, outlasting a task and the serial code between
// the calls of one library call, since waking a sleeper costs tens of µs to milliseconds
// (performance.md, "Threads").
#include "wa/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "runtime/pool_trace.h"  // empty unless WA_POOL_TRACE (the bench's pool trace)

namespace wa {

// How long a worker that ran out of tasks spins before it sleeps (see the top of this file).
constexpr std::chrono::microseconds kSpin{2000};

struct ThreadPool::State {
  std::vector<std::thread> workers;
  std::mutex mutex;
  std::condition_variable wake;  // workers: a new generation, or stop
  // Written under the mutex (release), read by spinning workers without it (acquire):
  // everything the caller set before bumping the generation is visible to them.
  std::atomic<uint64_t> generation{0};
  std::atomic<bool> stop{false};
  // The current call's entry: its generation's low 32 bits (bits 32-63), kClosed (bit 31), the
  // most workers it takes (bits 16-30) and the workers joined (bits 0-15).
  static constexpr uint64_t kClosed = uint64_t(1) << 31, kJoined = 0xffff;
  static constexpr int kLimitShift = 16;
  static constexpr size_t kMaxWorkers = (kClosed - 1) >> kLimitShift;  // what bits 16-30 hold
  std::atomic<uint64_t> entry{0};
  std::atomic<uint64_t> left{0};  // workers joined that are done with the call

  const std::function<void(size_t)>* task = nullptr;
  size_t n = 0;
  std::atomic<size_t> next{0};
  std::exception_ptr error;

  void run_tasks() {
    for (size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < n;) {
      const pool_trace::TaskScope traced(i);
      try {
        (*task)(i);
      } catch (...) {
        lock_without_blocking();  // the caller runs tasks too: it must not block here either
        if (!error) error = std::current_exception();
        mutex.unlock();
      }
    }
  }

  // Joins the call of generation gen if its entry is still open and short of workers: false if
  // it was closed (the caller is done with its tasks), has its workers, or a later call's is
  // open (gen is then not the newest).
  bool join(uint64_t gen) {
    uint64_t e = entry.load(std::memory_order_acquire);
    while ((e >> 32) == (gen & 0xffffffffu) && !(e & kClosed) &&
           (e & kJoined) < ((e & (kClosed - 1)) >> kLimitShift))
      if (entry.compare_exchange_weak(e, e + 1, std::memory_order_acq_rel,
                                      std::memory_order_acquire))
        return true;
    return false;
  }

  // Spins up to kSpin for a new generation (reading the clock every few hundred polls: it is
  // a call into JS in wasm); false if none came.
  bool spin_for_work(uint64_t seen) const {
    using Clock = std::chrono::steady_clock;
    const Clock::time_point until = Clock::now() + kSpin;
    do {
      for (int i = 0; i < 256; ++i)
        if (generation.load(std::memory_order_acquire) != seen ||
            stop.load(std::memory_order_acquire))
          return true;
    } while (Clock::now() < until);
    return false;
  }

  void worker_loop() {
    uint64_t seen = 0;
    for (;;) {
      if (!spin_for_work(seen)) {
        std::unique_lock<std::mutex> lock(mutex);
        wake.wait(lock, [&] { return stop.load() || generation.load() != seen; });
      }
      if (stop.load(std::memory_order_acquire)) return;
      seen = generation.load(std::memory_order_acquire);
      if (!join(seen)) continue;  // missed it: wait for the next one
      run_tasks();
      left.fetch_add(1, std::memory_order_release);
    }
  }

  // The caller's lock: spins instead of sleeping (see the top of this file).
  void lock_without_blocking() {
    while (!mutex.try_lock()) std::this_thread::yield();
  }
};

ThreadPool::ThreadPool(int threads) : state_(new State) {
  const int workers = static_cast<int>(
      std::min<size_t>(static_cast<size_t>(std::max(threads, 1) - 1), State::kMaxWorkers));
  state_->workers.reserve(workers);
  try {
    for (int i = 0; i < workers; ++i)
      state_->workers.emplace_back([s = state_.get()] { s->worker_loop(); });
  } catch (const std::system_error&) {
    // No more threads to be had (a single-thread wasm build has none, a threaded one only
    // its preloaded workers): run with the workers started so far. threads() tells.
  }
}

ThreadPool::~ThreadPool() {
  state_->lock_without_blocking();
  state_->stop.store(true, std::memory_order_release);
  state_->mutex.unlock();
  state_->wake.notify_all();
  for (std::thread& t : state_->workers) t.join();
}

int ThreadPool::threads() const { return static_cast<int>(state_->workers.size()) + 1; }

void ThreadPool::parallel_for(size_t n, size_t max_threads,
                              const std::function<void(size_t)>& task) {
  State& s = *state_;
  // workers to let join: one fewer than the threads the call feeds (the caller is one)
  const size_t feeds = std::min(n, max_threads);
  const size_t helpers = feeds <= 1 ? 0 : std::min(s.workers.size(), feeds - 1);
  if (log_ && n) log_->push_back({n, std::min(max_threads, s.workers.size() + 1)});
  const pool_trace::SectionScope traced(n, max_threads);
  if (helpers == 0) {
    for (size_t i = 0; i < n; ++i) {
      const pool_trace::TaskScope traced_task(i);
      task(i);
    }
    return;
  }
  s.lock_without_blocking();
  s.task = &task;
  s.n = n;
  s.next.store(0, std::memory_order_relaxed);
  s.left.store(0, std::memory_order_relaxed);
  s.error = nullptr;
  const uint64_t gen = s.generation.load(std::memory_order_relaxed) + 1;
  // open, none joined, helpers at most
  s.entry.store((gen & 0xffffffffu) << 32 | uint64_t(helpers) << State::kLimitShift,
                std::memory_order_relaxed);
  s.generation.store(gen, std::memory_order_release);
  s.mutex.unlock();
  if (helpers == s.workers.size())
    s.wake.notify_all();
  else
    for (size_t i = 0; i < helpers; ++i) s.wake.notify_one();
  s.run_tasks();
  // no task left to take: close the entry, then wait for the workers that joined
  const uint64_t joined =
      s.entry.fetch_or(State::kClosed, std::memory_order_acq_rel) & State::kJoined;
  while (s.left.load(std::memory_order_acquire) != joined) std::this_thread::yield();
  s.lock_without_blocking();  // the workers' writes to error are done; read it under the lock
  std::exception_ptr error = s.error;
  s.mutex.unlock();
  if (error) std::rethrow_exception(error);
}

void parallel_for(ThreadPool* pool, size_t n, size_t max_threads,
                  const std::function<void(size_t)>& task) {
  if (pool) {
    pool->parallel_for(n, max_threads, task);
  } else {
    for (size_t i = 0; i < n; ++i) task(i);
  }
}

}  // namespace wa
