// The kv panels (packed_kv.h): pack and append lay keys and values out alike (packed by one
// thread or a pool's, from any first key), read back returns them, and every element type's two kernels (scores against kᵀ, weights times v)
// match a double reference across panel and key-block edges, at any first key.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "kv/packed_kv.h"
#include "testing.h"

namespace wa {
namespace {

using kernels::kNR;

TEST_CASE("pack and append lay out the same panels; read back returns the rows") {
  for (size_t n : {size_t{1}, kNR - 1, kNR + 1, 2 * kKeyBlock + 3})
    for (size_t d : {size_t{1}, kNR + 3}) {
      INFO("n " << n << ", d_k " << d << ", d_v " << d + 2);
      const size_t d_k = d, d_v = d + 2;
      const std::vector<float> k = test::random_floats(n * d_k, 1),
                               v = test::random_floats(n * d_v, 2);
      std::vector<float> packed(packed_kv_floats(n, d_k, d_v), 7.0f);
      pack_kv({k.data(), n, d_k, d_k}, {v.data(), n, d_v, d_v}, packed.data(), nullptr);
      // the same panels packed by a pool's threads, padding included
      std::vector<float> spread(packed.size(), 7.0f);
      pack_kv({k.data(), n, d_k, d_k}, {v.data(), n, d_v, d_v}, spread.data(), &test::test_pool());
      CHECK(test::bitwise_equal(spread, packed));
      if (n > kNR) {  // keys [kNR, n) alone: the panels of those rows packed as a whole
        const size_t keys = n - kNR;
        std::vector<float> from_k0(packed_kv_floats(keys, d_k, d_v), 7.0f),
            whole(from_k0.size(), 7.0f);
        pack_kv_keys({k.data(), n, d_k, d_k}, {v.data(), n, d_v, d_v}, kNR, keys, from_k0.data(),
                     &test::test_pool());
        pack_kv({k.data() + kNR * d_k, keys, d_k, d_k}, {v.data() + kNR * d_v, keys, d_v, d_v},
                whole.data(), nullptr);
        CHECK(test::bitwise_equal(from_k0, whole));
      }
      // appended in two parts into zeroed panels with room for exactly n keys
      std::vector<float> appended(packed.size(), 0.0f);
      const size_t half = n / 2;
      packed_kv_write_rows(appended.data(), n, d_k, d_v, 0, half, k.data(), d_k, v.data(), d_v);
      packed_kv_write_rows(appended.data(), n, d_k, d_v, half, n - half, k.data() + half * d_k, d_k,
                           v.data() + half * d_v, d_v);
      CHECK(test::bitwise_equal(appended, packed));
      std::vector<float> k_back(k.size()), v_back(v.size());
      packed_kv_read_rows(appended.data(), n, d_k, d_v, n, k_back.data(), d_k, v_back.data(), d_v);
      CHECK(test::bitwise_equal(k_back, k));
      CHECK(test::bitwise_equal(v_back, v));
    }
}

TEST_CASE("every KvType has its own kernels, and count is refused") {
  std::vector<std::string> names;
  for (KvType type : kKvTypes) names.push_back(kv_kernels(type).name);
  CHECK(names == std::vector<std::string>{"float32", "int8", "float16"});
  CHECK_THROWS_AS(kv_kernels(KvType::count), std::invalid_argument);
}

TEST_CASE("every kv element type's kernels match the reference across panels and key blocks") {
  for (KvType type : kKvTypes) {
    const KvKernels& kern = kv_kernels(type);
    INFO("kv type " << std::string(kern.name));
    // d_k: a whole int8 block and a partial one ending inside a panel, and past a key block
    // (float16 packs its rows a key block of steps at a time); d_v: a partial block of whole
    // panels and a partial panel
    for (size_t d_k : {kKvQuantBlock + kNR + 5, kKeyBlock + kKvQuantBlock + 3}) {
      INFO("d_k " << d_k);
      const size_t capacity = 2 * kKeyBlock + 40, d_v = kKvQuantBlock + 2 * kNR + 1;
      const size_t n_k = capacity - 7;
      const std::vector<float> k_in = test::random_floats(n_k * d_k, 3);
      std::vector<float> v_in = test::random_floats(n_k * d_v, 4);
      // int8: the first block of keys 0 and kKeyBlock (the first of two key ranges below) an
      // outlier, 10^4 times the others, which the rows' weights below give almost nothing
      const float outlier = type == KvType::i8 ? 1e4f : 1.0f;
      for (size_t j : {size_t{0}, kKeyBlock})
        for (size_t c = 0; c < kKvQuantBlock; ++c) v_in[j * d_v + c] *= outlier;
      std::vector<float> head(kern.head_floats(capacity, d_k, d_v), 0.0f);
      kern.write_rows(head.data(), capacity, d_k, d_v, 0, n_k, k_in.data(), d_k, v_in.data(), d_v);
      // the reference runs on the rows read back (a compressed type's values); they are the rows
      // written, within half a step: int8's of their block (its largest magnitude / 127 rounded up
      // to bfloat16, under 1/252 of it, <= 1 here but in the outliers' blocks), float16's of its
      // exponent (2^-11 relative, values in [-1, 1))
      std::vector<float> k(k_in.size()), v(v_in.size());
      kern.read_rows(head.data(), capacity, d_k, d_v, n_k, k.data(), d_k, v.data(), d_v);
      const double step = type == KvType::i8 ? 1.0 / 252 : type == KvType::f16 ? 0x1p-11 : 0.0;
      double k_err = 0, v_err = 0;
      for (size_t i = 0; i < k.size(); ++i)
        k_err = std::max(k_err, std::fabs(double(k[i]) - k_in[i]));
      for (size_t i = 0; i < v.size(); ++i) {
        const size_t j = i / d_v, c = i % d_v;
        const bool big = (j == 0 || j == kKeyBlock) && c < kKvQuantBlock;
        v_err = std::max(v_err, std::fabs(double(v[i]) - v_in[i]) / (big ? outlier : 1.0f));
      }
      CHECK(k_err <= step);
      CHECK(v_err <= step);
      const PackedKV kv =
          PackedHeads{head.data(), 1, capacity, head.size(), type}.at(0, 0, n_k, d_k, d_v);
      // rows: every row tail of the GEMM kernels' tiles and of the compressed kernels' (kKvQuantRows)
      for (size_t rows :
           {size_t{1}, kKvQuantRows + 2, kernels::kMaxMR + 1, 2 * kernels::kMaxMR + 3})
        for (size_t j0 : {size_t{0}, kNR, kKeyBlock})
          for (size_t cols : {size_t{1}, kNR + 1, kKeyBlock + 9}) {
            if (j0 + cols > n_k) continue;
            INFO("rows " << rows << ", keys [" << j0 << ", " << j0 + cols << ")");
            const std::vector<float> q = test::random_floats(rows * d_k, 5);
            std::vector<float> s(rows * cols, NAN);
            kern.scores(kv, q.data(), d_k, rows, j0, cols, s.data(), cols);
            // every type's kernel errs as float32's does over the rows it holds (read back)
            double worst = 0;
            for (size_t r = 0; r < rows; ++r)
              for (size_t j = 0; j < cols; ++j) {
                double want = 0;
                for (size_t t = 0; t < d_k; ++t)
                  want += double(q[r * d_k + t]) * k[(j0 + j) * d_k + t];
                worst = std::max(worst, std::fabs(s[r * cols + j] - want));
              }
            CHECK(worst <= 1e-5 * std::max(1.0, d_k / 64.0));  // a sum of d_k products
            std::vector<float> p = test::random_floats(rows * cols, 6, 0.0f, 1.0f);
            if (j0 % kKeyBlock == 0)  // the outlier key j0: a weight near 0
              for (size_t r = 0; r < rows; ++r) p[r * cols] = 1e-6f;
            for (bool accumulate : {false, true}) {
              std::vector<float> acc(rows * d_v, 0.5f);
              kern.weighted_values(kv, p.data(), cols, rows, j0, cols, acc.data(), d_v, accumulate);
              // per column, relative to its Σ |p·v| (at least 1): the int8 outliers' 10^4, at a
              // weight of 10^-6 or a weight in [0, 1), leave the other keys' shares whole
              worst = 0;
              for (size_t r = 0; r < rows; ++r)
                for (size_t c = 0; c < d_v; ++c) {
                  double want = accumulate ? 0.5 : 0.0, mass = 1;
                  for (size_t j = 0; j < cols; ++j) {
                    want += double(p[r * cols + j]) * v[(j0 + j) * d_v + c];
                    mass += std::fabs(double(p[r * cols + j]) * v[(j0 + j) * d_v + c]);
                  }
                  worst = std::max(worst, std::fabs(acc[r * d_v + c] - want) / mass);
                }
              CHECK(worst <= 1e-6);
            }
          }
    }
  }
}

TEST_CASE("every kv element type's kernels scale exactly with rows times 2^17 (past 2^16)") {
  // float16 runs rows below 2^16 packed times 2^112 and larger ones one lane at a time; either
  // way a product is the real one rounded, so scaling the rows by a power of two scales the
  // results exactly
  const size_t capacity = kKeyBlock + 40, d_k = kKvQuantBlock + 3, d_v = kNR + 3,
               n_k = capacity - 3, rows = kKvQuantRows + 1;
  const float big = 0x1p17f;
  for (KvType type : kKvTypes) {
    const KvKernels& kern = kv_kernels(type);
    INFO("kv type " << std::string(kern.name));
    const std::vector<float> k = test::random_floats(n_k * d_k, 3),
                             v = test::random_floats(n_k * d_v, 4);
    std::vector<float> head(kern.head_floats(capacity, d_k, d_v), 0.0f);
    kern.write_rows(head.data(), capacity, d_k, d_v, 0, n_k, k.data(), d_k, v.data(), d_v);
    const PackedKV kv =
        PackedHeads{head.data(), 1, capacity, head.size(), type}.at(0, 0, n_k, d_k, d_v);
    std::vector<float> q = test::random_floats(rows * d_k, 5),
                       p = test::random_floats(rows * n_k, 6);
    std::vector<float> s(rows * n_k), o(rows * d_v);
    kern.scores(kv, q.data(), d_k, rows, 0, n_k, s.data(), n_k);
    kern.weighted_values(kv, p.data(), n_k, rows, 0, n_k, o.data(), d_v, false);
    for (float& x : q) x *= big;
    for (float& x : p) x *= big;
    std::vector<float> s_big(s.size()), o_big(o.size());
    kern.scores(kv, q.data(), d_k, rows, 0, n_k, s_big.data(), n_k);
    kern.weighted_values(kv, p.data(), n_k, rows, 0, n_k, o_big.data(), d_v, false);
    for (float& x : s) x *= big;
    for (float& x : o) x *= big;
    CHECK(test::bitwise_equal(s_big, s));
    CHECK(test::bitwise_equal(o_big, o));
  }
}

}  // namespace
}  // namespace wa
