#include "wa/build_info.h"

#include "simd.h"

namespace wa {

const char* simd_isa() {
#if defined(WA_RELAXED_SIMD)
  return "relaxed-simd";  // the GEMM kernel's fused multiply-adds; the rest is SIMD128
#else
  return WA_SIMD_NAME;
#endif
}

bool threads_available() {
#if defined(__EMSCRIPTEN__) && !defined(__EMSCRIPTEN_PTHREADS__)
  return false;
#else
  return true;
#endif
}

}  // namespace wa
