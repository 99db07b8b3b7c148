// Plain scalar references: the spec the fast paths are held to by the test suites.
// Same arguments and meaning as the fast functions; every sum accumulates in double and
// is rounded to float once, at the end. Nothing in the library falls back to them: they are
// compiled into the test binaries only (cpp/src/reference.cpp), not into the shipped module.
#pragma once

#include <cstddef>
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
                 float* out, float scale, const ScoreMask& mask, const MhaTrace* trace = nullptr,
                 const Rotary* rotary = nullptr);

void attention_backward(ConstMatrix q, ConstMatrix k, ConstMatrix v, ConstMatrix d_out, Matrix dq,
                        Matrix dk, Matrix dv, float scale, const ScoreMask& mask);

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

// Shapes as in MhaWeights; an empty bias is no bias.
struct MhaWeightsDouble {
  Doubles wq, wk, wv, wo, bq, bk, bv, bo;
};
// x (batch,n_q,d_model), context (batch,n_k,d_model) or empty for self-attention
//   -> out (batch,n_q,d_model)
Doubles mha_forward_double(const MhaShape& shape, const MhaWeightsDouble& w, const Doubles& x,
                           const Doubles& context, float scale, const ScoreMask& mask,
                           const Rotary* rotary = nullptr);

}  // namespace wa::ref
