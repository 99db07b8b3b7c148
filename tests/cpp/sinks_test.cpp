// Attention sinks (wa/score_mask.h): the reference's sink gradient against finite differences,
// the fast 2-D backward's d_sink against the reference, decoding over a cache with sinks, the
// multi-head layer's learned sinks, -inf as no sink, rows with every key masked, refusals.
// The heads forward and backward with sinks are swept in attention_heads_test.cpp's cases.
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "attention_problem.h"
#include "gradient_check.h"
#include "mha_layer.h"
#include "reference.h"
#include "testing.h"
#include "tuning.h"
#include "wa/attention.h"
#include "wa/attention_heads.h"
#include "wa/kv_cache.h"

namespace wa {
namespace {

using Problem = test::AttentionProblem;
constexpr float kNoSink = -std::numeric_limits<float>::infinity();

struct Grads {
  std::vector<float> dq, dk, dv;
  float d_sink = NAN;
  explicit Grads(const Problem& p) : dq(p.n_q * p.d_k), dk(p.n_k * p.d_k), dv(p.n_k * p.d_v) {}
  Matrix dQ(const Problem& p) { return {dq.data(), p.n_q, p.d_k, p.d_k}; }
  Matrix dK(const Problem& p) { return {dk.data(), p.n_k, p.d_k, p.d_k}; }
  Matrix dV(const Problem& p) { return {dv.data(), p.n_k, p.d_v, p.d_v}; }
};

Grads backward(const Problem& p, float scale, const ScoreMask& m, ThreadPool* pool) {
  Grads g(p);
  attention_backward(p.Q(), p.K(), p.V(), p.dO(), g.dQ(p), g.dK(p), g.dV(p), scale, m, nullptr,
                     pool, &g.d_sink);
  return g;
}
Grads backward_ref(const Problem& p, float scale, const ScoreMask& m) {
  Grads g(p);
  ref::attention_backward(p.Q(), p.K(), p.V(), p.dO(), g.dQ(p), g.dK(p), g.dV(p), scale, m,
                          &g.d_sink);
  return g;
}

std::vector<float> forward(const Problem& p, float scale, const ScoreMask& m, ThreadPool* pool,
                           const AttentionTrace* trace = nullptr) {
  std::vector<float> out(p.n_q * p.d_v, NAN);
  attention_forward(p.Q(), p.K(), p.V(), {out.data(), p.n_q, p.d_v, p.d_v}, scale, m, trace, pool);
  return out;
}

// A keep mask with row 1 all masked (when there is a row 1) and about 70 % of the rest kept.
std::vector<uint8_t> keep_with_empty_row(size_t n_q, size_t n_k, uint32_t seed) {
  const std::vector<float> coin = test::random_floats(n_q * n_k, seed, 0.0f, 1.0f);
  std::vector<uint8_t> keep(n_q * n_k);
  for (size_t e = 0; e < keep.size(); ++e) keep[e] = e / n_k != 1 && coin[e] < 0.7f;
  return keep;
}

TEST_CASE("the reference's gradients with a sink, d_sink included, equal finite differences") {
  uint32_t seed = 9100;
  for (size_t n_q : {1, 3, 6})
    for (size_t n_k : {1, 4, 9})
      for (int kind = 0; kind < 3; ++kind) {  // none, causal + softcap, keep mask with empty row
        const Problem p(n_q, n_k, 3, 2, seed += 5, 1.5f);
        ScoreMask m;
        m.causal = kind == 1;
        m.softcap = kind == 1 ? 2.0f : 0.0f;
        const std::vector<uint8_t> keep = keep_with_empty_row(n_q, n_k, seed + 4);
        if (kind == 2) m.keep = keep.data();
        m.sink = 0.75f;
        const float scale = 0.6f;
        INFO("n_q=" << n_q << " n_k=" << n_k << " kind " << kind);
        const Grads g = backward_ref(p, scale, m);
        test::Doubles q = test::to_doubles(p.q), k = test::to_doubles(p.k),
                      v = test::to_doubles(p.v);
        test::Doubles sink{m.sink};
        const test::Doubles d_out = test::to_doubles(p.d_out);
        const auto loss = [&] {
          return test::dot(
              d_out, ref::attention_forward_double(q, k, v, n_q, n_k, 3, 2, scale, m, sink[0]));
        };
        CHECK_GRADIENT("dq", g.dq, test::central_differences(q, loss), 1e-6, 1e-3);
        CHECK_GRADIENT("dk", g.dk, test::central_differences(k, loss), 1e-6, 1e-3);
        CHECK_GRADIENT("dv", g.dv, test::central_differences(v, loss), 1e-6, 1e-3);
        CHECK_GRADIENT("d_sink", std::vector<float>{g.d_sink},
                       test::central_differences(sink, loss), 1e-6, 1e-3);
      }
}

TEST_CASE("the ONNX reference's dsinks equal finite differences (GQA, two sequences, a past)") {
  ref::onnx::Attention a;
  a.batch = 2, a.q_heads = 4, a.kv_heads = 2, a.n_q = 3, a.n_new = 5, a.d_k = 4, a.d_v = 3;
  a.causal = true, a.kv_length = {5, 3};
  a.q = test::to_doubles(test::random_floats(2 * 4 * 3 * 4, 41, -2, 2));
  a.k = test::to_doubles(test::random_floats(2 * 2 * 5 * 4, 42, -2, 2));
  a.v = test::to_doubles(test::random_floats(2 * 2 * 5 * 3, 43));
  a.sinks = {0.5, -1.0, 2.0, 0.0};
  const test::Doubles dy = test::to_doubles(test::random_floats(2 * 4 * 3 * 3, 44));
  const ref::onnx::Grads g = ref::onnx::attention_backward(a, dy);
  REQUIRE(g.dsinks.size() == 4);
  const auto loss = [&] { return test::dot(dy, ref::onnx::attention_forward(a).y); };
  CHECK_GRADIENT("dsinks", std::vector<float>(g.dsinks.begin(), g.dsinks.end()),
                 test::central_differences(a.sinks, loss), 1e-6, 1e-3);
}

TEST_CASE(
    "2-D attention with a sink matches the reference over odd sizes; 1 and 2 threads bitwise") {
  ThreadPool two(2);
  uint32_t seed = 9300;
  // odd sizes and the tails of a key block (tuning.h): the traced, row-block and decode paths
  const size_t nq[] = {1, 3, kDecodeRows - 1, kDecodeRows + 1, 2 * kAttentionRowBlock + 3};
  const size_t nk[] = {1, 7, kKeyBlock - 1, kKeyBlock + 1, 2 * kDecodeMinRun + 9};
  for (size_t n_q : nq)
    for (size_t n_k : nk)
      for (bool causal : {false, true}) {
        const Problem p(n_q, n_k, 2 * kernels::kNR + 1, kernels::kMaxMR + 1, seed += 7, 1.5f);
        ScoreMask m;
        m.causal = causal;
        m.offset = causal ? static_cast<long>(n_k) - static_cast<long>(n_q) : 0;
        m.sink = 1.25f;
        const float scale = 0.4f;
        INFO("n_q=" << n_q << " n_k=" << n_k << " causal " << causal);
        std::vector<float> want(n_q * p.d_v);
        ref::attention_forward(p.Q(), p.K(), p.V(), {want.data(), n_q, p.d_v, p.d_v}, scale, m);
        const std::vector<float> serial = forward(p, scale, m, nullptr);
        CHECK_CLOSE(serial, want, 2e-5);
        CHECK(test::bitwise_equal(forward(p, scale, m, &two), serial));
        test::TracedForward t(n_q, n_k, p.d_v);
        CHECK_CLOSE(forward(p, scale, m, &two, &t.trace), want, 2e-5);

        if (n_q * n_k > 40000) continue;  // the double backward reference is slow
        const Grads g = backward(p, scale, m, nullptr), r = backward_ref(p, scale, m);
        const double tol = 1e-4 * std::sqrt(static_cast<double>(n_q * n_k));
        CHECK_CLOSE(g.dq, r.dq, tol);
        CHECK_CLOSE(g.dk, r.dk, tol);
        CHECK_CLOSE(g.dv, r.dv, tol);
        CHECK(std::fabs(g.d_sink - r.d_sink) <= tol);
        const Grads g2 = backward(p, scale, m, &two);
        CHECK(test::bitwise_equal(g2.dq, g.dq));
        CHECK(test::bitwise_equal(g2.dk, g.dk));
        CHECK(test::bitwise_equal(g2.dv, g.dv));
        CHECK(g2.d_sink == g.d_sink);
      }
}

TEST_CASE("a row whose keys are all masked puts its weight on the sink: a zero row, not NaN") {
  const Problem p(4, 6, 5, 3, 77);
  const std::vector<uint8_t> keep = keep_with_empty_row(4, 6, 78);
  ScoreMask m;
  m.keep = keep.data();
  m.sink = 3.0f;
  test::TracedForward t(4, 6, 3);
  for (const AttentionTrace* trace : {static_cast<const AttentionTrace*>(nullptr),
                                      static_cast<const AttentionTrace*>(&t.trace)}) {
    const std::vector<float> out = forward(p, 0.5f, m, nullptr, trace);
    CHECK(test::all_finite(out));
    for (size_t c = 0; c < 3; ++c) CHECK(out[1 * 3 + c] == 0.0f);
  }
  for (size_t j = 0; j < 6; ++j) CHECK(t.weights[1 * 6 + j] == 0.0f);
  const Grads g = backward(p, 0.5f, m, nullptr);
  for (size_t c = 0; c < 5; ++c) CHECK(g.dq[1 * 5 + c] == 0.0f);
  CHECK(std::isfinite(g.d_sink));
  CHECK(std::fabs(g.d_sink - backward_ref(p, 0.5f, m).d_sink) <= 1e-6);
}

TEST_CASE("a sink of -inf is no sink: every path gives the same bits as none") {
  uint32_t seed = 9500;
  for (size_t n_q : {size_t{1}, kDecodeRows + 3})
    for (size_t n_k : {size_t{5}, 2 * kDecodeMinRun + 1}) {
      const HeadsShape s{2, 4, 2, n_q, n_k, 8, 6};
      const std::vector<float> q = test::random_floats(2 * 4 * n_q * 8, seed += 3, -2, 2);
      const std::vector<float> k = test::random_floats(2 * 2 * n_k * 8, seed + 1, -2, 2);
      const std::vector<float> v = test::random_floats(2 * 2 * n_k * 6, seed + 2);
      const std::vector<float> d_out = test::random_floats(2 * 4 * n_q * 6, seed + 3);
      const std::vector<float> none_sinks(4, kNoSink);
      const auto run = [&](const float* sinks, bool traced) {
        HeadsMask m;
        m.mask.causal = true, m.mask.offset = static_cast<long>(n_k) - static_cast<long>(n_q);
        m.sinks = sinks;
        std::vector<float> out(q.size() / 8 * 6, NAN), dq(q.size()), dk(k.size()), dv(v.size());
        std::vector<float> trace_buffers(traced ? 4 * 2 * 4 * n_q * n_k : 0);
        const size_t count = 2 * 4 * n_q * n_k;
        const HeadsTrace trace{trace_buffers.data(), trace_buffers.data() + count,
                               trace_buffers.data() + 2 * count, trace_buffers.data() + 3 * count};
        attention_heads_forward(s, heads_4d(q.data(), 4, n_q, 8), heads_4d(k.data(), 2, n_k, 8),
                                heads_4d(v.data(), 2, n_k, 6), heads_4d(out.data(), 4, n_q, 6),
                                0.35f, m, traced ? &trace : nullptr);
        attention_heads_backward(s, heads_4d(q.data(), 4, n_q, 8), heads_4d(k.data(), 2, n_k, 8),
                                 heads_4d(v.data(), 2, n_k, 6), heads_4d(d_out.data(), 4, n_q, 6),
                                 heads_4d(dq.data(), 4, n_q, 8), heads_4d(dk.data(), 2, n_k, 8),
                                 heads_4d(dv.data(), 2, n_k, 6), 0.35f, m);
        return std::vector<std::vector<float>>{out, dq, dk, dv};
      };
      for (bool traced : {false, true}) {
        INFO("n_q " << n_q << ", n_k " << n_k << (traced ? ", traced" : ""));
        const auto without = run(nullptr, traced), with = run(none_sinks.data(), traced);
        for (size_t i = 0; i < without.size(); ++i) CHECK(test::bitwise_equal(with[i], without[i]));
      }
    }
}

TEST_CASE("decoding over a cache with sinks: the reference, each type, runs merged with one sink") {
  // 2·kDecodeMinRun + 76 keys take three runs (tuning.h): a sink counted once per run would show
  const size_t n = 2 * kDecodeMinRun + 76;
  const HeadsShape s{2, 4, 2, 1, n, kKvQuantBlock + 3, 9};
  const std::vector<float> q = test::random_floats(2 * 4 * s.d_k, 61, -2, 2);
  const std::vector<float> k = test::random_floats(2 * 2 * n * s.d_k, 62, -2, 2);
  const std::vector<float> v = test::random_floats(2 * 2 * n * s.d_v, 63);
  const std::vector<float> sinks = {2.5f, -0.5f, kNoSink, 4.0f};
  for (KvType type : {KvType::f32, KvType::i8}) {
    INFO("type " << static_cast<int>(type));
    KvCache cache(2, 2, s.d_k, s.d_v, n, type);
    cache.append(n, heads_4d(k.data(), 2, n, s.d_k), heads_4d(v.data(), 2, n, s.d_v));
    std::vector<float> k_held(k.size()), v_held(v.size());
    cache.copy_rows(heads_4d(k_held.data(), 2, n, s.d_k), heads_4d(v_held.data(), 2, n, s.d_v));
    ref::onnx::Attention a;
    a.batch = 2, a.q_heads = 4, a.kv_heads = 2, a.n_q = 1, a.n_new = n, a.d_k = s.d_k;
    a.d_v = s.d_v, a.scale = 0.3, a.causal = true, a.kv_length = {int32_t(n), int32_t(n)};
    // the rows the cache holds, and q as the type's kernels read it
    a.q = test::to_doubles(type == KvType::i8 ? test::int8_query(q, s.d_k) : q);
    a.k = test::to_doubles(k_held), a.v = test::to_doubles(v_held);
    a.sinks = test::to_doubles(sinks);
    const test::Doubles want = ref::onnx::attention_forward(a).y;
    HeadsMask m;
    m.mask.causal = true, m.mask.offset = static_cast<long>(n - 1);
    m.sinks = sinks.data();
    std::vector<float> serial(want.size(), NAN), threaded(want.size(), NAN);
    const HeadTensor<const float> qh = heads_4d(q.data(), 4, 1, s.d_k);
    attention_heads_forward(s, qh, cache, heads_4d(serial.data(), 4, 1, s.d_v), 0.3f, m);
    attention_heads_forward(s, qh, cache, heads_4d(threaded.data(), 4, 1, s.d_v), 0.3f, m, nullptr,
                            &test::test_pool());
    // and the int8 kernels' rounding of the weights (|v| <= 1)
    CHECK_CLOSE(serial, std::vector<float>(want.begin(), want.end()),
                2e-5 + (type == KvType::i8 ? test::int8_weights_tolerance(n, 1) : 0.0));
    CHECK(test::bitwise_equal(threaded, serial));
  }
}

TEST_CASE(
    "a multi-head layer's sinks: forward and backward match the reference; dsinks by finite "
    "differences") {
  uint32_t seed = 9700;
  for (bool cross : {false, true})
    for (bool causal : {false, true}) {
      //                         batch n_q n_k d_model h d_k d_v kv_heads
      test::MhaBackwardLayer l({2, 3, 5, 4, 4, 3, 2, 2}, cross, true, seed += 20);
      const std::vector<float> sinks = {0.5f, -1.0f, 1.5f, kNoSink};
      MhaWeights w = l.weights();
      w.sinks = sinks.data();
      const ScoreMask m = l.mask(causal);
      INFO((cross ? "cross" : "self") << (causal ? " causal" : ""));

      std::vector<float> out(l.d_out.size()), want(l.d_out.size());
      test::MhaTraceBuffers saved(l.s);
      const MhaSaved trace = saved.trace();
      mha_forward(l.s, w, l.x.data(), test::or_null(l.context), out.data(), l.scale(), m, &trace,
                  &test::test_pool());
      ref::mha_forward(l.s, w, l.x.data(), test::or_null(l.context), want.data(), l.scale(), m);
      CHECK_CLOSE(out, want, 1e-5);

      test::MhaGradBuffers g(l), r(l);
      std::vector<float> dsinks(4, NAN), dsinks_ref(4, NAN);
      MhaGrads grads = g.grads(), grads_ref = r.grads();
      grads.dsinks = dsinks.data(), grads_ref.dsinks = dsinks_ref.data();
      mha_backward(l.s, w, l.x.data(), test::or_null(l.context), trace, l.d_out.data(), l.scale(),
                   m, grads, &test::test_pool());
      ref::mha_backward(l.s, w, l.x.data(), test::or_null(l.context), l.d_out.data(), l.scale(), m,
                        grads_ref);
      CHECK_CLOSE(dsinks, dsinks_ref, 1e-5);
      CHECK(dsinks[3] == 0.0f);  // a head without a sink
      const auto all = g.all(), all_ref = r.all();
      for (size_t i = 0; i < all.size(); ++i) {
        INFO(all[i].first);
        CHECK_CLOSE(*all[i].second, *all_ref[i].second, 1e-4);
      }

      ref::MhaWeightsDouble wd{
          test::to_doubles(l.wq), test::to_doubles(l.wk), test::to_doubles(l.wv),
          test::to_doubles(l.wo), test::to_doubles(l.bq), test::to_doubles(l.bk),
          test::to_doubles(l.bv), test::to_doubles(l.bo), test::to_doubles(sinks)};
      const test::Doubles x = test::to_doubles(l.x), context = test::to_doubles(l.context);
      const test::Doubles d_out = test::to_doubles(l.d_out);
      const auto loss = [&] {
        return test::dot(d_out, ref::mha_forward_double(l.s, wd, x, context, l.scale(), m));
      };
      test::Doubles fd = test::central_differences(wd.sinks, loss);
      fd[3] = 0;  // -inf ± h is -inf: no difference to take, and no gradient
      CHECK_GRADIENT("dsinks", dsinks_ref, fd, 1e-6, 1e-3);
    }
}

TEST_CASE(
    "a layer with sinks decoding over a cache equals its causal forward over the whole "
    "sequence; a bad sink leaves the cache as it was") {
  //                         batch n_q n_k d_model h d_k d_v kv_heads
  const test::MhaLayer l({2, 9, 9, 8, 4, 3, 2, 2}, false, true, 9900);
  const std::vector<float> sinks = {1.0f, -0.5f, 2.5f, 0.0f};
  MhaWeights w = l.weights();
  w.sinks = sinks.data();
  ScoreMask causal;
  causal.causal = true;
  std::vector<float> full(2 * 9 * 8);
  mha_forward(l.s, w, l.x.data(), nullptr, full.data(), l.scale(), causal, nullptr,
              &test::test_pool());
  KvCache cache(2, 2, 3, 2, 9);
  for (size_t t0 = 0; t0 < 9;) {
    const size_t n = t0 == 0 ? 5 : 1, t1 = t0 + n;
    std::vector<float> x(2 * n * 8), out(2 * n * 8);
    for (size_t b = 0; b < 2; ++b)
      std::copy(&l.x[(b * 9 + t0) * 8], &l.x[(b * 9 + t1) * 8], &x[b * n * 8]);
    MhaShape step = l.s;
    step.n_q = step.n_k = n;
    mha_forward_cached(step, w, x.data(), cache, out.data(), l.scale(), causal, &test::test_pool());
    for (size_t b = 0; b < 2; ++b) {
      INFO("sequence " << b << ", tokens " << t0 << ".." << t1);
      CHECK_CLOSE(std::vector<float>(&out[b * n * 8], &out[(b + 1) * n * 8]),
                  std::vector<float>(&full[(b * 9 + t0) * 8], &full[(b * 9 + t1) * 8]), 2e-6);
    }
    t0 = t1;
  }
  cache.truncate(4);
  const std::vector<float> bad = {0.0f, NAN, 0.0f, 0.0f};
  w.sinks = bad.data();
  std::vector<float> out(2 * 8);
  MhaShape step = l.s;
  step.n_q = step.n_k = 1;
  CHECK_THROWS_WITH_AS(
      mha_forward_cached(step, w, l.x.data(), cache, out.data(), l.scale(), causal),
      doctest::Contains("the sink of query head 1"), std::invalid_argument);
  CHECK(cache.length() == 4);
}

TEST_CASE("a NaN or +inf sink is refused, naming the head") {
  const Problem p(2, 3, 2, 2, 5);
  std::vector<float> out(4), dq(4), dk(6), dv(6);
  for (float bad : {NAN, INFINITY}) {
    ScoreMask m;
    m.sink = bad;
    CHECK_THROWS_WITH_AS(attention_forward(p.Q(), p.K(), p.V(), {out.data(), 2, 2, 2}, 1.0f, m),
                         doctest::Contains("the sink of query head 0"), std::invalid_argument);
    CHECK_THROWS_WITH_AS(attention_backward(p.Q(), p.K(), p.V(), p.dO(), {dq.data(), 2, 2, 2},
                                            {dk.data(), 3, 2, 2}, {dv.data(), 3, 2, 2}, 1.0f, m),
                         doctest::Contains("a sink is finite, or -inf for none"),
                         std::invalid_argument);
    const float sinks[] = {0.0f, bad};
    HeadsMask hm;
    hm.sinks = sinks;
    CHECK_THROWS_WITH_AS(
        attention_heads_forward({1, 2, 1, 1, 3, 2, 2}, heads_4d(p.q.data(), 2, 1, 2),
                                heads_4d(p.k.data(), 1, 3, 2), heads_4d(p.v.data(), 1, 3, 2),
                                heads_4d(out.data(), 2, 1, 2), 1.0f, hm),
        doctest::Contains("the sink of query head 1"), std::invalid_argument);
  }
}

}  // namespace
}  // namespace wa
