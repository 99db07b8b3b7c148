// Attention over heads in a tensor (wa/attention_heads.h), and so every attention forward (a
// 2-D call is one head): each kv head's k and v packed once and shared by the query heads
// that read it; as many kv heads per pass as a few MB of packed rows hold.
#include "wa/attention_heads.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "attention/attention_blocks.h"
#include "attention/softmax_rows.h"
#include "runtime/scratch.h"
#include "runtime/sizes.h"
#include "runtime/threading.h"
#include "wa/kv_cache.h"
#include "wa/thread_pool.h"

namespace wa {

namespace {

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
  for (size_t h = 0; problem.empty() && h < s.q_heads; ++h)
    check_sink("attention heads", m.sinks ? m.sinks[h] : m.mask.sink, h);
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
  if (sinks) m.sink = sinks[h];
  return m;
}

namespace {

size_t round_up(size_t x, size_t to) { return (x + to - 1) / to * to; }

// Where the kv heads come from: a cache's panels (packed), or k and v tensors packed by run.
struct KvSource {
  const PackedHeads* packed;
  HeadTensor<const float> k, v;
};

// Each (b, h)'s mask, b·hq + h.
std::vector<ScoreMask> head_masks(const HeadsShape& s, const HeadsMask& mask) {
  std::vector<ScoreMask> m(s.batch * s.q_heads);
  for (size_t b = 0; b < s.batch; ++b)
    for (size_t h = 0; h < s.q_heads; ++h) m[b * s.q_heads + h] = mask.of(b, h, s.n_q);
  return m;
}

// Every score in memory: each kv head whole (packed here unless the source is), its query
// heads' row blocks in one parallel_for.
void forward_traced(const HeadsShape& s, HeadTensor<const float> q, const KvSource& src,
                    HeadTensor<float> out, float scale, const std::vector<ScoreMask>& masks,
                    const HeadsTrace& trace, ThreadPool* pool) {
  const size_t group = s.q_heads / s.kv_heads;
  const size_t row_blocks = (s.n_q + kAttentionRowBlock - 1) / kAttentionRowBlock;
  const double flops = static_cast<double>(group) * s.n_q * s.n_k * (s.d_k + s.d_v);
  float* buffer =
      src.packed ? nullptr
                 : thread_scratch(ScratchSlot::packed_kv, packed_kv_floats(s.n_k, s.d_k, s.d_v));
  ThreadPool* const threads_pool = pool_for(pool, flops);
  const size_t threads = threads_for(pool, flops);
  for (size_t b = 0; b < s.batch; ++b)
    for (size_t g = 0; g < s.kv_heads; ++g) {
      const PackedKV kv =
          src.packed ? src.packed->at(b, g, s.n_k, s.d_k, s.d_v)
                     : pack_kv(const_head(src.k, b, g, s.n_k, s.d_k),
                               const_head(src.v, b, g, s.n_k, s.d_v), buffer, threads_pool);
      // (hg, rb): query head g·group + hg, its rows [rb·B, (rb+1)·B)
      parallel_for_2d(threads_pool, group, row_blocks, threads, [&](size_t hg, size_t rb) {
        const size_t h = g * group + hg, r0 = rb * kAttentionRowBlock;
        const size_t r1 = std::min(s.n_q, r0 + kAttentionRowBlock);
        attention_rows(const_head(q, b, h, s.n_q, s.d_k), kv, head(out, b, h, s.n_q, s.d_v), scale,
                       masks[b * s.q_heads + h], r0, r1,
                       head_trace(trace, (b * s.q_heads + h) * s.n_q * s.n_k));
      });
    }
}

// Blocks of query rows (n_q >= kDecodeRows), fused: each kv head's keys a packed run at a time
// (the whole head from a cache; runs of at most kPackedRunFloats from tensors), the online
// softmax state carried across runs in the output rows (the running Σ p·v) and a (max, sum)
// per row. The kv heads (b, g) go in passes of as many as kPassFloats of packed runs hold:
// per pass and run, one parallel call packs the run of every head of the pass, one more runs
// every row block of their query heads, so that the pool is called twice per pass rather
// than twice per head, and the threads wait for each other once per pass. Beyond its inputs
// and output: the packed runs of a pass and 2·group·n_q floats per kv head of a pass.
void forward_rows(const HeadsShape& s, HeadTensor<const float> q, const KvSource& src,
                  HeadTensor<float> out, float scale, const std::vector<ScoreMask>& masks,
                  ThreadPool* pool) {
  const size_t group = s.q_heads / s.kv_heads;
  const size_t row_blocks = (s.n_q + kAttentionRowBlock - 1) / kAttentionRowBlock;
  const size_t run =
      src.packed ? s.n_k
                 : std::max(kKeyBlock, kPackedRunFloats / (s.d_k + s.d_v) / kKeyBlock * kKeyBlock);
  const size_t runs = (s.n_k + run - 1) / run;
  const size_t heads = checked_product({s.batch, s.kv_heads});  // kv heads (b, g), b·hkv + g
  const size_t run_floats = src.packed ? 0 : packed_kv_floats(std::min(run, s.n_k), s.d_k, s.d_v);
  const size_t pass = std::clamp<size_t>(kPassFloats / std::max<size_t>(run_floats, 1), 1, heads);
  const size_t state_floats = 2 * group * s.n_q;  // per kv head: row_max, row_sum of its rows
  float* state = thread_scratch(ScratchSlot::attention_partials, pass * state_floats);
  float* buffer = src.packed ? nullptr : thread_scratch(ScratchSlot::packed_kv, pass * run_floats);
  const double flops = static_cast<double>(group) * s.n_q * s.n_k * (s.d_k + s.d_v);
  std::vector<PackedKV> kv(pass);
  for (size_t first = 0; first < heads; first += pass) {
    const size_t count = std::min(pass, heads - first);
    ThreadPool* threads = pool_for(pool, flops * static_cast<double>(count));
    const size_t feeds = threads_for(pool, flops * static_cast<double>(count));
    for (size_t c = 0; c < runs; ++c) {
      const size_t k0 = c * run, k1 = std::min(s.n_k, k0 + run);
      // kv head first + i, keys [k0, k1): the cache's, or packed: for (w = 0; w < count·units;
      // ++w) unit w % units of head w / units (packed_kv.h), in tasks of consecutive units
      const size_t units = src.packed ? 0 : pack_kv_units(k1 - k0, s.d_k, s.d_v);
      const size_t pack_tasks = std::min(count * units, kTasksPerThread * feeds);
      parallel_for(threads, pack_tasks, feeds, [&](size_t t) {
        for (size_t w = t * count * units / pack_tasks; w < (t + 1) * count * units / pack_tasks;
             ++w) {
          const size_t i = w / units, b = (first + i) / s.kv_heads, g = (first + i) % s.kv_heads;
          pack_kv_unit(const_head(src.k, b, g, s.n_k, s.d_k), const_head(src.v, b, g, s.n_k, s.d_v),
                       k0, k1 - k0, buffer + i * run_floats, w % units);
        }
      });
      for (size_t i = 0; i < count; ++i) {
        const size_t b = (first + i) / s.kv_heads, g = (first + i) % s.kv_heads;
        kv[i] = src.packed
                    ? src.packed->at(b, g, s.n_k, s.d_k, s.d_v)
                    : packed_kv_keys(s.n_k, k0, k1 - k0, s.d_k, s.d_v, buffer + i * run_floats);
      }
      // (l, i, hg): row block row_blocks − 1 − l of query head hg of the pass's kv head
      // first + i: the last rows first, which see the most keys under a causal mask, so that
      // the threads end together
      parallel_for_3d(threads, row_blocks, count, group, feeds, [&](size_t l, size_t i, size_t hg) {
        const size_t b = (first + i) / s.kv_heads, h = (first + i) % s.kv_heads * group + hg;
        const size_t r0 = (row_blocks - 1 - l) * kAttentionRowBlock;
        const size_t rows = std::min(s.n_q, r0 + kAttentionRowBlock) - r0;
        const Matrix oh = head(out, b, h, s.n_q, s.d_v);
        float* o = oh.data + r0 * oh.ld;
        float* row_max = state + i * state_floats + hg * s.n_q + r0;
        float* row_sum = state + i * state_floats + (group + hg) * s.n_q + r0;
        if (c == 0) {  // the rows' state before their first key: the head's sink, if any
          softmax_online_start(masks[b * s.q_heads + h].sink, row_max, row_sum, rows);
          for (size_t r = 0; r < rows; ++r) std::fill(o + r * oh.ld, o + r * oh.ld + s.d_v, 0.0f);
        }
        const ConstMatrix qh = const_head(q, b, h, s.n_q, s.d_k);
        const OnlineRows rows_state{
            qh.data + r0 * qh.ld,     qh.ld, o, oh.ld, row_max, row_sum, 1, rows, r0,
            &masks[b * s.q_heads + h]};
        attention_rows_online(rows_state, kv[i], k0, k1, scale);
        if (c + 1 == runs) attention_online_finish(o, oh.ld, row_sum, rows, s.d_v, o, oh.ld);
      });
    }
  }
}

// A few query rows (n_q < kDecodeRows): tasks (b, g, tile of the group's query heads, run of
// keys), each the tile's rows stacked over one run into its own partial (acc, max, sum); then
// the runs combined in order. The runs depend on n_k only, so results do not depend on threads.
void forward_decode(const HeadsShape& s, HeadTensor<const float> q, const KvSource& src,
                    HeadTensor<float> out, float scale, const std::vector<ScoreMask>& masks,
                    ThreadPool* pool) {
  const size_t group = s.q_heads / s.kv_heads;
  const size_t tile_heads = std::min(group, std::max<size_t>(1, kDecodeMaxStacked / s.n_q));
  const size_t tiles = (group + tile_heads - 1) / tile_heads, stacked = tile_heads * s.n_q;
  const size_t run =
      std::max(kDecodeMinRun, round_up((s.n_k + kDecodeMaxRuns - 1) / kDecodeMaxRuns, kKeyBlock));
  const size_t runs = (s.n_k + run - 1) / run;
  const size_t tasks = s.batch * s.kv_heads * tiles * runs;
  const size_t partial_floats = stacked * (s.d_v + 2);  // acc (stacked,d_v), max, sum
  float* partials =
      thread_scratch(ScratchSlot::attention_partials, checked_product({tasks, partial_floats}));
  const double flops = static_cast<double>(s.batch) * s.q_heads * s.n_q * s.n_k * (s.d_k + s.d_v);

  // (bg, tile, c): kv head g of sequence b (bg = b·kv_heads + g), a tile of its query heads,
  // run c of the keys; the task writes partial (bg·tiles + tile)·runs + c
  parallel_for_3d(
      pool_for(pool, flops), s.batch * s.kv_heads, tiles, runs, threads_for(pool, flops),
      [&](size_t bg, size_t tile, size_t c) {
        const size_t b = bg / s.kv_heads, g = bg % s.kv_heads;
        const size_t h0 = g * group + tile * tile_heads,
                     heads = std::min(tile_heads, group - tile * tile_heads);
        const size_t rows = heads * s.n_q;
        float* acc = partials + ((bg * tiles + tile) * runs + c) * partial_floats;
        float* row_max = acc + stacked * s.d_v;
        float* row_sum = row_max + stacked;
        std::fill(acc, acc + rows * s.d_v, 0.0f);
        // each head's sink joins the state of its first run only: the merge below counts it once
        for (size_t h = 0; h < heads; ++h)
          softmax_online_start(
              c == 0 ? masks[b * s.q_heads + h0 + h].sink : -std::numeric_limits<float>::infinity(),
              row_max + h * s.n_q, row_sum + h * s.n_q, s.n_q);
        const size_t k0 = c * run, k1 = std::min(s.n_k, k0 + run);
        // the tile's query rows stacked: q (heads·n_q, d_k), head after head
        float* qs = thread_scratch(ScratchSlot::attention_rows, rows * s.d_k);
        for (size_t h = 0; h < heads; ++h)
          for (size_t i = 0; i < s.n_q; ++i) {
            const float* from = q.at(b, h0 + h) + i * q.row_stride;
            std::copy(from, from + s.d_k, qs + (h * s.n_q + i) * s.d_k);
          }
        const PackedKV kv =
            src.packed ? src.packed->at(b, g, s.n_k, s.d_k, s.d_v)
                       : pack_kv_keys(const_head(src.k, b, g, s.n_k, s.d_k),
                                      const_head(src.v, b, g, s.n_k, s.d_v), k0, k1 - k0,
                                      thread_scratch(ScratchSlot::packed_kv,
                                                     packed_kv_floats(k1 - k0, s.d_k, s.d_v)),
                                      nullptr);
        const OnlineRows state{qs,      s.d_k, acc,   s.d_v, row_max,
                               row_sum, heads, s.n_q, 0,     &masks[b * s.q_heads + h0]};
        attention_rows_online(state, kv, k0, k1, scale);
      });

  // out = Σ_c exp(max_c − M)·acc_c / Σ_c exp(max_c − M)·sum_c, M = max_c max_c, in run order
  // (a sink is in run 0's max and sum)
  for (size_t bg = 0; bg < s.batch * s.kv_heads; ++bg)
    for (size_t tile = 0; tile < tiles; ++tile) {
      const size_t b = bg / s.kv_heads, g = bg % s.kv_heads;
      const size_t h0 = g * group + tile * tile_heads,
                   heads = std::min(tile_heads, group - tile * tile_heads);
      const float* first = partials + (bg * tiles + tile) * runs * partial_floats;
      for (size_t r = 0; r < heads * s.n_q; ++r) {
        float* o = out.at(b, h0 + r / s.n_q) + (r % s.n_q) * out.row_stride;
        float m = -std::numeric_limits<float>::infinity();
        for (size_t c = 0; c < runs; ++c) {
          const float mc = first[c * partial_floats + stacked * s.d_v + r];
          m = mc != mc || m != m ? std::numeric_limits<float>::quiet_NaN() : std::max(m, mc);
        }
        std::fill(o, o + s.d_v, 0.0f);
        if (m == -std::numeric_limits<float>::infinity()) continue;  // every key masked: zero row
        float sum = 0;
        for (size_t c = 0; c < runs; ++c) {
          const float* p = first + c * partial_floats;
          const float mc = p[stacked * s.d_v + r];
          if (mc == -std::numeric_limits<float>::infinity()) continue;  // nothing seen in this run
          const float w = std::exp(mc - m);
          sum += w * p[stacked * s.d_v + stacked + r];
          for (size_t e = 0; e < s.d_v; ++e) o[e] += w * p[r * s.d_v + e];
        }
        const float inv = sum > 0 ? 1.0f / sum : 0.0f;
        for (size_t e = 0; e < s.d_v; ++e) o[e] = m != m ? m : o[e] * inv;
      }
    }
}

void forward(const HeadsShape& s, HeadTensor<const float> q, const KvSource& src,
             HeadTensor<float> out, float scale, const HeadsMask& mask, const HeadsTrace* trace,
             ThreadPool* pool) {
  check(s, mask);
  const std::vector<ScoreMask> masks = head_masks(s, mask);
  if (trace)
    forward_traced(s, q, src, out, scale, masks, *trace, pool);
  else if (s.n_q < kDecodeRows)
    forward_decode(s, q, src, out, scale, masks, pool);
  else
    forward_rows(s, q, src, out, scale, masks, pool);
}

}  // namespace

void attention_heads_forward(const HeadsShape& s, HeadTensor<const float> q,
                             HeadTensor<const float> k, HeadTensor<const float> v,
                             HeadTensor<float> out, float scale, const HeadsMask& mask,
                             const HeadsTrace* trace, ThreadPool* pool) {
  forward(s, q, {nullptr, k, v}, out, scale, mask, trace, pool);
}

void attention_heads_forward(const HeadsShape& s, HeadTensor<const float> q, const PackedHeads& kv,
                             HeadTensor<float> out, float scale, const HeadsMask& mask,
                             const HeadsTrace* trace, ThreadPool* pool) {
  forward(s, q, {&kv, {}, {}}, out, scale, mask, trace, pool);
}

// The cache's overload (wa/kv_cache.h): its panels read in place.
void attention_heads_forward(const HeadsShape& shape, HeadTensor<const float> q,
                             const KvCache& cache, HeadTensor<float> out, float scale,
                             const HeadsMask& mask, const HeadsTrace* trace, ThreadPool* pool) {
  if (shape.n_k != cache.length() || shape.batch != cache.batch() ||
      shape.kv_heads != cache.kv_heads() || shape.d_k != cache.d_k() || shape.d_v != cache.d_v())
    throw std::invalid_argument(
        "attention over a kv cache: the shape's n_k, batch, kv_heads, d_k, d_v must be the "
        "cache's: n_k " +
        std::to_string(shape.n_k) + " vs length " + std::to_string(cache.length()));
  const PackedHeads panels{cache.panels_.data(), cache.kv_heads_, cache.capacity_,
                           cache.head_floats_, cache.type_};
  attention_heads_forward(shape, q, panels, out, scale, mask, trace, pool);
}

void attention_heads_backward(const HeadsShape& s, HeadTensor<const float> q,
                              HeadTensor<const float> k, HeadTensor<const float> v,
                              HeadTensor<const float> d_out, HeadTensor<float> dq,
                              HeadTensor<float> dk, HeadTensor<float> dv, float scale,
                              const HeadsMask& mask, const float* weights, ThreadPool* pool,
                              float* d_sinks) {
  check(s, mask);
  const size_t group = s.q_heads / s.kv_heads, nn = checked_product({s.n_q, s.n_k});
  // ∂L/∂sink of each (b, h), b·hq + h: written by the task of (b, h's kv head), then summed over b
  std::vector<float> d_sink_heads(d_sinks ? checked_product({s.batch, s.q_heads}) : 0);
  // kv head g of sequence b and the query heads that read it, one after another; inner spreads
  // each head's passes (null inside a pool task)
  auto group_backward = [&](size_t b, size_t g, ThreadPool* inner) {
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
          head(dq, b, h, s.n_q, s.d_k), dk_into, dv_into, scale, m, inner, nullptr, nullptr,
          d_sinks ? &d_sink_heads[b * s.q_heads + h] : nullptr);
      if (!first)  // dk[g] += dk_h, dv[g] += dv_h
        for (size_t j = 0; j < s.n_k; ++j) {
          for (size_t c = 0; c < s.d_k; ++c) dkg.data[j * dkg.ld + c] += dk_h[j * s.d_k + c];
          for (size_t c = 0; c < s.d_v; ++c) dvg.data[j * dvg.ld + c] += dv_h[j * s.d_v + c];
        }
    }
  };
  // The kv heads spread over the threads when they feed them all evenly (as many as the threads,
  // a multiple, or kTasksPerThread each); else one after another, each head's passes spread.
  // Either way each gradient is the same sum in the same order.
  const size_t groups = checked_product({s.batch, s.kv_heads});
  const size_t threads = threads_for(
      pool, static_cast<double>(s.batch) * s.q_heads * s.n_q * s.n_k * 2 * (s.d_k + s.d_v));
  if (groups > 1 && groups >= threads &&
      (groups % threads == 0 || groups >= kTasksPerThread * threads))
    // (b, g): writes only its query heads' dq, its kv head's dk, dv
    parallel_for_2d(pool, s.batch, s.kv_heads, threads,
                    [&](size_t b, size_t g) { group_backward(b, g, nullptr); });
  else
    for (size_t b = 0; b < s.batch; ++b)
      for (size_t g = 0; g < s.kv_heads; ++g) group_backward(b, g, pool);
  if (d_sinks)
    for (size_t h = 0; h < s.q_heads; ++h) {
      d_sinks[h] = 0;
      for (size_t b = 0; b < s.batch; ++b) d_sinks[h] += d_sink_heads[b * s.q_heads + h];
    }
}

}  // namespace wa
