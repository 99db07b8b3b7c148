// One attention problem for the attention suites (forward and backward): random q, k, v and
// d_out, each from its own seed, and buffers for a traced forward.
#pragma once

#include <vector>

#include "testing.h"
#include "wa/attention.h"

namespace wa::test {

// q (n_q,d_k), k (n_k,d_k) uniform in ±range, v (n_k,d_v) and d_out (n_q,d_v) in ±1.
struct AttentionProblem {
  size_t n_q, n_k, d_k, d_v;
  std::vector<float> q, k, v, d_out;
  AttentionProblem(size_t nq, size_t nk, size_t dk, size_t dv, uint32_t seed, float range = 1.0f)
      : n_q(nq),
        n_k(nk),
        d_k(dk),
        d_v(dv),
        q(random_floats(nq * dk, seed, -range, range)),
        k(random_floats(nk * dk, seed + 1, -range, range)),
        v(random_floats(nk * dv, seed + 2)),
        d_out(random_floats(nq * dv, seed + 3)) {}
  ConstMatrix Q() const { return {q.data(), n_q, d_k, d_k}; }
  ConstMatrix K() const { return {k.data(), n_k, d_k, d_k}; }
  ConstMatrix V() const { return {v.data(), n_k, d_v, d_v}; }
  ConstMatrix dO() const { return {d_out.data(), n_q, d_v, d_v}; }
};

// out (n_q,d_v) and every intermediate of a forward (n_q,n_k), with the trace pointing at them.
struct TracedForward {
  std::vector<float> out, scores, scaled, masked, weights;
  AttentionTrace trace;
  TracedForward(size_t n_q, size_t n_k, size_t d_v)
      : out(n_q * d_v),
        scores(n_q * n_k),
        scaled(n_q * n_k),
        masked(n_q * n_k),
        weights(n_q * n_k),
        trace{scores.data(), scaled.data(), masked.data(), weights.data()} {}
  Matrix Out(size_t n_q, size_t d_v) { return {out.data(), n_q, d_v, d_v}; }
};

}  // namespace wa::test
