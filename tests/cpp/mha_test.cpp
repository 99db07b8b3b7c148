// Multi-head attention: fast path against the reference (self, cross, batch, biases,
// causal, trace), and permutation equivariance.
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "mha_layer.h"
#include "reference.h"
#include "testing.h"
#include "wa/attention.h"

namespace wa {
namespace {

// The shared random layer, run through the fast path and the reference.
struct Layer : test::MhaLayer {
  using MhaLayer::MhaLayer;
  std::vector<float> run(const ScoreMask& m, ThreadPool* pool,
                         const std::vector<float>* x_in = nullptr) const {
    std::vector<float> out(s.batch * s.n_q * s.d_model);
    mha_forward(s, weights(), (x_in ? *x_in : x).data(), test::or_null(context), out.data(),
                scale(), m, nullptr, pool);
    return out;
  }
  std::vector<float> run_ref(const ScoreMask& m) const {
    std::vector<float> out(s.batch * s.n_q * s.d_model);
    ref::mha_forward(s, weights(), x.data(), test::or_null(context), out.data(), scale(), m);
    return out;
  }
};

TEST_CASE("multi-head attention matches the reference: self and cross, batch, bias, causal") {
  uint32_t seed = 1;
  //                      batch n_q n_k d_model heads d_k d_v
  const MhaShape shapes[] = {{1, 1, 1, 1, 1, 1, 1},     {1, 3, 3, 8, 2, 4, 4},
                             {2, 5, 17, 12, 3, 4, 5},   {1, 17, 5, 20, 4, 5, 3},
                             {3, 63, 65, 16, 2, 8, 8},  {1, 65, 129, 30, 5, 6, 7},
                             {2, 129, 64, 64, 8, 8, 16}};
  for (const MhaShape& shape : shapes)
    for (bool cross : {false, true})
      for (bool bias : {false, true})
        for (bool causal : {false, true}) {
          const Layer layer(shape, cross, bias, seed += 10);
          INFO("batch=" << layer.s.batch << " n_q=" << layer.s.n_q << " n_k=" << layer.s.n_k
                        << " d_model=" << layer.s.d_model << " h=" << layer.s.heads
                        << " d_k=" << layer.s.d_k << " d_v=" << layer.s.d_v << " cross=" << cross
                        << " bias=" << bias << " causal=" << causal);
          const ScoreMask m = layer.mask(causal);
          CHECK_CLOSE(layer.run(m, &test::test_pool()), layer.run_ref(m), 5e-6);
        }
}

TEST_CASE("multi-head attention trace matches the reference trace") {
  const Layer layer({2, 9, 11, 12, 3, 4, 5}, true, true, 900);
  const ScoreMask m = layer.mask(true);
  test::MhaTraceBuffers fast(layer.s), slow(layer.s);
  const MhaSaved fast_trace = fast.trace(), slow_trace = slow.trace();
  std::vector<float> out_fast(2 * 9 * 12), out_slow(out_fast.size());
  mha_forward(layer.s, layer.weights(), layer.x.data(), layer.context.data(), out_fast.data(),
              layer.scale(), m, &fast_trace, &test::test_pool());
  ref::mha_forward(layer.s, layer.weights(), layer.x.data(), layer.context.data(), out_slow.data(),
                   layer.scale(), m, &slow_trace);
  CHECK_CLOSE(out_fast, out_slow, 5e-6);
  CHECK_CLOSE(fast.q, slow.q, 2e-6);
  CHECK_CLOSE(fast.k, slow.k, 2e-6);
  CHECK_CLOSE(fast.v, slow.v, 2e-6);
  CHECK_CLOSE(fast.scores, slow.scores, 5e-6);
  CHECK_CLOSE(fast.weights, slow.weights, 2e-6);
  CHECK_CLOSE(fast.concat, slow.concat, 2e-6);
  CHECK_CLOSE(layer.run(m, nullptr), out_fast, 1e-6);  // untraced: the fused path
}

TEST_CASE("self-attention without a mask is permutation-equivariant") {
  const Layer layer({1, 37, 37, 16, 4, 4, 4}, false, true, 77);
  const size_t n = layer.s.n_q, d = layer.s.d_model;
  std::vector<size_t> perm(n);
  std::iota(perm.begin(), perm.end(), 0);
  for (size_t i = 0; i < n; ++i) std::swap(perm[i], perm[(i * 7 + 3) % n]);  // a fixed shuffle
  std::vector<float> x_perm(n * d);
  for (size_t i = 0; i < n; ++i)
    for (size_t c = 0; c < d; ++c) x_perm[i * d + c] = layer.x[perm[i] * d + c];

  const ScoreMask m = layer.mask(false);
  const std::vector<float> out = layer.run(m, &test::test_pool());
  const std::vector<float> out_perm = layer.run(m, &test::test_pool(), &x_perm);
  std::vector<float> out_unpermuted(n * d);  // row i of out_perm belongs to token perm[i]
  for (size_t i = 0; i < n; ++i)
    for (size_t c = 0; c < d; ++c) out_unpermuted[perm[i] * d + c] = out_perm[i * d + c];
  CHECK_CLOSE(out_unpermuted, out, 2e-6);
  CHECK_FALSE(test::bitwise_equal(out_perm, out));  // the shuffle did move rows

  const ScoreMask causal = layer.mask(true);  // with the causal mask it is not equivariant
  const std::vector<float> c1 = layer.run(causal, nullptr),
                           c2 = layer.run(causal, nullptr, &x_perm);
  for (size_t i = 0; i < n; ++i)
    for (size_t c = 0; c < d; ++c) out_unpermuted[perm[i] * d + c] = c2[i * d + c];
  CHECK(test::max_abs_diff(out_unpermuted, c1).max_abs > 1e-3);
}

TEST_CASE("causal multi-head output row i does not change when later tokens change") {
  const Layer layer({2, 40, 40, 16, 2, 8, 8}, false, true, 123);
  const ScoreMask m = layer.mask(true);
  const std::vector<float> before = layer.run(m, &test::test_pool());
  const size_t n = layer.s.n_q, d = layer.s.d_model, changed_from = 23;
  std::vector<float> x = layer.x;
  for (size_t b = 0; b < 2; ++b)
    for (size_t j = changed_from; j < n; ++j)
      for (size_t c = 0; c < d; ++c) x[(b * n + j) * d + c] += 1.5f;
  const std::vector<float> after = layer.run(m, &test::test_pool(), &x);
  for (size_t b = 0; b < 2; ++b)
    for (size_t i = 0; i < n; ++i) {
      const float* r0 = &before[(b * n + i) * d];
      const float* r1 = &after[(b * n + i) * d];
      const bool same = std::memcmp(r0, r1, d * sizeof(float)) == 0;
      INFO("sequence " << b << " row " << i);
      CHECK(same == (i < changed_from));
    }
}

TEST_CASE("multi-head attention rejects impossible shapes") {
  const Layer layer({1, 4, 4, 8, 2, 4, 4}, false, false, 5);
  std::vector<float> out(4 * 8);
  MhaShape s = layer.s;
  s.heads = 0;
  CHECK_THROWS_AS(
      mha_forward(s, layer.weights(), layer.x.data(), nullptr, out.data(), 1.0f, ScoreMask{}),
      std::invalid_argument);
  s = layer.s;
  s.n_k = 5;  // self-attention with n_k != n_q
  CHECK_THROWS_AS(
      mha_forward(s, layer.weights(), layer.x.data(), nullptr, out.data(), 1.0f, ScoreMask{}),
      std::invalid_argument);
}

}  // namespace
}  // namespace wa
