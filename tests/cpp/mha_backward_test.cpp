// Multi-head attention backward: the reference against finite differences of the double
// forward (self and cross, batch 2, biases, masks), the fast path against the reference,
// exact zeros for masked tokens, thread-count independence, missing buffers, and a saved
// trace without weights.
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

#include "gradient_check.h"
#include "mha_layer.h"
#include "reference.h"
#include "testing.h"
#include "wa/attention.h"

namespace wa {
namespace {

using test::or_null;

using Layer = test::MhaBackwardLayer;
using Grads = test::MhaGradBuffers;

using Saved = test::MhaTraceBuffers;  // the forward's trace: what mha_backward reads back

// Forward with a trace, then backward, both on pool.
Grads backward(const Layer& l, const ScoreMask& m, ThreadPool* pool) {
  Saved saved(l.s);
  const MhaSaved trace = saved.trace();
  std::vector<float> out(l.d_out.size());
  mha_forward(l.s, l.weights(), l.x.data(), or_null(l.context), out.data(), l.scale(), m, &trace,
              pool);
  Grads g(l);
  mha_backward(l.s, l.weights(), l.x.data(), or_null(l.context), trace, l.d_out.data(), l.scale(),
               m, g.grads(), pool);
  return g;
}
Grads backward_ref(const Layer& l, const ScoreMask& m) {
  Grads g(l);
  ref::mha_backward(l.s, l.weights(), l.x.data(), or_null(l.context), l.d_out.data(), l.scale(), m,
                    g.grads());
  return g;
}

float magnitude(const std::vector<float>& v) {
  float m = 1.0f;
  for (float x : v) m = std::max(m, std::fabs(x));
  return m;
}

std::string describe(const Layer& l, bool causal) {
  const MhaShape& s = l.s;
  return "batch=" + std::to_string(s.batch) + " n_q=" + std::to_string(s.n_q) +
         " n_k=" + std::to_string(s.n_k) + " d_model=" + std::to_string(s.d_model) +
         " h=" + std::to_string(s.heads) + " d_k=" + std::to_string(s.d_k) +
         " d_v=" + std::to_string(s.d_v) + (l.cross() ? " cross" : " self") +
         (l.bq.empty() ? "" : " bias") + (causal ? " causal" : "");
}

TEST_CASE("multi-head backward reference equals central finite differences of the double forward") {
  uint32_t seed = 3000;
  for (bool cross : {false, true})
    for (bool bias : {false, true})
      for (bool keep_mask : {false, true}) {  // causal, or a keep mask and a score bias
        //               batch n_q n_k d_model h d_k d_v
        const Layer l({2, 3, 5, 4, 2, 3, 2}, cross, bias, seed += 20);
        ScoreMask m = l.mask(!keep_mask);
        std::vector<uint8_t> keep(l.s.n_q * l.s.n_k);
        const std::vector<float> coin = test::random_floats(keep.size(), seed + 15, 0.0f, 1.0f);
        for (size_t e = 0; e < keep.size(); ++e) keep[e] = coin[e] < 0.7f;
        const std::vector<float> score_bias = test::random_floats(keep.size(), seed + 16);
        if (keep_mask) {
          m.keep = keep.data();
          m.bias = score_bias.data();
        }
        INFO(describe(l, m.causal) << (keep_mask ? " keep+bias" : ""));

        const Grads g = backward_ref(l, m);
        ref::MhaWeightsDouble w{test::to_doubles(l.wq), test::to_doubles(l.wk),
                                test::to_doubles(l.wv), test::to_doubles(l.wo),
                                test::to_doubles(l.bq), test::to_doubles(l.bk),
                                test::to_doubles(l.bv), test::to_doubles(l.bo)};
        test::Doubles x = test::to_doubles(l.x), context = test::to_doubles(l.context);
        const test::Doubles d_out = test::to_doubles(l.d_out);
        // L = Σ d_out ⊙ mha(x, context; W, b)
        const auto loss = [&] {
          return test::dot(d_out, ref::mha_forward_double(l.s, w, x, context, l.scale(), m));
        };
        const std::pair<const char*, test::Doubles*> params[] = {
            {"dx", &x},     {"d_context", &context}, {"dwq", &w.wq}, {"dwk", &w.wk},
            {"dwv", &w.wv}, {"dwo", &w.wo},          {"dbq", &w.bq}, {"dbk", &w.bk},
            {"dbv", &w.bv}, {"dbo", &w.bo}};
        const auto grads = g.all();
        for (size_t i = 0; i < grads.size(); ++i) {
          REQUIRE(grads[i].second->size() == params[i].second->size());
          CHECK_GRADIENT(params[i].first, *grads[i].second,
                         test::central_differences(*params[i].second, loss), 1e-6, 1e-3);
        }
        CHECK(g.dbq.empty() != bias);  // the loop did see the bias gradients when there are biases
        CHECK(g.d_context.empty() != cross);
      }
}

TEST_CASE("multi-head backward matches the reference: self and cross, batch, bias, causal") {
  uint32_t seed = 1;
  //                      batch n_q n_k d_model heads d_k d_v
  const MhaShape shapes[] = {{1, 1, 1, 1, 1, 1, 1},      {1, 3, 3, 8, 2, 4, 4},
                             {2, 5, 17, 12, 3, 4, 5},    {1, 17, 5, 20, 4, 5, 3},
                             {3, 63, 65, 16, 2, 8, 8},   {1, 65, 129, 30, 5, 6, 7},
                             {2, 129, 64, 64, 8, 8, 16}, {1, 64, 2, 9, 1, 17, 2}};
  for (const MhaShape& shape : shapes)
    for (bool cross : {false, true})
      for (bool bias : {false, true}) {
        const bool causal = cross == bias;
        const Layer l(shape, cross, bias, seed += 20);
        const ScoreMask m = l.mask(causal);
        INFO(describe(l, causal));
        const Grads fast = backward(l, m, &test::test_pool()), slow = backward_ref(l, m);
        const auto f = fast.all(), r = slow.all();
        for (size_t i = 0; i < f.size(); ++i) {
          INFO(f[i].first);
          CHECK_CLOSE(*f[i].second, *r[i].second, 5e-6 * magnitude(*r[i].second));
        }
      }
}

TEST_CASE(
    "in cross-attention, context tokens masked for every query get zero d_context rows "
    "and fully masked queries zero dx rows") {
  const Layer l({2, 6, 9, 8, 2, 4, 3}, true, true, 4242);
  const size_t n_q = l.s.n_q, n_k = l.s.n_k, d = l.s.d_model;
  std::vector<uint8_t> keep(n_q * n_k, 1);
  for (size_t i = 0; i < n_q; ++i) keep[i * n_k + 1] = keep[i * n_k + 7] = 0;  // tokens 1 and 7
  for (size_t j = 0; j < n_k; ++j) keep[4 * n_k + j] = 0;                      // query 4
  ScoreMask m = l.mask(false);
  m.keep = keep.data();
  auto zero_row = [d](const std::vector<float>& g, size_t row) {
    for (size_t c = 0; c < d; ++c)
      if (g[row * d + c] != 0.0f) return false;
    return true;
  };
  for (const Grads& g : {backward(l, m, &test::test_pool()), backward_ref(l, m)})
    for (size_t b = 0; b < l.s.batch; ++b) {
      for (size_t j = 0; j < n_k; ++j) {
        INFO("sequence " << b << " context token " << j);
        CHECK(zero_row(g.d_context, b * n_k + j) == (j == 1 || j == 7));
      }
      for (size_t i = 0; i < n_q; ++i) {
        INFO("sequence " << b << " query " << i);
        CHECK(zero_row(g.dx, b * n_q + i) == (i == 4));
      }
    }
}

TEST_CASE("multi-head backward gives bitwise identical gradients on 1 and 3 threads") {
  //                      batch n_q n_k d_model heads d_k d_v
  const MhaShape shapes[] = {{2, 70, 90, 64, 3, 24, 20}, {1, 129, 129, 64, 1, 64, 64}};
  for (const MhaShape& shape : shapes)
    for (bool cross : {false, true}) {
      const Layer l(shape, cross, true, cross ? 11 : 12);
      const ScoreMask m = l.mask(true);
      ThreadPool one(1), three(3);
      const Grads serial = backward(l, m, nullptr), g1 = backward(l, m, &one),
                  g3 = backward(l, m, &three);
      INFO(describe(l, true) << ", threads in the pool of 3: " << three.threads());
      const auto a = serial.all(), b = g1.all(), c = g3.all();
      for (size_t i = 0; i < a.size(); ++i) {
        INFO(a[i].first);
        CHECK(test::bitwise_equal(*b[i].second, *c[i].second));
        CHECK(test::bitwise_equal(*a[i].second, *c[i].second));
      }
    }
}

TEST_CASE("multi-head backward names the buffer it is missing") {
  const Layer l({1, 4, 5, 8, 2, 4, 4}, true, true, 5);
  const ScoreMask m = l.mask(false);
  Saved saved(l.s);
  const MhaSaved trace = saved.trace();
  Grads g(l);
  MhaGrads grads = g.grads();
  grads.d_context = nullptr;
  CHECK_THROWS_WITH_AS(mha_backward(l.s, l.weights(), l.x.data(), l.context.data(), trace,
                                    l.d_out.data(), l.scale(), m, grads),
                       "multi-head attention backward: cross-attention needs grads.d_context",
                       std::invalid_argument);
  grads = g.grads();
  grads.dbk = nullptr;
  CHECK_THROWS_WITH_AS(
      mha_backward(l.s, l.weights(), l.x.data(), l.context.data(), trace, l.d_out.data(), l.scale(),
                   m, grads),
      "multi-head attention backward: grads.db* must be set exactly for the biases w has (dbq "
      "for bq, ...)",
      std::invalid_argument);
  CHECK_THROWS_WITH_AS(mha_backward(l.s, l.weights(), l.x.data(), l.context.data(), trace, nullptr,
                                    l.scale(), m, g.grads()),
                       "multi-head attention backward: x, d_out and the four weight matrices are "
                       "required: batch 1, n_q 4, n_k 5, d_model 8, h 2, h_kv 2, d_k 4, d_v 4",
                       std::invalid_argument);
  MhaSaved no_concat = trace;
  no_concat.concat = nullptr;
  CHECK_THROWS_WITH_AS(mha_backward(l.s, l.weights(), l.x.data(), l.context.data(), no_concat,
                                    l.d_out.data(), l.scale(), m, g.grads()),
                       "multi-head attention backward: the saved trace needs q, k, v and concat "
                       "from the forward",
                       std::invalid_argument);
}

TEST_CASE("a backward without saved weights recomputes them: the same gradients, bitwise") {
  for (bool cross : {false, true}) {
    const Layer l({2, 37, cross ? size_t{41} : size_t{37}, 16, 4, 4, 5}, cross, true, 77);
    const ScoreMask m = l.mask(!cross);
    const Grads full = backward(l, m, &test::test_pool());

    // what a full forward saved, less the (batch,h,n_q,n_k) matrices
    Saved saved(l.s);
    MhaSaved full_trace = saved.trace();
    std::vector<float> out(l.d_out.size());
    mha_forward(l.s, l.weights(), l.x.data(), or_null(l.context), out.data(), l.scale(), m,
                &full_trace, &test::test_pool());
    MhaSaved small = full_trace;
    small.scores = small.scaled = small.masked = small.weights = nullptr;
    Grads g(l);
    mha_backward(l.s, l.weights(), l.x.data(), or_null(l.context), small, l.d_out.data(), l.scale(),
                 m, g.grads(), &test::test_pool());
    INFO("cross=" << cross);
    CHECK(test::bitwise_equal(g.dx, full.dx));
    CHECK(test::bitwise_equal(g.d_context, full.d_context));
    CHECK(test::bitwise_equal(g.dwq, full.dwq));
    CHECK(test::bitwise_equal(g.dwk, full.dwk));
    CHECK(test::bitwise_equal(g.dwv, full.dwv));
    CHECK(test::bitwise_equal(g.dwo, full.dwo));
    CHECK(test::bitwise_equal(g.dbq, full.dbq));
    CHECK(test::bitwise_equal(g.dbo, full.dbo));
    CHECK(test::max_abs_diff(g.dwq, std::vector<float>(g.dwq.size(), 0.0f)).max_abs >
          0);  // not vacuous
  }
}

}  // namespace
}  // namespace wa
