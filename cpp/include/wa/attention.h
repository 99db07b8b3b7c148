// Scaled dot-product attention and multi-head attention, forward.
// Letters as in softmax.h. Every matrix is row-major float32.
#pragma once

#include <cstddef>

#include "wa/softmax.h"

namespace wa {

class ThreadPool;

// A matrix in memory: rows x cols floats, row r starting at data + r*ld.
struct ConstMatrix {
  const float* data;
  size_t rows, cols, ld;
};
struct Matrix {
  float* data;
  size_t rows, cols, ld;
  operator ConstMatrix() const { return {data, rows, cols, ld}; }
};

// Every intermediate of one attention, each (n_q,n_k), row-major, ld = n_k. Caller-owned.
struct AttentionTrace {
  float* scores;   // q·kᵀ
  float* scaled;   // q·kᵀ·scale
  float* masked;   // scaled + bias, -inf where masked: the softmax input
  float* weights;  // row softmax of masked
};

// q (n_q,d_k), k (n_k,d_k), v (n_k,d_v) -> out (n_q,d_v) = softmax(mask(q·kᵀ·scale))·v.
// trace, when not null, receives every intermediate. Throws std::invalid_argument on shapes
// that do not fit together.
void attention_forward(ConstMatrix q, ConstMatrix k, ConstMatrix v, Matrix out,
                       const ScoreMask& mask, const AttentionTrace* trace = nullptr,
                       ThreadPool* pool = nullptr);

// Multi-head attention over a batch of sequences.
//   x (batch,n_q,d_model): the queries' sequence; context (batch,n_k,d_model): the keys' and
//   values' sequence (cross-attention), or null for self-attention (context = x, n_k = n_q).
//   Q = x·W_Q + b_Q (n_q,h·d_k); K = context·W_K + b_K (n_k,h·d_k); V = context·W_V + b_V (n_k,h·d_v)
//   head i uses columns [i·d_k,(i+1)·d_k) of Q and K and [i·d_v,(i+1)·d_v) of V:
//   head_i = attention(Q_i, K_i, V_i) (n_q,d_v); concat = [head_0 .. head_h-1] (n_q,h·d_v)
//   out = concat·W_O + b_O (n_q,d_model)
// The mask (keep, bias: (n_q,n_k)) is shared by every sequence of the batch and every head.
struct MhaShape {
  size_t batch = 1, n_q = 0, n_k = 0, d_model = 0, heads = 1, d_k = 0, d_v = 0;
};
struct MhaWeights {
  const float* wq;  // (d_model, h·d_k)
  const float* wk;  // (d_model, h·d_k)
  const float* wv;  // (d_model, h·d_v)
  const float* wo;  // (h·d_v, d_model)
  const float* bq = nullptr;  // (h·d_k), null = no bias
  const float* bk = nullptr;  // (h·d_k)
  const float* bv = nullptr;  // (h·d_v)
  const float* bo = nullptr;  // (d_model)
};
// Every intermediate, caller-owned; all pointers set, or pass no trace.
struct MhaTrace {
  float* q;        // (batch, n_q, h·d_k)
  float* k;        // (batch, n_k, h·d_k)
  float* v;        // (batch, n_k, h·d_v)
  float* scores;   // (batch, h, n_q, n_k) q·kᵀ per head
  float* scaled;   // (batch, h, n_q, n_k)
  float* masked;   // (batch, h, n_q, n_k)
  float* weights;  // (batch, h, n_q, n_k)
  float* concat;   // (batch, n_q, h·d_v): head i in columns [i·d_v,(i+1)·d_v)
};

void mha_forward(const MhaShape& shape, const MhaWeights& w, const float* x,
                 const float* context, float* out, const ScoreMask& mask,
                 const MhaTrace* trace = nullptr, ThreadPool* pool = nullptr);

}  // namespace wa
