// Attention's row pieces, compiled into a bench-only module per ISA (CMakeLists.txt:
// rows_probe_simd128, rows_probe_relaxed_simd; never shipped) and timed by rows_probe.mjs in Node, Bun
// and the browsers. Three shapes live side by side, each in its own slot:
//   slot 0  single-head causal attention: q, k, v (n,d), row blocks of kAttentionRowBlock
//   slot 1  decode over one kv head of a cache: `heads` query heads of one row each (a GQA
//           group, stacked as attention_heads.cpp stacks them) against n keys of (d)
//   slot 2  single-head attention as slot 0, not causal
// Each run walks the row blocks and key blocks exactly as attention_rows_online does and runs
// only the pieces asked for (bits of `pieces`), `reps` times:
//   1 scores   kern.scores: q rows · kᵀ for one key block (the GEMM)
//   2 softmax  softmax_online_block over that block's scores: scale, mask, row max, exp, sum
//   4 values   kern.weighted_values: the block's weights · v, accumulated (the GEMM)
//   8 exp      simd::exp_nonpositive over as many scores, summed: the exp polynomial alone
//  16 online   attention_rows_online itself, which runs 1, 2 and 4 and rescales the sums
//  32 forward  wa::attention_forward on the slot's q, k, v (slots 0 and 2): the whole call's
//              wasm work, k and v packed, every row block, the output normalized
// Everything single-threaded (no pool). The scores the softmax reads are computed once in setup,
// so each piece runs on the data it sees in a real call whichever pieces are on.
#include <emscripten.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "attention/attention_blocks.h"
#include "attention/softmax_rows.h"
#include "simd.h"
#include "tuning.h"

namespace {

using wa::kKeyBlock;

struct Slot {
  size_t heads = 1, rows = 0, n_k = 0, d = 0;
  bool causal = false;
  std::vector<float> q, k, v, packed, s, p, acc, row_max, row_sum, rescale, out;
  std::vector<wa::ScoreMask> masks;
  wa::PackedKV kv{};
};
Slot slots[3];

float value(size_t i) { return static_cast<float>((i * 7919) % 1000) / 1000.0f - 0.5f; }

// The query rows of one row block: [row0, row0 + rows) of every head.
struct Block {
  size_t row0, rows;
};

// Keys the block's rows may see, rounded out to whole panels, as attention_rows_online has them.
void key_range(const Slot& sl, Block b, size_t& first, size_t& last) {
  first = sl.n_k, last = 0;
  for (const wa::ScoreMask& m : sl.masks) {
    first = std::min(first, wa::visible_keys(m, sl.n_k, b.row0).lo);
    last = std::max(last, wa::visible_keys(m, sl.n_k, b.row0 + b.rows - 1).hi);
  }
  first = first / wa::kernels::kNR * wa::kernels::kNR;
}

float run_block(Slot& sl, Block b, int pieces) {
  const size_t stacked = sl.heads * b.rows, d = sl.d;
  const wa::KvKernels& kern = wa::kv_kernels(sl.kv.type);
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  // q of this block, heads stacked: (stacked, d) with row stride d
  const float* q = sl.q.data() + b.row0 * d * sl.heads;
  std::fill(sl.acc.begin(), sl.acc.begin() + stacked * d, 0.0f);
  std::fill(sl.row_max.begin(), sl.row_max.begin() + stacked,
            -std::numeric_limits<float>::infinity());
  std::fill(sl.row_sum.begin(), sl.row_sum.begin() + stacked, 0.0f);
  if (pieces & 16) {
    const wa::OnlineRows t{
        q,      d,      sl.acc.data(),  d, sl.row_max.data(), sl.row_sum.data(), sl.heads,
        b.rows, b.row0, sl.masks.data()};
    wa::attention_rows_online(t, sl.kv, 0, sl.n_k, scale);
    return sl.acc[0];
  }
  size_t first, last;
  key_range(sl, b, first, last);
  float sink = 0;
  for (size_t j0 = first; j0 < last; j0 += kKeyBlock) {
    const size_t cols = std::min(kKeyBlock, last - j0);
    const float* s = sl.s.data();
    if (pieces & 1) kern.scores(sl.kv, q, d, stacked, j0, cols, sl.p.data(), kKeyBlock);
    if (pieces & 2)
      for (size_t h = 0; h < sl.heads; ++h) {
        const size_t at = h * b.rows;
        wa::softmax_online_block(s + at * kKeyBlock, kKeyBlock, sl.p.data() + at * kKeyBlock,
                                 kKeyBlock, b.row0, b.rows, j0, cols, sl.n_k, scale, sl.masks[h],
                                 sl.row_max.data() + at, sl.row_sum.data() + at,
                                 sl.rescale.data() + at);
      }
    if (pieces & 4)
      kern.weighted_values(sl.kv, sl.p.data(), kKeyBlock, stacked, j0, cols, sl.acc.data(), d,
                           true);
    if (pieces & 8) {
      using namespace wa::simd;
      f32x4 sum = splat(0.0f);
      const f32x4 shift = splat(-8.0f);
      for (size_t r = 0; r < stacked; ++r)
        for (size_t j = 0; j + 4 <= cols; j += 4)
          sum = add(sum, exp_nonpositive(add(load(s + r * kKeyBlock + j), shift)));
      sink += hsum(sum);
    }
  }
  return sink + sl.acc[0] + sl.p[0];
}

}  // namespace

extern "C" {

// slot 0: heads 1, causal; slot 1: heads query heads of one row over n keys, not causal;
// slot 2: heads 1, not causal.
EMSCRIPTEN_KEEPALIVE void rp_setup(int slot, int heads, int n_q, int n_k, int d, int causal) {
  Slot& sl = slots[slot];
  sl.heads = heads, sl.rows = n_q, sl.n_k = n_k, sl.d = d, sl.causal = causal;
  sl.q.resize(size_t(heads) * n_q * d), sl.k.resize(size_t(n_k) * d), sl.v.resize(size_t(n_k) * d);
  for (size_t i = 0; i < sl.q.size(); ++i) sl.q[i] = 2 * value(i);
  for (size_t i = 0; i < sl.k.size(); ++i) sl.k[i] = 2 * value(i + 17);
  for (size_t i = 0; i < sl.v.size(); ++i) sl.v[i] = value(i + 31);
  sl.packed.resize(wa::packed_kv_floats(n_k, d, d));
  sl.kv = wa::pack_kv({sl.k.data(), size_t(n_k), size_t(d), size_t(d)},
                      {sl.v.data(), size_t(n_k), size_t(d), size_t(d)}, sl.packed.data(), nullptr);
  const size_t stacked = size_t(heads) * std::min<size_t>(n_q, wa::kAttentionRowBlock);
  // the softmax's input for every key block: the first block's real scores
  sl.s.assign(stacked * kKeyBlock, 0.0f);
  sl.p.assign(stacked * kKeyBlock, 0.0f);
  wa::kv_kernels(sl.kv.type)
      .scores(sl.kv, sl.q.data(), d, stacked, 0, std::min<size_t>(kKeyBlock, n_k), sl.s.data(),
              kKeyBlock);
  sl.acc.assign(stacked * d, 0.0f);
  sl.row_max.assign(stacked, 0.0f), sl.row_sum.assign(stacked, 0.0f), sl.rescale.assign(stacked, 0);
  wa::ScoreMask m;
  m.causal = causal;
  sl.masks.assign(heads, m);
  sl.out.assign(size_t(n_q) * d, 0.0f);
}

EMSCRIPTEN_KEEPALIVE float rp_run(int slot, int pieces, int reps) {
  Slot& sl = slots[slot];
  float sink = 0;
  if (pieces & 32) {
    const size_t n = sl.rows, d = sl.d;
    for (int r = 0; r < reps; ++r) {
      wa::attention_forward({sl.q.data(), n, d, d}, {sl.k.data(), sl.n_k, d, d},
                            {sl.v.data(), sl.n_k, d, d}, {sl.out.data(), n, d, d},
                            1.0f / std::sqrt(static_cast<float>(d)), sl.masks[0], nullptr, nullptr);
      sink += sl.out[0];
    }
    return sink;
  }
  for (int r = 0; r < reps; ++r)
    for (size_t row0 = 0; row0 < sl.rows; row0 += wa::kAttentionRowBlock)
      sink += run_block(sl, {row0, std::min(wa::kAttentionRowBlock, sl.rows - row0)}, pieces);
  return sink;
}

}  // extern "C"
