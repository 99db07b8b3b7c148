// Scaled dot-product attention backward: the reference against finite differences of the
// double forward, the fast path against the reference over odd shapes, exact zeros where
// keys or queries are masked, and thread-count independence.
#include <cmath>
#include <limits>
#include <stdexcept>

#include "attention_problem.h"
#include "gradient_check.h"
#include "reference.h"
#include "testing.h"
#include "wa/attention.h"

namespace wa {
namespace {

using test::kOddSizes;

using Problem = test::AttentionProblem;

struct Grads {
  std::vector<float> dq, dk, dv;
  explicit Grads(const Problem& p) : dq(p.n_q * p.d_k), dk(p.n_k * p.d_k), dv(p.n_k * p.d_v) {}
  Matrix dQ(const Problem& p) { return {dq.data(), p.n_q, p.d_k, p.d_k}; }
  Matrix dK(const Problem& p) { return {dk.data(), p.n_k, p.d_k, p.d_k}; }
  Matrix dV(const Problem& p) { return {dv.data(), p.n_k, p.d_v, p.d_v}; }
};

Grads backward(const Problem& p, float scale, const ScoreMask& m, ThreadPool* pool = nullptr) {
  Grads g(p);
  attention_backward(p.Q(), p.K(), p.V(), p.dO(), g.dQ(p), g.dK(p), g.dV(p), scale, m, nullptr,
                     pool);
  return g;
}
Grads backward_ref(const Problem& p, float scale, const ScoreMask& m) {
  Grads g(p);
  ref::attention_backward(p.Q(), p.K(), p.V(), p.dO(), g.dQ(p), g.dK(p), g.dV(p), scale, m);
  return g;
}

// A keep mask (about 70% kept) and a bias, both random, owned with the mask that uses them.
struct KeepAndBias {
  std::vector<uint8_t> keep;
  std::vector<float> bias;
  KeepAndBias(size_t n_q, size_t n_k, uint32_t seed)
      : keep(n_q * n_k), bias(test::random_floats(n_q * n_k, seed + 1)) {
    const std::vector<float> coin = test::random_floats(n_q * n_k, seed, 0.0f, 1.0f);
    for (size_t e = 0; e < keep.size(); ++e) keep[e] = coin[e] < 0.7f;
  }
  void apply(ScoreMask& m) const {
    m.keep = keep.data();
    m.bias = bias.data();
  }
};

// The largest |x| in v, at least 1: gradients grow with the sequence, so tolerances scale.
float magnitude(const std::vector<float>& v) {
  float m = 1.0f;
  for (float x : v) m = std::max(m, std::fabs(x));
  return m;
}

TEST_CASE("attention backward reference equals central finite differences of the double forward") {
  uint32_t seed = 7000;
  for (size_t n_q : {1, 3, 5, 17})
    for (size_t n_k : {1, 3, 5, 17})
      for (int kind = 0; kind < 3; ++kind) {  // no mask, causal, keep mask with bias
        const size_t d_k = kind == 1 ? 2 : 3, d_v = kind == 1 ? 5 : 2;
        const Problem p(n_q, n_k, d_k, d_v, seed += 5, 1.5f);
        ScoreMask m;
        const float scale = 1.0f / std::sqrt(static_cast<float>(d_k));
        m.causal = kind == 1;
        const KeepAndBias kb(n_q, n_k, seed + 4);
        if (kind == 2) kb.apply(m);
        INFO("n_q=" << n_q << " n_k=" << n_k << " d_k=" << d_k << " d_v=" << d_v
                    << (kind == 1   ? " causal"
                        : kind == 2 ? " keep+bias"
                                    : ""));

        const Grads g = backward_ref(p, scale, m);
        test::Doubles q = test::to_doubles(p.q), k = test::to_doubles(p.k),
                      v = test::to_doubles(p.v);
        const test::Doubles d_out = test::to_doubles(p.d_out);
        // L = Σ d_out ⊙ attention(q, k, v)
        const auto loss = [&] {
          return test::dot(d_out,
                           ref::attention_forward_double(q, k, v, n_q, n_k, d_k, d_v, scale, m));
        };
        CHECK_GRADIENT("dq", g.dq, test::central_differences(q, loss), 1e-6, 1e-3);
        CHECK_GRADIENT("dk", g.dk, test::central_differences(k, loss), 1e-6, 1e-3);
        CHECK_GRADIENT("dv", g.dv, test::central_differences(v, loss), 1e-6, 1e-3);
      }
}

TEST_CASE("attention backward matches the reference over odd n_q, n_k, d_k != d_v, causal or not") {
  uint32_t seed = 1;
  for (size_t iq = 0; iq < kOddSizes.size(); ++iq)
    for (size_t ik = 0; ik < kOddSizes.size(); ++ik) {
      if ((iq + ik) % 2) continue;  // a sample: every size for n_q and n_k, half the pairs
      const size_t n_q = kOddSizes[iq], n_k = kOddSizes[ik];
      const size_t d_k = kOddSizes[(iq + ik) % kOddSizes.size()];
      const size_t d_v = kOddSizes[(iq + 2 * ik + 1) % kOddSizes.size()];
      const Problem p(n_q, n_k, d_k, d_v, seed += 4);
      const bool causal = (iq + ik) % 4 == 0;
      ScoreMask m;
      const float scale = 1.0f / std::sqrt(static_cast<float>(d_k));
      m.causal = causal;
      INFO("n_q=" << n_q << " n_k=" << n_k << " d_k=" << d_k << " d_v=" << d_v
                  << " causal=" << causal);
      const Grads fast = backward(p, scale, m, &test::test_pool()),
                  slow = backward_ref(p, scale, m);
      CHECK_CLOSE(fast.dq, slow.dq, 4e-6 * magnitude(slow.dq));
      CHECK_CLOSE(fast.dk, slow.dk, 4e-6 * magnitude(slow.dk));
      CHECK_CLOSE(fast.dv, slow.dv, 4e-6 * magnitude(slow.dv));
    }
}

TEST_CASE("attention backward with keep mask and bias matches the reference") {
  uint32_t seed = 800;
  for (size_t n_q : {1, 5, 33, 65})
    for (size_t n_k : {1, 7, 64, 129}) {
      const Problem p(n_q, n_k, 17, 9, seed += 5, 2.0f);
      const KeepAndBias kb(n_q, n_k, seed + 4);
      ScoreMask m;
      const float scale = 0.25f;
      m.causal = n_q % 2 == 1;
      kb.apply(m);
      INFO("n_q=" << n_q << " n_k=" << n_k << " causal=" << m.causal);
      const Grads fast = backward(p, scale, m, &test::test_pool()),
                  slow = backward_ref(p, scale, m);
      CHECK_CLOSE(fast.dq, slow.dq, 4e-6 * magnitude(slow.dq));
      CHECK_CLOSE(fast.dk, slow.dk, 4e-6 * magnitude(slow.dk));
      CHECK_CLOSE(fast.dv, slow.dv, 4e-6 * magnitude(slow.dv));
    }
}

TEST_CASE("attention backward handles sums past one packed slice (n_q, n_k, d_k > kKC)") {
  // dq = ds·k sums over n_k, dk = dsᵀ·q over n_q, the scores over d_k: each past one kKC slice
  const Problem p(kKC + 14, kKC + 44, kKC + 4, 40, 77);
  ScoreMask m;
  const float scale = 1.0f / std::sqrt(static_cast<float>(kKC + 4));
  m.causal = true;
  const Grads fast = backward(p, scale, m, &test::test_pool()), slow = backward_ref(p, scale, m);
  CHECK_CLOSE(fast.dq, slow.dq, 4e-6 * magnitude(slow.dq));
  CHECK_CLOSE(fast.dk, slow.dk, 4e-6 * magnitude(slow.dk));
  CHECK_CLOSE(fast.dv, slow.dv, 4e-6 * magnitude(slow.dv));
}

// Whether row r of m (rows, cols) is exactly zero.
bool zero_row(const std::vector<float>& m, size_t cols, size_t r) {
  for (size_t c = 0; c < cols; ++c)
    if (m[r * cols + c] != 0.0f) return false;
  return true;
}

TEST_CASE("keys masked for every query get exactly zero dk and dv rows") {
  // n_k > n_q and causal: keys n_q.. are after every query; the keep mask drops keys 0 and 4.
  const size_t n_q = 7, n_k = 13;
  const Problem p(n_q, n_k, 5, 3, 91);
  std::vector<uint8_t> keep(n_q * n_k, 1);
  for (size_t i = 0; i < n_q; ++i) keep[i * n_k + 0] = keep[i * n_k + 4] = 0;
  ScoreMask m;
  const float scale = 0.5f;
  m.causal = true;
  m.keep = keep.data();
  for (const Grads& g : {backward(p, scale, m, &test::test_pool()), backward_ref(p, scale, m)})
    for (size_t j = 0; j < n_k; ++j) {
      const bool masked_for_all = j == 0 || j == 4 || j >= n_q;
      INFO("key " << j);
      CHECK(zero_row(g.dk, p.d_k, j) == masked_for_all);  // other rows are not: the test can tell
      CHECK(zero_row(g.dv, p.d_v, j) == masked_for_all);
    }
}

TEST_CASE("a query whose keys are all masked gets an exactly zero dq row and adds nothing") {
  // Query 2 masked by the keep mask, query 4 by -inf bias on every key.
  const size_t n_q = 6, n_k = 9;
  Problem p(n_q, n_k, 4, 5, 93);
  std::vector<uint8_t> keep(n_q * n_k, 1);
  std::vector<float> bias(n_q * n_k, 0.0f);
  for (size_t j = 0; j < n_k; ++j) {
    keep[2 * n_k + j] = 0;
    bias[4 * n_k + j] = -std::numeric_limits<float>::infinity();
  }
  ScoreMask m;
  const float scale = 0.5f;
  m.keep = keep.data();
  m.bias = bias.data();
  const Grads before = backward(p, scale, m, &test::test_pool());
  for (size_t i = 0; i < n_q; ++i) {
    INFO("query " << i);
    CHECK(zero_row(before.dq, p.d_k, i) == (i == 2 || i == 4));
  }
  CHECK(test::all_finite(before.dk));
  CHECK(test::all_finite(before.dv));
  CHECK(zero_row(backward_ref(p, scale, m).dq, p.d_k, 2));

  // Their d_out rows do not reach dk or dv; another query's does.
  for (size_t i : {size_t{2}, size_t{4}, size_t{3}}) {
    Problem changed = p;
    for (size_t c = 0; c < p.d_v; ++c)
      changed.d_out[i * p.d_v + c] = 100.0f + static_cast<float>(c);
    const Grads after = backward(changed, scale, m, &test::test_pool());
    const bool same = after.dk == before.dk && after.dv == before.dv;  // value comparison
    INFO("d_out row " << i << " changed");
    CHECK(same == (i != 3));
  }
}

TEST_CASE("attention backward gives bitwise identical gradients on 1 and 3 threads") {
  for (bool causal : {false, true}) {
    const Problem p(129, 200, 65, 40, causal ? 301 : 302);
    ScoreMask m;
    const float scale = 1.0f / std::sqrt(65.0f);
    m.causal = causal;
    ThreadPool one(1), three(3);
    const Grads serial = backward(p, scale, m, nullptr), g1 = backward(p, scale, m, &one),
                g3 = backward(p, scale, m, &three);
    INFO("causal=" << causal << ", threads in the pool of 3: " << three.threads());
    CHECK(test::bitwise_equal(g1.dq, g3.dq));
    CHECK(test::bitwise_equal(g1.dk, g3.dk));
    CHECK(test::bitwise_equal(g1.dv, g3.dv));
    CHECK(test::bitwise_equal(serial.dq, g3.dq));
    CHECK(test::bitwise_equal(serial.dk, g3.dk));
    CHECK(test::bitwise_equal(serial.dv, g3.dv));
  }
}

TEST_CASE(
    "attention backward trace: P as the forward's, dP = d_out·vᵀ, dS zero where masked and dq = "
    "dS·k") {
  const Problem p(9, 13, 5, 4, 321);
  ScoreMask m;
  const float scale = 0.4f;
  m.causal = true;
  const size_t nn = p.n_q * p.n_k;
  std::vector<float> weights(nn), d_weights(nn), d_scores(nn);
  const AttentionBackwardTrace trace{weights.data(), d_weights.data(), d_scores.data()};
  Grads g(p);
  attention_backward(p.Q(), p.K(), p.V(), p.dO(), g.dQ(p), g.dK(p), g.dV(p), scale, m, &trace,
                     &test::test_pool());
  CHECK(test::bitwise_equal(g.dq, backward(p, scale, m).dq));  // the trace changes nothing

  test::TracedForward fwd(p.n_q, p.n_k, p.d_v);
  attention_forward(p.Q(), p.K(), p.V(), fwd.Out(p.n_q, p.d_v), scale, m, &fwd.trace);
  CHECK(test::bitwise_equal(weights, fwd.weights));

  std::vector<float> dp(nn), dq(p.n_q * p.d_k);
  ref::gemm(Transpose::no, Transpose::yes, p.n_q, p.n_k, p.d_v, p.d_out.data(), p.d_v, p.v.data(),
            p.d_v, dp.data(), p.n_k, false);
  CHECK_CLOSE(d_weights, dp, 1e-6);
  ref::gemm(Transpose::no, Transpose::no, p.n_q, p.d_k, p.n_k, d_scores.data(), p.n_k, p.k.data(),
            p.d_k, dq.data(), p.d_k, false);
  CHECK_CLOSE(g.dq, dq, 1e-6);
  for (size_t i = 0; i < p.n_q; ++i)
    for (size_t j = i + 1; j < p.n_k; ++j) CHECK(d_scores[i * p.n_k + j] == 0.0f);
}

TEST_CASE("attention backward rejects shapes that do not fit together, naming them") {
  const Problem p(4, 5, 3, 2, 61);
  Grads g(p);
  const Matrix dk_wrong{g.dk.data(), 5, 2, 2};
  CHECK_THROWS_WITH_AS(
      attention_backward(p.Q(), p.K(), p.V(), p.dO(), g.dQ(p), dk_wrong, g.dV(p), 1.0f,
                         ScoreMask{}),
      "attention backward: dk must be (n_k,d_k), as k: q (4,3), k (5,3), v (5,2), d_out (4,2), "
      "dq (4,3), dk (5,2), dv (5,2)",
      std::invalid_argument);
  const ConstMatrix d_out_wrong{p.d_out.data(), 4, 3, 3};
  CHECK_THROWS_AS(attention_backward(p.Q(), p.K(), p.V(), d_out_wrong, g.dQ(p), g.dK(p), g.dV(p),
                                     1.0f, ScoreMask{}),
                  std::invalid_argument);
}

}  // namespace
}  // namespace wa
