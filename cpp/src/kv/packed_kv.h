// Keys and values as attention reads them (internal), the one place their layout is spelled
// out: what a kv head's panels hold, how k and v become them (pack), how a cache writes rows
// into them (append) and copies them out (read back), and where a head's panels start in a
// run of heads (locate). The panels' element type comes with how a head of it is sized,
// written and read back, and the two products attention runs on it (KvKernels: scores against
// kᵀ, weights times v), looked up once per call, as ggml's
// type_traits: a new element type is one KvType, one kernel file and its line in
// kv_types.def; the tests sweep kKvTypes, every type of the count.
//
// One kv head holds keys [k0, k0 + keys) of an attention's n_k keys (k0 a multiple of kNR) in
// room for `stride` keys (a cache's capacity, else the keys held), as two GEMM b operands
// (gemm_kernels.h, gemm_packed.h), zero past the last key or column:
//   kᵀ  (d_k, stride) packed with k = d_k: one panel per kNR keys;
//       key j, element t at  (j / kNR)·kNR·d_k + t·kNR + j % kNR
//   v   (stride, d_v) after the kᵀ panels, in blocks of K = kKeyBlock keys one after another
//       (the last block the keys left), each block (keys_j, d_v) packed with k = keys_j: one
//       panel per kNR columns; key j, column c at
//       v_offset + (j / K)·K·D + (c / kNR)·kNR·keys_j + (j % K)·kNR + c % kNR
//       D = d_v rounded up to kNR, keys_j = min(K, stride − j / K·K) the keys of j's block
// (j counted from k0). A run of keys reads its kᵀ and its v each as one stream of consecutive
// bytes, the order a core's prefetchers follow: a decode reads the cache at its read speed
// (performance.md). Those are float32 panels; a compressed type (a cache's, KvType in
// wa/kv_cache.h) keeps the same panels of its own elements and lays out its scales beside
// them in its own file (kv_i8.cpp; kv_f16.cpp keeps float32's panels in halves).
#pragma once

#include <array>
#include <cstddef>

#include "tuning.h"
#include "wa/attention.h"
#include "wa/kv_cache.h"

namespace wa {

class ThreadPool;

// Every element type, KvType's values [0, count), for the tests that sweep them.
inline constexpr std::array<KvType, kKvTypeCount> kKvTypes = [] {
  std::array<KvType, kKvTypeCount> types{};
  for (size_t t = 0; t < kKvTypeCount; ++t) types[t] = static_cast<KvType>(t);
  return types;
}();

// Where key j's element t of kᵀ and its column c of v lie in a head's panels, in elements.
inline size_t packed_kt_at(size_t j, size_t t, size_t d_k) {
  return j / kernels::kNR * kernels::kNR * d_k + t * kernels::kNR + j % kernels::kNR;
}
// The v block holding key j (of a head with room for `stride` keys): where it starts, in
// elements from v's start, and its keys (its panels' k).
struct PackedVBlock {
  size_t at, keys;
};
inline PackedVBlock packed_v_block(size_t j, size_t stride, size_t d_v) {
  const size_t j0 = j / kKeyBlock * kKeyBlock;
  const size_t cols = (d_v + kernels::kNR - 1) / kernels::kNR * kernels::kNR;
  return {j0 * cols, stride - j0 < kKeyBlock ? stride - j0 : kKeyBlock};
}
inline size_t packed_v_at(size_t j, size_t c, size_t stride, size_t d_v) {
  const PackedVBlock b = packed_v_block(j, stride, d_v);
  return b.at + c / kernels::kNR * kernels::kNR * b.keys + j % kKeyBlock * kernels::kNR +
         c % kernels::kNR;
}

// One kv head's panels, keys [k0, k0 + keys) of n_k, as above.
struct PackedKV {
  const void* kt;  // kᵀ panels (and what the type keeps beside them)
  const void* v;   // v panels (and what the type keeps beside them)
  size_t n_k, d_k, d_v;
  size_t k0 = 0, v_stride = 0;  // first key held; the room for keys (v's packed k)
  KvType type = KvType::f32;
};

// Floats of one head's float32 panels with room for `stride` keys, and where its v panels
// start.
size_t packed_kv_floats(size_t stride, size_t d_k, size_t d_v);
size_t packed_kv_v_offset(size_t stride, size_t d_k);

// ---- pack ----

// k (n_k,d_k), v (n_k,d_v) -> packed into buffer (packed_kv_floats(n_k, d_k, d_v) floats).
// pool spreads the panels (null: all on the caller).
PackedKV pack_kv(ConstMatrix k, ConstMatrix v, float* buffer, ThreadPool* pool);
// The same packing in units (pack_b_unit: kᵀ's, then each v block's), for packing several heads in one
// parallel call: pack_kv_units(keys, d_k, d_v) units, unit u of keys [k0, k0 + keys) written by
// pack_kv_unit; then packed_kv_keys gives the PackedKV of the buffer.
size_t pack_kv_units(size_t keys, size_t d_k, size_t d_v);
void pack_kv_unit(ConstMatrix k, ConstMatrix v, size_t k0, size_t keys, float* buffer, size_t u);
PackedKV packed_kv_keys(size_t n_k, size_t k0, size_t keys, size_t d_k, size_t d_v,
                        const float* buffer);
// Keys [k0, k0 + keys) of k (n_k,d_k), v (n_k,d_v) -> packed into buffer
// (packed_kv_floats(keys, d_k, d_v)); k0 a multiple of kNR.
PackedKV pack_kv_keys(ConstMatrix k, ConstMatrix v, size_t k0, size_t keys, float* buffer,
                      ThreadPool* pool);

// ---- append and read back (a cache's rows, in place; float32 panels: KvKernels has every
// type's) ----

// Keys [j0, j0 + n) of one head's panels (room for `stride` keys) <- rows of k (n,d_k), row
// stride ldk, and v (n,d_v), row stride ldv. Writes only those keys' lanes.
void packed_kv_write_rows(float* head, size_t stride, size_t d_k, size_t d_v, size_t j0, size_t n,
                          const float* k, size_t ldk, const float* v, size_t ldv);
// Keys [0, n) of one head's panels -> k (n,d_k) row stride ldk, v (n,d_v) row stride ldv;
// either may be null (not wanted).
void packed_kv_read_rows(const float* head, size_t stride, size_t d_k, size_t d_v, size_t n,
                         float* k, size_t ldk, float* v, size_t ldv);

// ---- locate ----

// Heads (b, g) one after another from base, head_floats = kv_kernels(type).head_floats(capacity,
// d_k, d_v) apart, keys [0, n_k) of each filled: what a KvCache holds.
struct PackedHeads {
  const float* base;
  size_t kv_heads, capacity, head_floats;
  KvType type = KvType::f32;
  PackedKV at(size_t b, size_t g, size_t n_k, size_t d_k, size_t d_v) const;
};

// ---- the element type's storage and kernels ----

// How a type keeps a head (room for `stride` keys, in floats: a cache's storage unit) and
// the two products of attention over its panels; j0 counts keys of the attention's n_k (a
// multiple of kNR, inside the keys held).
struct KvKernels {
  const char* name;
  // the largest magnitude it holds (its scales' or elements' range)
  float max_abs;
  // floats of one head, and where its v part starts
  size_t (*head_floats)(size_t stride, size_t d_k, size_t d_v);
  size_t (*v_offset)(size_t stride, size_t d_k);
  // as packed_kv_write_rows and packed_kv_read_rows (float rows in and out)
  void (*write_rows)(float* head, size_t stride, size_t d_k, size_t d_v, size_t j0, size_t n,
                     const float* k, size_t ldk, const float* v, size_t ldv);
  void (*read_rows)(const float* head, size_t stride, size_t d_k, size_t d_v, size_t n, float* k,
                    size_t ldk, float* v, size_t ldv);
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
