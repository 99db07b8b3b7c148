// Multi-head attention forward: three projections (GEMMs over all batch rows), attention for
// every (sequence, head, query block) as one task list, then the output projection.
#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "attention_rows.h"
#include "wa/attention.h"
#include "wa/gemm.h"
#include "wa/thread_pool.h"

namespace wa {
namespace {

// c (rows,cols) += bias (cols) on every row; no-op for a null bias.
void add_bias_rows(float* c, size_t rows, size_t cols, const float* bias) {
  if (!bias) return;
  for (size_t r = 0; r < rows; ++r)
    for (size_t j = 0; j < cols; ++j) c[r * cols + j] += bias[j];
}

// x (rows,d_model), w (d_model,cols), b (cols) -> y (rows,cols) = x·w + b
void project(const float* x, size_t rows, size_t d_model, const float* w, const float* b,
             size_t cols, float* y, ThreadPool* pool) {
  gemm_nn(rows, cols, d_model, x, d_model, w, cols, y, cols, false, pool);
  add_bias_rows(y, rows, cols, b);
}

void check(const MhaShape& s, const MhaWeights& w, const float* x, const float* context,
           const float* out) {
  std::string problem;
  if (!s.batch || !s.n_q || !s.n_k || !s.d_model || !s.heads || !s.d_k || !s.d_v)
    problem = "every dimension must be at least 1";
  else if (!context && s.n_k != s.n_q)
    problem = "self-attention (no context) needs n_k == n_q";
  else if (!x || !out || !w.wq || !w.wk || !w.wv || !w.wo)
    problem = "x, out and the four weight matrices are required";
  if (!problem.empty())
    throw std::invalid_argument(
        "multi-head attention: " + problem + ": batch " + std::to_string(s.batch) + ", n_q " +
        std::to_string(s.n_q) + ", n_k " + std::to_string(s.n_k) + ", d_model " +
        std::to_string(s.d_model) + ", h " + std::to_string(s.heads) + ", d_k " +
        std::to_string(s.d_k) + ", d_v " + std::to_string(s.d_v));
}

}  // namespace

void mha_forward(const MhaShape& s, const MhaWeights& w, const float* x, const float* context,
                 float* out, const ScoreMask& mask, const MhaTrace* trace, ThreadPool* pool) {
  check(s, w, x, context, out);
  const float* ctx = context ? context : x;
  const size_t hk = s.heads * s.d_k, hv = s.heads * s.d_v;
  const size_t rows_q = s.batch * s.n_q, rows_k = s.batch * s.n_k;

  std::vector<float> workspace;
  float *q, *k, *v, *concat;
  if (trace) {
    q = trace->q, k = trace->k, v = trace->v, concat = trace->concat;
  } else {
    workspace.resize(rows_q * hk + rows_k * hk + rows_k * hv + rows_q * hv);
    q = workspace.data();
    k = q + rows_q * hk;
    v = k + rows_k * hk;
    concat = v + rows_k * hv;
  }

  // x (batch·n_q,d_model) -> Q (batch·n_q,h·d_k); context -> K (batch·n_k,h·d_k), V (batch·n_k,h·d_v)
  project(x, rows_q, s.d_model, w.wq, w.bq, hk, q, pool);
  project(ctx, rows_k, s.d_model, w.wk, w.bk, hk, k, pool);
  project(ctx, rows_k, s.d_model, w.wv, w.bv, hv, v, pool);

  // for (b < batch) for (head < h) for (block < blocks): head output rows -> concat columns
  const size_t blocks = (s.n_q + kAttentionRowBlock - 1) / kAttentionRowBlock;
  parallel_for(pool, s.batch * s.heads * blocks, [&](size_t t) {
    const size_t block = t % blocks, bh = t / blocks, head = bh % s.heads, b = bh / s.heads;
    const ConstMatrix qh{q + b * s.n_q * hk + head * s.d_k, s.n_q, s.d_k, hk};
    const ConstMatrix kh{k + b * s.n_k * hk + head * s.d_k, s.n_k, s.d_k, hk};
    const ConstMatrix vh{v + b * s.n_k * hv + head * s.d_v, s.n_k, s.d_v, hv};
    const Matrix oh{concat + b * s.n_q * hv + head * s.d_v, s.n_q, s.d_v, hv};
    AttentionTrace th{};
    if (trace) {
      const size_t offset = bh * s.n_q * s.n_k;
      th = {trace->scores + offset, trace->scaled + offset, trace->masked + offset,
            trace->weights + offset};
    }
    const size_t r0 = block * kAttentionRowBlock;
    attention_rows(qh, kh, vh, oh, mask, r0, std::min(s.n_q, r0 + kAttentionRowBlock),
                   trace ? &th : nullptr);
  });

  // concat (batch·n_q,h·d_v), W_O (h·d_v,d_model) -> out (batch·n_q,d_model)
  project(concat, rows_q, hv, w.wo, w.bo, s.d_model, out, pool);
}

}  // namespace wa
