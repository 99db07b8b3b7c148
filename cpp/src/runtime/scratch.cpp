// Each thread's slots live in a thread_local Scratch that registers itself in one list, so
// that release_large_scratch() on the calling thread can reach the workers' buffers too.
#include "runtime/scratch.h"

#include <algorithm>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace wa {
namespace {

struct Buffer {
  std::unique_ptr<float[]> data;  // uninitialized: every user writes before it reads
  size_t floats = 0;
};

struct Scratch;
std::mutex registry_mutex;
std::vector<Scratch*> registry;  // every live thread's scratch

// Spins instead of sleeping: the caller may be a browser's main thread (see thread_pool.cpp).
std::unique_lock<std::mutex> lock_registry() {
  std::unique_lock<std::mutex> lock(registry_mutex, std::defer_lock);
  while (!lock.try_lock()) std::this_thread::yield();
  return lock;
}

struct Scratch {
  Buffer slots[static_cast<size_t>(ScratchSlot::count)];
  Scratch() {
    auto lock = lock_registry();
    registry.push_back(this);
  }
  ~Scratch() {
    auto lock = lock_registry();
    registry.erase(std::find(registry.begin(), registry.end(), this));
  }
};

}  // namespace

float* thread_scratch(ScratchSlot slot, size_t floats) {
  thread_local Scratch scratch;
  Buffer& buffer = scratch.slots[static_cast<size_t>(slot)];
  if (buffer.floats < floats) {
    buffer.data.reset();  // free first: the old and new blocks need not fit together
    buffer.floats = 0;    // and stay consistent if the new one cannot be had
    buffer.data.reset(new float[floats]);
    buffer.floats = floats;
  }
  return buffer.data.get();
}

void release_large_scratch() {
  auto lock = lock_registry();
  for (Scratch* scratch : registry) {
    for (Buffer& buffer : scratch->slots) {
      if (buffer.floats * sizeof(float) > kScratchKeepBytes) {
        buffer.data.reset();
        buffer.floats = 0;
      }
    }
  }
}

}  // namespace wa
