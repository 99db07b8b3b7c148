// Scaled dot-product attention: fast path against the reference over odd shapes, with
// masks, bias and traces; and the properties attention must have.
#include <cmath>
#include <limits>
#include <stdexcept>

#include "attention_problem.h"
#include "reference.h"
#include "testing.h"
#include "wa/attention.h"

namespace wa {
namespace {

using test::kOddSizes;

using Inputs = test::AttentionProblem;
using Traced = test::TracedForward;

std::vector<float> run(const Inputs& in, float scale, const ScoreMask& m,
                       ThreadPool* pool = nullptr) {
  std::vector<float> out(in.n_q * in.d_v);
  attention_forward(in.Q(), in.K(), in.V(), {out.data(), in.n_q, in.d_v, in.d_v}, scale, m, nullptr,
                    pool);
  return out;
}
std::vector<float> run_ref(const Inputs& in, float scale, const ScoreMask& m) {
  std::vector<float> out(in.n_q * in.d_v);
  ref::attention_forward(in.Q(), in.K(), in.V(), {out.data(), in.n_q, in.d_v, in.d_v}, scale, m);
  return out;
}

TEST_CASE("attention matches the reference over odd n_q, n_k, d_k != d_v, causal or not") {
  uint32_t seed = 1;
  for (size_t iq = 0; iq < kOddSizes.size(); ++iq)
    for (size_t ik = 0; ik < kOddSizes.size(); ++ik) {
      const size_t n_q = kOddSizes[iq], n_k = kOddSizes[ik];
      const size_t d_k = kOddSizes[(iq + ik) % kOddSizes.size()];
      const size_t d_v = kOddSizes[(iq + 2 * ik + 1) % kOddSizes.size()];
      const Inputs in(n_q, n_k, d_k, d_v, seed += 3);
      for (bool causal : {false, true}) {
        ScoreMask m;
        const float scale = 1.0f / std::sqrt(static_cast<float>(d_k));
        m.causal = causal;
        INFO("n_q=" << n_q << " n_k=" << n_k << " d_k=" << d_k << " d_v=" << d_v
                    << " causal=" << causal);
        CHECK_CLOSE(run(in, scale, m, &test::test_pool()), run_ref(in, scale, m), 2e-6);
      }
    }
}

TEST_CASE("attention with keep mask and bias matches the reference, and so does its trace") {
  uint32_t seed = 500;
  for (size_t n_q : {1, 5, 33, 65})
    for (size_t n_k : {1, 7, 64, 129}) {
      const Inputs in(n_q, n_k, 17, 9, seed += 3, 2.0f);
      std::vector<uint8_t> keep(n_q * n_k);
      const std::vector<float> coin = test::random_floats(n_q * n_k, seed + 7, 0.0f, 1.0f);
      for (size_t e = 0; e < keep.size(); ++e) keep[e] = coin[e] < 0.6f;
      const std::vector<float> bias = test::random_floats(n_q * n_k, seed + 8);
      ScoreMask m;
      const float scale = 0.25f;
      m.causal = n_q % 2 == 1;
      m.keep = keep.data();
      m.bias = bias.data();

      Traced fast(n_q, n_k, in.d_v), slow(n_q, n_k, in.d_v);
      attention_forward(in.Q(), in.K(), in.V(), {fast.out.data(), n_q, in.d_v, in.d_v}, scale, m,
                        &fast.trace, &test::test_pool());
      ref::attention_forward(in.Q(), in.K(), in.V(), {slow.out.data(), n_q, in.d_v, in.d_v}, scale,
                             m, &slow.trace);
      INFO("n_q=" << n_q << " n_k=" << n_k << " causal=" << m.causal);
      CHECK_CLOSE(fast.out, slow.out, 2e-6);
      CHECK_CLOSE(fast.scores, slow.scores, 4e-6);
      CHECK_CLOSE(fast.scaled, slow.scaled, 1e-6);
      CHECK_CLOSE(fast.weights, slow.weights, 1e-6);
      // masked: the same -inf cells, close elsewhere
      for (size_t e = 0; e < fast.masked.size(); ++e) {
        REQUIRE(std::isinf(fast.masked[e]) == std::isinf(slow.masked[e]));
        if (std::isinf(fast.masked[e])) fast.masked[e] = slow.masked[e] = 0;
      }
      CHECK_CLOSE(fast.masked, slow.masked, 1e-6);
      // the untraced run (the fused, online-softmax path) agrees with the traced one
      CHECK_CLOSE(run(in, scale, m), fast.out, 1e-6);
    }
}

TEST_CASE("attention handles k past one packed slice and long key sequences") {
  // q·kᵀ sums over d_k past one kKC slice; the keys span several key blocks
  const Inputs in(70, 2 * kKeyBlock + 88, kKC + 44, 40, 77);
  ScoreMask m;
  const float scale = 1.0f / std::sqrt(static_cast<float>(kKC + 44));
  m.causal = true;
  CHECK_CLOSE(run(in, scale, m, &test::test_pool()), run_ref(in, scale, m), 2e-6);
}

TEST_CASE("fused attention matches the reference across key blocks, with every kind of mask") {
  // The untraced path takes keys kKeyBlock at a time with an online softmax: sizes around and
  // past that block, rows that first see a key in a late block, and masks spanning blocks.
  uint32_t seed = 700;
  for (size_t n_k : {kKeyBlock - 1, kKeyBlock, kKeyBlock + 1, 2 * kKeyBlock + 8, 4 * kKeyBlock + 6})
    for (size_t n_q : {size_t{1}, size_t{33}, size_t{300}}) {
      const Inputs in(n_q, n_k, 16, 12, seed += 3, 2.0f);
      std::vector<uint8_t> keep(n_q * n_k);
      const std::vector<float> coin = test::random_floats(n_q * n_k, seed + 7, 0.0f, 1.0f);
      for (size_t e = 0; e < keep.size(); ++e) keep[e] = coin[e] < 0.5f;
      // row 0 sees only the last key; row 1 (when there) sees nothing at all
      for (size_t j = 0; j < n_k; ++j) keep[j] = j + 1 == n_k;
      if (n_q > 1)
        for (size_t j = 0; j < n_k; ++j) keep[n_k + j] = 0;
      std::vector<float> bias = test::random_floats(n_q * n_k, seed + 8, -3.0f, 3.0f);
      for (size_t e = 0; e < bias.size(); e += 5) bias[e] = -std::numeric_limits<float>::infinity();
      for (int variant = 0; variant < 4; ++variant) {
        ScoreMask m;
        const float scale = 0.25f;
        m.causal = variant == 1;
        m.keep = variant == 2 ? keep.data() : nullptr;
        m.bias = variant == 3 ? bias.data() : nullptr;
        INFO("n_q=" << n_q << " n_k=" << n_k << " variant=" << variant);
        const std::vector<float> out = run(in, scale, m, &test::test_pool());
        CHECK_CLOSE(out, run_ref(in, scale, m), 2e-6);
        if (variant == 2 && n_q > 1)
          for (size_t c = 0; c < in.d_v; ++c) CHECK(out[in.d_v + c] == 0.0f);
      }
    }
}

TEST_CASE("attention weight rows sum to 1") {
  const Inputs in(40, 23, 8, 8, 9);
  ScoreMask m;
  const float scale = 0.5f;
  m.causal = true;
  Traced t(in.n_q, in.n_k, in.d_v);
  attention_forward(in.Q(), in.K(), in.V(), {t.out.data(), in.n_q, in.d_v, in.d_v}, scale, m,
                    &t.trace);
  for (size_t i = 0; i < in.n_q; ++i) {
    double sum = 0;
    for (size_t j = 0; j < in.n_k; ++j) sum += t.weights[i * in.n_k + j];
    CHECK(sum == doctest::Approx(1.0).epsilon(1e-6));
  }
}

TEST_CASE("causal output row i does not change when keys and values after i change") {
  const size_t n = 70, d_k = 12, d_v = 7;
  Inputs a(n, n, d_k, d_v, 31);
  ScoreMask m;
  const float scale = 1.0f / std::sqrt(12.0f);
  m.causal = true;
  const std::vector<float> before = run(a, scale, m, &test::test_pool());
  for (size_t changed_from : {size_t{0}, size_t{5}, size_t{40}, size_t{69}}) {
    Inputs b = a;
    const std::vector<float> noise = test::random_floats(n * d_k, 99 + changed_from, -3.0f, 3.0f);
    for (size_t j = changed_from; j < n; ++j)
      for (size_t c = 0; c < d_k; ++c) b.k[j * d_k + c] = noise[j * d_k + c];
    for (size_t j = changed_from; j < n; ++j)
      for (size_t c = 0; c < d_v; ++c) b.v[j * d_v + c] = -noise[j * d_k + c];
    const std::vector<float> after = run(b, scale, m, &test::test_pool());
    INFO("keys and values changed from " << changed_from);
    for (size_t i = 0; i < n; ++i) {
      const bool same = std::memcmp(&before[i * d_v], &after[i * d_v], d_v * sizeof(float)) == 0;
      if (i < changed_from)
        CHECK(same);
      else
        CHECK_FALSE(same);  // the row does see the change: the test can tell
    }
  }
}

TEST_CASE("scores of magnitude 1e4 and -inf bias entries give finite outputs") {
  const size_t n_q = 6, n_k = 10, d = 4;
  Inputs in(n_q, n_k, d, d, 41, 60.0f);  // q·k up to 4·3600 ≈ 1.4e4
  std::vector<float> bias(n_q * n_k, 0.0f);
  for (size_t j = 0; j < n_k; j += 2) bias[j] = -std::numeric_limits<float>::infinity();
  ScoreMask m;
  const float scale = 1.0f;
  m.bias = bias.data();
  const std::vector<float> out = run(in, scale, m);
  CHECK(test::all_finite(out));
  CHECK_CLOSE(out, run_ref(in, scale, m), 1e-5);
}

// q (2,2), k (2,2) where query 0's scores overflow float32: the fused (untraced) and the
// traced path both give query 0 a NaN output row, and query 1 a finite one.
void overflow_rows_are_nan(const std::vector<float>& q, const std::vector<float>& k);

TEST_CASE("a score that overflows to NaN gives a NaN output row, never a quiet zero row") {
  // q·k = 1e40 - 1e40 = inf - inf in float32 for query 0; query 1 stays finite
  const std::vector<float> q = {1e20f, 1e20f, 0.5f, 0.25f}, k = {1e20f, -1e20f, 1.0f, 2.0f};
  overflow_rows_are_nan(q, k);
}

TEST_CASE("a score that overflows to +inf gives a NaN output row on both paths") {
  // q·k = 1e40 + 1e40 = +inf for query 0 and key 0; query 1 stays finite
  const std::vector<float> q = {1e20f, 1e20f, 0.5f, 0.25f}, k = {1e20f, 1e20f, 1.0f, 2.0f};
  overflow_rows_are_nan(q, k);
}

void overflow_rows_are_nan(const std::vector<float>& q, const std::vector<float>& k) {
  const std::vector<float> v = {1, 2, 3, 4};
  std::vector<float> out(4), out_traced(4), scores(4), scaled(4), masked(4), weights(4);
  const AttentionTrace trace{scores.data(), scaled.data(), masked.data(), weights.data()};
  ScoreMask m;
  attention_forward({q.data(), 2, 2, 2}, {k.data(), 2, 2, 2}, {v.data(), 2, 2, 2},
                    {out.data(), 2, 2, 2}, 1.0f, m);
  attention_forward({q.data(), 2, 2, 2}, {k.data(), 2, 2, 2}, {v.data(), 2, 2, 2},
                    {out_traced.data(), 2, 2, 2}, 1.0f, m, &trace);
  for (const std::vector<float>* o : {&out, &out_traced}) {
    CHECK(std::isnan((*o)[0]));
    CHECK(std::isnan((*o)[1]));
    CHECK(std::isfinite((*o)[2]));
    CHECK(std::isfinite((*o)[3]));
  }
}

TEST_CASE("a query whose keys are all masked gets a zero output row") {
  const Inputs in(3, 5, 4, 6, 51);
  std::vector<uint8_t> keep(3 * 5, 1);
  for (size_t j = 0; j < 5; ++j) keep[2 * 5 + j] = 0;
  ScoreMask m;
  m.keep = keep.data();
  const std::vector<float> out = run(in, 1.0f, m);
  CHECK(test::all_finite(out));
  for (size_t c = 0; c < 6; ++c) CHECK(out[2 * 6 + c] == 0.0f);
  CHECK(out[0] != 0.0f);
}

TEST_CASE("attention rejects shapes that do not fit together, naming them") {
  const Inputs in(4, 5, 3, 2, 61);
  std::vector<float> out(4 * 2);
  const ConstMatrix k_wrong{in.k.data(), 5, 2, 2};
  CHECK_THROWS_WITH_AS(
      attention_forward(in.Q(), k_wrong, in.V(), {out.data(), 4, 2, 2}, 1.0f, ScoreMask{}),
      "attention: k must have as many columns as q (d_k): q (4,3), k (5,2), v (5,2), out (4,2)",
      std::invalid_argument);
  const ConstMatrix v_wrong{in.v.data(), 4, 2, 2};
  CHECK_THROWS_AS(
      attention_forward(in.Q(), in.K(), v_wrong, {out.data(), 4, 2, 2}, 1.0f, ScoreMask{}),
      std::invalid_argument);
}

}  // namespace
}  // namespace wa
