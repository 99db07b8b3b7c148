// Attention over many heads at once, laid out as the ONNX Attention operator lays them out:
// a batch of sequences, hq query heads and hkv key/value heads (grouped-query attention: query
// head h reads kv head h / (hq / hkv); hkv = 1 is multi-query attention), each head the
// attention_forward of wa/attention.h with its own view of the mask. Letters as there, plus
// hq, hkv. The keys may be a cache of earlier tokens followed by new ones: set mask.offset to
// the number of earlier tokens so causal masks and windows align at the bottom right.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "wa/attention.h"

namespace wa {

// Heads in a tensor: element t of row i of head h in sequence b at
// data[b·batch_stride + h·head_stride + i·row_stride + t].
//   4-D (batch, heads, rows, d): heads_4d;   3-D (batch, rows, heads·d): heads_3d
template <class T>
struct HeadTensor {
  T* data;
  size_t batch_stride, head_stride, row_stride;
  T* at(size_t b, size_t h) const { return data + b * batch_stride + h * head_stride; }
  // float heads are const float heads too
  template <class U, class = std::enable_if_t<std::is_same_v<U, const T> && !std::is_same_v<U, T>>>
  operator HeadTensor<U>() const {
    return {data, batch_stride, head_stride, row_stride};
  }
};
template <class T>
HeadTensor<T> heads_4d(T* data, size_t heads, size_t rows, size_t d) {
  return {data, heads * rows * d, rows * d, d};
}
template <class T>
HeadTensor<T> heads_3d(T* data, size_t heads, size_t rows, size_t d) {
  return {data, rows * heads * d, d, heads * d};
}

struct HeadsShape {
  size_t batch = 1, q_heads = 1, kv_heads = 1, n_q = 0, n_k = 0, d_k = 0, d_v = 0;
};

// The mask of head h in sequence b: `mask` with keep and bias moved to
// b·batch_stride + h·head_stride (0 strides broadcast: one mask for every sequence or head; a
// mask_ld of 0 broadcasts one row to every query), and, where kv_length is set, key_limit =
// kv_length[b] and offset = kv_length[b] − n_q (sequences padded to n_k keys, each ending at
// its own length), and, where sinks is set, sink = sinks[h]. h counts query heads.
struct HeadsMask {
  ScoreMask mask;
  size_t batch_stride = 0, head_stride = 0;
  const int32_t* kv_length = nullptr;  // (batch), each in [0, n_k]; null: every key is real
  const float* sinks = nullptr;        // (hq), each finite or -inf (none); null: mask.sink for all
  ScoreMask of(size_t b, size_t h, size_t n_q) const;
};

// Every intermediate, each (batch, hq, n_q, n_k); scores, scaled, masked and weights are set
// together, capped may be null (as AttentionTrace).
using HeadsTrace = AttentionTrace;

// q (batch,hq,n_q,d_k), k (batch,hkv,n_k,d_k), v (batch,hkv,n_k,d_v) in any HeadTensor layout
//   -> out (batch,hq,n_q,d_v): out[b,h] = attention_forward(q[b,h], k[b,g], v[b,g]), g = h/(hq/hkv).
// Without a trace, each kv head's k and v are packed once for its query heads and no score
// matrix is held (the fused form). Throws std::invalid_argument on shapes that do not fit.
void attention_heads_forward(const HeadsShape& shape, HeadTensor<const float> q,
                             HeadTensor<const float> k, HeadTensor<const float> v,
                             HeadTensor<float> out, float scale, const HeadsMask& mask,
                             const HeadsTrace* trace = nullptr, ThreadPool* pool = nullptr);

// The backward of attention_heads_forward: d_out (batch,hq,n_q,d_v) -> dq (batch,hq,n_q,d_k),
// dk (batch,hkv,n_k,d_k), dv (batch,hkv,n_k,d_v), written. Per head, attention_backward; a kv
// head's dk and dv sum over the query heads that read it, in query-head order.
// weights (batch,hq,n_q,n_k), dense: the forward's (its trace's weights), or null: each head's
// are recomputed from q and k. One task per (sequence, kv head) when there are several (its
// query heads one after another, so nothing races on dk and dv); a single one uses the pool
// inside its passes instead. Either way the result does not depend on the thread count.
// d_sinks (hq), when not null, receives each query head's ∂L/∂sink (attention_backward),
// summed over the sequences in order; 0 for a head without a sink.
void attention_heads_backward(const HeadsShape& shape, HeadTensor<const float> q,
                              HeadTensor<const float> k, HeadTensor<const float> v,
                              HeadTensor<const float> d_out, HeadTensor<float> dq,
                              HeadTensor<float> dk, HeadTensor<float> dv, float scale,
                              const HeadsMask& mask, const float* weights = nullptr,
                              ThreadPool* pool = nullptr, float* d_sinks = nullptr);

}  // namespace wa
