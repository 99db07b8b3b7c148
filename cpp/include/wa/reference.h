// Plain scalar references: the spec the fast paths are held to, and their fallback.
// Same arguments and meaning as the fast functions; every sum accumulates in double and
// is rounded to float once, at the end.
#pragma once

#include <cstddef>

#include "wa/attention.h"
#include "wa/gemm.h"
#include "wa/softmax.h"

namespace wa::ref {

void gemm(Transpose ta, Transpose tb, size_t m, size_t n, size_t k, const float* a, size_t lda,
          const float* b, size_t ldb, float* c, size_t ldc, bool accumulate);

// scores (n_q,n_k) -> weights (n_q,n_k), the whole matrix.
void softmax(const float* scores, float* weights, size_t n_q, size_t n_k, const ScoreMask& mask);

void attention_forward(ConstMatrix q, ConstMatrix k, ConstMatrix v, Matrix out,
                       const ScoreMask& mask, const AttentionTrace* trace = nullptr);

void mha_forward(const MhaShape& shape, const MhaWeights& w, const float* x,
                 const float* context, float* out, const ScoreMask& mask,
                 const MhaTrace* trace = nullptr);

}  // namespace wa::ref
