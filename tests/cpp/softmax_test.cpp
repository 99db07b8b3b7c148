// Row softmax: against the reference, and the properties every softmax must have.
#include <limits>

#include "attention/softmax_rows.h"
#include "reference.h"
#include "testing.h"

namespace wa {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// Whole-matrix fast softmax, for the tests.
std::vector<float> softmax_fast(const std::vector<float>& s, size_t n_q, size_t n_k, float scale,
                                const ScoreMask& m) {
  std::vector<float> w(s.size());
  softmax_rows(s.data(), n_k, w.data(), n_k, 0, n_q, n_k, n_k, scale, m);
  return w;
}
std::vector<float> softmax_ref(const std::vector<float>& s, size_t n_q, size_t n_k, float scale,
                               const ScoreMask& m) {
  std::vector<float> w(s.size());
  ref::softmax(s.data(), w.data(), n_q, n_k, scale, m);
  return w;
}

TEST_CASE("softmax matches the reference with scale, causal, keep mask and bias") {
  uint32_t seed = 1;
  for (size_t n_q : test::kOddSizes)
    for (size_t n_k : {size_t{1}, size_t{3}, size_t{5}, size_t{17}, size_t{64}, size_t{129}}) {
      const std::vector<float> s = test::random_floats(n_q * n_k, seed++, -8.0f, 8.0f);
      const std::vector<float> bias = test::random_floats(n_q * n_k, seed++, -2.0f, 2.0f);
      std::vector<uint8_t> keep(n_q * n_k);
      const std::vector<float> coin = test::random_floats(n_q * n_k, seed++, 0.0f, 1.0f);
      for (size_t e = 0; e < keep.size(); ++e) keep[e] = coin[e] < 0.7f;
      for (int variant = 0; variant < 8; ++variant) {
        ScoreMask m;
        const float scale = 0.37f;
        m.causal = variant & 1;
        m.keep = variant & 2 ? keep.data() : nullptr;
        m.bias = variant & 4 ? bias.data() : nullptr;
        INFO("n_q=" << n_q << " n_k=" << n_k << " causal=" << m.causal << " keep=" << !!m.keep
                    << " bias=" << !!m.bias);
        CHECK_CLOSE(softmax_fast(s, n_q, n_k, scale, m), softmax_ref(s, n_q, n_k, scale, m), 2e-7);
      }
    }
}

TEST_CASE("softmax rows sum to 1 and masked keys get exactly 0") {
  const size_t n_q = 17, n_k = 33;
  const std::vector<float> s = test::random_floats(n_q * n_k, 7, -20.0f, 20.0f);
  ScoreMask m;
  m.causal = true;
  const std::vector<float> w = softmax_fast(s, n_q, n_k, 1.0f, m);
  for (size_t i = 0; i < n_q; ++i) {
    double sum = 0;
    for (size_t j = 0; j < n_k; ++j) {
      sum += w[i * n_k + j];
      if (j > i)
        CHECK(w[i * n_k + j] == 0.0f);
      else
        CHECK(w[i * n_k + j] > 0.0f);
    }
    CHECK(sum == doctest::Approx(1.0).epsilon(1e-6));
  }
}

TEST_CASE("adding a constant to a score row changes no weight") {
  const size_t n_q = 5, n_k = 65;
  // Scores on a 1/1024 grid, so s + 64·(i+1) and s - max are exact in float: the weights
  // must then be bitwise the same.
  std::vector<float> s = test::random_floats(n_q * n_k, 11, -4.0f, 4.0f);
  for (float& x : s) x = std::round(x * 1024.0f) / 1024.0f;
  std::vector<float> shifted = s;
  for (size_t i = 0; i < n_q; ++i)
    for (size_t j = 0; j < n_k; ++j) shifted[i * n_k + j] += 64.0f * (i + 1);
  const ScoreMask m;
  CHECK(test::bitwise_equal(softmax_fast(shifted, n_q, n_k, 1.0f, m),
                            softmax_fast(s, n_q, n_k, 1.0f, m)));
  CHECK_CLOSE(softmax_ref(shifted, n_q, n_k, 1.0f, m), softmax_ref(s, n_q, n_k, 1.0f, m), 0.0);
}

TEST_CASE("scores of magnitude 1e4 and -inf biases stay finite") {
  const size_t n_q = 4, n_k = 9;
  std::vector<float> s = test::random_floats(n_q * n_k, 3, -1e4f, 1e4f);
  s[0] = 1e4f, s[1] = -1e4f;
  std::vector<float> bias(n_q * n_k, 0.0f);
  bias[2] = bias[n_k + 3] = -kInf;
  ScoreMask m;
  m.bias = bias.data();
  const std::vector<float> w = softmax_fast(s, n_q, n_k, 1.0f, m);
  CHECK(test::all_finite(w));
  CHECK(w[2] == 0.0f);
  CHECK(w[n_k + 3] == 0.0f);
  CHECK(w[0] == doctest::Approx(1.0));  // 1e4 beats everything else in row 0 by far
  CHECK_CLOSE(w, softmax_ref(s, n_q, n_k, 1.0f, m), 1e-7);
}

TEST_CASE("a row whose keys are all masked gives zero weights, not NaN") {
  const size_t n_q = 3, n_k = 4;
  const std::vector<float> s = test::random_floats(n_q * n_k, 5);
  std::vector<uint8_t> keep(n_q * n_k, 1);
  for (size_t j = 0; j < n_k; ++j) keep[1 * n_k + j] = 0;  // row 1: nothing kept
  ScoreMask m;
  m.keep = keep.data();
  const std::vector<float> w = softmax_fast(s, n_q, n_k, 1.0f, m);
  for (size_t j = 0; j < n_k; ++j) CHECK(w[n_k + j] == 0.0f);
  CHECK(test::all_finite(w));
  CHECK(w[0] + w[1] + w[2] + w[3] == doctest::Approx(1.0));
  CHECK_CLOSE(w, softmax_ref(s, n_q, n_k, 1.0f, m), 1e-7);
}

}  // namespace
}  // namespace wa
