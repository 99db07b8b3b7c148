// Attention over heads (wa/attention_heads.h) held to the ONNX Attention reference: layouts,
// GQA/MQA, a cache of earlier keys (bottom-right causal), masks of every rank, windows,
// kv_length, softcap, sinks and every qk output, forward and backward, over odd sizes and key
// blocks.
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

#include "reference.h"
#include "testing.h"
#include "tuning.h"
#include "wa/attention_heads.h"

namespace wa {
namespace {

namespace onnx = ref::onnx;
using onnx::Doubles;

std::vector<float> floats(const Doubles& d) { return std::vector<float>(d.begin(), d.end()); }
Doubles doubles(const std::vector<float>& f) { return Doubles(f.begin(), f.end()); }

// Largest |got − want| over entries, -inf equal to -inf; NaN or a lone infinity is infinitely far.
double worst(const std::vector<float>& got, const Doubles& want) {
  REQUIRE(got.size() == want.size());
  double w = 0;
  for (size_t e = 0; e < got.size(); ++e) {
    if (std::isinf(want[e]) && got[e] == want[e]) continue;
    const double d = std::fabs(got[e] - want[e]);
    w = std::max(w, d != d ? INFINITY : d);
  }
  return w;
}

struct Case {
  std::string name;
  size_t batch, hq, hkv, n_q, n_past, n_new, d_k, d_v;
  bool three_d = false, causal = false;
  long left = -1, right = -1;
  double softcap = 0;
  bool kv_length = false;
  std::vector<size_t> mask_dims;  // empty: no mask
  bool boolean_mask = false;
  bool sinks = false;  // a sink per query head, the last one -inf (none)
};

onnx::Attention make(const Case& c, uint32_t seed) {
  onnx::Attention a;
  a.batch = c.batch, a.q_heads = c.hq, a.kv_heads = c.hkv, a.n_q = c.n_q, a.n_past = c.n_past;
  a.n_new = c.n_new, a.d_k = c.d_k, a.d_v = c.d_v, a.three_d = c.three_d, a.causal = c.causal;
  a.left = c.left, a.right = c.right, a.softcap = c.softcap;
  a.q = doubles(test::random_floats(c.batch * c.hq * c.n_q * c.d_k, seed, -2, 2));
  a.k = doubles(test::random_floats(c.batch * c.hkv * c.n_new * c.d_k, seed + 1, -2, 2));
  a.v = doubles(test::random_floats(c.batch * c.hkv * c.n_new * c.d_v, seed + 2));
  if (c.n_past) {
    a.has_past = true;
    a.past_k = doubles(test::random_floats(c.batch * c.hkv * c.n_past * c.d_k, seed + 3, -2, 2));
    a.past_v = doubles(test::random_floats(c.batch * c.hkv * c.n_past * c.d_v, seed + 4));
  }
  const size_t n = c.n_past + c.n_new;
  if (c.kv_length)
    for (size_t b = 0; b < c.batch; ++b)
      a.kv_length.push_back(static_cast<int32_t>((n * (b + 2)) / (c.batch + 2)));
  if (!c.mask_dims.empty()) {
    size_t count = 1;
    for (size_t d : c.mask_dims) count *= d;
    a.mask.dims = c.mask_dims, a.mask.boolean = c.boolean_mask;
    const std::vector<float> r = test::random_floats(count, seed + 5);
    for (float x : r) a.mask.values.push_back(c.boolean_mask ? (x > -0.6f ? 1.0 : 0.0) : x);
  }
  if (c.sinks) {
    a.sinks = doubles(test::random_floats(c.hq, seed + 6, -1, 3));
    a.sinks.back() = -INFINITY;
  }
  return a;
}

// The package's inputs for a: q and out in a's layout; k and v as present (4-D) with a past,
// else in a's layout; the mask as HeadsMask views.
struct Fast {
  HeadsShape shape;
  std::vector<float> q, k, v, out, d_out, dq, dk, dv;
  std::vector<uint8_t> keep;
  std::vector<float> bias;
  std::vector<float> sinks;
  HeadsMask mask;
  float scale;
  bool kv_4d;
  Fast(const onnx::Attention& a, const onnx::Outputs& ref) {
    const size_t n = a.n_past + a.n_new;
    shape = {a.batch, a.q_heads, a.kv_heads, a.n_q, n, a.d_k, a.d_v};
    q = floats(a.q);
    kv_4d = a.has_past || !a.three_d;
    k = floats(a.has_past ? ref.present_k : a.k);
    v = floats(a.has_past ? ref.present_v : a.v);
    out.assign(a.batch * a.q_heads * a.n_q * a.d_v, NAN);
    scale = static_cast<float>(a.scale != 0 ? a.scale : 1 / std::sqrt(static_cast<double>(a.d_k)));
    ScoreMask& m = mask.mask;
    m.causal = a.causal, m.left = a.left, m.right = a.right,
    m.softcap = static_cast<float>(a.softcap);
    m.offset = static_cast<long>(a.n_past);
    if (!a.kv_length.empty()) mask.kv_length = a.kv_length.data();
    if (!a.sinks.empty()) {
      sinks = floats(a.sinks);
      mask.sinks = sinks.data();
    }
    if (!a.mask.dims.empty()) {
      std::vector<size_t> d(4 - a.mask.dims.size(), 1);
      d.insert(d.end(), a.mask.dims.begin(), a.mask.dims.end());  // (mb, mh, mq, mc)
      mask.batch_stride = d[0] == 1 ? 0 : d[1] * d[2] * d[3];
      mask.head_stride = d[1] == 1 ? 0 : d[2] * d[3];
      m.mask_ld = d[2] == 1 ? 0 : d[3];
      m.mask_cols = d[3];
      if (a.mask.boolean) {
        for (double x : a.mask.values) keep.push_back(x != 0);
        m.keep = keep.data();
      } else {
        bias = floats(a.mask.values);
        m.bias = bias.data();
      }
    }
  }
  HeadTensor<const float> Q(const onnx::Attention& a) const {
    return a.three_d ? heads_3d(q.data(), a.q_heads, a.n_q, a.d_k)
                     : heads_4d(q.data(), a.q_heads, a.n_q, a.d_k);
  }
  template <class T>
  HeadTensor<T> kv(T* data, const onnx::Attention& a, size_t d) const {
    return kv_4d ? heads_4d(data, a.kv_heads, shape.n_k, d)
                 : heads_3d(data, a.kv_heads, shape.n_k, d);
  }
  template <class T>
  HeadTensor<T> qo(T* data, const onnx::Attention& a, size_t d) const {
    return a.three_d ? heads_3d(data, a.q_heads, a.n_q, d) : heads_4d(data, a.q_heads, a.n_q, d);
  }
  void forward(const onnx::Attention& a, const HeadsTrace* trace, ThreadPool* pool) {
    attention_heads_forward(shape, Q(a), kv(k.data(), a, a.d_k), kv(v.data(), a, a.d_v),
                            qo(out.data(), a, a.d_v), scale, mask, trace, pool);
  }
};

std::vector<Case> cases() {
  std::vector<Case> cs;
  // sizes across row blocks, key blocks, panels (tuning.h) and tails; n_q 1 and 3 decode
  const size_t nq[] = {1, 3, 2 * kernels::kNR + 1, 2 * kAttentionRowBlock + 1},
               nk[] = {1, 5, 63, 2 * kMC + 1, kKeyBlock + 44},
               dk[] = {1, kernels::kMaxMR + 1, 2 * kernels::kNR + 1, 64};
  for (size_t i = 0; i < 4; ++i)
    for (size_t j = 0; j < 5; ++j) {
      Case c{"plain", 1, 2, 1, nq[i], 0, nk[j], dk[(i + j) % 4], dk[(i + 2 * j + 1) % 4]};
      cs.push_back(c);
      c.name = "causal", c.causal = true, cs.push_back(c);
    }
  cs.push_back({"GQA 3-D", 2, 4, 2, 17, 0, 33, 8, 5, true});
  cs.push_back({"MQA 4-D causal", 1, 3, 1, 9, 0, 9, 4, 4, false, true});
  Case past{"past + causal (bottom-right)", 2, 4, 2, 5, 40, 5, 16, 8, false, true};
  cs.push_back(past);
  Case one{"decode: one token after 300", 1, 8, 2, 1, 300, 1, 32, 32, true, true};
  cs.push_back(one);
  Case win{"window left 7 right 2, past", 1, 2, 2, 40, 270, 40, 8, 8, false, false, 7, 2};
  cs.push_back(win);
  Case wc{"causal window left 100 (sliding window attention)",
          1,
          2,
          1,
          70,
          0,
          300,
          8,
          8,
          false,
          true,
          100};
  cs.push_back(wc);
  // kPassFloats / 512 + 52 keys of d_k = d_v = 64 pack into more than a quarter of a pass per
  // kv head: the 4 kv heads go in passes of 3 and 1 (tuning.h)
  Case passes{"kv heads in two passes, GQA, causal",
              2,
              4,
              2,
              kDecodeRows + 1,
              0,
              kPassFloats / 512 + 52,
              64,
              64,
              false,
              true};
  cs.push_back(passes);
  Case kv{"kv_length per batch + causal", 3, 2, 2, 4, 0, 37, 8, 8, false, true};
  kv.kv_length = true;
  cs.push_back(kv);
  Case sc{"softcap + additive rank-4 mask", 2, 2, 1, 6, 0, 11, 8, 8};
  sc.softcap = 1.5, sc.mask_dims = {2, 2, 6, 11};
  cs.push_back(sc);
  for (std::vector<size_t> dims :
       {std::vector<size_t>{11}, {6, 11}, {2, 1, 11}, {1, 6, 7}, {2, 1, 1, 4}}) {
    Case m{"boolean mask rank " + std::to_string(dims.size()), 2, 2, 2, 6, 0, 11, 4, 4};
    m.mask_dims = dims, m.boolean_mask = true;
    cs.push_back(m);
  }
  Case all{"additive mask + causal + window + softcap + past + GQA",
           2,
           4,
           2,
           7,
           9,
           7,
           8,
           4,
           true,
           true,
           5,
           -1,
           3};
  all.mask_dims = {4, 1, 16};
  cs.push_back(all);
  // sinks on every path: decode split into runs (n_k past 2·kDecodeMinRun: three runs, merged),
  // row blocks with a key block tail, the traced path, and rows whose keys are all masked
  // (causal, window left 0: query i sees key i only, none past n_k)
  Case sd{"sinks: decode over runs", 2, 4, 2, 1, 0, 2 * kDecodeMinRun + 37, 16, 8, true, true};
  sd.sinks = true;
  cs.push_back(sd);
  Case sd3{"sinks: decode, 3 queries, GQA", 1, 6, 2, 3, 0, kDecodeMinRun + 5, 8, 8};
  sd3.causal = true, sd3.sinks = true;
  cs.push_back(sd3);
  Case sr{"sinks: row blocks, key block tail", 1, 3, 1, kDecodeRows + 1, 0, kKeyBlock + 1, 8, 4};
  sr.causal = true, sr.sinks = true;
  cs.push_back(sr);
  Case se{"sinks: rows with every key masked", 2, 2, 1, kDecodeRows + 9, 0, 9, 4, 4};
  se.causal = true, se.left = 0, se.sinks = true;
  cs.push_back(se);
  Case sde{"sinks: decode rows with every key masked", 1, 2, 2, 7, 0, 3, 4, 4};
  sde.causal = true, sde.left = 0, sde.sinks = true;
  cs.push_back(sde);
  Case sa{"sinks + softcap + additive mask + kv_length", 3, 2, 1, 6, 0, 11, 8, 8};
  sa.softcap = 1.5, sa.mask_dims = {6, 11}, sa.kv_length = true, sa.sinks = true;
  cs.push_back(sa);
  return cs;
}

TEST_CASE("attention heads match the ONNX reference: output and every qk output, 1 and N threads") {
  uint32_t seed = 7;
  for (const Case& c : cases()) {
    INFO(c.name << ": batch " << c.batch << ", hq " << c.hq << ", hkv " << c.hkv << ", n_q "
                << c.n_q << ", n_past " << c.n_past << ", n_new " << c.n_new << ", d_k " << c.d_k
                << ", d_v " << c.d_v);
    const onnx::Attention a = make(c, seed += 10);
    const onnx::Outputs ref = onnx::attention_forward(a);
    Fast fused(a, ref);
    fused.forward(a, nullptr, nullptr);
    CHECK(worst(fused.out, ref.y) <= 2e-5);
    Fast threaded(a, ref);
    threaded.forward(a, nullptr, &test::test_pool());
    CHECK(test::bitwise_equal(threaded.out, fused.out));

    const size_t count = c.batch * c.hq * c.n_q * (c.n_past + c.n_new);
    std::vector<float> scores(count), scaled(count), capped(count), masked(count), weights(count);
    const HeadsTrace trace{scores.data(), scaled.data(), masked.data(), weights.data(),
                           capped.data()};
    Fast traced(a, ref);
    traced.forward(a, &trace, &test::test_pool());
    CHECK(worst(traced.out, ref.y) <= 2e-5);
    CHECK(worst(scaled, ref.qk[0]) <= 2e-5);
    CHECK(worst(capped, ref.qk[1]) <= 2e-5);
    CHECK(worst(masked, ref.qk[2]) <= 2e-5);
    CHECK(worst(weights, ref.qk[3]) <= 2e-6);
  }
}

TEST_CASE(
    "attention heads backward matches the ONNX reference's gradients (GQA summed over heads)") {
  uint32_t seed = 1000;
  for (const Case& c : cases()) {
    if (c.n_past)
      continue;  // the reference differentiates the new keys; with no past they are all of them
    INFO(c.name << ": n_q " << c.n_q << ", n_k " << c.n_new << ", d_k " << c.d_k << ", d_v "
                << c.d_v);
    const onnx::Attention a = make(c, seed += 10);
    const onnx::Outputs ref = onnx::attention_forward(a);
    const std::vector<float> d_out = test::random_floats(ref.y.size(), seed + 9);
    const onnx::Grads want = onnx::attention_backward(a, doubles(d_out));
    for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &test::test_pool()}) {
      Fast f(a, ref);
      std::vector<float> dq(f.q.size(), NAN), dk(f.k.size(), NAN), dv(f.v.size(), NAN);
      std::vector<float> dsinks(c.sinks ? c.hq : 0, NAN);
      attention_heads_backward(f.shape, f.Q(a), f.kv(f.k.data(), a, a.d_k),
                               f.kv(f.v.data(), a, a.d_v), f.qo(d_out.data(), a, a.d_v),
                               f.qo(dq.data(), a, a.d_k), f.kv(dk.data(), a, a.d_k),
                               f.kv(dv.data(), a, a.d_v), f.scale, f.mask, nullptr, pool,
                               c.sinks ? dsinks.data() : nullptr);
      CHECK(worst(dq, want.dq) <= 1e-4);
      CHECK(worst(dk, want.dk) <= 1e-4);
      CHECK(worst(dv, want.dv) <= 1e-4);
      if (c.sinks) CHECK(worst(dsinks, want.dsinks) <= 1e-4);
    }
  }
}

TEST_CASE("a window of 2^31 − 1 keys is no window, also for queries standing before key 0") {
  // n_q 40 queries over n_k 24 keys, kv_length 5 and 24: offsets 5 − 40 and 24 − 40 put the
  // first queries before key 0; windows reaching 2^31 − 1 keys must not wrap around
  constexpr long kFar = 2147483647;
  const HeadsShape s{2, 2, 1, 40, 24, 8, 8};
  const std::vector<float> q = test::random_floats(2 * 2 * 40 * 8, 31);
  const std::vector<float> k = test::random_floats(2 * 24 * 8, 32);
  const std::vector<float> v = test::random_floats(2 * 24 * 8, 33);
  const std::vector<float> d_out = test::random_floats(2 * 2 * 40 * 8, 34);
  const int32_t kv_length[] = {5, 24};
  struct Run {
    std::vector<float> out, dq, dk, dv;
  };
  const auto run = [&](long left, long right) {
    Run r{std::vector<float>(q.size()), std::vector<float>(q.size()), std::vector<float>(k.size()),
          std::vector<float>(v.size())};
    HeadsMask m;
    m.mask.left = left, m.mask.right = right;
    m.kv_length = kv_length;
    attention_heads_forward(s, heads_4d(q.data(), 2, 40, 8), heads_4d(k.data(), 1, 24, 8),
                            heads_4d(v.data(), 1, 24, 8), heads_4d(r.out.data(), 2, 40, 8), 0.5f,
                            m);
    attention_heads_backward(s, heads_4d(q.data(), 2, 40, 8), heads_4d(k.data(), 1, 24, 8),
                             heads_4d(v.data(), 1, 24, 8), heads_4d(d_out.data(), 2, 40, 8),
                             heads_4d(r.dq.data(), 2, 40, 8), heads_4d(r.dk.data(), 1, 24, 8),
                             heads_4d(r.dv.data(), 1, 24, 8), 0.5f, m);
    return r;
  };
  const Run none = run(-1, -1);
  for (const std::pair<long, long>& w :
       {std::pair{kFar, -1L}, {-1L, kFar}, {kFar, kFar}, {-1L, kFar - 30}, {kFar - 1, kFar - 2}}) {
    INFO("window left " << w.first << ", right " << w.second);
    const Run far = run(w.first, w.second);
    CHECK(test::bitwise_equal(far.out, none.out));
    CHECK(test::bitwise_equal(far.dq, none.dq));
    CHECK(test::bitwise_equal(far.dk, none.dk));
    CHECK(test::bitwise_equal(far.dv, none.dv));
  }
}

TEST_CASE("attention heads refuse heads that do not divide and kv_length out of range") {
  const std::vector<float> x(64, 0.5f);
  std::vector<float> out(64);
  HeadsShape s{1, 3, 2, 2, 2, 2, 2};
  const auto run = [&](const HeadsShape& shape, const HeadsMask& m) {
    attention_heads_forward(shape, heads_4d(x.data(), shape.q_heads, 2, 2),
                            heads_4d(x.data(), shape.kv_heads, 2, 2),
                            heads_4d(x.data(), shape.kv_heads, 2, 2),
                            heads_4d(out.data(), shape.q_heads, 2, 2), 1.0f, m);
  };
  CHECK_THROWS_WITH_AS(run(s, {}), doctest::Contains("q_heads must be a multiple of kv_heads"),
                       std::invalid_argument);
  s.q_heads = 2;
  const int32_t too_long[] = {3};
  HeadsMask m;
  m.kv_length = too_long;
  CHECK_THROWS_WITH_AS(run(s, m), doctest::Contains("kv_length[0] = 3 is not in [0, n_k]"),
                       std::invalid_argument);
}

}  // namespace
}  // namespace wa
