// A key/value cache for decoding one token (or a few) at a time: the keys and values of every
// token so far, kept in the library's memory so each step appends only its new rows.
//   k (batch, hkv, capacity, d_k), v (batch, hkv, capacity, d_v): rows [0, length) of each head
//   are filled. They are stored the way attention reads them (each head's kᵀ and v packed in
//   the GEMM kernel's panels, room for `capacity` keys): an append writes its rows into the
//   panels and attending over the cache never copies it. copy_rows() reads them back as tensors.
// The element type (KvType) is float32; int8 in blocks of 32 along d with a bfloat16 scale each
// (cpp/src/kv/kv_i8.cpp): a quarter of the bytes to keep and to read per step, the rows read back
// dequantized; or float16 (IEEE binary16, cpp/src/kv/kv_f16.cpp): half the bytes, the rows read
// back widened.
// Attend over it with the attention_heads_forward overload below (n_k = length(), and
// mask.offset = length() − n_q: the new queries are the last n_q tokens, bottom-right causal).
#pragma once

#include <cstddef>
#include <vector>

#include "wa/attention_heads.h"

namespace wa {

// A cache's element type; each has its line in cpp/src/kv/kv_types.def and its kernel file.
// count: how many there are, not a type.
enum class KvType { f32, i8, f16, count };
inline constexpr size_t kKvTypeCount = static_cast<size_t>(KvType::count);

class KvCache {
 public:
  // Throws std::invalid_argument on a zero size and std::bad_alloc when it does not fit.
  KvCache(size_t batch, size_t kv_heads, size_t d_k, size_t d_v, size_t capacity,
          KvType type = KvType::f32);

  // Bytes one (sequence, kv head) of a cache of these sizes keeps: its panels with their
  // padding (capacity rounded up to whole panels) and the type's scales; the cache holds
  // batch · kv_heads of them. Throws std::bad_alloc when that count does not fit in size_t.
  static size_t head_bytes(size_t capacity, size_t d_k, size_t d_v, KvType type);

  size_t batch() const { return batch_; }
  size_t kv_heads() const { return kv_heads_; }
  size_t d_k() const { return d_k_; }
  size_t d_v() const { return d_v_; }
  size_t capacity() const { return capacity_; }
  size_t length() const { return length_; }
  KvType type() const { return type_; }

  // k_new (batch, hkv, n_new, d_k), v_new (batch, hkv, n_new, d_v) -> rows [length, length +
  // n_new) of each head; length grows by n_new. Writes only those rows. Throws, the cache
  // untouched, std::invalid_argument when length + n_new would pass the capacity and
  // std::range_error when a new key or value is not finite (it would make every later step
  // over the cache NaN) or beyond what the type holds (float16: 65504; float32 and int8 hold
  // every finite float).
  void append(size_t n_new, HeadTensor<const float> k_new, HeadTensor<const float> v_new);

  // The first n rows become the cache (n <= length): undoes appends, e.g. for a rejected draft.
  void truncate(size_t n);
  void reset() { truncate(0); }

  // -> k (batch, hkv, length, d_k), v (batch, hkv, length, d_v): rows [0, length) of each head
  // copied out (either may have a null data: not wanted).
  void copy_rows(HeadTensor<float> k, HeadTensor<float> v) const;

 private:
  friend void attention_heads_forward(const HeadsShape&, HeadTensor<const float>, const KvCache&,
                                      HeadTensor<float>, float, const HeadsMask&, const HeadsTrace*,
                                      ThreadPool*);
  float* head_panels(size_t b, size_t g) {
    return panels_.data() + (b * kv_heads_ + g) * head_floats_;
  }

  size_t batch_, kv_heads_, d_k_, d_v_, capacity_, length_ = 0;
  KvType type_;
  size_t head_floats_;  // per (b, g): its kᵀ panels, then its v panels (cpp/src/kv/packed_kv.h)
  std::vector<float> panels_;  // (batch, hkv, head_floats)
};

// q (batch,hq,n_q,d_k) over the cache's rows [0, length()) -> out (batch,hq,n_q,d_v): as
// attention_heads_forward with k, v the cache's keys and values. shape.n_k must be length(),
// shape.batch, kv_heads, d_k, d_v the cache's (std::invalid_argument otherwise). The one
// entry for attending over a cache: how the cache stores its rows is its own business.
void attention_heads_forward(const HeadsShape& shape, HeadTensor<const float> q,
                             const KvCache& cache, HeadTensor<float> out, float scale,
                             const HeadsMask& mask, const HeadsTrace* trace = nullptr,
                             ThreadPool* pool = nullptr);

}  // namespace wa
