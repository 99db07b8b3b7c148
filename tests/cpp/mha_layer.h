// A multi-head attention layer with random weights and inputs, for the multi-head suites:
// weights uniform in ±1/sqrt(d_model), inputs in ±2, each array from its own seed; and
// buffers for its trace.
#pragma once

#include <cmath>
#include <utility>
#include <vector>

#include "testing.h"
#include "wa/attention.h"

namespace wa::test {

inline const float* or_null(const std::vector<float>& v) { return v.empty() ? nullptr : v.data(); }
inline float* or_null(std::vector<float>& v) { return v.empty() ? nullptr : v.data(); }

struct MhaLayer {
  MhaShape s;
  std::vector<float> wq, wk, wv, wo, bq, bk, bv, bo, x, context;  // biases and context may be empty

  // cross: a context of its own (else self-attention, n_k = n_q); bias: the four biases.
  MhaLayer(MhaShape shape, bool cross, bool bias, uint32_t seed) : s(shape) {
    // h·d_k, h·d_v; h_kv·d_k, h_kv·d_v
    const size_t hk = s.heads * s.d_k, hv = s.heads * s.d_v;
    const size_t gk = s.kv() * s.d_k, gv = s.kv() * s.d_v;
    const float r = 1.0f / std::sqrt(static_cast<float>(s.d_model));
    wq = random_floats(s.d_model * hk, seed, -r, r);
    wk = random_floats(s.d_model * gk, seed + 1, -r, r);
    wv = random_floats(s.d_model * gv, seed + 2, -r, r);
    wo = random_floats(hv * s.d_model, seed + 3, -r, r);
    if (bias) {
      bq = random_floats(hk, seed + 4), bk = random_floats(gk, seed + 5);
      bv = random_floats(gv, seed + 6), bo = random_floats(s.d_model, seed + 7);
    }
    x = random_floats(s.batch * s.n_q * s.d_model, seed + 8, -2.0f, 2.0f);
    if (cross)
      context = random_floats(s.batch * s.n_k * s.d_model, seed + 9, -2.0f, 2.0f);
    else
      s.n_k = s.n_q;
  }
  bool cross() const { return !context.empty(); }
  MhaWeights weights() const {
    return {wq.data(),   wk.data(),   wv.data(),   wo.data(),
            or_null(bq), or_null(bk), or_null(bv), or_null(bo)};
  }
  // 1/sqrt(d_k)
  float scale() const { return 1.0f / std::sqrt(static_cast<float>(s.d_k)); }
  ScoreMask mask(bool causal) const {
    ScoreMask m;
    m.causal = causal;
    return m;
  }
};

// Every intermediate of a multi-head forward, for its trace: what mha_backward reads back.
struct MhaTraceBuffers {
  std::vector<float> q, k, v, scores, scaled, masked, weights, concat;
  explicit MhaTraceBuffers(const MhaShape& s)
      : q(s.batch * s.n_q * s.heads * s.d_k),
        k(s.batch * s.n_k * s.kv() * s.d_k),
        v(s.batch * s.n_k * s.kv() * s.d_v),
        scores(s.batch * s.heads * s.n_q * s.n_k),
        scaled(scores.size()),
        masked(scores.size()),
        weights(scores.size()),
        concat(s.batch * s.n_q * s.heads * s.d_v) {}
  MhaSaved trace() {
    return {q.data(),      k.data(),      v.data(),       scores.data(),
            scaled.data(), masked.data(), weights.data(), concat.data()};
  }
};

// The shared random layer and a fixed random d_out (batch,n_q,d_model).
struct MhaBackwardLayer : MhaLayer {
  std::vector<float> d_out;
  MhaBackwardLayer(MhaShape shape, bool cross, bool bias, uint32_t seed)
      : MhaLayer(shape, cross, bias, seed),
        d_out(random_floats(s.batch * s.n_q * s.d_model, seed + 10)) {}
};

// Every gradient of a layer; bias gradients only for the biases it has, d_context only for cross.
struct MhaGradBuffers {
  std::vector<float> dx, d_context, dwq, dwk, dwv, dwo, dbq, dbk, dbv, dbo;
  explicit MhaGradBuffers(const MhaBackwardLayer& l)
      : dx(l.x.size()),
        d_context(l.context.size()),
        dwq(l.wq.size()),
        dwk(l.wk.size()),
        dwv(l.wv.size()),
        dwo(l.wo.size()),
        dbq(l.bq.size()),
        dbk(l.bk.size()),
        dbv(l.bv.size()),
        dbo(l.bo.size()) {}
  MhaGrads grads() {
    return {dx.data(),  or_null(d_context), dwq.data(),   dwk.data(),   dwv.data(),
            dwo.data(), or_null(dbq),       or_null(dbk), or_null(dbv), or_null(dbo)};
  }
  // name and values of every gradient present, for loops over them
  std::vector<std::pair<const char*, const std::vector<float>*>> all() const {
    std::vector<std::pair<const char*, const std::vector<float>*>> v = {
        {"dx", &dx},   {"d_context", &d_context},
        {"dwq", &dwq}, {"dwk", &dwk},
        {"dwv", &dwv}, {"dwo", &dwo},
        {"dbq", &dbq}, {"dbk", &dbk},
        {"dbv", &dbv}, {"dbo", &dbo}};
    return v;
  }
};

}  // namespace wa::test
