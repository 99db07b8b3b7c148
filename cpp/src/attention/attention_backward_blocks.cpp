// The backward of attention from the forward's weights, in blocks: per block of query rows
// (dP, dS, dq), then per block of keys over the queries that see them (dk, dv). dk and dv sum
// over every query, so they are GEMMs over the block's queries, not per-row-block sums.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "attention/attention_blocks.h"
#include "attention/softmax_rows.h"
#include "runtime/sizes.h"
#include "runtime/threading.h"
#include "wa/gemm.h"
#include "wa/thread_pool.h"

namespace wa {

namespace {

// The first query in [0, n_q) for which pred is false, pred true then false as i grows.
template <class Pred>
size_t first_query_not(size_t n_q, Pred pred) {
  size_t lo = 0, hi = n_q;
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (pred(mid))
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

}  // namespace

void attention_backward_from_weights(ConstMatrix q, ConstMatrix k, ConstMatrix v, ConstMatrix p,
                                     ConstMatrix d_out, Matrix dq, Matrix dk, Matrix dv,
                                     float scale, const ScoreMask& mask, ThreadPool* pool,
                                     float* d_weights, float* d_scores, float* d_sink) {
  const size_t n_q = q.rows, n_k = k.rows, d_k = q.cols, d_v = v.cols;
  constexpr size_t B = kAttentionRowBlock;
  // Without a trace to fill, each pass covers only the keys its queries may see (visible_keys):
  // query rows [r0,r1) see keys [0, hi(r1 − 1)) at most, and keys [c0,c1) are seen only by
  // queries [i0, i1) (hi(i) > c0 from i0 on, lo(i) < c1 up to i1); P and dS are zero elsewhere.
  // Causal: about half the work.
  const bool skip = !d_weights && !d_scores;
  std::vector<float> ds(checked_product({n_q, n_k}));  // dP, then dS; zero where skipped
  const bool softcapped = mask.softcap > 0;
  // ∂L/∂sink of each query row (n_q), summed in row order after the blocks; 0 without a sink
  const bool sunk = d_sink && mask.sink != -std::numeric_limits<float>::infinity();
  std::vector<double> d_sink_rows(sunk ? n_q : 0);
  // each pass: n_q·n_k·(d_k + d_v) multiply-adds at most
  const size_t threads = threads_for(pool, static_cast<double>(n_q) * n_k * (d_k + d_v));

  // Per block of query rows (for (t < row blocks) rows [b·B, (b+1)·B), b = row blocks − 1 − t:
  // the last rows first, which see the most keys under a causal mask, so that the threads end
  // together):
  //   out = P·v             -> dP = d_out·vᵀ: d_out (rows,d_v), v (cols,d_v) -> (rows,cols)
  //   P = softmax(x)        -> dx = P ⊙ (dP − rowsum(dP ⊙ P)), then ·scale; with a sink,
  //                            ∂L/∂sink = −p_sink·rowsum(dP ⊙ P), p_sink = 1 − rowsum(P)
  //   x = cap(s·scale) + bias -> with a softcap, d(s·scale) = dx ⊙ (1 − tanh²(s·scale/softcap))
  //   s = q·kᵀ              -> dq = dS·k: dS (rows,cols), k (cols,d_k) -> (rows,d_k)
  const size_t row_blocks = (n_q + B - 1) / B;
  parallel_for(pool, row_blocks, threads, [&](size_t t) {
    const size_t b = row_blocks - 1 - t;
    const size_t r0 = b * B, r1 = std::min(n_q, r0 + B), rows = r1 - r0;
    const size_t cols = skip ? visible_keys(mask, n_k, r1 - 1).hi : n_k;
    float* ds_block = ds.data() + r0 * n_k;
    gemm_nt(rows, cols, d_v, d_out.data + r0 * d_out.ld, d_out.ld, v.data, v.ld, ds_block, n_k);
    if (d_weights) std::copy(ds_block, ds_block + rows * n_k, d_weights + r0 * n_k);
    for (size_t i = r0; i < r1; ++i) {
      const float* pi = p.data + i * p.ld;
      const float dot = softmax_backward_row(pi, ds.data() + i * n_k, cols, scale);
      if (sunk) {  // keys past cols are masked: P is 0 there
        double weight = 0;
        for (size_t j = 0; j < cols; ++j) weight += pi[j];
        d_sink_rows[i] = -(1.0 - weight) * dot;
      }
    }
    if (softcapped && cols > 0) {
      // s (rows,cols) again, for tanh′: the softcap's only cost in the backward
      std::vector<float> s(rows * cols);
      gemm_nt(rows, cols, d_k, q.data + r0 * q.ld, q.ld, k.data, k.ld, s.data(), cols);
      for (size_t r = 0; r < rows; ++r)
        for (size_t j = 0; j < cols; ++j) {
          const float th = std::tanh(s[r * cols + j] * scale / mask.softcap);
          ds_block[r * n_k + j] *= 1.0f - th * th;
        }
    }
    if (d_scores) std::copy(ds_block, ds_block + rows * n_k, d_scores + r0 * n_k);
    gemm_nn(rows, d_k, cols, ds_block, n_k, k.data, k.ld, dq.data + r0 * dq.ld, dq.ld);
  });
  // Per block of keys (for (b < key blocks) keys [b·B, (b+1)·B)), over the queries that see them
  // (causal: the first keys, seen by the most queries, first). Each dk, dv row is one GEMM over
  // the block's queries in query order: no sum across tasks, whatever the thread count.
  //   s = q·kᵀ  -> dk = dSᵀ·q:     dS (queries,keys), q (queries,d_k) -> (keys,d_k)
  //   out = P·v -> dv = Pᵀ·d_out:  P (queries,keys), d_out (queries,d_v) -> (keys,d_v)
  parallel_for(pool, (n_k + B - 1) / B, threads, [&](size_t b) {
    const size_t c0 = b * B, c1 = std::min(n_k, c0 + B), keys = c1 - c0;
    size_t i0 = 0, i1 = n_q;
    if (skip) {
      i0 = first_query_not(n_q, [&](size_t i) { return visible_keys(mask, n_k, i).hi <= c0; });
      i1 = std::max(
          i0, first_query_not(n_q, [&](size_t i) { return visible_keys(mask, n_k, i).lo < c1; }));
    }
    const size_t queries = i1 - i0;
    if (queries == 0) {  // no query sees these keys: zero gradients
      for (size_t c = c0; c < c1; ++c) {
        std::fill(dk.data + c * dk.ld, dk.data + c * dk.ld + d_k, 0.0f);
        std::fill(dv.data + c * dv.ld, dv.data + c * dv.ld + d_v, 0.0f);
      }
      return;
    }
    gemm_tn(keys, d_k, queries, ds.data() + i0 * n_k + c0, n_k, q.data + i0 * q.ld, q.ld,
            dk.data + c0 * dk.ld, dk.ld);
    gemm_tn(keys, d_v, queries, p.data + i0 * p.ld + c0, p.ld, d_out.data + i0 * d_out.ld, d_out.ld,
            dv.data + c0 * dv.ld, dv.ld);
  });
  if (d_sink) {
    double sum = 0;
    for (double d : d_sink_rows) sum += d;
    *d_sink = static_cast<float>(sum);
  }
}

}  // namespace wa
