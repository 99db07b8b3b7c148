// Scalar references with double accumulation: the spec for the fast paths.
// Written for clarity, not speed: plain loops, one output element at a time. Every op is a
// function over doubles; the float entry points convert in, call it, and round once at the end.
// One head's attention (head_scores, head_forward, head_backward) and one rotation (rotary)
// serve both families of reference.h: the fast functions' arguments and the ONNX operator.
#include "reference.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>

#include "attention/softmax_rows.h"
#include "wa/rotary.h"

namespace wa::ref {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("reference: " + what);
}

// ---- One head in double: the core of every attention reference ----

// What the masks do to key j of query i: hide it (its softmax input is −∞ whatever its score),
// or add a bias to its capped score (−∞ hides it too, NaN + −∞ stays NaN).
struct KeyBias {
  bool hidden;
  double add;
};
using BiasOf = std::function<KeyBias(size_t i, size_t j)>;

// Every stage of one head's scores, each (n_q,n_k).
struct HeadScores {
  Doubles raw;      // q·kᵀ
  Doubles scaled;   // raw·scale
  Doubles capped;   // softcap·tanh(scaled/softcap) with a softcap, else scaled
  Doubles masked;   // the softmax input x: capped + bias, −∞ where hidden
  Doubles weights;  // row softmax of x: zero rows where every key is hidden, NaN rows where an
                    // x is NaN or +∞ (an overflow upstream), as the fast paths give
  Doubles sink;     // (n_q) the sink's weight in each row: 0 without a sink
};

// raw (n_q,n_k) q·kᵀ -> every stage after it; sink: a logit in every row's denominator with no
// value (wa/score_mask.h), −∞ for none.
HeadScores score_stages(Doubles raw, size_t n_q, size_t n_k, double scale, double softcap,
                        const BiasOf& bias, double sink) {
  const size_t n = n_q * n_k;
  HeadScores h{std::move(raw), Doubles(n),      Doubles(n),
               Doubles(n),     Doubles(n, 0.0), Doubles(n_q, 0.0)};
  for (size_t i = 0; i < n_q; ++i) {
    double max = -kInf;
    bool bad = false;
    for (size_t j = 0; j < n_k; ++j) {
      const size_t e = i * n_k + j;
      h.scaled[e] = h.raw[e] * scale;
      h.capped[e] = softcap > 0 ? softcap * std::tanh(h.scaled[e] / softcap) : h.scaled[e];
      const KeyBias b = bias(i, j);
      h.masked[e] = b.hidden ? -kInf : h.capped[e] + b.add;
      bad |= h.masked[e] != h.masked[e] || h.masked[e] == kInf;
      max = std::max(max, h.masked[e]);
    }
    double* w = &h.weights[i * n_k];
    if (bad) {
      std::fill(w, w + n_k, std::numeric_limits<double>::quiet_NaN());
      h.sink[i] = std::numeric_limits<double>::quiet_NaN();
      continue;
    }
    max = std::max(max, sink);
    if (max == -kInf) continue;  // every key hidden, no sink: zero weights
    double sum = h.sink[i] = std::exp(sink - max);
    for (size_t j = 0; j < n_k; ++j) sum += w[j] = std::exp(h.masked[i * n_k + j] - max);
    for (size_t j = 0; j < n_k; ++j) w[j] /= sum;
    h.sink[i] /= sum;
  }
  return h;
}

// op(a) (m,k), op(b) (k,n) -> op(a)·op(b) (m,n), in double, with element (i,p) of op(a) at
// a[i·a_row + p·a_col] and element (p,j) of op(b) at b[p·b_row + j·b_col].
Doubles product_d(const double* a, size_t a_row, size_t a_col, const double* b, size_t b_row,
                  size_t b_col, size_t m, size_t n, size_t k) {
  Doubles c(m * n, 0.0);
  for (size_t i = 0; i < m; ++i)
    for (size_t j = 0; j < n; ++j) {
      double sum = 0;
      for (size_t p = 0; p < k; ++p) sum += a[i * a_row + p * a_col] * b[p * b_row + j * b_col];
      c[i * n + j] = sum;
    }
  return c;
}
// a (m,k) row stride lda, b (k,n) row stride ldb -> a·b (m,n)
Doubles matmul_d(const double* a, size_t lda, const double* b, size_t ldb, size_t m, size_t n,
                 size_t k) {
  return product_d(a, lda, 1, b, ldb, 1, m, n, k);
}
// a (m,k), b (n,k), dense -> a·bᵀ (m,n)
Doubles matmul_nt_d(const double* a, const double* b, size_t m, size_t n, size_t k) {
  return product_d(a, k, 1, b, 1, k, m, n, k);
}
// a (k,m), b (k,n), dense -> aᵀ·b (m,n)
Doubles matmul_tn_d(const double* a, const double* b, size_t m, size_t n, size_t k) {
  return product_d(a, 1, m, b, n, 1, m, n, k);
}

// q (n_q,d_k), k (n_k,d_k) -> every stage of the scores
HeadScores head_scores(const Doubles& q, const Doubles& k, size_t n_q, size_t n_k, size_t d_k,
                       double scale, double softcap, const BiasOf& bias, double sink) {
  return score_stages(matmul_nt_d(q.data(), k.data(), n_q, n_k, d_k), n_q, n_k, scale, softcap,
                      bias, sink);
}

// weights (n_q,n_k), v (n_k,d_v) -> out (n_q,d_v)
Doubles head_output(const HeadScores& h, const Doubles& v, size_t n_q, size_t n_k, size_t d_v) {
  return matmul_d(h.weights.data(), n_k, v.data(), d_v, n_q, d_v, n_k);
}

struct HeadGrads {
  Doubles dq, dk, dv;  // (n_q,d_k), (n_k,d_k), (n_k,d_v)
  double dsink = 0;    // ∂L/∂sink; 0 without a sink
};

// The backward of head_scores + head_output: q, k, v, d_out (n_q,d_v) -> dq, dk, dv; its passes
// in reverse.
HeadGrads head_backward(const Doubles& q, const Doubles& k, const Doubles& v, const Doubles& d_out,
                        size_t n_q, size_t n_k, size_t d_k, size_t d_v, double scale,
                        double softcap, const BiasOf& bias, double sink) {
  const HeadScores h = head_scores(q, k, n_q, n_k, d_k, scale, softcap, bias, sink);
  const Doubles& p = h.weights;
  HeadGrads g;
  // out = P·v -> dv = Pᵀ·d_out, dP = d_out·vᵀ
  g.dv = matmul_tn_d(p.data(), d_out.data(), n_k, d_v, n_q);
  Doubles ds = matmul_nt_d(d_out.data(), v.data(), n_q, n_k, d_v);
  // P_ij = exp(x_ij) / Σ_l exp(x_il) -> dx_ij = P_ij·(dP_ij − Σ_l dP_il·P_il); the bias adds no
  //   gradient
  //   with a sink, P_ij = exp(x_ij) / (Σ_l exp(x_il) + exp(sink)): the same dx, and
  //   ∂P_ij/∂sink = −P_ij·p_sink,i -> dsink = −Σ_i p_sink,i·Σ_j dP_ij·P_ij
  // x = cap(s·scale) + bias         -> ds = dx·cap′·scale, cap′ = 1 − tanh²(s·scale/softcap) or 1
  for (size_t i = 0; i < n_q; ++i) {
    double dot = 0;
    for (size_t j = 0; j < n_k; ++j) dot += ds[i * n_k + j] * p[i * n_k + j];
    g.dsink -= h.sink[i] * dot;
    for (size_t j = 0; j < n_k; ++j) {
      const double t = softcap > 0 ? std::tanh(h.scaled[i * n_k + j] / softcap) : 0.0;
      ds[i * n_k + j] = p[i * n_k + j] * (ds[i * n_k + j] - dot) * (1 - t * t) * scale;
    }
  }
  // s = q·kᵀ -> dq = ds·k, dk = dsᵀ·q
  g.dq = matmul_d(ds.data(), n_k, k.data(), d_k, n_q, d_k, n_k);
  g.dk = matmul_tn_d(ds.data(), q.data(), n_k, d_k, n_q);
  return g;
}

// ---- The fast functions' arguments: 2-D attention with a ScoreMask, multi-head layers ----

// The masks of wa/score_mask.h as a head's bias.
BiasOf bias_of(const ScoreMask& m, size_t n_k) {
  return [&m, n_k](size_t i, size_t j) {
    return KeyBias{is_masked(m, n_k, i, j), m.bias ? mask_row(m.bias, m, n_k, i)[j] : 0.0};
  };
}

// sums (cols) += Σ over the rows of m (rows,cols)
void add_column_sums(Doubles& sums, const Doubles& m, size_t rows, size_t cols) {
  for (size_t r = 0; r < rows; ++r)
    for (size_t c = 0; c < cols; ++c) sums[c] += m[r * cols + c];
}
// acc += d, element by element
void add_to(Doubles& acc, const Doubles& d) {
  for (size_t i = 0; i < d.size(); ++i) acc[i] += d[i];
}
// The columns [c0, c0+width) of m (rows, stride) as a dense (rows,width) matrix, and back.
Doubles columns(const Doubles& m, size_t rows, size_t stride, size_t c0, size_t width) {
  Doubles d(rows * width);
  for (size_t r = 0; r < rows; ++r)
    for (size_t c = 0; c < width; ++c) d[r * width + c] = m[r * stride + c0 + c];
  return d;
}
void set_columns(Doubles& m, size_t rows, size_t stride, size_t c0, size_t width,
                 const Doubles& d) {
  for (size_t r = 0; r < rows; ++r)
    for (size_t c = 0; c < width; ++c) m[r * stride + c0 + c] = d[r * width + c];
}

Doubles to_doubles(const float* p, size_t count) { return p ? Doubles(p, p + count) : Doubles(); }
Doubles to_doubles(ConstMatrix m) {
  Doubles d(m.rows * m.cols);
  for (size_t r = 0; r < m.rows; ++r)
    for (size_t c = 0; c < m.cols; ++c) d[r * m.cols + c] = m.data[r * m.ld + c];
  return d;
}
void store(const Doubles& d, float* out) {
  for (size_t i = 0; i < d.size(); ++i) out[i] = static_cast<float>(d[i]);
}
void store(const Doubles& d, Matrix out) {
  for (size_t r = 0; r < out.rows; ++r)
    for (size_t c = 0; c < out.cols; ++c)
      out.data[r * out.ld + c] = static_cast<float>(d[r * out.cols + c]);
}

// Attention in double: q (n_q,d_k), k (n_k,d_k), v (n_k,d_v) -> out (n_q,d_v).
// trace (float, (n_q,n_k) each) when set.
// sink: m's, in double (finite differences step it).
Doubles attention_d(const Doubles& q, const Doubles& k, const Doubles& v, size_t n_q, size_t n_k,
                    size_t d_k, size_t d_v, float scale, const ScoreMask& m,
                    const AttentionTrace* trace, double sink) {
  const HeadScores h = head_scores(q, k, n_q, n_k, d_k, scale, m.softcap, bias_of(m, n_k), sink);
  if (trace) {
    store(h.raw, trace->scores);
    store(h.scaled, trace->scaled);
    store(h.masked, trace->masked);
    if (trace->capped) store(h.capped, trace->capped);
    store(h.weights, trace->weights);
  }
  return head_output(h, v, n_q, n_k, d_v);
}

// The backward of attention_d: q, k, v, d_out (n_q,d_v) -> dq, dk, dv.
HeadGrads attention_backward_d(const Doubles& q, const Doubles& k, const Doubles& v,
                               const Doubles& d_out, size_t n_q, size_t n_k, size_t d_k, size_t d_v,
                               float scale, const ScoreMask& m, double sink) {
  return head_backward(q, k, v, d_out, n_q, n_k, d_k, d_v, scale, m.softcap, bias_of(m, n_k), sink);
}

MhaWeightsDouble to_doubles(const MhaShape& s, const MhaWeights& w) {
  const size_t hk = s.heads * s.d_k, hv = s.heads * s.d_v;
  const size_t gk = s.kv() * s.d_k, gv = s.kv() * s.d_v;
  return {to_doubles(w.wq, s.d_model * hk),
          to_doubles(w.wk, s.d_model * gk),
          to_doubles(w.wv, s.d_model * gv),
          to_doubles(w.wo, hv * s.d_model),
          to_doubles(w.bq, hk),
          to_doubles(w.bk, gk),
          to_doubles(w.bv, gv),
          to_doubles(w.bo, s.d_model),
          to_doubles(w.sinks, s.heads)};
}

// m (rows,heads·d), in place: in each head, row i turned by rotary at position r.offset + i
// (wa/rotary.h), inverse turning it back. No-op for a null r.
void rotate_d(Doubles& m, size_t rows, size_t heads, size_t d, const Rotary* r, bool inverse) {
  if (!r) return;
  std::vector<size_t> positions(rows);
  for (size_t i = 0; i < rows; ++i) positions[i] = r->offset + i;
  for (size_t h = 0; h < heads; ++h) {
    Doubles head = columns(m, rows, heads * d, h * d, d);
    rotary(head, rows, d, positions, r->base, r->dims, r->interleaved, inverse);
    set_columns(m, rows, heads * d, h * d, d, head);
  }
}

// m (rows,stride) columns [c0, c0+width) += d (rows,width)
void add_columns(Doubles& m, size_t rows, size_t stride, size_t c0, size_t width,
                 const Doubles& d) {
  for (size_t r = 0; r < rows; ++r)
    for (size_t c = 0; c < width; ++c) m[r * stride + c0 + c] += d[r * width + c];
}

// x (n,d_model), w (d_model,cols), bias (cols or empty) -> x·w + bias (n,cols)
Doubles project_d(const double* x, size_t n, size_t d_model, const Doubles& w, const Doubles& bias,
                  size_t cols) {
  Doubles y = matmul_d(x, d_model, w.data(), cols, n, cols, d_model);
  if (!bias.empty())
    for (size_t r = 0; r < n; ++r)
      for (size_t c = 0; c < cols; ++c) y[r * cols + c] += bias[c];
  return y;
}

// Head h's sink: the weights' when they have sinks, else the mask's.
double sink_of(const MhaWeightsDouble& w, const ScoreMask& mask, size_t h) {
  return w.sinks.empty() ? mask.sink : w.sinks[h];
}

// One sequence through the layer, every intermediate the backward needs kept.
struct SequenceD {
  Doubles q, k, v;  // (n_q,h·d_k), (n_k,h_kv·d_k), (n_k,h_kv·d_v); q and k rotated
  Doubles concat;   // (n_q,h·d_v)
  Doubles out;      // (n_q,d_model)
};

// x_b (n_q,d_model), context_b (n_k,d_model) of sequence b -> its forward. trace, when set,
// receives the heads' attention intermediates of sequence b.
SequenceD sequence_forward_d(const MhaShape& s, const MhaWeightsDouble& w, const double* xb,
                             const double* cb, float scale, const ScoreMask& mask,
                             const MhaSaved* trace, size_t b, const Rotary* rotary) {
  const size_t hk = s.heads * s.d_k, hv = s.heads * s.d_v;
  const size_t gk = s.kv() * s.d_k, gv = s.kv() * s.d_v, group = s.heads / s.kv();
  SequenceD f;
  f.q = project_d(xb, s.n_q, s.d_model, w.wq, w.bq, hk);
  f.k = project_d(cb, s.n_k, s.d_model, w.wk, w.bk, gk);
  f.v = project_d(cb, s.n_k, s.d_model, w.wv, w.bv, gv);
  rotate_d(f.q, s.n_q, s.heads, s.d_k, rotary, false);
  rotate_d(f.k, s.n_k, s.kv(), s.d_k, rotary, false);
  f.concat.assign(s.n_q * hv, 0.0);
  for (size_t h = 0; h < s.heads; ++h) {
    const size_t g = h / group;  // the kv head query head h reads
    AttentionTrace th{};
    if (trace) {
      const size_t offset = (b * s.heads + h) * s.n_q * s.n_k;
      th = {trace->scores + offset, trace->scaled + offset, trace->masked + offset,
            trace->weights + offset};
    }
    const Doubles o = attention_d(columns(f.q, s.n_q, hk, h * s.d_k, s.d_k),
                                  columns(f.k, s.n_k, gk, g * s.d_k, s.d_k),
                                  columns(f.v, s.n_k, gv, g * s.d_v, s.d_v), s.n_q, s.n_k, s.d_k,
                                  s.d_v, scale, mask, trace ? &th : nullptr, sink_of(w, mask, h));
    set_columns(f.concat, s.n_q, hv, h * s.d_v, s.d_v, o);
  }
  f.out = project_d(f.concat.data(), s.n_q, hv, w.wo, w.bo, s.d_model);
  return f;
}

}  // namespace

void gemm(Transpose ta, Transpose tb, size_t m, size_t n, size_t k, const float* a, size_t lda,
          const float* b, size_t ldb, float* c, size_t ldc, bool accumulate) {
  for (size_t i = 0; i < m; ++i)
    for (size_t j = 0; j < n; ++j) {
      double sum = accumulate ? c[i * ldc + j] : 0.0;
      for (size_t p = 0; p < k; ++p) {
        const double aip = ta == Transpose::yes ? a[p * lda + i] : a[i * lda + p];
        const double bpj = tb == Transpose::yes ? b[j * ldb + p] : b[p * ldb + j];
        sum += aip * bpj;
      }
      c[i * ldc + j] = static_cast<float>(sum);
    }
}

void softmax(const float* scores, float* weights, size_t n_q, size_t n_k, float scale,
             const ScoreMask& mask) {
  store(score_stages(to_doubles(scores, n_q * n_k), n_q, n_k, scale, mask.softcap,
                     bias_of(mask, n_k), mask.sink)
            .weights,
        weights);
}

void attention_forward(ConstMatrix q, ConstMatrix k, ConstMatrix v, Matrix out, float scale,
                       const ScoreMask& mask, const AttentionTrace* trace) {
  store(attention_d(to_doubles(q), to_doubles(k), to_doubles(v), q.rows, k.rows, q.cols, v.cols,
                    scale, mask, trace, mask.sink),
        out);
}

void attention_backward(ConstMatrix q, ConstMatrix k, ConstMatrix v, ConstMatrix d_out, Matrix dq,
                        Matrix dk, Matrix dv, float scale, const ScoreMask& mask, float* d_sink) {
  const HeadGrads g =
      attention_backward_d(to_doubles(q), to_doubles(k), to_doubles(v), to_doubles(d_out), q.rows,
                           k.rows, q.cols, v.cols, scale, mask, mask.sink);
  if (d_sink) *d_sink = static_cast<float>(g.dsink);
  store(g.dq, dq);
  store(g.dk, dk);
  store(g.dv, dv);
}

void mha_forward(const MhaShape& s, const MhaWeights& w, const float* x, const float* context,
                 float* out, float scale, const ScoreMask& mask, const MhaSaved* trace,
                 const Rotary* rotary) {
  const size_t hk = s.heads * s.d_k, hv = s.heads * s.d_v;
  const size_t gk = s.kv() * s.d_k, gv = s.kv() * s.d_v;
  const MhaWeightsDouble wd = to_doubles(s, w);
  const Doubles xd = to_doubles(x, s.batch * s.n_q * s.d_model);
  const Doubles cd = context ? to_doubles(context, s.batch * s.n_k * s.d_model) : xd;
  for (size_t b = 0; b < s.batch; ++b) {
    const SequenceD f =
        sequence_forward_d(s, wd, &xd[b * s.n_q * s.d_model], &cd[b * s.n_k * s.d_model], scale,
                           mask, trace, b, rotary);
    store(f.out, out + b * s.n_q * s.d_model);
    if (trace) {
      store(f.q, trace->q + b * s.n_q * hk);
      store(f.k, trace->k + b * s.n_k * gk);
      store(f.v, trace->v + b * s.n_k * gv);
      store(f.concat, trace->concat + b * s.n_q * hv);
    }
  }
}

void mha_backward(const MhaShape& s, const MhaWeights& w, const float* x, const float* context,
                  const float* d_out, float scale, const ScoreMask& mask, const MhaGrads& grads,
                  const Rotary* rotary) {
  const size_t hk = s.heads * s.d_k, hv = s.heads * s.d_v, dm = s.d_model;
  const size_t gk = s.kv() * s.d_k, gv = s.kv() * s.d_v, group = s.heads / s.kv();
  const MhaWeightsDouble wd = to_doubles(s, w);
  const Doubles xd = to_doubles(x, s.batch * s.n_q * dm);
  const Doubles cd = context ? to_doubles(context, s.batch * s.n_k * dm) : xd;
  Doubles dwq(dm * hk, 0.0), dwk(dm * gk, 0.0), dwv(dm * gv, 0.0), dwo(hv * dm, 0.0);
  Doubles dbq(hk, 0.0), dbk(gk, 0.0), dbv(gv, 0.0), dbo(dm, 0.0), dsinks(s.heads, 0.0);

  for (size_t b = 0; b < s.batch; ++b) {
    const double* xb = &xd[b * s.n_q * dm];
    const double* cb = &cd[b * s.n_k * dm];
    const SequenceD f = sequence_forward_d(s, wd, xb, cb, scale, mask, nullptr, b, rotary);
    const Doubles d_out_b = to_doubles(d_out + b * s.n_q * dm, s.n_q * dm);

    // out = concat·W_O + b_O -> dW_O += concatᵀ·d_out, db_O += Σ_rows d_out, dconcat = d_out·W_Oᵀ
    add_to(dwo, matmul_tn_d(f.concat.data(), d_out_b.data(), hv, dm, s.n_q));
    add_column_sums(dbo, d_out_b, s.n_q, dm);
    const Doubles d_concat = matmul_nt_d(d_out_b.data(), wd.wo.data(), s.n_q, hv, dm);

    // head_i = attention(Q_i, K_g, V_g) -> the heads' column slices of dQ, and of dK, dV summed
    // over the query heads of kv head g
    Doubles dq(s.n_q * hk), dk(s.n_k * gk, 0.0), dv(s.n_k * gv, 0.0);
    for (size_t h = 0; h < s.heads; ++h) {
      const size_t kg = h / group;
      const HeadGrads g = attention_backward_d(
          columns(f.q, s.n_q, hk, h * s.d_k, s.d_k), columns(f.k, s.n_k, gk, kg * s.d_k, s.d_k),
          columns(f.v, s.n_k, gv, kg * s.d_v, s.d_v),
          columns(d_concat, s.n_q, hv, h * s.d_v, s.d_v), s.n_q, s.n_k, s.d_k, s.d_v, scale, mask,
          sink_of(wd, mask, h));
      dsinks[h] += g.dsink;
      set_columns(dq, s.n_q, hk, h * s.d_k, s.d_k, g.dq);
      add_columns(dk, s.n_k, gk, kg * s.d_k, s.d_k, g.dk);
      add_columns(dv, s.n_k, gv, kg * s.d_v, s.d_v, g.dv);
    }
    // Q, K turned by rotary -> dQ, dK turned back
    rotate_d(dq, s.n_q, s.heads, s.d_k, rotary, true);
    rotate_d(dk, s.n_k, s.kv(), s.d_k, rotary, true);

    // Q = x·W_Q + b_Q -> dW_Q += xᵀ·dQ, db_Q += Σ_rows dQ, dx = dQ·W_Qᵀ
    add_to(dwq, matmul_tn_d(xb, dq.data(), dm, hk, s.n_q));
    add_column_sums(dbq, dq, s.n_q, hk);
    Doubles dx = matmul_nt_d(dq.data(), wd.wq.data(), s.n_q, dm, hk);
    // K = context·W_K + b_K, V = context·W_V + b_V -> dW_K, dW_V, db_K, db_V,
    //   d_context = dK·W_Kᵀ + dV·W_Vᵀ
    add_to(dwk, matmul_tn_d(cb, dk.data(), dm, gk, s.n_k));
    add_to(dwv, matmul_tn_d(cb, dv.data(), dm, gv, s.n_k));
    add_column_sums(dbk, dk, s.n_k, gk);
    add_column_sums(dbv, dv, s.n_k, gv);
    Doubles d_context = matmul_nt_d(dk.data(), wd.wk.data(), s.n_k, dm, gk);
    add_to(d_context, matmul_nt_d(dv.data(), wd.wv.data(), s.n_k, dm, gv));

    if (context) {
      store(d_context, grads.d_context + b * s.n_k * dm);
    } else {
      add_to(dx, d_context);  // context is x
    }
    store(dx, grads.dx + b * s.n_q * dm);
  }
  store(dwq, grads.dwq);
  store(dwk, grads.dwk);
  store(dwv, grads.dwv);
  store(dwo, grads.dwo);
  if (grads.dbq) store(dbq, grads.dbq);
  if (grads.dbk) store(dbk, grads.dbk);
  if (grads.dbv) store(dbv, grads.dbv);
  if (grads.dbo) store(dbo, grads.dbo);
  if (grads.dsinks) store(dsinks, grads.dsinks);
}

Doubles attention_forward_double(const Doubles& q, const Doubles& k, const Doubles& v, size_t n_q,
                                 size_t n_k, size_t d_k, size_t d_v, float scale,
                                 const ScoreMask& mask) {
  return attention_d(q, k, v, n_q, n_k, d_k, d_v, scale, mask, nullptr, mask.sink);
}

Doubles attention_forward_double(const Doubles& q, const Doubles& k, const Doubles& v, size_t n_q,
                                 size_t n_k, size_t d_k, size_t d_v, float scale,
                                 const ScoreMask& mask, double sink) {
  return attention_d(q, k, v, n_q, n_k, d_k, d_v, scale, mask, nullptr, sink);
}

Doubles mha_forward_double(const MhaShape& s, const MhaWeightsDouble& w, const Doubles& x,
                           const Doubles& context, float scale, const ScoreMask& mask,
                           const Rotary* rotary) {
  const Doubles& ctx = context.empty() ? x : context;
  Doubles out;
  out.reserve(s.batch * s.n_q * s.d_model);
  for (size_t b = 0; b < s.batch; ++b) {
    const SequenceD f =
        sequence_forward_d(s, w, &x[b * s.n_q * s.d_model], &ctx[b * s.n_k * s.d_model], scale,
                           mask, nullptr, b, rotary);
    out.insert(out.end(), f.out.begin(), f.out.end());
  }
  return out;
}

void rotary(Doubles& x, size_t rows, size_t d, const std::vector<size_t>& positions, double base,
            size_t dims, bool interleaved, bool inverse) {
  if (dims == 0) dims = d;
  require(dims % 2 == 0 && dims <= d, "rotary dims must be even and at most the head size");
  const size_t half = dims / 2;
  for (size_t r = 0; r < rows; ++r)
    for (size_t t = 0; t < half; ++t) {
      const double angle = static_cast<double>(positions[r]) * std::pow(base, -2.0 * t / dims);
      const double c = std::cos(angle), s = inverse ? -std::sin(angle) : std::sin(angle);
      double& xa = x[r * d + (interleaved ? 2 * t : t)];
      double& xb = x[r * d + (interleaved ? 2 * t + 1 : t + half)];
      const double a = xa, b = xb;
      xa = a * c - b * s;
      xb = a * s + b * c;
    }
}

}  // namespace wa::ref

// ---- The ONNX Attention operator, on the same head core ----

namespace wa::ref::onnx {
namespace {

// Index of (b, head, row, t) in a tensor of `heads` heads, `rows` rows and head size d, in the
// 3-D layout (b,rows,heads·d) or the 4-D layout (b,heads,rows,d).
size_t at(bool three_d, size_t heads, size_t rows, size_t d, size_t b, size_t head, size_t row,
          size_t t) {
  return three_d ? ((b * rows + row) * heads + head) * d + t
                 : ((b * heads + head) * rows + row) * d + t;
}

// x in layout `from` -> the same tensor in layout `to` (each 3-D when true, else 4-D)
Doubles relayout(const Doubles& x, bool from, bool to, size_t batch, size_t heads, size_t rows,
                 size_t d) {
  require(x.size() == batch * heads * rows * d, "a tensor's size does not match its shape");
  Doubles out(x.size());
  for (size_t b = 0; b < batch; ++b)
    for (size_t h = 0; h < heads; ++h)
      for (size_t r = 0; r < rows; ++r)
        for (size_t t = 0; t < d; ++t)
          out[at(to, heads, rows, d, b, h, r, t)] = x[at(from, heads, rows, d, b, h, r, t)];
  return out;
}
// x in either layout -> (b,heads,rows,d), and back
Doubles to_4d(const Doubles& x, bool three_d, size_t batch, size_t heads, size_t rows, size_t d) {
  return relayout(x, three_d, false, batch, heads, rows, d);
}
Doubles from_4d(const Doubles& x, bool three_d, size_t batch, size_t heads, size_t rows, size_t d) {
  return relayout(x, false, three_d, batch, heads, rows, d);
}

// Positions of q rows and new key rows: rotary_offset + n_past + row.
std::vector<size_t> positions(const Attention& a, size_t rows) {
  std::vector<size_t> p(rows);
  for (size_t r = 0; r < rows; ++r) p[r] = a.rotary_offset + a.n_past + r;
  return p;
}

// Rotates every (b, head) block of x (b,heads,rows,d) in place.
void rotate_heads(const Attention& a, Doubles& x, size_t heads, size_t rows, size_t d,
                  bool inverse) {
  const std::vector<size_t> p = positions(a, rows);
  for (size_t bh = 0; bh < a.batch * heads; ++bh) {
    Doubles block(x.begin() + bh * rows * d, x.begin() + (bh + 1) * rows * d);
    rotary(block, rows, d, p, a.rotary_base, a.rotary_dims, a.rotary_interleaved, inverse);
    std::copy(block.begin(), block.end(), x.begin() + bh * rows * d);
  }
}

// What the masks do to query i, key j in batch b, query head h: the structural masks (causal,
// window, padding) and a boolean mask's false hide the key, an additive mask adds its value.
struct Bias {
  const Attention& a;

  long offset(size_t b) const {
    if (a.has_past) return static_cast<long>(a.n_past);
    if (!a.kv_length.empty()) return static_cast<long>(a.kv_length[b]) - static_cast<long>(a.n_q);
    return 0;
  }

  KeyBias mask(size_t b, size_t h, size_t i, size_t j) const {
    const std::vector<size_t>& dims = a.mask.dims;
    if (dims.empty()) return {false, 0};
    if (j >= dims.back()) return {true, 0};  // padded column
    const size_t full[4] = {b, h, i, j};
    size_t index = 0;
    for (size_t axis = 0; axis < dims.size(); ++axis) {
      const size_t coord = full[4 - dims.size() + axis];
      index = index * dims[axis] + (dims[axis] == 1 ? 0 : coord);
    }
    const double m = a.mask.values[index];
    return a.mask.boolean ? KeyBias{m == 0, 0} : KeyBias{false, m};
  }

  KeyBias operator()(size_t b, size_t h, size_t i, size_t j) const {
    const long frontier = static_cast<long>(i) + offset(b);  // the query's absolute position
    const long key = static_cast<long>(j);
    const bool hidden = (a.causal && key > frontier) || (a.left >= 0 && frontier - key > a.left) ||
                        (a.right >= 0 && key - frontier > a.right) ||
                        (!a.kv_length.empty() && key >= a.kv_length[b]);
    return hidden ? KeyBias{true, 0} : mask(b, h, i, j);
  }

  // The bias of head (b, h) for head_scores.
  BiasOf of(size_t b, size_t h) const {
    return [this, b, h](size_t i, size_t j) { return (*this)(b, h, i, j); };
  }
};

void validate(const Attention& a) {
  require(a.batch > 0 && a.q_heads > 0 && a.kv_heads > 0 && a.n_q > 0 && a.d_k > 0 && a.d_v > 0,
          "every size must be positive");
  require(a.q_heads % a.kv_heads == 0, "q_heads must be a multiple of kv_heads");
  require(a.n_past + a.n_new > 0, "there must be at least one key");
  require(a.left >= -1 && a.right >= -1, "window sides are -1 or nonnegative");
  require(!(a.has_past && !a.kv_length.empty()), "kv_length cannot be combined with a past");
  require(a.kv_length.empty() || a.kv_length.size() == a.batch,
          "kv_length needs one entry per batch");
  require(a.sinks.empty() || a.sinks.size() == a.q_heads, "sinks needs one entry per query head");
  if (a.has_past) {
    require(a.past_k.size() == a.batch * a.kv_heads * a.n_past * a.d_k, "past_k's size");
    require(a.past_v.size() == a.batch * a.kv_heads * a.n_past * a.d_v, "past_v's size");
  } else {
    require(a.n_past == 0, "n_past without a past");
  }
  const std::vector<size_t>& dims = a.mask.dims;
  if (!dims.empty()) {
    require(dims.size() <= 4, "a mask has rank 1 to 4");
    const size_t n = a.n_past + a.n_new, full[4] = {a.batch, a.q_heads, a.n_q, n};
    size_t count = 1;
    for (size_t axis = 0; axis < dims.size(); ++axis) {
      const size_t want = full[4 - dims.size() + axis];
      const bool last = axis + 1 == dims.size();
      require(dims[axis] == 1 || (last ? dims[axis] <= want : dims[axis] == want),
              "a mask dimension is neither 1 nor its axis' size");
      count *= dims[axis];
    }
    require(a.mask.values.size() == count, "mask values do not match its dims");
  }
}

// Everything the backward needs again: the 4-D, rotated operands.
struct Prepared {
  size_t n;
  double scale;
  Doubles q, k, v;  // q (b,hq,n_q,d_k), k (b,hkv,n,d_k), v (b,hkv,n,d_v): present keys, values
};

Prepared prepare(const Attention& a) {
  validate(a);
  Prepared p;
  p.n = a.n_past + a.n_new;
  p.scale = a.scale != 0 ? a.scale : 1.0 / std::sqrt(static_cast<double>(a.d_k));
  p.q = to_4d(a.q, a.three_d, a.batch, a.q_heads, a.n_q, a.d_k);
  Doubles k_new = to_4d(a.k, a.three_d, a.batch, a.kv_heads, a.n_new, a.d_k);
  const Doubles v_new = to_4d(a.v, a.three_d, a.batch, a.kv_heads, a.n_new, a.d_v);
  if (a.rotary) {
    rotate_heads(a, p.q, a.q_heads, a.n_q, a.d_k, false);
    rotate_heads(a, k_new, a.kv_heads, a.n_new, a.d_k, false);
  }
  // present = concat(past, new) along the rows of each (b, kv head)
  const auto concat = [&](const Doubles& past, const Doubles& fresh, size_t d) {
    Doubles out(a.batch * a.kv_heads * p.n * d);
    for (size_t bg = 0; bg < a.batch * a.kv_heads; ++bg)
      for (size_t j = 0; j < p.n; ++j)
        for (size_t t = 0; t < d; ++t)
          out[(bg * p.n + j) * d + t] = j < a.n_past ? past[(bg * a.n_past + j) * d + t]
                                                     : fresh[(bg * a.n_new + j - a.n_past) * d + t];
    return out;
  };
  p.k = concat(a.past_k, k_new, a.d_k);
  p.v = concat(a.past_v, v_new, a.d_v);
  return p;
}

// Query head h's sink, −∞ for none.
double sink(const Attention& a, size_t h) { return a.sinks.empty() ? -kInf : a.sinks[h]; }

// The (b, head) block of x (b,heads,rows,d), numbered bh = b·heads + head: dense (rows,d).
Doubles block(const Doubles& x, size_t bh, size_t rows, size_t d) {
  return Doubles(x.begin() + bh * rows * d, x.begin() + (bh + 1) * rows * d);
}

}  // namespace

Outputs attention_forward(const Attention& a) {
  const Prepared p = prepare(a);
  const Bias bias{a};
  const size_t group = a.q_heads / a.kv_heads;
  Outputs out;
  out.present_k = p.k;
  out.present_v = p.v;
  Doubles y;  // (b,hq,n_q,d_v)
  for (size_t b = 0; b < a.batch; ++b)
    for (size_t h = 0; h < a.q_heads; ++h) {
      const size_t bh = b * a.q_heads + h, bg = b * a.kv_heads + h / group;
      const HeadScores s =
          head_scores(block(p.q, bh, a.n_q, a.d_k), block(p.k, bg, p.n, a.d_k), a.n_q, p.n, a.d_k,
                      p.scale, a.softcap, bias.of(b, h), sink(a, h));
      const Doubles* modes[4] = {&s.scaled, &s.capped, &s.masked, &s.weights};
      for (size_t mode = 0; mode < 4; ++mode)
        out.qk[mode].insert(out.qk[mode].end(), modes[mode]->begin(), modes[mode]->end());
      const Doubles o = head_output(s, block(p.v, bg, p.n, a.d_v), a.n_q, p.n, a.d_v);
      y.insert(y.end(), o.begin(), o.end());
    }
  out.y = from_4d(y, a.three_d, a.batch, a.q_heads, a.n_q, a.d_v);
  return out;
}

Grads attention_backward(const Attention& a, const Doubles& dy_in) {
  const Prepared p = prepare(a);
  const Bias bias{a};
  const size_t group = a.q_heads / a.kv_heads;
  const Doubles dy = to_4d(dy_in, a.three_d, a.batch, a.q_heads, a.n_q, a.d_v);
  Doubles dq, dk(p.k.size(), 0.0), dv(p.v.size(), 0.0);  // present-sized dk, dv
  Doubles dsinks(a.sinks.empty() ? 0 : a.q_heads, 0.0);
  for (size_t b = 0; b < a.batch; ++b)
    for (size_t h = 0; h < a.q_heads; ++h) {
      const size_t bh = b * a.q_heads + h, bg = b * a.kv_heads + h / group;
      // head h reads kv head g: its dk, dv add into g's, summed over the group
      const HeadGrads g =
          head_backward(block(p.q, bh, a.n_q, a.d_k), block(p.k, bg, p.n, a.d_k),
                        block(p.v, bg, p.n, a.d_v), block(dy, bh, a.n_q, a.d_v), a.n_q, p.n, a.d_k,
                        a.d_v, p.scale, a.softcap, bias.of(b, h), sink(a, h));
      if (!dsinks.empty()) dsinks[h] += g.dsink;
      dq.insert(dq.end(), g.dq.begin(), g.dq.end());
      for (size_t e = 0; e < g.dk.size(); ++e) dk[bg * p.n * a.d_k + e] += g.dk[e];
      for (size_t e = 0; e < g.dv.size(); ++e) dv[bg * p.n * a.d_v + e] += g.dv[e];
    }
  // Keep the new keys' rows of present-sized dk, dv: (b,hkv,n,d) -> (b,hkv,n_new,d)
  const auto new_rows = [&](const Doubles& x, size_t d) {
    Doubles out(a.batch * a.kv_heads * a.n_new * d);
    for (size_t bg = 0; bg < a.batch * a.kv_heads; ++bg)
      std::copy(x.begin() + (bg * p.n + a.n_past) * d, x.begin() + (bg * p.n + p.n) * d,
                out.begin() + bg * a.n_new * d);
    return out;
  };
  Doubles dk_new = new_rows(dk, a.d_k), dv_new = new_rows(dv, a.d_v);
  // q' = R q  ->  dq = Rᵀ dq' (the inverse rotation); likewise dk
  if (a.rotary) {
    rotate_heads(a, dq, a.q_heads, a.n_q, a.d_k, true);
    rotate_heads(a, dk_new, a.kv_heads, a.n_new, a.d_k, true);
  }
  Grads grads;
  grads.dq = from_4d(dq, a.three_d, a.batch, a.q_heads, a.n_q, a.d_k);
  grads.dk = from_4d(dk_new, a.three_d, a.batch, a.kv_heads, a.n_new, a.d_k);
  grads.dv = from_4d(dv_new, a.three_d, a.batch, a.kv_heads, a.n_new, a.d_v);
  grads.dsinks = dsinks;
  return grads;
}

}  // namespace wa::ref::onnx
