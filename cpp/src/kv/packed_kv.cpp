// The panel layout of packed_kv.h: pack, append, read back, locate, and the table of element
// types' kernels.
#include "kv/packed_kv.h"

#include "gemm/gemm_packed.h"
#include "runtime/sizes.h"

namespace wa {

size_t packed_kv_floats(size_t stride, size_t d_k, size_t d_v) {
  return checked_sum({packed_b_floats(d_k, stride), packed_b_floats(stride, d_v)});
}

size_t packed_kv_v_offset(size_t stride, size_t d_k) { return packed_b_floats(d_k, stride); }

PackedKV pack_kv(ConstMatrix k, ConstMatrix v, float* buffer, ThreadPool* pool) {
  const size_t n_k = k.rows, d_k = k.cols, d_v = v.cols;
  float* kt = buffer;
  float* vp = buffer + packed_kv_v_offset(n_k, d_k);
  pack_b(Transpose::yes, d_k, n_k, k.data, k.ld, kt, pool);  // kᵀ (d_k,n_k): panels of keys
  pack_b(Transpose::no, n_k, d_v, v.data, v.ld, vp, pool);   // v (n_k,d_v): panels of columns
  return {kt, vp, n_k, d_k, d_v, 0, n_k};
}

size_t pack_kv_units(size_t keys, size_t d_k, size_t d_v) {
  return pack_b_units(d_k, keys) + pack_b_units(keys, d_v);
}

void pack_kv_unit(ConstMatrix k, ConstMatrix v, size_t k0, size_t keys, float* buffer, size_t u) {
  const size_t d_k = k.cols, d_v = v.cols, kt_units = pack_b_units(d_k, keys);
  if (u < kt_units)  // kᵀ (d_k,keys): panels of keys
    pack_b_unit(Transpose::yes, d_k, keys, k.data + k0 * k.ld, k.ld, buffer, u);
  else  // v (keys,d_v): panels of columns
    pack_b_unit(Transpose::no, keys, d_v, v.data + k0 * v.ld, v.ld,
                buffer + packed_kv_v_offset(keys, d_k), u - kt_units);
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
    for (size_t c = 0; c < d_v; ++c) vp[packed_v_at(j, c, stride)] = v[i * ldv + c];
  }
}

void packed_kv_read_rows(const float* head, size_t stride, size_t d_k, size_t d_v, size_t n,
                         float* k, size_t ldk, float* v, size_t ldv) {
  const float* vp = head + packed_kv_v_offset(stride, d_k);
  for (size_t j = 0; j < n; ++j) {
    if (k)
      for (size_t t = 0; t < d_k; ++t) k[j * ldk + t] = head[packed_kt_at(j, t, d_k)];
    if (v)
      for (size_t c = 0; c < d_v; ++c) v[j * ldv + c] = vp[packed_v_at(j, c, stride)];
  }
}

PackedKV PackedHeads::at(size_t b, size_t g, size_t n_k, size_t d_k, size_t d_v) const {
  const float* kt = base + (b * kv_heads + g) * head_floats;
  return {kt, kt + kv_kernels(type).v_offset(capacity, d_k), n_k, d_k, d_v, 0, capacity, type};
}

extern const KvKernels kKvF32Kernels;  // kv_f32.cpp
extern const KvKernels kKvI8Kernels;   // kv_i8.cpp
extern const KvKernels kKvF16Kernels;  // kv_f16.cpp

const KvKernels& kv_kernels(KvType type) {
  switch (type) {
    case KvType::i8:
      return kKvI8Kernels;
    case KvType::f16:
      return kKvF16Kernels;
    case KvType::f32:
      break;
  }
  return kKvF32Kernels;
}

}  // namespace wa
