// What this build of the library is: its vector instruction set, for logs and the page.
#pragma once

namespace wa {

// "relaxed-simd" (wasm SIMD128 + the relaxed GEMM kernel), "simd128", "sse2" or "scalar":
// what the vector code compiles to in this build.
const char* simd_isa();

// Whether this build can start threads at all (false in the single-thread wasm build).
bool threads_available();

}  // namespace wa
