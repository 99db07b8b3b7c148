#include "scratch.h"

#include <vector>

namespace wa {

float* thread_scratch(ScratchSlot slot, size_t floats) {
  thread_local std::vector<float> slots[static_cast<size_t>(ScratchSlot::count)];
  std::vector<float>& buffer = slots[static_cast<size_t>(slot)];
  if (buffer.size() < floats) buffer.resize(floats);
  return buffer.data();
}

}  // namespace wa
