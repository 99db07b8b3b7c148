// Multi-head attention with the modern options: grouped-query and multi-query heads (kv_heads),
// rotary positions, sliding windows and softcap, against the double reference, forward and
// backward (and the reference against finite differences); decoding over a kv cache against
// the full causal forward, row by row; the cache left as it was after an error.
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

#include "gradient_check.h"
#include "mha_layer.h"
#include "reference.h"
#include "testing.h"
#include "wa/attention.h"
#include "wa/kv_cache.h"
#include "wa/rotary.h"

namespace wa {
namespace {

using test::or_null;

using Layer = test::MhaBackwardLayer;
using Grads = test::MhaGradBuffers;

// A traced forward, then the backward from its weights or (keep_weights false) recomputing
// them, both on pool.
Grads backward(const Layer& l, const ScoreMask& m, const Rotary* r, ThreadPool* pool,
               bool keep_weights = true) {
  test::MhaTraceBuffers saved(l.s);
  MhaSaved trace = saved.trace();
  std::vector<float> out(l.d_out.size());
  mha_forward(l.s, l.weights(), l.x.data(), or_null(l.context), out.data(), l.scale(), m, &trace,
              pool, r);
  if (!keep_weights) trace.scores = trace.scaled = trace.masked = trace.weights = nullptr;
  Grads g(l);
  mha_backward(l.s, l.weights(), l.x.data(), or_null(l.context), trace, l.d_out.data(), l.scale(),
               m, g.grads(), pool, r);
  return g;
}

float magnitude(const std::vector<float>& v) {
  float m = 1.0f;
  for (float x : v) m = std::max(m, std::fabs(x));
  return m;
}

std::string describe(const MhaShape& s) {
  return "batch=" + std::to_string(s.batch) + " n_q=" + std::to_string(s.n_q) +
         " n_k=" + std::to_string(s.n_k) + " d_model=" + std::to_string(s.d_model) +
         " h=" + std::to_string(s.heads) + " h_kv=" + std::to_string(s.kv()) +
         " d_k=" + std::to_string(s.d_k) + " d_v=" + std::to_string(s.d_v);
}

// The option sets every shape is run with: plain, causal + rotary, window + rotary
// (interleaved, part of d_k), causal + window + softcap.
struct Options {
  const char* name;
  ScoreMask mask;
  bool rotary;
  Rotary r;
};
std::vector<Options> option_sets(size_t d_k) {
  std::vector<Options> o(4);
  o[0].name = "plain";
  o[1].name = "causal, rotary";
  o[1].mask.causal = true;
  o[1].rotary = d_k % 2 == 0;
  o[1].r.offset = 3;
  o[2].name = "window 2 left 1 right, rotary interleaved on 2 dims";
  o[2].mask.left = 2;
  o[2].mask.right = 1;
  o[2].rotary = d_k >= 2;
  o[2].r.dims = 2;
  o[2].r.interleaved = true;
  o[2].r.base = 500;
  o[3].name = "causal, window 3 left, softcap 2";
  o[3].mask.causal = true;
  o[3].mask.left = 3;
  o[3].mask.softcap = 2;
  return o;
}

//                   batch n_q n_k d_model heads d_k d_v kv_heads
const MhaShape kShapes[] = {{1, 1, 1, 4, 2, 2, 2, 1},    {2, 5, 5, 12, 4, 4, 3, 2},
                            {1, 17, 17, 16, 6, 4, 4, 3}, {3, 9, 13, 8, 4, 2, 5, 1},
                            {1, 63, 65, 20, 4, 6, 5, 2}, {2, 33, 33, 16, 8, 4, 4, 8},
                            {1, 65, 65, 32, 8, 8, 8, 2}};

TEST_CASE("GQA, MQA, rotary, windows, softcap: the forward matches the reference") {
  uint32_t seed = 100;
  for (const MhaShape& shape : kShapes)
    for (bool cross : {false, true})
      for (const Options& o : option_sets(shape.d_k)) {
        const Layer l(shape, cross, cross, seed += 10);
        INFO(describe(l.s) << (cross ? " cross" : " self") << ", " << o.name);
        const Rotary* r = o.rotary ? &o.r : nullptr;
        std::vector<float> fast(l.d_out.size()), slow(fast.size());
        mha_forward(l.s, l.weights(), l.x.data(), or_null(l.context), fast.data(), l.scale(),
                    o.mask, nullptr, &test::test_pool(), r);
        ref::mha_forward(l.s, l.weights(), l.x.data(), or_null(l.context), slow.data(), l.scale(),
                         o.mask, nullptr, r);
        CHECK_CLOSE(fast, slow, 5e-6);
      }
}

TEST_CASE("kv_heads changes the answer: a GQA layer is not its first kv head repeated wrongly") {
  // The same weights read as h_kv = 2 and as h_kv = 1 (the first half of W_K, W_V repeated)
  // differ: the kv head a query head reads matters.
  Layer l({1, 7, 7, 8, 4, 2, 2, 2}, false, false, 31);
  std::vector<float> two(l.d_out.size()), one(two.size());
  mha_forward(l.s, l.weights(), l.x.data(), nullptr, two.data(), l.scale(), ScoreMask{});
  MhaShape s1 = l.s;
  s1.kv_heads = 1;
  std::vector<float> wk1(8 * 2), wv1(8 * 2);  // W_K, W_V's first kv head: columns 0, 1
  for (size_t r = 0; r < 8; ++r)
    for (size_t c = 0; c < 2; ++c)
      wk1[r * 2 + c] = l.wk[r * 4 + c], wv1[r * 2 + c] = l.wv[r * 4 + c];
  MhaWeights w1 = l.weights();
  w1.wk = wk1.data(), w1.wv = wv1.data();
  mha_forward(s1, w1, l.x.data(), nullptr, one.data(), l.scale(), ScoreMask{});
  CHECK(test::max_abs_diff(two, one).max_abs > 1e-3);
  std::vector<float> slow(two.size());
  ref::mha_forward(s1, w1, l.x.data(), nullptr, slow.data(), l.scale(), ScoreMask{});
  CHECK_CLOSE(one, slow, 5e-6);
}

TEST_CASE("GQA and rotary backward reference equals central finite differences") {
  uint32_t seed = 7000;
  for (bool cross : {false, true})
    for (size_t kv : {size_t{1}, size_t{2}}) {
      //               batch n_q n_k d_model h d_k d_v h_kv
      const Layer l({2, 4, cross ? size_t{5} : size_t{4}, 5, 4, 4, 3, kv}, cross, true, seed += 20);
      ScoreMask m;
      m.causal = !cross;
      m.left = cross ? 2 : -1;
      Rotary r;
      r.offset = 2;
      r.base = 100;
      INFO(describe(l.s) << (cross ? " cross, window" : " self, causal") << ", rotary");
      Grads g(l);
      ref::mha_backward(l.s, l.weights(), l.x.data(), or_null(l.context), l.d_out.data(), l.scale(),
                        m, g.grads(), &r);
      ref::MhaWeightsDouble w{test::to_doubles(l.wq), test::to_doubles(l.wk),
                              test::to_doubles(l.wv), test::to_doubles(l.wo),
                              test::to_doubles(l.bq), test::to_doubles(l.bk),
                              test::to_doubles(l.bv), test::to_doubles(l.bo)};
      test::Doubles x = test::to_doubles(l.x), context = test::to_doubles(l.context);
      const test::Doubles d_out = test::to_doubles(l.d_out);
      const auto loss = [&] {
        return test::dot(d_out, ref::mha_forward_double(l.s, w, x, context, l.scale(), m, &r));
      };
      const std::pair<const char*, test::Doubles*> params[] = {
          {"dx", &x},     {"d_context", &context}, {"dwq", &w.wq}, {"dwk", &w.wk}, {"dwv", &w.wv},
          {"dwo", &w.wo}, {"dbq", &w.bq},          {"dbk", &w.bk}, {"dbv", &w.bv}, {"dbo", &w.bo}};
      const auto grads = g.all();
      for (size_t i = 0; i < grads.size(); ++i) {
        REQUIRE(grads[i].second->size() == params[i].second->size());
        CHECK_GRADIENT(params[i].first, *grads[i].second,
                       test::central_differences(*params[i].second, loss), 1e-6, 1e-3);
      }
      CHECK(g.dwk.size() == 5 * kv * 4);  // (d_model, h_kv·d_k)
    }
}

TEST_CASE("GQA, MQA, rotary, windows, softcap: the backward matches the reference") {
  uint32_t seed = 400;
  for (const MhaShape& shape : kShapes)
    for (bool cross : {false, true})
      for (const Options& o : option_sets(shape.d_k)) {
        const Layer l(shape, cross, !cross, seed += 10);
        INFO(describe(l.s) << (cross ? " cross" : " self") << ", " << o.name);
        const Rotary* r = o.rotary ? &o.r : nullptr;
        const Grads fast = backward(l, o.mask, r, &test::test_pool());
        Grads slow(l);
        ref::mha_backward(l.s, l.weights(), l.x.data(), or_null(l.context), l.d_out.data(),
                          l.scale(), o.mask, slow.grads(), r);
        const auto f = fast.all(), s = slow.all();
        for (size_t i = 0; i < f.size(); ++i) {
          INFO(f[i].first);
          CHECK_CLOSE(*f[i].second, *s[i].second, 5e-6 * magnitude(*s[i].second));
        }
      }
}

TEST_CASE("GQA backward: bitwise the same on 1 and 3 threads, with saved or recomputed weights") {
  //                      batch n_q n_k d_model heads d_k d_v kv_heads
  const MhaShape shapes[] = {{2, 70, 70, 32, 6, 8, 8, 2},   // 4 groups: one task each
                             {1, 97, 97, 32, 4, 8, 8, 1}};  // MQA, one group: the pool inside
  for (const MhaShape& shape : shapes) {
    const Layer l(shape, false, true, 55);
    ScoreMask m;
    m.causal = true;
    Rotary r;
    ThreadPool one(1), three(3);
    const Grads serial = backward(l, m, &r, nullptr), g1 = backward(l, m, &r, &one),
                g3 = backward(l, m, &r, &three),
                recomputed = backward(l, m, &r, &three, /*keep_weights=*/false);
    INFO(describe(l.s));
    const auto a = serial.all(), b = g1.all(), c = g3.all(), d = recomputed.all();
    for (size_t i = 0; i < a.size(); ++i) {
      INFO(a[i].first);
      CHECK(test::bitwise_equal(*a[i].second, *b[i].second));
      CHECK(test::bitwise_equal(*a[i].second, *c[i].second));
      CHECK(test::bitwise_equal(*a[i].second, *d[i].second));
    }
    CHECK(test::max_abs_diff(serial.dwk, std::vector<float>(serial.dwk.size(), 0.0f)).max_abs >
          0);  // not vacuous
  }
}

TEST_CASE("decoding over a kv cache equals the full causal forward, row by row") {
  uint32_t seed = 900;
  //                      batch n_q d_model heads d_k d_v kv_heads (n_q: the whole sequence)
  const MhaShape shapes[] = {
      {2, 9, 9, 12, 4, 4, 3, 2}, {1, 17, 17, 16, 4, 6, 4, 1}, {1, 7, 7, 8, 2, 4, 4, 2}};
  for (const MhaShape& shape : shapes)
    for (bool windowed : {false, true}) {
      const Layer l(shape, false, true, seed += 10);
      const MhaShape& s = l.s;
      ScoreMask m;
      m.causal = true;
      if (windowed) m.left = 3;
      Rotary r;
      r.offset = 5;
      INFO(describe(s) << (windowed ? ", window 3 left" : ""));
      std::vector<float> full(s.batch * s.n_q * s.d_model);
      mha_forward(s, l.weights(), l.x.data(), nullptr, full.data(), l.scale(), m, nullptr,
                  &test::test_pool(), &r);

      // prefill 3 tokens, then one at a time; x rows of tokens [t0, t1) of every sequence
      KvCache cache(s.batch, s.kv(), s.d_k, s.d_v, s.n_q + 2);
      const size_t prefill = 3;
      for (size_t t0 = 0; t0 < s.n_q;) {
        const size_t t1 = t0 == 0 ? prefill : t0 + 1, n = t1 - t0;
        std::vector<float> x(s.batch * n * s.d_model), out(x.size());
        for (size_t b = 0; b < s.batch; ++b)
          std::copy(&l.x[(b * s.n_q + t0) * s.d_model], &l.x[(b * s.n_q + t1) * s.d_model],
                    &x[b * n * s.d_model]);
        MhaShape step = s;
        step.n_q = step.n_k = n;
        mha_forward_cached(step, l.weights(), x.data(), cache, out.data(), l.scale(), m,
                           &test::test_pool(), &r);
        CHECK(cache.length() == t1);
        for (size_t b = 0; b < s.batch; ++b) {
          INFO("sequence " << b << ", tokens " << t0 << ".." << t1);
          const std::vector<float> got(&out[b * n * s.d_model], &out[(b + 1) * n * s.d_model]);
          const std::vector<float> want(&full[(b * s.n_q + t0) * s.d_model],
                                        &full[(b * s.n_q + t1) * s.d_model]);
          CHECK_CLOSE(got, want, 2e-6);
        }
        t0 = t1;
      }
    }
}

TEST_CASE("a cached forward that fails leaves the cache as it was") {
  const Layer l({1, 4, 4, 8, 4, 2, 2, 2}, false, false, 5);
  std::vector<float> out(l.d_out.size());
  KvCache cache(1, 2, 2, 2, 6);
  MhaShape s = l.s;
  mha_forward_cached(s, l.weights(), l.x.data(), cache, out.data(), l.scale(), ScoreMask{});
  REQUIRE(cache.length() == 4);
  CHECK_THROWS_WITH_AS(
      mha_forward_cached(s, l.weights(), l.x.data(), cache, out.data(), l.scale(), ScoreMask{}),
      "multi-head attention over a kv cache: 4 new tokens do not fit: length 4, capacity 6",
      std::invalid_argument);
  CHECK(cache.length() == 4);
  KvCache wrong(1, 1, 2, 2, 8);  // one kv head, the layer has 2
  CHECK_THROWS_WITH_AS(
      mha_forward_cached(s, l.weights(), l.x.data(), wrong, out.data(), l.scale(), ScoreMask{}),
      "multi-head attention over a kv cache: the layer's batch 1, h_kv 2, d_k 2, d_v 2 must be "
      "the cache's: batch 1, h_kv 1, d_k 2, d_v 2",
      std::invalid_argument);
  CHECK(wrong.length() == 0);
  // an odd rotary dims fails after the projections, before the append
  Rotary odd;
  odd.dims = 1;
  CHECK_THROWS_AS(mha_forward_cached(s, l.weights(), l.x.data(), cache, out.data(), l.scale(),
                                     ScoreMask{}, nullptr, &odd),
                  std::invalid_argument);
  CHECK(cache.length() == 4);
}

TEST_CASE("kv_heads must divide heads") {
  const Layer l({1, 4, 4, 8, 4, 2, 2, 2}, false, false, 5);
  MhaShape s = l.s;
  s.kv_heads = 3;
  std::vector<float> out(l.d_out.size());
  CHECK_THROWS_WITH_AS(
      mha_forward(s, l.weights(), l.x.data(), nullptr, out.data(), 1.0f, ScoreMask{}),
      "multi-head attention: kv_heads 3 must divide heads: batch 1, n_q 4, n_k 4, d_model 8, h "
      "4, h_kv 3, d_k 2, d_v 2",
      std::invalid_argument);
}

}  // namespace
}  // namespace wa
