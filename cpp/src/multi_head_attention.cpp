// Multi-head attention forward: three projections (GEMMs over all batch rows), attention for
// every (sequence, head, query block) as one task list, then the output projection.
// Backward: the same passes in reverse, the attention part one task per (sequence, head)
// (dK and dV sum over every query of the sequence).
#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "attention_blocks.h"
#include "scratch.h"
#include "sizes.h"
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

// Shapes, and the buffers every call needs: x, the weights and `io`, the buffer named io_name
// (the forward's out, the backward's d_out). where: the entry, first in the message.
void check(const char* where, const MhaShape& s, const MhaWeights& w, const float* x,
           const float* context, const float* io, const char* io_name, const MhaTrace* trace) {
  std::string problem;
  if (!s.batch || !s.n_q || !s.n_k || !s.d_model || !s.heads || !s.d_k || !s.d_v)
    problem = "every dimension must be at least 1";
  else if (!context && s.n_k != s.n_q)
    problem = "self-attention (no context) needs n_k == n_q";
  else if (!x || !io || !w.wq || !w.wk || !w.wv || !w.wo)
    problem = std::string("x, ") + io_name + " and the four weight matrices are required";
  else if (trace && (!trace->q || !trace->k || !trace->v || !trace->concat ||
                     !trace->scores != !trace->scaled || !trace->scores != !trace->masked ||
                     !trace->scores != !trace->weights))
    problem = "a trace sets q, k, v and concat, and scores, scaled, masked, weights all or none";
  if (!problem.empty())
    throw std::invalid_argument(
        std::string(where) + ": " + problem + ": batch " + std::to_string(s.batch) + ", n_q " +
        std::to_string(s.n_q) + ", n_k " + std::to_string(s.n_k) + ", d_model " +
        std::to_string(s.d_model) + ", h " + std::to_string(s.heads) + ", d_k " +
        std::to_string(s.d_k) + ", d_v " + std::to_string(s.d_v));
}

// Σ over rows: m (rows,cols) -> sums (cols), rows added in order. No-op for a null sums.
void column_sums(const float* m, size_t rows, size_t cols, float* sums) {
  if (!sums) return;
  std::fill(sums, sums + cols, 0.0f);
  for (size_t r = 0; r < rows; ++r)
    for (size_t j = 0; j < cols; ++j) sums[j] += m[r * cols + j];
}

// What the backward needs beyond check(): the saved trace and the gradient buffers.
void check_backward(const MhaWeights& w, const float* context, const MhaTrace& saved,
                    const MhaGrads& g) {
  std::string problem;
  if (!saved.q || !saved.k || !saved.v || !saved.concat)
    problem = "the saved trace needs q, k, v and concat from the forward";
  else if (!g.dx || !g.dwq || !g.dwk || !g.dwv || !g.dwo)
    problem = "grads needs dx, dwq, dwk, dwv and dwo";
  else if (!context != !g.d_context)
    problem = context ? "cross-attention needs grads.d_context"
                      : "self-attention takes no grads.d_context (dx holds context's gradient)";
  else if (!w.bq != !g.dbq || !w.bk != !g.dbk || !w.bv != !g.dbv || !w.bo != !g.dbo)
    problem = "grads.db* must be set exactly for the biases w has (dbq for bq, ...)";
  if (!problem.empty()) throw std::invalid_argument("multi-head attention backward: " + problem);
}

}  // namespace

void mha_forward(const MhaShape& s, const MhaWeights& w, const float* x, const float* context,
                 float* out, float scale, const ScoreMask& mask, const MhaTrace* trace,
                 ThreadPool* pool) {
  check("multi-head attention", s, w, x, context, out, "out", trace);
  const float* ctx = context ? context : x;
  const size_t hk = checked_product({s.heads, s.d_k}), hv = checked_product({s.heads, s.d_v});
  const size_t rows_q = checked_product({s.batch, s.n_q}),
               rows_k = checked_product({s.batch, s.n_k});

  const bool head_traces = trace && trace->scores;  // else a trace saved for the backward only
  std::vector<float> workspace;
  float *q, *k, *v, *concat;
  if (trace) {
    q = trace->q, k = trace->k, v = trace->v, concat = trace->concat;
  } else {
    workspace.resize(checked_sum({checked_product({rows_q, hk}), checked_product({rows_k, hk}),
                                  checked_product({rows_k, hv}), checked_product({rows_q, hv})}));
    q = workspace.data();
    k = q + rows_q * hk;
    v = k + rows_k * hk;
    concat = v + rows_k * hv;
  }

  // x (batch·n_q,d_model) -> Q (batch·n_q,h·d_k); context -> K (batch·n_k,h·d_k), V (batch·n_k,h·d_v)
  project(x, rows_q, s.d_model, w.wq, w.bq, hk, q, pool);
  project(ctx, rows_k, s.d_model, w.wk, w.bk, hk, k, pool);
  project(ctx, rows_k, s.d_model, w.wv, w.bv, hv, v, pool);

  // Each head's k and v packed once: for (b < batch) for (head < h) pack K_h, V_h
  const size_t heads = s.batch * s.heads, kv_floats = packed_kv_floats(s.n_k, s.d_k, s.d_v);
  float* kv_buffer = thread_scratch(ScratchSlot::packed_kv, checked_product({heads, kv_floats}));
  std::vector<PackedKV> kv(heads);
  parallel_for(pool, heads, [&](size_t bh) {
    const size_t head = bh % s.heads, b = bh / s.heads;
    const ConstMatrix kh{k + b * s.n_k * hk + head * s.d_k, s.n_k, s.d_k, hk};
    const ConstMatrix vh{v + b * s.n_k * hv + head * s.d_v, s.n_k, s.d_v, hv};
    kv[bh] = pack_kv(kh, vh, kv_buffer + bh * kv_floats, nullptr);
  });

  // for (b < batch) for (head < h) for (block < blocks): head output rows -> concat columns
  const size_t blocks = (s.n_q + kAttentionRowBlock - 1) / kAttentionRowBlock;
  parallel_for(pool, heads * blocks, [&](size_t t) {
    const size_t block = t % blocks, bh = t / blocks, head = bh % s.heads, b = bh / s.heads;
    const ConstMatrix qh{q + b * s.n_q * hk + head * s.d_k, s.n_q, s.d_k, hk};
    const Matrix oh{concat + b * s.n_q * hv + head * s.d_v, s.n_q, s.d_v, hv};
    const size_t r0 = block * kAttentionRowBlock, r1 = std::min(s.n_q, r0 + kAttentionRowBlock);
    if (head_traces) {
      const size_t offset = bh * s.n_q * s.n_k;
      const AttentionTrace th{trace->scores + offset, trace->scaled + offset,
                              trace->masked + offset, trace->weights + offset};
      attention_rows(qh, kv[bh], oh, scale, mask, r0, r1, th);
    } else {
      attention_rows_fused(qh, kv[bh], oh, scale, mask, r0, r1);
    }
  });

  // concat (batch·n_q,h·d_v), W_O (h·d_v,d_model) -> out (batch·n_q,d_model)
  project(concat, rows_q, hv, w.wo, w.bo, s.d_model, out, pool);
}

void mha_backward(const MhaShape& s, const MhaWeights& w, const float* x, const float* context,
                  const MhaTrace& saved, const float* d_out, float scale, const ScoreMask& mask,
                  const MhaGrads& g, ThreadPool* pool) {
  check("multi-head attention backward", s, w, x, context, d_out, "d_out", nullptr);
  check_backward(w, context, saved, g);
  const float* ctx = context ? context : x;
  const size_t hk = checked_product({s.heads, s.d_k}), hv = checked_product({s.heads, s.d_v});
  const size_t rows_q = checked_product({s.batch, s.n_q}),
               rows_k = checked_product({s.batch, s.n_k});

  std::vector<float> workspace(
      checked_sum({checked_product({rows_q, hv}), checked_product({rows_q, hk}),
                   checked_product({rows_k, hk}), checked_product({rows_k, hv})}));
  float* d_concat = workspace.data();  // (batch·n_q, h·d_v)
  float* dq = d_concat + rows_q * hv;  // (batch·n_q, h·d_k)
  float* dk = dq + rows_q * hk;        // (batch·n_k, h·d_k)
  float* dv = dk + rows_k * hk;        // (batch·n_k, h·d_v)

  // out = concat·W_O + b_O:
  //   concat (batch·n_q,h·d_v), d_out (batch·n_q,d_model) -> dW_O = concatᵀ·d_out (h·d_v,d_model)
  gemm_tn(hv, s.d_model, rows_q, saved.concat, hv, d_out, s.d_model, g.dwo, s.d_model, false, pool);
  column_sums(d_out, rows_q, s.d_model, g.dbo);
  //   d_out (batch·n_q,d_model), W_O (h·d_v,d_model) -> dconcat = d_out·W_Oᵀ (batch·n_q,h·d_v)
  gemm_nt(rows_q, hv, s.d_model, d_out, s.d_model, w.wo, s.d_model, d_concat, hv, false, pool);

  // head_i = attention(Q_i, K_i, V_i), head i of sequence b into concat columns [i·d_v,(i+1)·d_v):
  //   dconcat head slice -> dQ, dK, dV head slices, from the saved weights (batch, h, n_q, n_k)
  auto head_backward = [&](size_t bh, ThreadPool* inner) {
    const size_t head = bh % s.heads, b = bh / s.heads;
    const size_t q0 = b * s.n_q, k0 = b * s.n_k;  // first row of sequence b
    const ConstMatrix qh{saved.q + q0 * hk + head * s.d_k, s.n_q, s.d_k, hk};
    const ConstMatrix kh{saved.k + k0 * hk + head * s.d_k, s.n_k, s.d_k, hk};
    const ConstMatrix vh{saved.v + k0 * hv + head * s.d_v, s.n_k, s.d_v, hv};
    std::vector<float> recomputed;
    const float* p = saved.weights ? saved.weights + bh * s.n_q * s.n_k : nullptr;
    if (!p) {  // the forward kept no weights: q_h (n_q,d_k), k_h (n_k,d_k) -> P (n_q,n_k)
      recomputed.resize(checked_product({s.n_q, s.n_k}));
      attention_weights(qh, kh, scale, mask, {recomputed.data(), s.n_q, s.n_k, s.n_k}, inner);
      p = recomputed.data();
    }
    const ConstMatrix ph{p, s.n_q, s.n_k, s.n_k};
    const ConstMatrix doh{d_concat + q0 * hv + head * s.d_v, s.n_q, s.d_v, hv};
    const Matrix dqh{dq + q0 * hk + head * s.d_k, s.n_q, s.d_k, hk};
    const Matrix dkh{dk + k0 * hk + head * s.d_k, s.n_k, s.d_k, hk};
    const Matrix dvh{dv + k0 * hv + head * s.d_v, s.n_k, s.d_v, hv};
    attention_backward_from_weights(qh, kh, vh, ph, doh, dqh, dkh, dvh, scale, mask, inner);
  };
  const size_t tasks = s.batch * s.heads;
  if (tasks == 1) {
    head_backward(0, pool);  // one head: its passes use the pool instead
  } else {
    // for (b < batch) for (head < h): writes only that head's columns of dQ, dK, dV
    parallel_for(pool, tasks, [&](size_t bh) { head_backward(bh, nullptr); });
  }

  // Q = x·W_Q + b_Q: x (batch·n_q,d_model), dQ (batch·n_q,h·d_k) -> dW_Q = xᵀ·dQ (d_model,h·d_k)
  gemm_tn(s.d_model, hk, rows_q, x, s.d_model, dq, hk, g.dwq, hk, false, pool);
  column_sums(dq, rows_q, hk, g.dbq);
  // K = context·W_K + b_K: -> dW_K = contextᵀ·dK (d_model,h·d_k)
  gemm_tn(s.d_model, hk, rows_k, ctx, s.d_model, dk, hk, g.dwk, hk, false, pool);
  column_sums(dk, rows_k, hk, g.dbk);
  // V = context·W_V + b_V: -> dW_V = contextᵀ·dV (d_model,h·d_v)
  gemm_tn(s.d_model, hv, rows_k, ctx, s.d_model, dv, hv, g.dwv, hv, false, pool);
  column_sums(dv, rows_k, hv, g.dbv);

  // Q = x·W_Q: dQ (batch·n_q,h·d_k), W_Q (d_model,h·d_k) -> dx = dQ·W_Qᵀ (batch·n_q,d_model)
  gemm_nt(rows_q, s.d_model, hk, dq, hk, w.wq, hk, g.dx, s.d_model, false, pool);
  // K = context·W_K, V = context·W_V -> d_context = dK·W_Kᵀ + dV·W_Vᵀ (batch·n_k,d_model);
  // for self-attention context is x, and these add to dx.
  const bool self = !context;
  float* d_ctx = self ? g.dx : g.d_context;
  gemm_nt(rows_k, s.d_model, hk, dk, hk, w.wk, hk, d_ctx, s.d_model, /*accumulate=*/self, pool);
  gemm_nt(rows_k, s.d_model, hv, dv, hv, w.wv, hv, d_ctx, s.d_model, true, pool);
}

}  // namespace wa
