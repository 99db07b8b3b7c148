// Attention over heads in a tensor (wa/attention_heads.h): the same blocks as attention.cpp,
// each kv head's k and v packed once and shared by the query heads that read it; as many kv
// heads per pass as a few MB of packed rows hold.
#include "wa/attention_heads.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "attention_blocks.h"
#include "scratch.h"
#include "sizes.h"
#include "threading.h"
#include "wa/thread_pool.h"

namespace wa {

namespace {

// Packed keys and values held at once by the forward: 4 MB of floats (one kv head at least).
constexpr size_t kPackedKvPassFloats = size_t{1} << 20;

void check(const HeadsShape& s, const HeadsMask& m) {
  std::string problem;
  if (!s.batch || !s.q_heads || !s.kv_heads || !s.n_q || !s.n_k || !s.d_k || !s.d_v)
    problem = "every size must be at least 1";
  else if (s.q_heads % s.kv_heads != 0)
    problem = "q_heads must be a multiple of kv_heads";
  else if (m.kv_length)
    for (size_t b = 0; b < s.batch; ++b)
      if (m.kv_length[b] < 0 || static_cast<size_t>(m.kv_length[b]) > s.n_k)
        problem = "kv_length[" + std::to_string(b) + "] = " + std::to_string(m.kv_length[b]) +
                  " is not in [0, n_k]";
  if (!problem.empty())
    throw std::invalid_argument(
        "attention heads: " + problem + ": batch " + std::to_string(s.batch) + ", q_heads " +
        std::to_string(s.q_heads) + ", kv_heads " + std::to_string(s.kv_heads) + ", n_q " +
        std::to_string(s.n_q) + ", n_k " + std::to_string(s.n_k) + ", d_k " +
        std::to_string(s.d_k) + ", d_v " + std::to_string(s.d_v));
}

template <class T>
Matrix head(HeadTensor<T> t, size_t b, size_t h, size_t rows, size_t cols) {
  return {t.at(b, h), rows, cols, t.row_stride};
}
template <class T>
ConstMatrix const_head(HeadTensor<T> t, size_t b, size_t h, size_t rows, size_t cols) {
  return {t.at(b, h), rows, cols, t.row_stride};
}

// The trace of head (b, h): the full tensors' (n_q,n_k) block.
AttentionTrace head_trace(const HeadsTrace& t, size_t block) {
  return {t.scores + block, t.scaled + block, t.masked + block, t.weights + block,
          t.capped ? t.capped + block : nullptr};
}

}  // namespace

ScoreMask HeadsMask::of(size_t b, size_t h, size_t n_q) const {
  ScoreMask m = mask;
  const size_t at = b * batch_stride + h * head_stride;
  if (m.keep) m.keep += at;
  if (m.bias) m.bias += at;
  if (kv_length) {
    m.key_limit = static_cast<size_t>(kv_length[b]);
    m.offset = static_cast<long>(kv_length[b]) - static_cast<long>(n_q);
  }
  return m;
}

void attention_heads_forward(const HeadsShape& s, HeadTensor<const float> q,
                             HeadTensor<const float> k, HeadTensor<const float> v,
                             HeadTensor<float> out, float scale, const HeadsMask& mask,
                             const HeadsTrace* trace, ThreadPool* pool) {
  check(s, mask);
  const size_t group = s.q_heads / s.kv_heads;
  const size_t row_blocks = (s.n_q + kAttentionRowBlock - 1) / kAttentionRowBlock;
  const size_t tasks_per_kv = group * row_blocks;  // a kv head's (query head, row block) pairs
  // kv heads (b, g) packed per pass, numbered bg = b·hkv + g: as many as kPackedKvPassFloats
  // hold (at least one), so that short sequences give the threads every head's blocks at once
  // and long ones hold one packed head at a time
  const size_t kv_floats = packed_kv_floats(s.n_k, s.d_k, s.d_v);
  const size_t kv_total = checked_product({s.batch, s.kv_heads});
  const size_t per_pass = std::max<size_t>(1, std::min(kv_total, kPackedKvPassFloats / kv_floats));
  float* buffer = thread_scratch(ScratchSlot::packed_kv, checked_product({per_pass, kv_floats}));
  std::vector<PackedKV> kv(per_pass);
  for (size_t first = 0; first < kv_total; first += per_pass) {
    const size_t count = std::min(per_pass, kv_total - first);
    // packing is O(n_k·d) per kv head next to its group·n_q·n_k·(d_k+d_v) multiply-adds
    ThreadPool* p =
        pool_for(pool, static_cast<double>(count) * group * s.n_q * s.n_k * (s.d_k + s.d_v));
    const auto pack = [&](size_t i, ThreadPool* inner) {
      const size_t b = (first + i) / s.kv_heads, g = (first + i) % s.kv_heads;
      kv[i] = pack_kv(const_head(k, b, g, s.n_k, s.d_k), const_head(v, b, g, s.n_k, s.d_v),
                      buffer + i * kv_floats, inner);
    };
    if (count == 1)
      pack(0, p);
    else  // for (i = 0; i < count; ++i) pack kv head first + i
      parallel_for(p, count, [&](size_t i) { pack(i, nullptr); });
    // for (t = 0; t < count·group·row_blocks; ++t): kv head first + t / tasks_per_kv, its query
    // head u / row_blocks (u = t % tasks_per_kv), row block row_blocks − 1 − u % row_blocks: the
    // last rows first, which see the most keys under a causal mask, so the threads end together
    parallel_for(p, count * tasks_per_kv, [&](size_t t) {
      const size_t i = t / tasks_per_kv, u = t % tasks_per_kv;
      const size_t b = (first + i) / s.kv_heads, g = (first + i) % s.kv_heads;
      const size_t h = g * group + u / row_blocks;
      const size_t r0 = (row_blocks - 1 - u % row_blocks) * kAttentionRowBlock;
      const size_t r1 = std::min(s.n_q, r0 + kAttentionRowBlock);
      const ConstMatrix qh = const_head(q, b, h, s.n_q, s.d_k);
      const Matrix oh = head(out, b, h, s.n_q, s.d_v);
      const ScoreMask m = mask.of(b, h, s.n_q);
      if (trace)
        attention_rows(qh, kv[i], oh, scale, m, r0, r1,
                       head_trace(*trace, (b * s.q_heads + h) * s.n_q * s.n_k));
      else
        attention_rows_fused(qh, kv[i], oh, scale, m, r0, r1);
    });
  }
}

void attention_heads_backward(const HeadsShape& s, HeadTensor<const float> q,
                              HeadTensor<const float> k, HeadTensor<const float> v,
                              HeadTensor<const float> d_out, HeadTensor<float> dq,
                              HeadTensor<float> dk, HeadTensor<float> dv, float scale,
                              const HeadsMask& mask, const float* weights, ThreadPool* pool) {
  check(s, mask);
  const size_t group = s.q_heads / s.kv_heads, nn = checked_product({s.n_q, s.n_k});
  // kv head g of sequence b and the query heads that read it, one after another; inner spreads
  // each head's passes (null inside a pool task)
  auto group_backward = [&](size_t bg, ThreadPool* inner) {
    const size_t b = bg / s.kv_heads, g = bg % s.kv_heads;
    std::vector<float> p(weights ? 0 : nn);  // the recomputed weights (n_q,n_k)
    // the kv head's gradients from its second query head on: (n_k,d_k) and (n_k,d_v), then added
    std::vector<float> dk_h(group > 1 ? checked_product({s.n_k, s.d_k}) : 0);
    std::vector<float> dv_h(group > 1 ? checked_product({s.n_k, s.d_v}) : 0);
    const ConstMatrix kg = const_head(k, b, g, s.n_k, s.d_k),
                      vg = const_head(v, b, g, s.n_k, s.d_v);
    const Matrix dkg = head(dk, b, g, s.n_k, s.d_k), dvg = head(dv, b, g, s.n_k, s.d_v);
    for (size_t h = g * group; h < (g + 1) * group; ++h) {
      const bool first = h == g * group;
      const ConstMatrix qh = const_head(q, b, h, s.n_q, s.d_k);
      const ScoreMask m = mask.of(b, h, s.n_q);
      // the forward's weights P (n_q,n_k): saved, or again from q and k
      const float* ph = weights ? weights + (b * s.q_heads + h) * nn : p.data();
      if (!weights) attention_weights(qh, kg, scale, m, {p.data(), s.n_q, s.n_k, s.n_k}, inner);
      const Matrix dk_into = first ? dkg : Matrix{dk_h.data(), s.n_k, s.d_k, s.d_k};
      const Matrix dv_into = first ? dvg : Matrix{dv_h.data(), s.n_k, s.d_v, s.d_v};
      attention_backward_from_weights(
          qh, kg, vg, {ph, s.n_q, s.n_k, s.n_k}, const_head(d_out, b, h, s.n_q, s.d_v),
          head(dq, b, h, s.n_q, s.d_k), dk_into, dv_into, scale, m, inner);
      if (!first)  // dk[g] += dk_h, dv[g] += dv_h
        for (size_t j = 0; j < s.n_k; ++j) {
          for (size_t c = 0; c < s.d_k; ++c) dkg.data[j * dkg.ld + c] += dk_h[j * s.d_k + c];
          for (size_t c = 0; c < s.d_v; ++c) dvg.data[j * dvg.ld + c] += dv_h[j * s.d_v + c];
        }
    }
  };
  const size_t groups = checked_product({s.batch, s.kv_heads});
  if (groups == 1)
    group_backward(0, pool);
  else  // for (bg = 0; bg < batch·hkv; ++bg): writes only its query heads' dq, its kv head's dk, dv
    parallel_for(pool, groups, [&](size_t bg) { group_backward(bg, nullptr); });
}

}  // namespace wa
