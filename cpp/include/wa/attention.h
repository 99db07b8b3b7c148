// Scaled dot-product attention and multi-head attention, forward and backward.
//
// Letters (here and in every header and comment of this library):
//   n        tokens in a sequence; n_q queries (rows of a score matrix) and
//            n_k keys = values (its columns) when they differ
//   d_model  width of a token vector
//   h        heads
//   d_k      width of one query/key (per head)       d_v  width of one value (per head)
//   batch    sequences processed together
// Shapes are written (rows,cols); every matrix is row-major float32.
#pragma once

#include <cstddef>

#include "wa/score_mask.h"

namespace wa {

class ThreadPool;
class KvCache;
struct Rotary;

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
  float* scores;            // q·kᵀ
  float* scaled;            // q·kᵀ·scale
  float* masked;            // scaled + bias, -inf where masked: the softmax input
  float* weights;           // row softmax of masked
  float* capped = nullptr;  // cap(scaled) (wa/score_mask.h's softcap), or null: not wanted
};

// q (n_q,d_k), k (n_k,d_k), v (n_k,d_v) -> out (n_q,d_v) = softmax(mask(q·kᵀ·scale))·v,
// scale usually 1/sqrt(d_k); mask and the softmax as in wa/score_mask.h.
// trace, when not null, receives every intermediate. Throws std::invalid_argument on shapes
// that do not fit together.
void attention_forward(ConstMatrix q, ConstMatrix k, ConstMatrix v, Matrix out, float scale,
                       const ScoreMask& mask, const AttentionTrace* trace = nullptr,
                       ThreadPool* pool = nullptr);

// The backward of attention_forward: given d_out = ∂L/∂out for some scalar loss L,
// q (n_q,d_k), k (n_k,d_k), v (n_k,d_v), d_out (n_q,d_v) -> dq (n_q,d_k), dk (n_k,d_k), dv (n_k,d_v).
// Recomputes the weights P = softmax(mask(q·kᵀ·scale)) (n_q,n_k), then, in reverse:
//   out = P·v             -> dv = Pᵀ·d_out, dP = d_out·vᵀ
//   P = softmax(x)        -> dx = P ⊙ (dP − rowsum(dP ⊙ P))   (Jacobian-vector product)
//   x = s·scale + bias    -> ds = dx·scale
//   s = q·kᵀ              -> dq = ds·k, dk = dsᵀ·q
// With a sink (mask.sink, wa/score_mask.h), P sums to 1 − p_sink per row and the same steps
// hold; the sink's own gradient is
//   ∂L/∂sink = Σ_i ∂L/∂P_i· ∂P_i/∂sink = −Σ_i p_sink,i·(dP_i · P_i) = −Σ_i p_sink,i·(d_out_i · out_i).
// A masked (query, key) pair has P = 0 and passes exactly zero gradient; a query whose keys are
// all masked gets a zero dq row and adds nothing to dk and dv. The gradients are written (not
// accumulated) and must not overlap the inputs. Works in 2·n_q·n_k floats of its own memory.
// Throws std::invalid_argument on shapes that do not fit together, or a NaN or +inf sink.
// trace, when not null, receives the backward's own intermediates (see below); d_sink, when
// not null, ∂L/∂mask.sink (0 without a sink).
void attention_backward(ConstMatrix q, ConstMatrix k, ConstMatrix v, ConstMatrix d_out, Matrix dq,
                        Matrix dk, Matrix dv, float scale, const ScoreMask& mask,
                        const struct AttentionBackwardTrace* trace = nullptr,
                        ThreadPool* pool = nullptr, float* d_sink = nullptr);

// The intermediates of one attention backward, each (n_q,n_k), row-major, ld = n_k.
// Caller-owned; all set.
struct AttentionBackwardTrace {
  float* weights;    // P, the forward's weights
  float* d_weights;  // dP = ∂L/∂P = d_out·vᵀ
  float* d_scores;  // dS = ∂L/∂(q·kᵀ) = P ⊙ (dP − rowsum(dP ⊙ P))·scale; 0 where masked
};

// Multi-head attention over a batch of sequences, with h query heads and h_kv key/value heads
// (h_kv divides h; h_kv = h is classic multi-head attention, h_kv < h grouped-query attention,
// h_kv = 1 multi-query attention).
//   x (batch,n_q,d_model): the queries' sequence; context (batch,n_k,d_model): the keys' and
//   values' sequence (cross-attention), or null for self-attention (context = x, n_k = n_q).
//   Q = x·W_Q + b_Q (n_q,h·d_k); K = context·W_K + b_K (n_k,h_kv·d_k);
//   V = context·W_V + b_V (n_k,h_kv·d_v)
//   rotary (wa/rotary.h), when given, turns each head's rows of Q and K to their positions
//   (row i of both at rotary.offset + i)
//   query head i uses columns [i·d_k,(i+1)·d_k) of Q, and kv head g = i / (h/h_kv) columns
//   [g·d_k,(g+1)·d_k) of K and [g·d_v,(g+1)·d_v) of V:
//   head_i = attention(Q_i, K_g, V_g) (n_q,d_v); concat = [head_0 .. head_h-1] (n_q,h·d_v)
//   out = concat·W_O + b_O (n_q,d_model)
// The attention part is attention_heads_forward (wa/attention_heads.h) over Q, K, V as they lie:
// (batch·n, heads·d) is its 3-D layout. The scale and the mask (keep, bias: (n_q,n_k), causal,
// offset, window, softcap) are shared by every sequence of the batch and every head; w.sinks,
// when set, gives head i its own sink (mask.sink is then not read).
struct MhaShape {
  size_t batch = 1, n_q = 0, n_k = 0, d_model = 0, heads = 1, d_k = 0, d_v = 0;
  size_t kv_heads = 0;  // h_kv; 0 = heads
  size_t kv() const { return kv_heads ? kv_heads : heads; }
};
struct MhaWeights {
  const float* wq;               // (d_model, h·d_k)
  const float* wk;               // (d_model, h_kv·d_k)
  const float* wv;               // (d_model, h_kv·d_v)
  const float* wo;               // (h·d_v, d_model)
  const float* bq = nullptr;     // (h·d_k), null = no bias
  const float* bk = nullptr;     // (h_kv·d_k)
  const float* bv = nullptr;     // (h_kv·d_v)
  const float* bo = nullptr;     // (d_model)
  const float* sinks = nullptr;  // (h): head i's sink logit (wa/score_mask.h); null = no sinks
};
// What the forward saves, caller-owned: every intermediate. q, k, v and concat are set
// together (what mha_backward reads back); so are scores, scaled, masked and weights, and those
// four may be left null: then it holds only O(n·d_model) values, and the backward recomputes
// the rest.
struct MhaSaved {
  float* q;        // (batch, n_q, h·d_k), rotated when rotary is given
  float* k;        // (batch, n_k, h_kv·d_k), rotated when rotary is given
  float* v;        // (batch, n_k, h_kv·d_v)
  float* scores;   // (batch, h, n_q, n_k) q·kᵀ per head
  float* scaled;   // (batch, h, n_q, n_k)
  float* masked;   // (batch, h, n_q, n_k)
  float* weights;  // (batch, h, n_q, n_k)
  float* concat;   // (batch, n_q, h·d_v): head i in columns [i·d_v,(i+1)·d_v)
};

void mha_forward(const MhaShape& shape, const MhaWeights& w, const float* x, const float* context,
                 float* out, float scale, const ScoreMask& mask, const MhaSaved* saved = nullptr,
                 ThreadPool* pool = nullptr, const Rotary* rotary = nullptr);

// Self-attention of n_q new tokens over a key/value cache (wa/kv_cache.h), for decoding:
//   x (batch,n_q,d_model) -> K, V (batch,n_q,h_kv·d) of the new tokens, rotated (rotary) to
//   positions rotary.offset + L + i, L = cache.length() before the call, appended to the cache;
//   then the new queries (at the same positions) attend over all L + n_q cached rows through
//   attention_heads_forward(shape, q, cache, ...), causal and windows aligned bottom-right
//   (mask.offset is set to L); out (batch,n_q,d_model).
// shape.n_k is not read; shape.batch, kv heads, d_k, d_v must be the cache's. mask's keep and
// bias, when set, are (n_q, L + n_q). Throws std::invalid_argument on a mismatch or when the new
// rows do not fit, std::range_error when a new key or value is not finite (KvCache::append);
// on any error the cache keeps its first L rows, as before the call.
void mha_forward_cached(const MhaShape& shape, const MhaWeights& w, const float* x, KvCache& cache,
                        float* out, float scale, const ScoreMask& mask, ThreadPool* pool = nullptr,
                        const Rotary* rotary = nullptr);

// Gradients of mha_forward, each the shape of what it differentiates. Caller-owned; written,
// not accumulated; weight and bias gradients are summed over the batch.
struct MhaGrads {
  float* dx;                   // (batch, n_q, d_model)
  float* d_context = nullptr;  // (batch, n_k, d_model); null for self-attention, whose
                               // context is x: dx then carries the K and V terms too
  float* dwq;                  // (d_model, h·d_k)
  float* dwk;                  // (d_model, h_kv·d_k)
  float* dwv;                  // (d_model, h_kv·d_v)
  float* dwo;                  // (h·d_v, d_model)
  float* dbq = nullptr;        // (h·d_k); set exactly when w.bq is
  float* dbk = nullptr;        // (h_kv·d_k); set exactly when w.bk is
  float* dbv = nullptr;        // (h_kv·d_v); set exactly when w.bv is
  float* dbo = nullptr;        // (d_model); set exactly when w.bo is
  float* dsinks = nullptr;     // (h); set exactly when w.sinks is
};

// The backward of mha_forward: d_out (batch,n_q,d_model) = ∂L/∂out -> every gradient in grads.
// saved is the trace of the forward call with these same arguments; the backward reads its
// q, k, v and concat, and its weights if set (else it recomputes them, head by head, from q
// and k: one more q·kᵀ and softmax instead of keeping (batch,h,n_q,n_k) floats). rotary: the
// forward's. In reverse:
//   out = concat·W_O + b_O          -> dW_O = concatᵀ·d_out, db_O = Σ_rows d_out, dconcat = d_out·W_Oᵀ
//   head_i = attention(Q_i,K_g,V_g) -> dQ_i, and dK_g, dV_g summed over the query heads of kv
//                                      head g: attention_heads_backward
//   Q, K turned by rotary           -> dQ, dK turned back (rotary_backward)
//   Q = x·W_Q + b_Q                 -> dW_Q = xᵀ·dQ, db_Q = Σ_rows dQ, dx = dQ·W_Qᵀ
//   K = context·W_K + b_K           -> dW_K = contextᵀ·dK, db_K = Σ_rows dK, d_context = dK·W_Kᵀ
//   V = context·W_V + b_V           -> dW_V = contextᵀ·dV, db_V = Σ_rows dV, d_context += dV·W_Vᵀ
//   head i's sink                   -> dsinks_i = Σ over every sequence's rows (attention_backward)
// Throws std::invalid_argument on impossible shapes or missing buffers.
void mha_backward(const MhaShape& shape, const MhaWeights& w, const float* x, const float* context,
                  const MhaSaved& saved, const float* d_out, float scale, const ScoreMask& mask,
                  const MhaGrads& grads, ThreadPool* pool = nullptr,
                  const Rotary* rotary = nullptr);

}  // namespace wa
