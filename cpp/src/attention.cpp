// Scaled dot-product attention forward, in blocks of query rows (attention_rows.cpp) over k
// and v packed once:  s = q_block·kᵀ; w = softmax(mask(s·scale)); out_block = w·v.
// And its backward: the weights recomputed in the same blocks, then whole-matrix passes
// (dk and dv sum over every query, so they are GEMMs over all rows, not per-block sums).
#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "attention_rows.h"
#include "scratch.h"
#include "sizes.h"
#include "simd.h"
#include "wa/attention.h"
#include "wa/gemm.h"
#include "wa/thread_pool.h"

namespace wa {

namespace {

std::string shape(const char* name, ConstMatrix m) {
  return std::string(name) + " (" + std::to_string(m.rows) + "," + std::to_string(m.cols) + ")";
}

bool has_shape(ConstMatrix m, size_t rows, size_t cols) { return m.rows == rows && m.cols == cols; }

// What is wrong with q, k, v together, or "".
std::string qkv_problem(ConstMatrix q, ConstMatrix k, ConstMatrix v) {
  if (!q.rows || !q.cols || !k.rows || !v.cols) return "every dimension must be at least 1";
  if (k.cols != q.cols) return "k must have as many columns as q (d_k)";
  if (v.rows != k.rows) return "v must have as many rows as k (n_k)";
  return "";
}

void check_shapes(ConstMatrix q, ConstMatrix k, ConstMatrix v, ConstMatrix out) {
  std::string problem = qkv_problem(q, k, v);
  if (problem.empty() && !has_shape(out, q.rows, v.cols)) problem = "out must be (n_q,d_v)";
  if (!problem.empty())
    throw std::invalid_argument("attention: " + problem + ": " + shape("q", q) + ", " +
                                shape("k", k) + ", " + shape("v", v) + ", " + shape("out", out));
}

// What is wrong with the arguments of attention_backward, or "".
std::string backward_problem(ConstMatrix q, ConstMatrix k, ConstMatrix v, ConstMatrix d_out,
                             ConstMatrix dq, ConstMatrix dk, ConstMatrix dv) {
  std::string problem = qkv_problem(q, k, v);
  if (!problem.empty()) return problem;
  if (!has_shape(d_out, q.rows, v.cols)) return "d_out must be (n_q,d_v)";
  if (!has_shape(dq, q.rows, q.cols)) return "dq must be (n_q,d_k), as q";
  if (!has_shape(dk, k.rows, k.cols)) return "dk must be (n_k,d_k), as k";
  if (!has_shape(dv, v.rows, v.cols)) return "dv must be (n_k,d_v), as v";
  return "";
}

void check_backward_shapes(ConstMatrix q, ConstMatrix k, ConstMatrix v, ConstMatrix d_out,
                           ConstMatrix dq, ConstMatrix dk, ConstMatrix dv) {
  const std::string problem = backward_problem(q, k, v, d_out, dq, dk, dv);
  if (!problem.empty())
    throw std::invalid_argument("attention backward: " + problem + ": " + shape("q", q) + ", " +
                                shape("k", k) + ", " + shape("v", v) + ", " +
                                shape("d_out", d_out) + ", " + shape("dq", dq) + ", " +
                                shape("dk", dk) + ", " + shape("dv", dv));
}

// The softmax Jacobian-vector product for one row, with the scale, in place over dP:
// p (n), dp (n) -> ds (n) = p ⊙ (dp − Σ_j dp_j·p_j) · scale. Masked keys have p = 0: ds = 0.
void softmax_backward_row(const float* p, float* dp, size_t n, float scale) {
  simd::f32x4 vdot = simd::splat(0.0f);
  size_t j = 0;
  for (; j + 4 <= n; j += 4) vdot = simd::muladd(simd::load(dp + j), simd::load(p + j), vdot);
  float dot = simd::hsum(vdot);
  for (; j < n; ++j) dot += dp[j] * p[j];

  const simd::f32x4 vsub = simd::splat(dot), vscale = simd::splat(scale);
  for (j = 0; j + 4 <= n; j += 4) {
    const simd::f32x4 vds = simd::mul(simd::load(p + j), simd::sub(simd::load(dp + j), vsub));
    simd::store(dp + j, simd::mul(vds, vscale));
  }
  for (; j < n; ++j) dp[j] = p[j] * (dp[j] - dot) * scale;
}

}  // namespace

void attention_forward(ConstMatrix q, ConstMatrix k, ConstMatrix v, Matrix out,
                       const ScoreMask& mask, const AttentionTrace* trace, ThreadPool* pool) {
  check_shapes(q, k, v, out);
  float* buffer = thread_scratch(ScratchSlot::packed_kv, packed_kv_floats(k.rows, k.cols, v.cols));
  const PackedKV kv = pack_kv(k, v, buffer, pool);
  const size_t blocks = (q.rows + kAttentionRowBlock - 1) / kAttentionRowBlock;
  // for (b = 0; b < blocks; ++b) rows [b·B, (b+1)·B): the fused form unless every score is asked for
  parallel_for(pool, blocks, [&](size_t b) {
    const size_t r0 = b * kAttentionRowBlock, r1 = std::min(q.rows, r0 + kAttentionRowBlock);
    if (trace) attention_rows(q, kv, out, mask, r0, r1, trace);
    else attention_rows_fused(q, kv, out, mask, r0, r1);
  });
}

void attention_backward_from_weights(ConstMatrix q, ConstMatrix k, ConstMatrix v, ConstMatrix p,
                                     ConstMatrix d_out, Matrix dq, Matrix dk, Matrix dv,
                                     float scale, bool causal, ThreadPool* pool, float* d_weights,
                                     float* d_scores) {
  const size_t n_q = q.rows, n_k = k.rows, d_k = q.cols, d_v = v.cols;
  constexpr size_t B = kAttentionRowBlock;
  // Causal, without a trace to fill: query rows [r0,r1) see keys [0, min(n_k,r1)) only, and
  // keys [c0,c1) are seen by queries [c0, n_q) only; the rest of P and dS is zero. So each
  // pass covers just its triangle (about half the work).
  const bool skip = causal && !d_weights && !d_scores;
  std::vector<float> ds(checked_product({n_q, n_k}));  // dP, then dS; zero where skipped

  // Per block of query rows (for (b < row blocks) rows [b·B, (b+1)·B)):
  //   out = P·v             -> dP = d_out·vᵀ: d_out (rows,d_v), v (cols,d_v) -> (rows,cols)
  //   P = softmax(x)        -> dS = P ⊙ (dP − rowsum(dP ⊙ P))·scale (x = s·scale + bias)
  //   s = q·kᵀ              -> dq = dS·k: dS (rows,cols), k (cols,d_k) -> (rows,d_k)
  parallel_for(pool, (n_q + B - 1) / B, [&](size_t b) {
    const size_t r0 = b * B, r1 = std::min(n_q, r0 + B), rows = r1 - r0;
    const size_t cols = skip ? std::min(n_k, r1) : n_k;
    float* ds_block = ds.data() + r0 * n_k;
    gemm_nt(rows, cols, d_v, d_out.data + r0 * d_out.ld, d_out.ld, v.data, v.ld, ds_block, n_k);
    if (d_weights) std::copy(ds_block, ds_block + rows * n_k, d_weights + r0 * n_k);
    for (size_t i = r0; i < r1; ++i)
      softmax_backward_row(p.data + i * p.ld, ds.data() + i * n_k, cols, scale);
    if (d_scores) std::copy(ds_block, ds_block + rows * n_k, d_scores + r0 * n_k);
    gemm_nn(rows, d_k, cols, ds_block, n_k, k.data, k.ld, dq.data + r0 * dq.ld, dq.ld);
  });
  // Per block of keys (for (b < key blocks) keys [b·B, (b+1)·B)), over the queries that see them:
  //   s = q·kᵀ  -> dk = dSᵀ·q:     dS (queries,keys), q (queries,d_k) -> (keys,d_k)
  //   out = P·v -> dv = Pᵀ·d_out:  P (queries,keys), d_out (queries,d_v) -> (keys,d_v)
  parallel_for(pool, (n_k + B - 1) / B, [&](size_t b) {
    const size_t c0 = b * B, keys = std::min(n_k, c0 + B) - c0;
    const size_t i0 = skip ? std::min(c0, n_q) : 0, queries = n_q - i0;
    gemm_tn(keys, d_k, queries, ds.data() + i0 * n_k + c0, n_k, q.data + i0 * q.ld, q.ld,
            dk.data + c0 * dk.ld, dk.ld);
    gemm_tn(keys, d_v, queries, p.data + i0 * p.ld + c0, p.ld, d_out.data + i0 * d_out.ld,
            d_out.ld, dv.data + c0 * dv.ld, dv.ld);
  });
}

void attention_backward(ConstMatrix q, ConstMatrix k, ConstMatrix v, ConstMatrix d_out,
                        Matrix dq, Matrix dk, Matrix dv, const ScoreMask& mask,
                        const AttentionBackwardTrace* trace, ThreadPool* pool) {
  check_backward_shapes(q, k, v, d_out, dq, dk, dv);
  const size_t n_q = q.rows, n_k = k.rows;
  // The forward's first passes again: q (n_q,d_k), k (n_k,d_k) -> P (n_q,n_k)
  std::vector<float> own;
  float* p = trace ? trace->weights : (own.resize(checked_product({n_q, n_k})), own.data());
  attention_weights(q, k, mask, {p, n_q, n_k, n_k}, pool);
  attention_backward_from_weights(q, k, v, {p, n_q, n_k, n_k}, d_out, dq, dk, dv, mask.scale,
                                  mask.causal, pool, trace ? trace->d_weights : nullptr,
                                  trace ? trace->d_scores : nullptr);
}

}  // namespace wa
