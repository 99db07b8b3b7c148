// Multi-head attention forward: three projections (GEMMs over all batch rows), rotary on Q and
// K, attention_heads_forward over them in their 3-D layout, then the output projection.
// Backward: the same passes in reverse, the attention part attention_heads_backward (one task
// per (sequence, kv head); dK and dV sum over every query of the sequence and of the group).
#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "attention/bias_rows.h"
#include "runtime/sizes.h"
#include "wa/attention.h"
#include "wa/attention_heads.h"
#include "wa/gemm.h"
#include "wa/kv_cache.h"
#include "wa/rotary.h"
#include "wa/thread_pool.h"

namespace wa {
namespace {

// x (rows,d_model), w (d_model,cols), b (cols) -> y (rows,cols) = x·w + b
void project(const float* x, size_t rows, size_t d_model, const float* w, const float* b,
             size_t cols, float* y, ThreadPool* pool) {
  gemm_nn(rows, cols, d_model, x, d_model, w, cols, y, cols, false, pool);
  add_bias_rows(y, rows, cols, b, pool);
}

// Shapes, and the buffers every call needs: x, the weights and `io`, the buffer named io_name
// (the forward's out, the backward's d_out). where: the entry, first in the message.
void check(const char* where, const MhaShape& s, const MhaWeights& w, const float* x,
           const float* context, const float* io, const char* io_name, const MhaSaved* saved) {
  std::string problem;
  if (!s.batch || !s.n_q || !s.n_k || !s.d_model || !s.heads || !s.d_k || !s.d_v)
    problem = "every dimension must be at least 1";
  else if (s.heads % s.kv() != 0)
    problem = "kv_heads " + std::to_string(s.kv()) + " must divide heads";
  else if (!context && s.n_k != s.n_q)
    problem = "self-attention (no context) needs n_k == n_q";
  else if (!x || !io || !w.wq || !w.wk || !w.wv || !w.wo)
    problem = std::string("x, ") + io_name + " and the four weight matrices are required";
  else if (saved && (!saved->q || !saved->k || !saved->v || !saved->concat ||
                     !saved->scores != !saved->scaled || !saved->scores != !saved->masked ||
                     !saved->scores != !saved->weights))
    problem = "a trace sets q, k, v and concat, and scores, scaled, masked, weights all or none";
  if (!problem.empty())
    throw std::invalid_argument(std::string(where) + ": " + problem + ": batch " +
                                std::to_string(s.batch) + ", n_q " + std::to_string(s.n_q) +
                                ", n_k " + std::to_string(s.n_k) + ", d_model " +
                                std::to_string(s.d_model) + ", h " + std::to_string(s.heads) +
                                ", h_kv " + std::to_string(s.kv()) + ", d_k " +
                                std::to_string(s.d_k) + ", d_v " + std::to_string(s.d_v));
}

// What the backward needs beyond check(): the saved trace and the gradient buffers.
void check_backward(const MhaWeights& w, const float* context, const MhaSaved& saved,
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
  else if (!w.sinks != !g.dsinks)
    problem = "grads.dsinks must be set exactly when w has sinks";
  if (!problem.empty()) throw std::invalid_argument("multi-head attention backward: " + problem);
}

// Q (batch·n_q,h·d_k) and K (batch·n_k,h_kv·d_k), in place, each head's rows turned to their
// positions; no-op without rotary.
void rotate(const MhaShape& s, float* q, float* k, const Rotary* rotary, bool backward) {
  if (!rotary) return;
  const auto turn = backward ? rotary_backward : rotary_forward;
  turn(s.batch, s.heads, s.n_q, s.d_k, heads_3d(q, s.heads, s.n_q, s.d_k), *rotary);
  turn(s.batch, s.kv(), s.n_k, s.d_k, heads_3d(k, s.kv(), s.n_k, s.d_k), *rotary);
}

// Q (batch·n_q,h·d_k) and concat (batch·n_q,h·d_v) as the attention's query and output heads.
HeadsShape heads_shape(const MhaShape& s, size_t n_k) {
  return {s.batch, s.heads, s.kv(), s.n_q, n_k, s.d_k, s.d_v};
}

// The mask every head shares, with each head's sink from the weights when they have them.
HeadsMask heads_mask(const ScoreMask& mask, const MhaWeights& w) {
  HeadsMask m{mask};
  m.sinks = w.sinks;
  return m;
}

}  // namespace

void mha_forward(const MhaShape& s, const MhaWeights& w, const float* x, const float* context,
                 float* out, float scale, const ScoreMask& mask, const MhaSaved* saved,
                 ThreadPool* pool, const Rotary* rotary) {
  check("multi-head attention", s, w, x, context, out, "out", saved);
  const float* ctx = context ? context : x;
  const size_t hk = checked_product({s.heads, s.d_k}), hv = checked_product({s.heads, s.d_v});
  const size_t gk = checked_product({s.kv(), s.d_k}), gv = checked_product({s.kv(), s.d_v});
  const size_t rows_q = checked_product({s.batch, s.n_q}),
               rows_k = checked_product({s.batch, s.n_k});

  const bool head_traces = saved && saved->scores;  // else a trace saved for the backward only
  std::unique_ptr<float[]> workspace;  // not zeroed (serial time): every float is written first
  float *q, *k, *v, *concat;
  if (saved) {
    q = saved->q, k = saved->k, v = saved->v, concat = saved->concat;
  } else {
    workspace.reset(
        new float[checked_sum({checked_product({rows_q, hk}), checked_product({rows_k, gk}),
                               checked_product({rows_k, gv}), checked_product({rows_q, hv})})]);
    q = workspace.get();
    k = q + rows_q * hk;
    v = k + rows_k * gk;
    concat = v + rows_k * gv;
  }

  // x (batch·n_q,d_model) -> Q (batch·n_q,h·d_k);
  // context -> K (batch·n_k,h_kv·d_k), V (batch·n_k,h_kv·d_v)
  project(x, rows_q, s.d_model, w.wq, w.bq, hk, q, pool);
  project(ctx, rows_k, s.d_model, w.wk, w.bk, gk, k, pool);
  project(ctx, rows_k, s.d_model, w.wv, w.bv, gv, v, pool);
  rotate(s, q, k, rotary, false);

  // Q, K, V, concat in their 3-D head layout -> every head's output into its concat columns
  HeadsTrace heads_trace{};
  if (head_traces)
    heads_trace = {saved->scores, saved->scaled, saved->masked, saved->weights, nullptr};
  attention_heads_forward(heads_shape(s, s.n_k), heads_3d<const float>(q, s.heads, s.n_q, s.d_k),
                          heads_3d<const float>(k, s.kv(), s.n_k, s.d_k),
                          heads_3d<const float>(v, s.kv(), s.n_k, s.d_v),
                          heads_3d(concat, s.heads, s.n_q, s.d_v), scale, heads_mask(mask, w),
                          head_traces ? &heads_trace : nullptr, pool);

  // concat (batch·n_q,h·d_v), W_O (h·d_v,d_model) -> out (batch·n_q,d_model)
  project(concat, rows_q, hv, w.wo, w.bo, s.d_model, out, pool);
}

void mha_forward_cached(const MhaShape& shape, const MhaWeights& w, const float* x, KvCache& cache,
                        float* out, float scale, const ScoreMask& mask, ThreadPool* pool,
                        const Rotary* rotary) {
  MhaShape s = shape;
  s.n_k = s.n_q;  // the new tokens' keys, until they join the cache
  check("multi-head attention over a kv cache", s, w, x, nullptr, out, "out", nullptr);
  if (s.batch != cache.batch() || s.kv() != cache.kv_heads() || s.d_k != cache.d_k() ||
      s.d_v != cache.d_v())
    throw std::invalid_argument(
        "multi-head attention over a kv cache: the layer's batch " + std::to_string(s.batch) +
        ", h_kv " + std::to_string(s.kv()) + ", d_k " + std::to_string(s.d_k) + ", d_v " +
        std::to_string(s.d_v) + " must be the cache's: batch " + std::to_string(cache.batch()) +
        ", h_kv " + std::to_string(cache.kv_heads()) + ", d_k " + std::to_string(cache.d_k()) +
        ", d_v " + std::to_string(cache.d_v()));
  const size_t past = cache.length();
  if (s.n_q > cache.capacity() - past)
    throw std::invalid_argument("multi-head attention over a kv cache: " + std::to_string(s.n_q) +
                                " new tokens do not fit: length " + std::to_string(past) +
                                ", capacity " + std::to_string(cache.capacity()));
  const size_t hk = checked_product({s.heads, s.d_k}), hv = checked_product({s.heads, s.d_v});
  const size_t gk = checked_product({s.kv(), s.d_k}), gv = checked_product({s.kv(), s.d_v});
  const size_t rows = checked_product({s.batch, s.n_q});
  // not zeroed (serial time): every float is written before it is read
  const std::unique_ptr<float[]> workspace(
      new float[checked_sum({checked_product({rows, hk}), checked_product({rows, gk}),
                             checked_product({rows, gv}), checked_product({rows, hv})})]);
  float* q = workspace.get();     // (batch·n_q, h·d_k)
  float* k = q + rows * hk;       // (batch·n_q, h_kv·d_k)
  float* v = k + rows * gk;       // (batch·n_q, h_kv·d_v)
  float* concat = v + rows * gv;  // (batch·n_q, h·d_v)

  // x (batch·n_q,d_model) -> Q, K, V of the new tokens, turned to positions offset + past + i
  project(x, rows, s.d_model, w.wq, w.bq, hk, q, pool);
  project(x, rows, s.d_model, w.wk, w.bk, gk, k, pool);
  project(x, rows, s.d_model, w.wv, w.bv, gv, v, pool);
  if (rotary) {
    Rotary r = *rotary;
    r.offset += past;
    rotate(s, q, k, &r, false);
  }
  // the new rows join the cache; the new queries attend over all past + n_q of them
  cache.append(s.n_q, heads_3d<const float>(k, s.kv(), s.n_q, s.d_k),
               heads_3d<const float>(v, s.kv(), s.n_q, s.d_v));
  try {
    ScoreMask m = mask;
    m.offset = static_cast<long>(past);  // bottom-right: query i stands at key past + i
    attention_heads_forward(
        heads_shape(s, cache.length()), heads_3d<const float>(q, s.heads, s.n_q, s.d_k), cache,
        heads_3d(concat, s.heads, s.n_q, s.d_v), scale, heads_mask(m, w), nullptr, pool);
    // concat (batch·n_q,h·d_v), W_O (h·d_v,d_model) -> out (batch·n_q,d_model)
    project(concat, rows, hv, w.wo, w.bo, s.d_model, out, pool);
  } catch (...) {
    cache.truncate(past);  // as it was
    throw;
  }
}

void mha_backward(const MhaShape& s, const MhaWeights& w, const float* x, const float* context,
                  const MhaSaved& saved, const float* d_out, float scale, const ScoreMask& mask,
                  const MhaGrads& g, ThreadPool* pool, const Rotary* rotary) {
  check("multi-head attention backward", s, w, x, context, d_out, "d_out", nullptr);
  check_backward(w, context, saved, g);
  const float* ctx = context ? context : x;
  const size_t hk = checked_product({s.heads, s.d_k}), hv = checked_product({s.heads, s.d_v});
  const size_t gk = checked_product({s.kv(), s.d_k}), gv = checked_product({s.kv(), s.d_v});
  const size_t rows_q = checked_product({s.batch, s.n_q}),
               rows_k = checked_product({s.batch, s.n_k});

  std::vector<float> workspace(
      checked_sum({checked_product({rows_q, hv}), checked_product({rows_q, hk}),
                   checked_product({rows_k, gk}), checked_product({rows_k, gv})}));
  float* d_concat = workspace.data();  // (batch·n_q, h·d_v)
  float* dq = d_concat + rows_q * hv;  // (batch·n_q, h·d_k)
  float* dk = dq + rows_q * hk;        // (batch·n_k, h_kv·d_k)
  float* dv = dk + rows_k * gk;        // (batch·n_k, h_kv·d_v)

  // out = concat·W_O + b_O:
  //   concat (batch·n_q,h·d_v), d_out (batch·n_q,d_model) -> dW_O = concatᵀ·d_out (h·d_v,d_model)
  gemm_tn(hv, s.d_model, rows_q, saved.concat, hv, d_out, s.d_model, g.dwo, s.d_model, false, pool);
  column_sums(d_out, rows_q, s.d_model, g.dbo, pool);
  //   d_out (batch·n_q,d_model), W_O (h·d_v,d_model) -> dconcat = d_out·W_Oᵀ (batch·n_q,h·d_v)
  gemm_nt(rows_q, hv, s.d_model, d_out, s.d_model, w.wo, s.d_model, d_concat, hv, false, pool);

  // head_i = attention(Q_i, K_g, V_g), in the 3-D head layout: dconcat -> dQ, dK, dV, from the
  // saved weights (batch, h, n_q, n_k) when the forward kept them
  attention_heads_backward(
      heads_shape(s, s.n_k), heads_3d<const float>(saved.q, s.heads, s.n_q, s.d_k),
      heads_3d<const float>(saved.k, s.kv(), s.n_k, s.d_k),
      heads_3d<const float>(saved.v, s.kv(), s.n_k, s.d_v),
      heads_3d<const float>(d_concat, s.heads, s.n_q, s.d_v), heads_3d(dq, s.heads, s.n_q, s.d_k),
      heads_3d(dk, s.kv(), s.n_k, s.d_k), heads_3d(dv, s.kv(), s.n_k, s.d_v), scale,
      heads_mask(mask, w), saved.weights, pool, g.dsinks);
  // Q, K turned by rotary: dQ, dK turned back
  rotate(s, dq, dk, rotary, true);

  // Q = x·W_Q + b_Q: x (batch·n_q,d_model), dQ (batch·n_q,h·d_k) -> dW_Q = xᵀ·dQ (d_model,h·d_k)
  gemm_tn(s.d_model, hk, rows_q, x, s.d_model, dq, hk, g.dwq, hk, false, pool);
  column_sums(dq, rows_q, hk, g.dbq, pool);
  // K = context·W_K + b_K: -> dW_K = contextᵀ·dK (d_model,h_kv·d_k)
  gemm_tn(s.d_model, gk, rows_k, ctx, s.d_model, dk, gk, g.dwk, gk, false, pool);
  column_sums(dk, rows_k, gk, g.dbk, pool);
  // V = context·W_V + b_V: -> dW_V = contextᵀ·dV (d_model,h_kv·d_v)
  gemm_tn(s.d_model, gv, rows_k, ctx, s.d_model, dv, gv, g.dwv, gv, false, pool);
  column_sums(dv, rows_k, gv, g.dbv, pool);

  // Q = x·W_Q: dQ (batch·n_q,h·d_k), W_Q (d_model,h·d_k) -> dx = dQ·W_Qᵀ (batch·n_q,d_model)
  gemm_nt(rows_q, s.d_model, hk, dq, hk, w.wq, hk, g.dx, s.d_model, false, pool);
  // K = context·W_K, V = context·W_V -> d_context = dK·W_Kᵀ + dV·W_Vᵀ (batch·n_k,d_model);
  // for self-attention context is x, and these add to dx.
  const bool self = !context;
  float* d_ctx = self ? g.dx : g.d_context;
  gemm_nt(rows_k, s.d_model, gk, dk, gk, w.wk, gk, d_ctx, s.d_model, /*accumulate=*/self, pool);
  gemm_nt(rows_k, s.d_model, gv, dv, gv, w.wv, gv, d_ctx, s.d_model, true, pool);
}

}  // namespace wa
