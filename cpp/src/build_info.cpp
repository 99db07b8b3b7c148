#include "wa/build_info.h"

#include "simd.h"

namespace wa {

const char* simd_isa() { return WA_SIMD_NAME; }

bool threads_available() {
#if defined(__EMSCRIPTEN__) && !defined(__EMSCRIPTEN_PTHREADS__)
  return false;
#else
  return true;
#endif
}

}  // namespace wa
