// Scalar references with double accumulation: the spec for the fast paths.
// Written for clarity, not speed: plain loops, one output element at a time. Every op is a
// function over doubles; the float entry points convert in, call it, and round once at the end.
#include "wa/reference.h"

#include <cmath>
#include <limits>

#include "softmax_rows.h"
#include "wa/rotary.h"

namespace wa::ref {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The softmax input x_ij of wa/score_mask.h for raw score s, in double.
double softmax_input_d(const ScoreMask& m, size_t n_k, size_t i, size_t j, double s, float scale) {
  if (is_masked(m, n_k, i, j)) return -kInf;
  double y = s * scale;
  if (m.softcap > 0) y = m.softcap * std::tanh(y / m.softcap);
  return y + (m.bias ? mask_row(m.bias, m, n_k, i)[j] : 0.0);
}

// scores (n_q,n_k) -> weights (n_q,n_k), in double; row i as in wa/score_mask.h.
Doubles softmax_d(const Doubles& s, size_t n_q, size_t n_k, float scale, const ScoreMask& m) {
  Doubles w(n_q * n_k, 0.0);
  for (size_t i = 0; i < n_q; ++i) {
    Doubles x(n_k);
    double max = -kInf;
    bool bad = false;  // a NaN or +inf input (an overflow upstream)
    for (size_t j = 0; j < n_k; ++j) {
      x[j] = softmax_input_d(m, n_k, i, j, s[i * n_k + j], scale);
      bad |= x[j] != x[j] || x[j] == kInf;
      max = std::max(max, x[j]);
    }
    if (bad) {  // NaN weights, as the fast paths give
      for (size_t j = 0; j < n_k; ++j) w[i * n_k + j] = std::numeric_limits<double>::quiet_NaN();
      continue;
    }
    if (max == -kInf) continue;  // every key masked: zero weights
    double sum = 0;
    for (size_t j = 0; j < n_k; ++j) sum += std::exp(x[j] - max);
    for (size_t j = 0; j < n_k; ++j) w[i * n_k + j] = std::exp(x[j] - max) / sum;
  }
  return w;
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
Doubles attention_d(const Doubles& q, const Doubles& k, const Doubles& v, size_t n_q, size_t n_k,
                    size_t d_k, size_t d_v, float scale, const ScoreMask& m,
                    const AttentionTrace* trace) {
  const Doubles s = matmul_nt_d(q.data(), k.data(), n_q, n_k, d_k);
  const Doubles w = softmax_d(s, n_q, n_k, scale, m);
  if (trace) {
    for (size_t i = 0; i < n_q; ++i)
      for (size_t j = 0; j < n_k; ++j) {
        const size_t e = i * n_k + j;
        trace->scores[e] = static_cast<float>(s[e]);
        trace->scaled[e] = static_cast<float>(s[e] * scale);
        trace->masked[e] = static_cast<float>(softmax_input_d(m, n_k, i, j, s[e], scale));
        if (trace->capped)
          trace->capped[e] = static_cast<float>(
              m.softcap > 0 ? m.softcap * std::tanh(s[e] * scale / m.softcap) : s[e] * scale);
        trace->weights[e] = static_cast<float>(w[e]);
      }
  }
  return matmul_d(w.data(), n_k, v.data(), d_v, n_q, d_v, n_k);
}

struct AttentionGradsD {
  Doubles dq, dk, dv;  // (n_q,d_k), (n_k,d_k), (n_k,d_v)
};

// The backward of attention_d: q, k, v, d_out (n_q,d_v) -> dq, dk, dv; its passes in reverse.
AttentionGradsD attention_backward_d(const Doubles& q, const Doubles& k, const Doubles& v,
                                     const Doubles& d_out, size_t n_q, size_t n_k, size_t d_k,
                                     size_t d_v, float scale, const ScoreMask& m) {
  const Doubles s = matmul_nt_d(q.data(), k.data(), n_q, n_k, d_k);
  const Doubles p = softmax_d(s, n_q, n_k, scale, m);
  AttentionGradsD g;
  // out = P·v -> dv = Pᵀ·d_out, dP = d_out·vᵀ
  g.dv = matmul_tn_d(p.data(), d_out.data(), n_k, d_v, n_q);
  Doubles ds = matmul_nt_d(d_out.data(), v.data(), n_q, n_k, d_v);
  // P_ij = exp(x_ij) / Σ_l exp(x_il) -> dx_ij = P_ij·(dP_ij − Σ_l dP_il·P_il)
  // x = cap(s·scale) + bias         -> ds = dx·cap′·scale, cap′ = 1 − tanh²(s·scale/softcap) or 1
  for (size_t i = 0; i < n_q; ++i) {
    double dot = 0;
    for (size_t j = 0; j < n_k; ++j) dot += ds[i * n_k + j] * p[i * n_k + j];
    for (size_t j = 0; j < n_k; ++j) {
      const double t = m.softcap > 0 ? std::tanh(s[i * n_k + j] * scale / m.softcap) : 0.0;
      ds[i * n_k + j] = p[i * n_k + j] * (ds[i * n_k + j] - dot) * (1 - t * t) * scale;
    }
  }
  // s = q·kᵀ -> dq = ds·k, dk = dsᵀ·q
  g.dq = matmul_d(ds.data(), n_k, k.data(), d_k, n_q, d_k, n_k);
  g.dk = matmul_tn_d(ds.data(), q.data(), n_k, d_k, n_q);
  return g;
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
          to_doubles(w.bo, s.d_model)};
}

// m (rows,heads·d), in place: in each head, row i's pairs of its first dims entries turned by
// the angles of position r.offset + i (wa/rotary.h), all in double; sign −1 turns them back.
// No-op for a null r.
void rotate_d(Doubles& m, size_t rows, size_t heads, size_t d, const Rotary* r, double sign) {
  if (!r) return;
  const size_t dims = r->dims ? r->dims : d, half = dims / 2;
  for (size_t i = 0; i < rows; ++i)
    for (size_t t = 0; t < half; ++t) {
      const double angle = static_cast<double>(r->offset + i) *
                           std::pow(r->base, -2.0 * static_cast<double>(t) / dims);
      const double c = std::cos(angle), sn = sign * std::sin(angle);
      for (size_t h = 0; h < heads; ++h) {
        double* row = &m[i * heads * d + h * d];
        double& xa = row[r->interleaved ? 2 * t : t];
        double& xb = row[r->interleaved ? 2 * t + 1 : t + half];
        const double a = xa, b = xb;
        xa = a * c - b * sn;
        xb = a * sn + b * c;
      }
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
                             const MhaTrace* trace, size_t b, const Rotary* rotary) {
  const size_t hk = s.heads * s.d_k, hv = s.heads * s.d_v;
  const size_t gk = s.kv() * s.d_k, gv = s.kv() * s.d_v, group = s.heads / s.kv();
  SequenceD f;
  f.q = project_d(xb, s.n_q, s.d_model, w.wq, w.bq, hk);
  f.k = project_d(cb, s.n_k, s.d_model, w.wk, w.bk, gk);
  f.v = project_d(cb, s.n_k, s.d_model, w.wv, w.bv, gv);
  rotate_d(f.q, s.n_q, s.heads, s.d_k, rotary, 1.0);
  rotate_d(f.k, s.n_k, s.kv(), s.d_k, rotary, 1.0);
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
                                  s.d_v, scale, mask, trace ? &th : nullptr);
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
  store(softmax_d(to_doubles(scores, n_q * n_k), n_q, n_k, scale, mask), weights);
}

void attention_forward(ConstMatrix q, ConstMatrix k, ConstMatrix v, Matrix out, float scale,
                       const ScoreMask& mask, const AttentionTrace* trace) {
  store(attention_d(to_doubles(q), to_doubles(k), to_doubles(v), q.rows, k.rows, q.cols, v.cols,
                    scale, mask, trace),
        out);
}

void attention_backward(ConstMatrix q, ConstMatrix k, ConstMatrix v, ConstMatrix d_out, Matrix dq,
                        Matrix dk, Matrix dv, float scale, const ScoreMask& mask) {
  const AttentionGradsD g =
      attention_backward_d(to_doubles(q), to_doubles(k), to_doubles(v), to_doubles(d_out), q.rows,
                           k.rows, q.cols, v.cols, scale, mask);
  store(g.dq, dq);
  store(g.dk, dk);
  store(g.dv, dv);
}

void mha_forward(const MhaShape& s, const MhaWeights& w, const float* x, const float* context,
                 float* out, float scale, const ScoreMask& mask, const MhaTrace* trace,
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
  Doubles dbq(hk, 0.0), dbk(gk, 0.0), dbv(gv, 0.0), dbo(dm, 0.0);

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
      const AttentionGradsD g = attention_backward_d(
          columns(f.q, s.n_q, hk, h * s.d_k, s.d_k), columns(f.k, s.n_k, gk, kg * s.d_k, s.d_k),
          columns(f.v, s.n_k, gv, kg * s.d_v, s.d_v),
          columns(d_concat, s.n_q, hv, h * s.d_v, s.d_v), s.n_q, s.n_k, s.d_k, s.d_v, scale, mask);
      set_columns(dq, s.n_q, hk, h * s.d_k, s.d_k, g.dq);
      add_columns(dk, s.n_k, gk, kg * s.d_k, s.d_k, g.dk);
      add_columns(dv, s.n_k, gv, kg * s.d_v, s.d_v, g.dv);
    }
    // Q, K turned by rotary -> dQ, dK turned back
    rotate_d(dq, s.n_q, s.heads, s.d_k, rotary, -1.0);
    rotate_d(dk, s.n_k, s.kv(), s.d_k, rotary, -1.0);

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
}

Doubles attention_forward_double(const Doubles& q, const Doubles& k, const Doubles& v, size_t n_q,
                                 size_t n_k, size_t d_k, size_t d_v, float scale,
                                 const ScoreMask& mask) {
  return attention_d(q, k, v, n_q, n_k, d_k, d_v, scale, mask, nullptr);
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

}  // namespace wa::ref
