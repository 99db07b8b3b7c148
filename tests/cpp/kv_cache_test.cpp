// The key/value cache: decoding one token at a time over it gives, row for row, what causal
// attention over the whole sequence gives; appends write only new rows; limits hold.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "kv/packed_kv.h"
#include "reference.h"
#include "testing.h"
#include "tuning.h"
#include "wa/kv_cache.h"

namespace wa {
namespace {

// q (batch,hq,n_q,d_k), k (batch,hkv,n_k,d_k), v (batch,hkv,n_k,d_v), all 4-D -> out
// (batch,hq,n_q,d_v) by the reference: the queries are the last n_q of the n_k tokens (causal:
// j <= i + n_k − n_q), query head h reading kv head h / (hq / hkv).
std::vector<double> reference_heads(const HeadsShape& s, const std::vector<float>& q,
                                    const std::vector<float>& k, const std::vector<float>& v,
                                    float scale, bool causal) {
  ref::onnx::Attention a;
  a.batch = s.batch, a.q_heads = s.q_heads, a.kv_heads = s.kv_heads, a.n_q = s.n_q;
  a.n_new = s.n_k, a.d_k = s.d_k, a.d_v = s.d_v, a.causal = causal, a.scale = scale;
  a.q.assign(q.begin(), q.end()), a.k.assign(k.begin(), k.end()), a.v.assign(v.begin(), v.end());
  // every key real: kv_length only aligns the queries with the last keys
  a.kv_length.assign(s.batch, static_cast<int32_t>(s.n_k));
  return ref::onnx::attention_forward(a).y;
}

double worst(const std::vector<float>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  double w = 0;
  for (size_t e = 0; e < got.size(); ++e) {
    const double d = std::fabs(got[e] - want[e]);
    w = std::max(w, d != d ? INFINITY : d);
  }
  return w;
}

TEST_CASE("decoding token by token over a cache equals causal attention over the whole sequence") {
  const size_t batch = 2, hq = 4, hkv = 2, n = 21, prefill = 6, d_k = 8, d_v = 5;
  const std::vector<float> q =
      test::random_floats(batch * n * hq * d_k, 1, -2, 2);  // 3-D (batch, n, hq·d_k)
  const std::vector<float> k = test::random_floats(batch * n * hkv * d_k, 2, -2, 2);
  const std::vector<float> v = test::random_floats(batch * n * hkv * d_v, 3);
  HeadsMask causal;
  causal.mask.causal = true;
  const float scale = 0.35f;

  // the whole sequence at once: out (batch, n, hq·d_v)
  std::vector<float> whole(batch * n * hq * d_v);
  attention_heads_forward({batch, hq, hkv, n, n, d_k, d_v}, heads_3d(q.data(), hq, n, d_k),
                          heads_3d(k.data(), hkv, n, d_k), heads_3d(v.data(), hkv, n, d_v),
                          heads_3d(whole.data(), hq, n, d_v), scale, causal);

  // a prefill of 6 tokens, then one token per step; rows r0.. of the 3-D tensors are a view
  KvCache cache(batch, hkv, d_k, d_v, n);
  std::vector<float> stepped(whole.size(), NAN);
  for (size_t r0 = 0; r0 < n; r0 = cache.length()) {
    const size_t n_new = r0 == 0 ? prefill : 1;
    HeadTensor<const float> k_new = heads_3d(k.data(), hkv, n, d_k),
                            v_new = heads_3d(v.data(), hkv, n, d_v);
    k_new.data += r0 * k_new.row_stride, v_new.data += r0 * v_new.row_stride;
    cache.append(n_new, k_new, v_new);
    HeadTensor<const float> q_new = heads_3d(q.data(), hq, n, d_k);
    HeadTensor<float> out = heads_3d(stepped.data(), hq, n, d_v);
    q_new.data += r0 * q_new.row_stride, out.data += r0 * out.row_stride;
    HeadsMask m = causal;
    m.mask.offset =
        static_cast<long>(cache.length() - n_new);  // the new queries are the last tokens
    attention_heads_forward({batch, hq, hkv, n_new, cache.length(), d_k, d_v}, q_new, cache, out,
                            scale, m, nullptr, &test::test_pool());
  }
  CHECK(cache.length() == n);
  CHECK_CLOSE(stepped, whole, 1e-6);
}

TEST_CASE(
    "decoding over a cache of each type splits the keys into runs: the reference of its rows, 1 "
    "and N threads bitwise") {
  // runs of kDecodeMinRun keys (tuning.h; at these lengths the fewest keys a run takes):
  // kDecodeMinRun + 1 and 2·kDecodeMinRun + 76 keys take 2 and 3 runs, combined in order
  static_assert((2 * kDecodeMinRun + 76 + kDecodeMaxRuns - 1) / kDecodeMaxRuns <= kDecodeMinRun);
  const size_t lengths[] = {1, 3, 5, 17, 63, 65, 129, kDecodeMinRun + 1, 2 * kDecodeMinRun + 76};
  for (KvType type : kKvTypes)
    for (size_t n_q : {size_t{1}, size_t{3}})
      for (size_t n : lengths) {
        if (n < n_q) continue;
        // GQA: 4 query heads per kv head; d_k past an int8 block
        const HeadsShape s{2, 8, 2, n_q, n, kKvQuantBlock + 3, 9};
        INFO("type " << std::string(kv_kernels(type).name) << ", n_q " << n_q << ", cache length "
                     << n);
        const std::vector<float> q =
            test::random_floats(s.batch * s.q_heads * n_q * s.d_k, 11, -2, 2);
        const std::vector<float> k =
            test::random_floats(s.batch * s.kv_heads * n * s.d_k, 12, -2, 2);
        const std::vector<float> v = test::random_floats(s.batch * s.kv_heads * n * s.d_v, 13);
        // the first half, rows that a truncate takes back (their panels keep stale lanes), the rest
        KvCache cache(s.batch, s.kv_heads, s.d_k, s.d_v, n + 5, type);
        const size_t half = n / 2;
        const auto append = [&](const float* kr, const float* vr, size_t r0, size_t r1) {
          HeadTensor<const float> kn = heads_4d(kr, s.kv_heads, n, s.d_k),
                                  vn = heads_4d(vr, s.kv_heads, n, s.d_v);
          kn.data += r0 * kn.row_stride, vn.data += r0 * vn.row_stride;
          cache.append(r1 - r0, kn, vn);
        };
        const std::vector<float> junk = test::random_floats(k.size() + v.size(), 14, 5, 9);
        append(k.data(), v.data(), 0, half);
        append(junk.data(), junk.data() + k.size(), half, n);
        cache.truncate(half);
        append(k.data(), v.data(), half, n);
        REQUIRE(cache.length() == n);
        // the rows as the cache holds them (a compressed type's, dequantized)
        std::vector<float> k_held(k.size()), v_held(v.size());
        cache.copy_rows(heads_4d(k_held.data(), s.kv_heads, n, s.d_k),
                        heads_4d(v_held.data(), s.kv_heads, n, s.d_v));
        for (bool causal : {false, true}) {
          INFO("causal " << causal);
          HeadsMask m;
          m.mask.causal = causal, m.mask.offset = static_cast<long>(n - n_q);
          // the reference of the rows the cache holds, and of q as the type's kernels read it
          const std::vector<double> want = reference_heads(
              s, type == KvType::i8 ? test::int8_query(q, s.d_k) : q, k_held, v_held, 0.3f, causal);
          std::vector<float> serial(want.size(), NAN), threaded(want.size(), NAN),
              tensors(want.size(), NAN);
          const HeadTensor<const float> qh = heads_4d(q.data(), s.q_heads, n_q, s.d_k);
          attention_heads_forward(s, qh, cache, heads_4d(serial.data(), s.q_heads, n_q, s.d_v),
                                  0.3f, m);
          attention_heads_forward(s, qh, cache, heads_4d(threaded.data(), s.q_heads, n_q, s.d_v),
                                  0.3f, m, nullptr, &test::test_pool());
          attention_heads_forward(s, qh, heads_4d(k.data(), s.kv_heads, n, s.d_k),
                                  heads_4d(v.data(), s.kv_heads, n, s.d_v),
                                  heads_4d(tensors.data(), s.q_heads, n_q, s.d_v), 0.3f, m, nullptr,
                                  &test::test_pool());
          // and the int8 kernels' rounding of the weights (|v| <= 1)
          const double rounding = type == KvType::i8 ? test::int8_weights_tolerance(n, 1) : 0.0;
          CHECK(worst(serial, want) <= 2e-5 + rounding);
          CHECK(test::bitwise_equal(threaded, serial));
          if (type == KvType::f32)
            CHECK(test::bitwise_equal(tensors, serial));  // the same runs, packed per task
        }
      }
}

// ||got − want|| / ||want||
double relative_rms(const std::vector<float>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  double num = 0, den = 0;
  for (size_t e = 0; e < got.size(); ++e)
    num += (got[e] - want[e]) * (got[e] - want[e]), den += want[e] * want[e];
  return std::sqrt(num / den);
}

// The largest |held − x| over x's int8 blocks (n rows of d) in units of the block's max|x| / 252:
// at most 1 where each element is within half its step (s < max|x|·(1 + 2^-7) / 127).
double worst_in_block_steps(const std::vector<float>& held, const std::vector<float>& x, size_t d) {
  double w = 0;
  for (size_t r = 0; r < x.size() / d; ++r)
    for (size_t t0 = 0; t0 < d; t0 += kKvQuantBlock) {
      const size_t t1 = std::min(d, t0 + kKvQuantBlock);
      double amax = 0;
      for (size_t t = t0; t < t1; ++t) amax = std::max(amax, std::fabs(double(x[r * d + t])));
      for (size_t t = t0; t < t1; ++t) {
        const double e = std::fabs(double(held[r * d + t]) - x[r * d + t]);
        w = std::max(w, e == 0 ? 0.0 : e != e ? INFINITY : e / (amax / 252));
      }
    }
  return w;
}

TEST_CASE(
    "an int8 cache's attention is within 0.5 % relative RMS of float64 over the rows it holds, "
    "for outlier tokens, log-normal spreads and tiny or huge magnitudes") {
  // u (d) random; query row i = u + noise/10, so that a key ±8·u scores about ±8·|u|²/√d (±15
  // at d 32: a weight of ~e^-15 or ~1 against keys in [-1, 1])
  struct Case {
    const char* name;
    double outlier;     // token 0's values times this (0: none)
    double key_sign;    // token 0's key: key_sign·8·u (0: random like the others)
    double log_normal;  // values of each token and block times exp(σ·N(0,1)), σ this
    double q_times, k_times, v_times;
  };
  const Case cases[] = {
      {"outlier ×1e3 weighted ~0", 1e3, -1, 0, 1, 1, 1},
      {"outlier ×1e4 weighted ~0", 1e4, -1, 0, 1, 1, 1},
      {"outlier ×1e5 weighted ~0", 1e5, -1, 0, 1, 1, 1},
      {"outlier ×1e3 weighted ~1", 1e3, 1, 0, 1, 1, 1},
      {"outlier ×1e5 weighted ~1", 1e5, 1, 0, 1, 1, 1},
      {"log-normal values, σ 3", 0, 0, 3, 1, 1, 1},
      {"log-normal values, σ 3, outlier ×1e5 weighted ~0", 1e5, -1, 3, 1, 1, 1},
      {"values ×1e-6", 0, 0, 0, 1, 1, 1e-6},
      {"values ×1e-34", 0, 0, 0, 1, 1, 1e-34},
      {"keys ×1e-6, queries ×1e6", 0, 0, 0, 1e6, 1e-6, 1},
      {"keys ×1e36, queries ×1e-36", 0, 0, 0, 1e-36, 1e36, 1},
      {"keys ×1e-30, queries ×1e30, values ×1e30", 0, 0, 0, 1e30, 1e-30, 1e30},
  };
  for (const Case& c : cases)
    for (size_t d : {size_t{32}, size_t{37}})
      for (size_t n : {size_t{256}, size_t{301}})
        for (size_t n_q : {size_t{1}, kKvQuantRows, kKvQuantRows + 1}) {
          INFO(std::string(c.name) << ": d " << d << ", keys " << n << ", query rows " << n_q);
          const HeadsShape s{1, 1, 1, n_q, n, d, d};
          const std::vector<float> u = test::random_floats(d, 31),
                                   noise = test::random_floats(n_q * d, 32, -0.1f, 0.1f);
          std::vector<float> q(n_q * d), k = test::random_floats(n * d, 33),
                                         v = test::random_floats(n * d, 34);
          const std::vector<float> z = test::random_floats(4 * n * d, 35, 1e-7f, 1.0f);
          for (size_t i = 0; i < n_q; ++i)
            for (size_t t = 0; t < d; ++t) q[i * d + t] = u[t] + noise[i * d + t];
          if (c.key_sign != 0)
            for (size_t t = 0; t < d; ++t) k[t] = float(c.key_sign * 8 * u[t]);
          if (c.log_normal > 0)
            for (size_t j = 0; j < n; ++j)
              for (size_t t0 = 0; t0 < d; t0 += kKvQuantBlock) {
                // a normal z from two uniforms (Box-Muller)
                const size_t e = j * d + t0;
                const double g = std::sqrt(-2 * std::log(double(z[2 * e]))) *
                                 std::cos(6.283185307179586 * z[2 * e + 1]);
                for (size_t t = t0; t < std::min(d, t0 + kKvQuantBlock); ++t)
                  v[j * d + t] = float(v[j * d + t] * std::exp(c.log_normal * g));
              }
          if (c.outlier != 0)
            for (size_t t = 0; t < d; ++t) v[t] = float(v[t] * c.outlier);
          for (float& x : q) x = float(x * c.q_times);
          for (float& x : k) x = float(x * c.k_times);
          for (float& x : v) x = float(x * c.v_times);
          KvCache cache(1, 1, d, d, n, KvType::i8);
          cache.append(n, heads_4d(k.data(), 1, n, d), heads_4d(v.data(), 1, n, d));
          std::vector<float> k_held(k.size()), v_held(v.size());
          cache.copy_rows(heads_4d(k_held.data(), 1, n, d), heads_4d(v_held.data(), 1, n, d));
          // every element within half its block's step of what was appended
          CHECK(worst_in_block_steps(k_held, k, d) <= 1);
          CHECK(worst_in_block_steps(v_held, v, d) <= 1);
          const float scale = 1 / std::sqrt(float(d));
          const std::vector<double> want = reference_heads(s, q, k_held, v_held, scale, false);
          std::vector<float> out(want.size(), NAN), threaded(want.size(), NAN);
          attention_heads_forward(s, heads_4d(q.data(), 1, n_q, d), cache,
                                  heads_4d(out.data(), 1, n_q, d), scale, HeadsMask{});
          attention_heads_forward(s, heads_4d(q.data(), 1, n_q, d), cache,
                                  heads_4d(threaded.data(), 1, n_q, d), scale, HeadsMask{}, nullptr,
                                  &test::test_pool());
          const double e = relative_rms(out, want);
          INFO("relative RMS " << e);
          CHECK(e <= 0.005);
          CHECK(test::bitwise_equal(threaded, out));
        }
}

TEST_CASE("a long prefill packs k and v a run at a time: the reference, 1 and N threads bitwise") {
  // d_k + d_v = 2000: packed runs of `run_keys` keys (whole key blocks in kPackedRunFloats),
  // so 2·run_keys + 76 keys take 3 runs whose softmax state carries over in the output rows; 40 and 65
  // query rows are the row-block path
  const size_t run_keys = kPackedRunFloats / 2000 / kKeyBlock * kKeyBlock;
  REQUIRE(run_keys >= kKeyBlock);
  for (size_t n_q : {kDecodeRows + 8, 2 * kAttentionRowBlock + 1})
    for (bool causal : {false, true}) {
      const HeadsShape s{1, 2, 1, n_q, 2 * run_keys + 76, 1000, 1000};
      INFO("n_q " << n_q << ", causal " << causal);
      const std::vector<float> q = test::random_floats(s.q_heads * n_q * s.d_k, 21, -0.2f, 0.2f);
      const std::vector<float> k = test::random_floats(s.n_k * s.d_k, 22, -0.2f, 0.2f);
      const std::vector<float> v = test::random_floats(s.n_k * s.d_v, 23);
      HeadsMask m;
      m.mask.causal = causal, m.mask.offset = static_cast<long>(s.n_k - n_q);
      const std::vector<double> want = reference_heads(s, q, k, v, 0.5f, causal);
      std::vector<float> serial(want.size(), NAN), threaded(want.size(), NAN);
      const auto run = [&](std::vector<float>& out, ThreadPool* pool) {
        attention_heads_forward(s, heads_4d(q.data(), s.q_heads, n_q, s.d_k),
                                heads_4d(k.data(), s.kv_heads, s.n_k, s.d_k),
                                heads_4d(v.data(), s.kv_heads, s.n_k, s.d_v),
                                heads_4d(out.data(), s.q_heads, n_q, s.d_v), 0.5f, m, nullptr,
                                pool);
      };
      run(serial, nullptr);
      run(threaded, &test::test_pool());
      CHECK(worst(serial, want) <= 2e-5);
      CHECK(test::bitwise_equal(threaded, serial));
    }
}

TEST_CASE("a cache refuses a key or value that is not finite and keeps what it had") {
  KvCache cache(2, 2, 3, 2, 4);
  const std::vector<float> k = test::random_floats(2 * 2 * 2 * 3, 1),
                           v = test::random_floats(2 * 2 * 2 * 2, 2);
  cache.append(2, heads_4d(k.data(), 2, 2, 3), heads_4d(v.data(), 2, 2, 2));
  for (const float bad : {INFINITY, -INFINITY, NAN})
    for (bool in_key : {true, false}) {
      INFO("a " << (in_key ? "key" : "value") << " holding " << bad);
      std::vector<float> k_new(2 * 2 * 3, 0.5f), v_new(2 * 2 * 2, 0.5f);
      // sequence 1, kv head 1
      (in_key ? k_new[(1 * 2 + 1) * 3 + 2] : v_new[(1 * 2 + 1) * 2 + 1]) = bad;
      const std::string want = std::string("the new ") + (in_key ? "key" : "value") +
                               " 0 of sequence 1, kv head 1 holds";
      CHECK_THROWS_WITH_AS(
          cache.append(1, heads_4d(k_new.data(), 2, 1, 3), heads_4d(v_new.data(), 2, 1, 2)),
          doctest::Contains(want.c_str()), std::range_error);
      CHECK(cache.length() == 2);
    }
  // rows 0 and 1 are as appended: nothing of the refused rows was written
  std::vector<float> k_back(k.size()), v_back(v.size());
  cache.copy_rows(heads_4d(k_back.data(), 2, 2, 3), heads_4d(v_back.data(), 2, 2, 2));
  CHECK(k_back == k);
  CHECK(v_back == v);
}

TEST_CASE(
    "an int8 cache holds every finite magnitude within half its block's step; refuses Infinity") {
  KvCache cache(1, 1, 3, 2, 4, KvType::i8);
  const std::vector<float> v = {0.5f, 4, 0.5f, 4, 0.5f, 4};
  // float32's largest (its block's scale clipped to the largest whose 127 steps are finite), a
  // block whose scale (8e-33) float16 could not hold, and one near float32's smallest normal
  const std::vector<float> k = {3.4028235e38f, -1, 0, 1e-30f, -3e-31f, 0, 2e-36f, 1e-37f, -5e-37f};
  cache.append(3, heads_4d(k.data(), 1, 3, 3), heads_4d(v.data(), 1, 3, 2));
  std::vector<float> k_back(k.size()), v_back(6);
  cache.copy_rows(heads_4d(k_back.data(), 1, 3, 3), heads_4d(v_back.data(), 1, 3, 2));
  CHECK(worst_in_block_steps(k_back, k, 3) <= 1);
  CHECK(std::isfinite(k_back[0]));
  CHECK(k_back[3] > 0);
  CHECK(k_back[6] > 0);
  const std::vector<float> bad = {1, INFINITY, 0};
  CHECK_THROWS_WITH_AS(cache.append(1, heads_4d(bad.data(), 1, 1, 3), heads_4d(v.data(), 1, 1, 2)),
                       doctest::Contains("the new key 0 of sequence 0, kv head 0 holds Infinity"),
                       std::range_error);
  CHECK(cache.length() == 3);
}

// One token decoded over an int8 cache whose token kOutlier carries a one-channel outlier
// (kind: in its value, its key or the query), X times the other elements, with the weight
// `weight`; -> the worst, over the output's columns, of |out_c − want_c| / (0.5 % of
// Σ_j p_j·|v_jc|), want and p in float64 over the rows the cache holds (copy_rows).
enum class Outlier { value, key, query };
constexpr size_t kOutlier = 7;
double int8_column_error(Outlier kind, double x, double weight) {
  const size_t n = kKeyBlock + 44, d = 2 * kKvQuantBlock, out_of = kOutlier;
  const double scale = 1 / std::sqrt(double(d));
  // values about 1 (the columns' means what the outlier token could drown), or for an outlier
  // in the scores about 0 (a column is then the weights' differences: what a score's error moves)
  const float v_lo = kind == Outlier::value ? 0.5f : -1.0f;
  std::vector<float> k = test::random_floats(n * d, 11, -1.5f, 1.5f),
                     v = test::random_floats(n * d, 12, v_lo, 1.5f),
                     q = test::random_floats(d, 13, -1.0f, 1.0f);
  // the channel the outlier is in, and the one that sets token kOutlier's score
  const size_t c_out = kind == Outlier::value ? 0 : kind == Outlier::key ? 5 : 3;
  if (kind == Outlier::value) {  // v = (X, 0, ..., 0)
    for (size_t c = 0; c < d; ++c) v[out_of * d + c] = c == 0 ? float(x) : 0.0f;
    q[c_out] = 1;
  } else if (kind == Outlier::key) {
    k[out_of * d + c_out] = float(x);
  } else {  // the query's channel X times the others; the keys' small in it
    q[c_out] = float(x);
    for (size_t j = 0; j < n; ++j) k[j * d + c_out] /= float(x);
  }
  // token kOutlier's score set, in channel c_out (of its key, or of q for a key outlier), to
  // give it the weight asked for: s* = ln(w·Z / (1 − w)), Z the other tokens' Σ exp(s_j);
  // twice, as a key outlier's q element moves the other scores a little
  for (int pass = 0; pass < 2; ++pass) {
    double z = 0, rest = 0;
    for (size_t j = 0; j < n; ++j) {
      double sj = 0;
      for (size_t t = 0; t < d; ++t) sj += double(q[t]) * k[j * d + t];
      if (j != out_of) z += std::exp(scale * sj);
    }
    for (size_t t = 0; t < d; ++t)
      if (t != c_out) rest += double(q[t]) * k[out_of * d + t];
    const double target = std::log(weight * z / (1 - weight)) / scale - rest;
    if (kind == Outlier::key)
      q[c_out] = float(target / k[out_of * d + c_out]);
    else
      k[out_of * d + c_out] = float(target / q[c_out]);
  }
  KvCache cache(1, 1, d, d, n, KvType::i8);
  cache.append(n, heads_4d(k.data(), 1, n, d), heads_4d(v.data(), 1, n, d));
  std::vector<float> out(d, NAN), k_held(n * d), v_held(n * d);
  attention_heads_forward({1, 1, 1, 1, n, d, d}, heads_4d(q.data(), 1, 1, d), cache,
                          heads_4d(out.data(), 1, 1, d), float(scale), HeadsMask{});
  cache.copy_rows(heads_4d(k_held.data(), 1, n, d), heads_4d(v_held.data(), 1, n, d));
  std::vector<double> p(n);
  double m = -INFINITY, sum = 0;
  for (size_t j = 0; j < n; ++j) {
    p[j] = 0;
    for (size_t t = 0; t < d; ++t) p[j] += double(q[t]) * k_held[j * d + t];
    m = std::max(m, p[j] *= scale);
  }
  for (double& pj : p) sum += pj = std::exp(pj - m);
  double worst_ratio = 0;
  for (size_t c = 0; c < d; ++c) {
    double want = 0, mass = 0;
    for (size_t j = 0; j < n; ++j) {
      want += p[j] / sum * v_held[j * d + c];
      mass += p[j] / sum * std::fabs(v_held[j * d + c]);
    }
    const double e = std::fabs(out[c] - want) / (0.005 * mass);
    worst_ratio = std::max(worst_ratio, e != e ? INFINITY : e);
  }
  return worst_ratio;
}

TEST_CASE(
    "an int8 cache's every output column is within 0.5 % of Σ p·|v| with one-channel outliers") {
  // in a value, a key or the query, 10^3..10^5 times the others, at weights 10^-4..10^-1: the
  // other tokens' shares of every column survive (checked per column, not by a row's RMS)
  for (Outlier kind : {Outlier::value, Outlier::key, Outlier::query})
    for (double x : {1e3, 1e4, 1e5})
      for (double weight : {1e-4, 1e-3, 1e-2, 1e-1}) {
        const char* where = kind == Outlier::value ? "value"
                            : kind == Outlier::key ? "key"
                                                   : "query";
        INFO("outlier in the " << std::string(where) << ", " << x << " times the others, weight "
                               << weight);
        const double ratio = int8_column_error(kind, x, weight);
        INFO("the worst column errs by " << ratio << " times 0.5 % of its Σ p·|v|");
        CHECK(ratio <= 1.0);
      }
}

TEST_CASE("an int8 cache scores a huge query against a huge key it does not meet as 0, not NaN") {
  // key 0 (0, 3e38) and query (1e30, 0) meet in no element: their score is 0, though the
  // product of their blocks' steps passes float32's range; key 1 (1, 0) scores 1e30
  KvCache cache(1, 1, 2, 2, 2, KvType::i8);
  const std::vector<float> k = {0, 3e38f, 1, 0}, v = {1, 2, 3, 4}, q = {1e30f, 0};
  cache.append(2, heads_4d(k.data(), 1, 2, 2), heads_4d(v.data(), 1, 2, 2));
  std::vector<float> out(2, NAN);
  attention_heads_forward({1, 1, 1, 1, 2, 2, 2}, heads_4d(q.data(), 1, 1, 2), cache,
                          heads_4d(out.data(), 1, 1, 2), 1e-30f, HeadsMask{});
  // scores 0 and 1e30 times key 1's held first element, times the scale 1e-30
  std::vector<float> k_held(4), v_held(4);
  cache.copy_rows(heads_4d(k_held.data(), 1, 2, 2), heads_4d(v_held.data(), 1, 2, 2));
  CHECK(k_held[0] == 0);
  const double e = std::exp(double(k_held[2]));
  CHECK(std::fabs(out[0] - (v_held[0] + v_held[2] * e) / (1 + e)) <= 1e-4);
  CHECK(std::fabs(out[1] - (v_held[1] + v_held[3] * e) / (1 + e)) <= 1e-4);
}

TEST_CASE("a float16 cache refuses a magnitude past 65504 and keeps what it had") {
  KvCache cache(1, 1, 3, 2, 4, KvType::f16);
  const std::vector<float> k = {1, -2, 3}, v = {0.5f, 4};
  cache.append(1, heads_4d(k.data(), 1, 1, 3), heads_4d(v.data(), 1, 1, 2));
  const std::vector<float> big = {1, -65505};
  CHECK_THROWS_WITH_AS(
      cache.append(1, heads_4d(k.data(), 1, 1, 3), heads_4d(big.data(), 1, 1, 2)),
      doctest::Contains("the new value 0 of sequence 0, kv head 0 holds -65505 at 1, beyond the "
                        "'float16' cache's range ±65504"),
      std::range_error);
  CHECK(cache.length() == 1);
  // ±65504 itself is held exactly; a subnormal to its step of 2^-24, rounded to nearest even
  const std::vector<float> largest = {65504, -65504, 3 * 0x1p-25f};
  cache.append(1, heads_4d(largest.data(), 1, 1, 3), heads_4d(v.data(), 1, 1, 2));
  std::vector<float> k_back(6), v_back(4);
  cache.copy_rows(heads_4d(k_back.data(), 1, 2, 3), heads_4d(v_back.data(), 1, 2, 2));
  CHECK(k_back == std::vector<float>{1, -2, 3, 65504, -65504, 2 * 0x1p-24f});
  CHECK(v_back == std::vector<float>{0.5f, 4, 0.5f, 4});
}

TEST_CASE("a cache refuses rows past its capacity and keeps what it had; truncate and reset") {
  KvCache cache(1, 1, 2, 2, 3);
  const std::vector<float> rows = {1, 2, 3, 4, 5, 6, 7, 8};
  cache.append(2, heads_4d(rows.data(), 1, 2, 2), heads_4d(rows.data(), 1, 2, 2));
  CHECK_THROWS_WITH_AS(
      cache.append(2, heads_4d(rows.data(), 1, 2, 2), heads_4d(rows.data(), 1, 2, 2)),
      "kv cache: 2 new rows do not fit: length 2, capacity 3", std::invalid_argument);
  CHECK(cache.length() == 2);
  std::vector<float> k(4), v(4);
  cache.copy_rows(heads_4d(k.data(), 1, 2, 2), heads_4d(v.data(), 1, 2, 2));
  CHECK(k == std::vector<float>{1, 2, 3, 4});
  CHECK(v == std::vector<float>{1, 2, 3, 4});
  cache.truncate(1);
  cache.append(1, heads_4d(rows.data() + 4, 1, 1, 2), heads_4d(rows.data() + 6, 1, 1, 2));
  cache.copy_rows(heads_4d(k.data(), 1, 2, 2), heads_4d(v.data(), 1, 2, 2));
  CHECK(k == std::vector<float>{1, 2, 5, 6});  // row 1 rewritten
  CHECK(v == std::vector<float>{1, 2, 7, 8});
  CHECK_THROWS_AS(cache.truncate(3), std::invalid_argument);
  cache.reset();
  CHECK(cache.length() == 0);
  CHECK_THROWS_AS(KvCache(1, 0, 2, 2, 3), std::invalid_argument);
}

TEST_CASE("head_bytes counts a head's panels with their padding and the type's scales") {
  // float32: kᵀ (d_k, capacity rounded up to whole panels of 8 keys), then v (capacity, d_v
  // rounded up to 8 columns); float16 the same in halves
  CHECK(KvCache::head_bytes(1, 1, 1, KvType::f32) == 4 * (8 * 1 + 1 * 8));
  CHECK(KvCache::head_bytes(21, 37, 5, KvType::f32) == 4 * (24 * 37 + 21 * 8));
  CHECK(KvCache::head_bytes(21, 37, 5, KvType::f16) == 2 * (24 * 37 + 21 * 8));
  // int8: at least a byte per value and an fp16 scale per 32-wide block of each row
  struct Sizes {
    size_t capacity, d_k, d_v;
  };
  for (const Sizes s : {Sizes{1, 1, 1}, Sizes{21, 37, 5}, Sizes{64, 128, 128}, Sizes{9, 64, 33}}) {
    CAPTURE(s.capacity);
    CAPTURE(s.d_k);
    CAPTURE(s.d_v);
    const size_t blocks = (s.d_k + 31) / 32 + (s.d_v + 31) / 32;
    CHECK(KvCache::head_bytes(s.capacity, s.d_k, s.d_v, KvType::i8) >=
          s.capacity * (s.d_k + s.d_v) + 2 * s.capacity * blocks);
  }
  // a size whose round-up to whole panels would wrap around size_t does not fit
  for (const KvType type : kKvTypes) {
    CHECK_THROWS_AS(KvCache::head_bytes(SIZE_MAX, 1, 1, type), std::bad_alloc);
    CHECK_THROWS_AS(KvCache::head_bytes(1, SIZE_MAX - 1, 1, type), std::bad_alloc);
    CHECK_THROWS_AS(KvCache::head_bytes(1, 1, SIZE_MAX - 2, type), std::bad_alloc);
  }
}

}  // namespace
}  // namespace wa
