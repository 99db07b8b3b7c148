// The panel layout of packed_kv.h: pack, append, read back, locate, and the table of element
// types' kernels.
#include "kv/packed_kv.h"

#include <algorithm>
#include <array>
#include <stdexcept>
#include <string>

#include "gemm/gemm_packed.h"
#include "runtime/sizes.h"
#include "runtime/threading.h"
#include "wa/thread_pool.h"

namespace wa {

size_t packed_kv_floats(size_t stride, size_t d_k, size_t d_v) {
  return checked_sum({packed_b_floats(d_k, stride), packed_b_floats(stride, d_v)});
}

size_t packed_kv_v_offset(size_t stride, size_t d_k) { return packed_b_floats(d_k, stride); }

namespace {

// Packing units of v (keys,d_v) per full block of kKeyBlock keys.
size_t v_block_units(size_t d_v) { return pack_b_units(kKeyBlock, d_v); }

}  // namespace

PackedKV pack_kv(ConstMatrix k, ConstMatrix v, float* buffer, ThreadPool* pool) {
  const size_t n_k = k.rows, d_k = k.cols, d_v = v.cols;
  const size_t units = pack_kv_units(n_k, d_k, d_v);
  const size_t threads = pool ? static_cast<size_t>(pool->threads()) : 1;
  const size_t tasks = std::min(units, threads == 1 ? 1 : kTasksPerThread * threads);
  // for (u = 0; u < units; ++u) pack unit u; in tasks of units / tasks consecutive units
  parallel_for(pool, tasks, threads, [&](size_t t) {
    for (size_t u = t * units / tasks; u < (t + 1) * units / tasks; ++u)
      pack_kv_unit(k, v, 0, n_k, buffer, u);
  });
  return packed_kv_keys(n_k, 0, n_k, d_k, d_v, buffer);
}

size_t pack_kv_units(size_t keys, size_t d_k, size_t d_v) {
  const size_t full = keys / kKeyBlock, rest = keys % kKeyBlock;
  return pack_b_units(d_k, keys) + full * v_block_units(d_v) + (rest ? pack_b_units(rest, d_v) : 0);
}

void pack_kv_unit(ConstMatrix k, ConstMatrix v, size_t k0, size_t keys, float* buffer, size_t u) {
  const size_t d_k = k.cols, d_v = v.cols, kt_units = pack_b_units(d_k, keys);
  if (u < kt_units) {  // kᵀ (d_k,keys): panels of keys
    pack_b_unit(Transpose::yes, d_k, keys, k.data + k0 * k.ld, k.ld, buffer, u);
    return;
  }
  // v block u' / block_units: keys [j0, j0 + its keys), panels of columns
  const size_t block_units = v_block_units(d_v), w = u - kt_units;
  const size_t j0 = w / block_units * kKeyBlock;
  const PackedVBlock b = packed_v_block(j0, keys, d_v);
  pack_b_unit(Transpose::no, b.keys, d_v, v.data + (k0 + j0) * v.ld, v.ld,
              buffer + packed_kv_v_offset(keys, d_k) + b.at, w % block_units);
}

PackedKV packed_kv_keys(size_t n_k, size_t k0, size_t keys, size_t d_k, size_t d_v,
                        const float* buffer) {
  return {buffer, buffer + packed_kv_v_offset(keys, d_k), n_k, d_k, d_v, k0, keys};
}

PackedKV pack_kv_keys(ConstMatrix k, ConstMatrix v, size_t k0, size_t keys, float* buffer,
                      ThreadPool* pool) {
  const ConstMatrix kc{k.data + k0 * k.ld, keys, k.cols, k.ld};
  const ConstMatrix vc{v.data + k0 * v.ld, keys, v.cols, v.ld};
  PackedKV kv = pack_kv(kc, vc, buffer, pool);
  kv.n_k = k.rows, kv.k0 = k0;
  return kv;
}

void packed_kv_write_rows(float* head, size_t stride, size_t d_k, size_t d_v, size_t j0, size_t n,
                          const float* k, size_t ldk, const float* v, size_t ldv) {
  float* vp = head + packed_kv_v_offset(stride, d_k);
  for (size_t i = 0; i < n; ++i) {
    const size_t j = j0 + i;
    for (size_t t = 0; t < d_k; ++t) head[packed_kt_at(j, t, d_k)] = k[i * ldk + t];
    for (size_t c = 0; c < d_v; ++c) vp[packed_v_at(j, c, stride, d_v)] = v[i * ldv + c];
  }
}

void packed_kv_read_rows(const float* head, size_t stride, size_t d_k, size_t d_v, size_t n,
                         float* k, size_t ldk, float* v, size_t ldv) {
  const float* vp = head + packed_kv_v_offset(stride, d_k);
  for (size_t j = 0; j < n; ++j) {
    if (k)
      for (size_t t = 0; t < d_k; ++t) k[j * ldk + t] = head[packed_kt_at(j, t, d_k)];
    if (v)
      for (size_t c = 0; c < d_v; ++c) v[j * ldv + c] = vp[packed_v_at(j, c, stride, d_v)];
  }
}

PackedKV PackedHeads::at(size_t b, size_t g, size_t n_k, size_t d_k, size_t d_v) const {
  const float* kt = base + (b * kv_heads + g) * head_floats;
  return {kt, kt + kv_kernels(type).v_offset(capacity, d_k), n_k, d_k, d_v, 0, capacity, type};
}

#define WA_KV_TYPE(type, file, kernels) extern const KvKernels kernels;
#include "kv/kv_types.def"
#undef WA_KV_TYPE

namespace {
// kv_types.def's kernels, each at its KvType's index.
constexpr std::array<const KvKernels*, kKvTypeCount> kKvTable = [] {
  std::array<const KvKernels*, kKvTypeCount> table{};
#define WA_KV_TYPE(type, file, kernels) table[static_cast<size_t>(KvType::type)] = &kernels;
#include "kv/kv_types.def"
#undef WA_KV_TYPE
  return table;
}();
static_assert(
    [] {
      for (const KvKernels* kernels : kKvTable)
        if (!kernels) return false;
      return true;
    }(),
    "every KvType has a line in kv_types.def");
}  // namespace

const KvKernels& kv_kernels(KvType type) {
  const size_t t = static_cast<size_t>(type);
  if (t >= kKvTypeCount)
    throw std::invalid_argument("kv cache: no element type " + std::to_string(t));
  return *kKvTable[t];
}

}  // namespace wa
