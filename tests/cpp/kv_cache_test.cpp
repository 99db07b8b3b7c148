// The key/value cache: decoding one token at a time over it gives, row for row, what causal
// attention over the whole sequence gives; appends write only new rows; limits hold.
#include <stdexcept>

#include "testing.h"
#include "wa/kv_cache.h"

namespace wa {
namespace {

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
    attention_heads_forward({batch, hq, hkv, n_new, cache.length(), d_k, d_v}, q_new, cache.keys(),
                            cache.values(), out, scale, m, nullptr, &test::test_pool());
  }
  CHECK(cache.length() == n);
  CHECK_CLOSE(stepped, whole, 1e-6);
}

TEST_CASE("a cache refuses rows past its capacity and keeps what it had; truncate and reset") {
  KvCache cache(1, 1, 2, 2, 3);
  const std::vector<float> rows = {1, 2, 3, 4, 5, 6, 7, 8};
  cache.append(2, heads_4d(rows.data(), 1, 2, 2), heads_4d(rows.data(), 1, 2, 2));
  CHECK_THROWS_WITH_AS(
      cache.append(2, heads_4d(rows.data(), 1, 2, 2), heads_4d(rows.data(), 1, 2, 2)),
      "kv cache: 2 new rows do not fit: length 2, capacity 3", std::invalid_argument);
  CHECK(cache.length() == 2);
  CHECK(cache.keys().data[2] == 3.0f);  // row 1
  cache.truncate(1);
  cache.append(1, heads_4d(rows.data() + 4, 1, 1, 2), heads_4d(rows.data() + 4, 1, 1, 2));
  CHECK(cache.keys().data[2] == 5.0f);  // row 1 rewritten
  CHECK_THROWS_AS(cache.truncate(3), std::invalid_argument);
  cache.reset();
  CHECK(cache.length() == 0);
  CHECK_THROWS_AS(KvCache(1, 0, 2, 2, 3), std::invalid_argument);
}

}  // namespace
}  // namespace wa
