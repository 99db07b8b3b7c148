// The key/value cache (wa/kv_cache.h): each (batch, kv head) keeps its keys and values in the
// panels attention reads, laid out as packed_kv.h says (room for `capacity` keys). An append
// writes only its keys' lanes; attending reads the panels in place.
#include "wa/kv_cache.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <tuple>

#include "kv/packed_kv.h"
#include "runtime/sizes.h"
#include "wa/finite.h"

namespace wa {

namespace {

// x as a person writes it: -65505, 8318008, 1e+30 (to_string would say -65505.000000)
std::string shown(float x) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", x);
  return text;
}

}  // namespace

KvCache::KvCache(size_t batch, size_t kv_heads, size_t d_k, size_t d_v, size_t capacity,
                 KvType type)
    : batch_(batch), kv_heads_(kv_heads), d_k_(d_k), d_v_(d_v), capacity_(capacity), type_(type) {
  if (!batch || !kv_heads || !d_k || !d_v || !capacity)
    throw std::invalid_argument("kv cache: every size must be at least 1");
  head_floats_ = head_bytes(capacity, d_k, d_v, type) / sizeof(float);
  panels_.resize(checked_product({batch, kv_heads, head_floats_}));  // zeros: padding lanes too
}

size_t KvCache::head_bytes(size_t capacity, size_t d_k, size_t d_v, KvType type) {
  // A head holds at least capacity · (d_k + d_v) bytes: with a size past kMaxFloats, half the
  // address space or more, refused as not fitting. The types' round-ups to whole panels would
  // wrap around in wasm32's size_t on such a size.
  if (capacity > kMaxFloats || d_k > kMaxFloats || d_v > kMaxFloats) throw std::bad_alloc();
  // head_floats counts within kMaxFloats (sizes.h), so its bytes fit in size_t
  return kv_kernels(type).head_floats(capacity, d_k, d_v) * sizeof(float);
}

void KvCache::append(size_t n_new, HeadTensor<const float> k_new, HeadTensor<const float> v_new) {
  if (n_new > capacity_ - length_)
    throw std::invalid_argument("kv cache: " + std::to_string(n_new) +
                                " new rows do not fit: length " + std::to_string(length_) +
                                ", capacity " + std::to_string(capacity_));
  // every new row checked before any is written: a key or value that is not finite would make
  // every later step over the cache NaN, one beyond the type's range would be stored wrong
  const KvKernels& kern = kv_kernels(type_);
  for (size_t b = 0; b < batch_; ++b)
    for (size_t g = 0; g < kv_heads_; ++g)
      for (size_t i = 0; i < n_new; ++i)
        for (const auto& [row, d, what] :
             {std::tuple{k_new.at(b, g) + i * k_new.row_stride, d_k_, "key"},
              std::tuple{v_new.at(b, g) + i * v_new.row_stride, d_v_, "value"}}) {
          const size_t t = first_non_finite(row, d);
          if (t == d) {
            const float* big =
                std::find_if(row, row + d, [&](float x) { return std::fabs(x) > kern.max_abs; });
            if (big == row + d) continue;
            throw std::range_error(
                std::string("kv cache: the new ") + what + " " + std::to_string(i) +
                " of sequence " + std::to_string(b) + ", kv head " + std::to_string(g) + " holds " +
                shown(*big) + " at " + std::to_string(big - row) + ", beyond the '" + kern.name +
                "' cache's range ±" + shown(kern.max_abs) + ", so nothing was appended");
          }
          const float x = row[t];
          throw std::range_error(
              std::string("kv cache: the new ") + what + " " + std::to_string(i) + " of sequence " +
              std::to_string(b) + ", kv head " + std::to_string(g) + " holds " +
              (x != x  ? "NaN"
               : x > 0 ? "Infinity"
                       : "-Infinity") +
              " at " + std::to_string(t) +
              ": it would make every later step over the cache NaN, so nothing was appended");
        }
  for (size_t b = 0; b < batch_; ++b)
    for (size_t g = 0; g < kv_heads_; ++g)
      kern.write_rows(head_panels(b, g), capacity_, d_k_, d_v_, length_, n_new, k_new.at(b, g),
                      k_new.row_stride, v_new.at(b, g), v_new.row_stride);
  length_ += n_new;
}

void KvCache::truncate(size_t n) {
  if (n > length_)
    throw std::invalid_argument("kv cache: cannot truncate to " + std::to_string(n) +
                                " rows: length " + std::to_string(length_));
  length_ = n;
}

void KvCache::copy_rows(HeadTensor<float> k, HeadTensor<float> v) const {
  for (size_t b = 0; b < batch_; ++b)
    for (size_t g = 0; g < kv_heads_; ++g)
      kv_kernels(type_).read_rows(panels_.data() + (b * kv_heads_ + g) * head_floats_, capacity_,
                                  d_k_, d_v_, length_, k.data ? k.at(b, g) : nullptr, k.row_stride,
                                  v.data ? v.at(b, g) : nullptr, v.row_stride);
}

}  // namespace wa
