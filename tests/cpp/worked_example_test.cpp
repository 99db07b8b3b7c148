// The 3-token, 2-dimensional self-attention example of the seed notes, every number worked
// by hand here. The seed prints QKᵀ as [1 1 3; 1 1 2; 2 2 5]; that is wrong: see below.
//
// X = [1 0; 0 1; 1 1], W_Q = I, W_K = [1 1; 0 1], W_V = I, d_k = 2
// Q = X·W_Q = [1 0; 0 1; 1 1]
// K = X·W_K: [1 0]·W_K = [1 1], [0 1]·W_K = [0 1], [1 1]·W_K = [1 2]  -> [1 1; 0 1; 1 2]
// V = X·W_V = [1 0; 0 1; 1 1]
// QKᵀ, entry (i,j) = q_i·k_j:
//   q1=[1 0]: 1, 0, 1      q2=[0 1]: 1, 1, 2      q3=[1 1]: 2, 1, 3
// scaled by 1/√2 = a = 0.70710678:  [a 0 a; a a 2a; 2a a 3a]
// softmax, with e = exp(a) = 2.02811498 (each row shifted so its max is 0 changes nothing):
//   row 1: [e 1 e]/(2e+1)       = [0.40111209 0.19777581 0.40111209]
//   row 2: [1 1 e]/(e+2)        = [0.24825508 0.24825508 0.50348984]
//   row 3: [e 1 e²]/(e²+e+1)    = [0.28399541 0.14002925 0.57597534]
// output = weights·V; with V = [1 0; 0 1; 1 1], output row = [w1 + w3, w2 + w3]:
//   row 1: [2e, e+1]/(2e+1)           = [0.80222419 0.59888791]
//   row 2: [e+1, e+1]/(e+2)           = [0.75174492 0.75174492]
//   row 3: [e²+e, e²+1]/(e²+e+1)      = [0.85997076 0.71600459]
#include <cmath>

#include "testing.h"
#include "wa/attention.h"

namespace wa {
namespace {

TEST_CASE("the seed's 3-token example, worked by hand") {
  const std::vector<float> x = {1, 0, 0, 1, 1, 1};
  const std::vector<float> wq = {1, 0, 0, 1}, wk = {1, 1, 0, 1}, wv = {1, 0, 0, 1},
                           wo = {1, 0, 0, 1};
  const MhaShape s{1, 3, 3, 2, 1, 2, 2};
  const MhaWeights w{wq.data(), wk.data(), wv.data(), wo.data()};
  ScoreMask m;
  const float scale = 1.0f / std::sqrt(2.0f);

  std::vector<float> q(6), k(6), v(6), scores(9), scaled(9), masked(9), weights(9), concat(6),
      out(6);
  const MhaSaved trace{q.data(),      k.data(),      v.data(),       scores.data(),
                       scaled.data(), masked.data(), weights.data(), concat.data()};
  mha_forward(s, w, x.data(), nullptr, out.data(), scale, m, &trace);

  CHECK(k == std::vector<float>{1, 1, 0, 1, 1, 2});
  // not the seed's [1 1 3; 1 1 2; 2 2 5]
  CHECK(scores == std::vector<float>{1, 0, 1, 1, 1, 2, 2, 1, 3});

  const double a = 1 / std::sqrt(2.0), e = std::exp(a);
  const std::vector<float> expected_weights = {
      float(e / (2 * e + 1)),     float(1 / (2 * e + 1)),     float(e / (2 * e + 1)),
      float(1 / (e + 2)),         float(1 / (e + 2)),         float(e / (e + 2)),
      float(e / (e * e + e + 1)), float(1 / (e * e + e + 1)), float(e * e / (e * e + e + 1))};
  const std::vector<float> printed_weights = {0.40111209f, 0.19777581f, 0.40111209f,
                                              0.24825508f, 0.24825508f, 0.50348984f,
                                              0.28399541f, 0.14002925f, 0.57597534f};
  CHECK_CLOSE(expected_weights, printed_weights, 1e-8);  // the comment's numbers are right
  CHECK_CLOSE(weights, expected_weights, 1e-7);

  const std::vector<float> expected_out = {0.80222419f, 0.59888791f, 0.75174492f,
                                           0.75174492f, 0.85997076f, 0.71600459f};
  CHECK(float(2 * e / (2 * e + 1)) == doctest::Approx(expected_out[0]).epsilon(1e-7));
  CHECK(float((e * e + 1) / (e * e + e + 1)) == doctest::Approx(expected_out[5]).epsilon(1e-7));
  CHECK_CLOSE(out, expected_out, 2e-7);
  CHECK_CLOSE(scaled,
              (std::vector<float>{float(a), 0, float(a), float(a), float(a), float(2 * a),
                                  float(2 * a), float(a), float(3 * a)}),
              1e-7);
}

}  // namespace
}  // namespace wa
