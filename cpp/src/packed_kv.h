// Keys and values as attention reads them (internal), the one place their layout is spelled
// out: what a kv head's panels hold, how k and v become them (pack), how a cache writes rows
// into them (append) and copies them out (read back), and where a head's panels start in a
// run of heads (locate). The panels' element type comes with the two products attention runs
// on them (KvKernels: scores against kᵀ, weights times v), looked up once per call, as ggml's
// type_traits: a new element type is one KvType, one kernel file and one entry in kKvTypes,
// which the kernel test sweeps.
//
// One kv head holds keys [k0, k0 + keys) of an attention's n_k keys (k0 a multiple of kNR) in
// room for `stride` keys (a cache's capacity, else the keys held), as two GEMM b operands
// (gemm_kernels.h, gemm_packed.h), zero past the last key or column:
//   kᵀ  (d_k, stride) packed with k = d_k: one panel per kNR keys;
//       key j, element t at  (j / kNR)·kNR·d_k + t·kNR + j % kNR
//   v   (stride, d_v) packed with k = stride: one panel per kNR columns, after the kᵀ panels;
//       key j, column c at   v_offset + (c / kNR)·kNR·stride + j·kNR + c % kNR
// (j counted from k0).
#pragma once

#include <cstddef>

#include "tuning.h"
#include "wa/attention.h"

namespace wa {

class ThreadPool;

// The panels' element type.
enum class KvType { f32 };
// Every element type, for the tests that sweep them.
inline constexpr KvType kKvTypes[] = {KvType::f32};

// One kv head's panels, keys [k0, k0 + keys) of n_k, as above.
struct PackedKV {
  const float* kt;  // kᵀ panels
  const float* v;   // v panels
  size_t n_k, d_k, d_v;
  size_t k0 = 0, v_stride = 0;  // first key held; the room for keys (v's packed k)
  KvType type = KvType::f32;
};

// Floats of one head's panels with room for `stride` keys, and where its v panels start.
size_t packed_kv_floats(size_t stride, size_t d_k, size_t d_v);
size_t packed_kv_v_offset(size_t stride, size_t d_k);

// ---- pack ----

// k (n_k,d_k), v (n_k,d_v) -> packed into buffer (packed_kv_floats(n_k, d_k, d_v) floats).
// pool spreads the panels (null: all on the caller).
PackedKV pack_kv(ConstMatrix k, ConstMatrix v, float* buffer, ThreadPool* pool);
// Keys [k0, k0 + keys) of k (n_k,d_k), v (n_k,d_v) -> packed into buffer
// (packed_kv_floats(keys, d_k, d_v)); k0 a multiple of kNR.
PackedKV pack_kv_keys(ConstMatrix k, ConstMatrix v, size_t k0, size_t keys, float* buffer,
                      ThreadPool* pool);

// ---- append and read back (a cache's rows, in place) ----

// Keys [j0, j0 + n) of one head's panels (room for `stride` keys) <- rows of k (n,d_k), row
// stride ldk, and v (n,d_v), row stride ldv. Writes only those keys' lanes.
void packed_kv_write_rows(float* head, size_t stride, size_t d_k, size_t d_v, size_t j0, size_t n,
                          const float* k, size_t ldk, const float* v, size_t ldv);
// Keys [0, n) of one head's panels -> k (n,d_k) row stride ldk, v (n,d_v) row stride ldv;
// either may be null (not wanted).
void packed_kv_read_rows(const float* head, size_t stride, size_t d_k, size_t d_v, size_t n,
                         float* k, size_t ldk, float* v, size_t ldv);

// ---- locate ----

// Heads (b, g) one after another from base, head_floats = packed_kv_floats(capacity, d_k, d_v)
// apart, keys [0, n_k) of each filled: what a KvCache holds.
struct PackedHeads {
  const float* base;
  size_t kv_heads, capacity, head_floats;
  PackedKV at(size_t b, size_t g, size_t n_k, size_t d_k, size_t d_v) const;
};

// ---- the element type's kernels ----

// The two products of attention over a head's panels; j0 counts keys of the attention's n_k
// (a multiple of kNR, inside the keys held).
struct KvKernels {
  const char* name;
  // q (rows,d_k) row stride ldq, keys [j0, j0 + cols) -> s (rows,cols) = q·kᵀ, row stride lds
  void (*scores)(const PackedKV& kv, const float* q, size_t ldq, size_t rows, size_t j0,
                 size_t cols, float* s, size_t lds);
  // p (rows,cols) row stride ldp, keys [j0, j0 + cols) -> acc (rows,d_v) [+]= p·v, row
  // stride ld_acc (accumulate: add to acc instead of overwriting it)
  void (*weighted_values)(const PackedKV& kv, const float* p, size_t ldp, size_t rows, size_t j0,
                          size_t cols, float* acc, size_t ld_acc, bool accumulate);
};
const KvKernels& kv_kernels(KvType type);

}  // namespace wa
