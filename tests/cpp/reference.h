// Plain scalar references: the spec the fast paths are held to by the test suites, the one
// attention reference of the C++ tree. Two families share one double core (a head's scores,
// softmax, output and backward; one rotation):
//   - the fast functions' own arguments (2-D attention with a ScoreMask, multi-head layers),
//     every sum accumulated in double and rounded to float once, at the end;
//   - the ONNX Attention operator in double (wa::ref::onnx, below), the contract of the heads
//     path (wa/attention_heads.h): layouts, GQA, a past, masks of every rank, kv_length.
// Nothing in the library falls back to them: they are compiled into the test binaries only
// (tests/cpp/reference.cpp), not into the shipped module.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "wa/attention.h"
#include "wa/gemm.h"
#include "wa/score_mask.h"

namespace wa {
struct Rotary;
}

namespace wa::ref {

void gemm(Transpose ta, Transpose tb, size_t m, size_t n, size_t k, const float* a, size_t lda,
          const float* b, size_t ldb, float* c, size_t ldc, bool accumulate);

// scores (n_q,n_k) -> weights (n_q,n_k), the whole matrix.
void softmax(const float* scores, float* weights, size_t n_q, size_t n_k, float scale,
             const ScoreMask& mask);

void attention_forward(ConstMatrix q, ConstMatrix k, ConstMatrix v, Matrix out, float scale,
                       const ScoreMask& mask, const AttentionTrace* trace = nullptr);

// rotary (wa/rotary.h), when set, turns Q and K in double, as wa::mha_forward does.
void mha_forward(const MhaShape& shape, const MhaWeights& w, const float* x, const float* context,
                 float* out, float scale, const ScoreMask& mask, const MhaSaved* trace = nullptr,
                 const Rotary* rotary = nullptr);

// d_sink, when set, receives ∂L/∂mask.sink.
void attention_backward(ConstMatrix q, ConstMatrix k, ConstMatrix v, ConstMatrix d_out, Matrix dq,
                        Matrix dk, Matrix dv, float scale, const ScoreMask& mask,
                        float* d_sink = nullptr);

// As wa::mha_backward, but without the saved trace: the reference recomputes every
// intermediate of the forward in double instead of reading the forward's float copies.
void mha_backward(const MhaShape& shape, const MhaWeights& w, const float* x, const float* context,
                  const float* d_out, float scale, const ScoreMask& mask, const MhaGrads& grads,
                  const Rotary* rotary = nullptr);

// ---- The forwards in double throughout: inputs and outputs too ----
// What finite differences of the backwards need: a step of 1e-5 is below a float's resolution
// for most inputs. The float references above round these same computations once, at the end.
// Matrices are dense row-major vectors; the mask's bias stays float (it is not differentiated).
using Doubles = std::vector<double>;

// q (n_q,d_k), k (n_k,d_k), v (n_k,d_v) -> out (n_q,d_v)
Doubles attention_forward_double(const Doubles& q, const Doubles& k, const Doubles& v, size_t n_q,
                                 size_t n_k, size_t d_k, size_t d_v, float scale,
                                 const ScoreMask& mask);
// The same with the sink in double instead of mask.sink.
Doubles attention_forward_double(const Doubles& q, const Doubles& k, const Doubles& v, size_t n_q,
                                 size_t n_k, size_t d_k, size_t d_v, float scale,
                                 const ScoreMask& mask, double sink);

// Shapes as in MhaWeights; an empty bias is no bias, empty sinks no sinks.
struct MhaWeightsDouble {
  Doubles wq, wk, wv, wo, bq, bk, bv, bo, sinks;
};
// x (batch,n_q,d_model), context (batch,n_k,d_model) or empty for self-attention
//   -> out (batch,n_q,d_model)
Doubles mha_forward_double(const MhaShape& shape, const MhaWeightsDouble& w, const Doubles& x,
                           const Doubles& context, float scale, const ScoreMask& mask,
                           const Rotary* rotary = nullptr);

// x (rows,d) in place: row r at position positions[r]; of its first dims entries (0: all d),
// pair t — (t, t + dims/2), or (2t, 2t+1) when interleaved — turns by
// positions[r]·base^(−2t/dims), as wa/rotary.h; inverse turns it back. Throws
// std::invalid_argument when dims is odd or past d.
void rotary(Doubles& x, size_t rows, size_t d, const std::vector<size_t>& positions, double base,
            size_t dims, bool interleaved, bool inverse = false);

}  // namespace wa::ref

// ---- The ONNX Attention operator (opsets 23-25) in double ----
// Written from its specification: the contract the package's option-rich attention (GQA, past
// keys, masks of every rank, causal with an offset, windows, per-batch key lengths, softcap, qk
// outputs, rotary positions) is held to.
//
// Letters: b batch, hq query heads, hkv key/value heads (hq % hkv == 0; query head h reads kv
// head h / (hq / hkv)), n_q queries, n_past cached keys, n_new new keys, n = n_past + n_new keys
// in all, d_k, d_v head sizes.
//   4-D layout: q (b,hq,n_q,d_k), k (b,hkv,n_new,d_k), v (b,hkv,n_new,d_v), y (b,hq,n_q,d_v)
//   3-D layout: q (b,n_q,hq·d_k), k (b,n_new,hkv·d_k), v (b,n_new,hkv·d_v), y (b,n_q,hq·d_v)
//   past_k (b,hkv,n_past,d_k), past_v (b,hkv,n_past,d_v) -> present_k (b,hkv,n,d_k), present_v
//   qk (b,hq,n_q,n)
//
// Score of query i, key j in head h:  s = scale · q_i·k_j                        (qk mode 0)
//                                     s = softcap · tanh(s / softcap) if softcap > 0  (mode 1)
//                                     s = s + bias(b,h,i,j)                             (mode 2)
//                                     p = softmax_j(s), a zero row if every bias is −∞  (mode 3)
//   with sinks (not in ONNX Attention: onnxruntime GroupQueryAttention's head_sink), head h's
//   sinks[h] joins each row's softmax denominator with no value (wa/score_mask.h).
// bias = mask (additive, or boolean: true keeps → 0, false → −∞; right-aligned broadcast from
// rank 1..4 over (b,hq,n_q,n); a mask with fewer than n columns is padded with masked columns)
//      + causal: −∞ unless j ≤ i + offset
//      + window: −∞ unless (i + offset) − j ≤ left and j − (i + offset) ≤ right (−1: that side
//                unbounded)
//      + padding: −∞ unless j < kv_length[b]
// offset = n_past with a past; kv_length[b] − n_q with kv_length (and no past); else 0.
namespace wa::ref::onnx {

using ref::Doubles;

enum class QkMode { kScaled = 0, kSoftcapped = 1, kMasked = 2, kWeights = 3 };

struct Mask {
  // dims right-aligned to (b,hq,n_q,n_mask): rank 1..4 sizes, each 1 (broadcast) or full;
  // the last, n_mask ≤ n, is padded to n with masked columns. Empty dims: no mask.
  std::vector<size_t> dims;
  bool boolean = false;  // values are 0/1 keep flags instead of additive biases
  Doubles values;        // row-major over dims
};

struct Attention {
  size_t batch = 1, q_heads = 1, kv_heads = 1, n_q = 0, n_past = 0, n_new = 0, d_k = 0, d_v = 0;
  bool three_d = false;             // inputs and output in the 3-D layout
  Doubles q, k, v, past_k, past_v;  // past_* empty when n_past == 0 and no past is given
  bool has_past = false;
  Mask mask;
  bool causal = false;
  double scale = 0;                // 0: 1/√d_k
  double softcap = 0;              // 0: none
  long left = -1, right = -1;      // window sides, −1 unbounded
  std::vector<int32_t> kv_length;  // per batch; empty: none
  // Rotary positions on q and k (wa::ref::rotary, applied before attention, per head): q row i
  // at rotary_offset + n_past + i, new key j at rotary_offset + n_past + j (past keys are
  // cached already rotated).
  bool rotary = false;
  double rotary_base = 10000;
  size_t rotary_dims = 0;
  bool rotary_interleaved = false;
  size_t rotary_offset = 0;
  Doubles sinks;  // (hq): each query head's sink logit; empty: none
};

struct Outputs {
  Doubles y, present_k, present_v;
  Doubles qk[4];  // (b,hq,n_q,n) for each QkMode
};

Outputs attention_forward(const Attention& a);

// Gradients of Σ dy ⊙ y with respect to q, k, v (the new keys and values; no past), shaped as
// the inputs. Backs out each forward pass in reverse: P·V, softmax (Jacobian-vector product),
// the bias (no gradient), softcap (tanh′), scale·q·k, and rotary (the inverse rotation).
struct Grads {
  Doubles dq, dk, dv;
  Doubles dsinks;  // (hq) when a.sinks is set, else empty
};
Grads attention_backward(const Attention& a, const Doubles& dy);

}  // namespace wa::ref::onnx
