// The key/value cache (wa/kv_cache.h): plain 4-D tensors with room for `capacity` rows per head.
#include "wa/kv_cache.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "sizes.h"

namespace wa {

KvCache::KvCache(size_t batch, size_t kv_heads, size_t d_k, size_t d_v, size_t capacity)
    : batch_(batch), kv_heads_(kv_heads), d_k_(d_k), d_v_(d_v), capacity_(capacity) {
  if (!batch || !kv_heads || !d_k || !d_v || !capacity)
    throw std::invalid_argument("kv cache: every size must be at least 1");
  k_.resize(checked_product({batch, kv_heads, capacity, d_k}));
  v_.resize(checked_product({batch, kv_heads, capacity, d_v}));
}

void KvCache::append(size_t n_new, HeadTensor<const float> k_new, HeadTensor<const float> v_new) {
  if (n_new > capacity_ - length_)
    throw std::invalid_argument("kv cache: " + std::to_string(n_new) +
                                " new rows do not fit: length " + std::to_string(length_) +
                                ", capacity " + std::to_string(capacity_));
  const HeadTensor<float> k = heads_4d(k_.data(), kv_heads_, capacity_, d_k_);
  const HeadTensor<float> v = heads_4d(v_.data(), kv_heads_, capacity_, d_v_);
  for (size_t b = 0; b < batch_; ++b)
    for (size_t g = 0; g < kv_heads_; ++g)
      for (size_t i = 0; i < n_new; ++i) {
        const float* ks = k_new.at(b, g) + i * k_new.row_stride;
        const float* vs = v_new.at(b, g) + i * v_new.row_stride;
        std::copy(ks, ks + d_k_, k.at(b, g) + (length_ + i) * k.row_stride);
        std::copy(vs, vs + d_v_, v.at(b, g) + (length_ + i) * v.row_stride);
      }
  length_ += n_new;
}

void KvCache::truncate(size_t n) {
  if (n > length_)
    throw std::invalid_argument("kv cache: cannot truncate to " + std::to_string(n) +
                                " rows: length " + std::to_string(length_));
  length_ = n;
}

void attention_heads_forward(const HeadsShape& shape, HeadTensor<const float> q,
                             const KvCache& cache, HeadTensor<float> out, float scale,
                             const HeadsMask& mask, const HeadsTrace* trace, ThreadPool* pool) {
  if (shape.n_k != cache.length() || shape.batch != cache.batch() ||
      shape.kv_heads != cache.kv_heads() || shape.d_k != cache.d_k() || shape.d_v != cache.d_v())
    throw std::invalid_argument(
        "attention over a kv cache: the shape's n_k, batch, kv_heads, d_k, d_v must be the "
        "cache's: n_k " +
        std::to_string(shape.n_k) + " vs length " + std::to_string(cache.length()));
  attention_heads_forward(shape, q, cache.keys(), cache.values(), out, scale, mask, trace, pool);
}

}  // namespace wa
