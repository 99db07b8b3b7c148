// The kernels of float32 kv panels (packed_kv.h): both products are the GEMM's, on the panels
// as they lie (they are its packed b operands).
#include <algorithm>

#include "gemm/gemm_packed.h"
#include "kv/packed_kv.h"

namespace wa {

namespace {

// q (rows,d_k), keys [j0, j0 + cols) -> s (rows,cols) = q·kᵀ
void f32_scores(const PackedKV& kv, const float* q, size_t ldq, size_t rows, size_t j0, size_t cols,
                float* s, size_t lds) {
  gemm_packed_b(Transpose::no, rows, cols, kv.d_k, q, ldq,
                packed_b_block(static_cast<const float*>(kv.kt), kv.d_k, 0, j0 - kv.k0), kv.d_k, s,
                lds, false);
}

// p (rows,cols), v rows [j0, j0 + cols) -> acc (rows,d_v) [+]= p·v, a v block (packed_kv.h) at
// a time
void f32_weighted_values(const PackedKV& kv, const float* p, size_t ldp, size_t rows, size_t j0,
                         size_t cols, float* acc, size_t ld_acc, bool accumulate) {
  const float* v = static_cast<const float*>(kv.v);
  for (size_t j = j0; j < j0 + cols;) {
    const size_t in = (j - kv.k0) % kKeyBlock;  // key j's place in its block
    const PackedVBlock b = packed_v_block(j - kv.k0, kv.v_stride, kv.d_v);
    const size_t n = std::min(j0 + cols - j, b.keys - in);
    gemm_packed_b(Transpose::no, rows, kv.d_v, n, p + (j - j0), ldp,
                  packed_b_block(v + b.at, b.keys, in, 0), b.keys, acc, ld_acc,
                  accumulate || j > j0);
    j += n;
  }
}

}  // namespace

extern const KvKernels kKvF32Kernels;
const KvKernels kKvF32Kernels{"float32",          3.4028235e38f,        packed_kv_floats,
                              packed_kv_v_offset, packed_kv_write_rows, packed_kv_read_rows,
                              f32_scores,         f32_weighted_values};

}  // namespace wa
