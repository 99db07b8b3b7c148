// Scalar references with double accumulation: the spec for the fast paths.
// Written for clarity, not speed: plain loops, one output element at a time.
#include "wa/reference.h"

#include <cmath>
#include <limits>
#include <vector>

namespace wa::ref {
namespace {

using Doubles = std::vector<double>;
constexpr double kInf = std::numeric_limits<double>::infinity();

// scores (n_q,n_k) -> weights (n_q,n_k), in double; row i as in softmax.h.
Doubles softmax_d(const Doubles& s, size_t n_q, size_t n_k, const ScoreMask& m) {
  Doubles w(n_q * n_k, 0.0);
  for (size_t i = 0; i < n_q; ++i) {
    Doubles x(n_k);
    double max = -kInf;
    for (size_t j = 0; j < n_k; ++j) {
      x[j] = is_masked(m, n_k, i, j)
                 ? -kInf
                 : s[i * n_k + j] * m.scale + (m.bias ? m.bias[i * n_k + j] : 0.0);
      max = std::max(max, x[j]);
    }
    if (max == -kInf) continue;  // every key masked: zero weights
    if (max == kInf) {
      double count = 0;
      for (double xj : x) count += xj == kInf;
      for (size_t j = 0; j < n_k; ++j) w[i * n_k + j] = x[j] == kInf ? 1.0 / count : 0.0;
      continue;
    }
    double sum = 0;
    for (size_t j = 0; j < n_k; ++j) sum += std::exp(x[j] - max);
    for (size_t j = 0; j < n_k; ++j) w[i * n_k + j] = std::exp(x[j] - max) / sum;
  }
  return w;
}

// a (m,k) row stride lda, b (k,n) row stride ldb -> (m,n), in double.
Doubles matmul_d(const double* a, size_t lda, const double* b, size_t ldb, size_t m, size_t n,
                 size_t k) {
  Doubles c(m * n, 0.0);
  for (size_t i = 0; i < m; ++i)
    for (size_t j = 0; j < n; ++j) {
      double sum = 0;
      for (size_t p = 0; p < k; ++p) sum += a[i * lda + p] * b[p * ldb + j];
      c[i * n + j] = sum;
    }
  return c;
}

Doubles to_doubles(const float* p, size_t count) { return Doubles(p, p + count); }
Doubles to_doubles(ConstMatrix m) {
  Doubles d(m.rows * m.cols);
  for (size_t r = 0; r < m.rows; ++r)
    for (size_t c = 0; c < m.cols; ++c) d[r * m.cols + c] = m.data[r * m.ld + c];
  return d;
}
void store(const Doubles& d, float* out) {
  for (size_t i = 0; i < d.size(); ++i) out[i] = static_cast<float>(d[i]);
}

// Attention in double: q (n_q,d_k), k (n_k,d_k), v (n_k,d_v) -> out (n_q,d_v).
// trace (float, (n_q,n_k) each) when set.
Doubles attention_d(const Doubles& q, const Doubles& k, const Doubles& v, size_t n_q, size_t n_k,
                    size_t d_k, size_t d_v, const ScoreMask& m, const AttentionTrace* trace) {
  Doubles s(n_q * n_k);
  for (size_t i = 0; i < n_q; ++i)
    for (size_t j = 0; j < n_k; ++j) {
      double dot = 0;
      for (size_t p = 0; p < d_k; ++p) dot += q[i * d_k + p] * k[j * d_k + p];
      s[i * n_k + j] = dot;
    }
  const Doubles w = softmax_d(s, n_q, n_k, m);
  if (trace) {
    for (size_t i = 0; i < n_q; ++i)
      for (size_t j = 0; j < n_k; ++j) {
        const size_t e = i * n_k + j;
        trace->scores[e] = static_cast<float>(s[e]);
        trace->scaled[e] = static_cast<float>(s[e] * m.scale);
        trace->masked[e] = is_masked(m, n_k, i, j)
                               ? -std::numeric_limits<float>::infinity()
                               : static_cast<float>(s[e] * m.scale + (m.bias ? m.bias[e] : 0.0));
        trace->weights[e] = static_cast<float>(w[e]);
      }
  }
  return matmul_d(w.data(), n_k, v.data(), d_v, n_q, d_v, n_k);
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

void softmax(const float* scores, float* weights, size_t n_q, size_t n_k, const ScoreMask& mask) {
  store(softmax_d(to_doubles(scores, n_q * n_k), n_q, n_k, mask), weights);
}

void attention_forward(ConstMatrix q, ConstMatrix k, ConstMatrix v, Matrix out,
                       const ScoreMask& mask, const AttentionTrace* trace) {
  const Doubles o = attention_d(to_doubles(q), to_doubles(k), to_doubles(v), q.rows, k.rows,
                                q.cols, v.cols, mask, trace);
  for (size_t r = 0; r < out.rows; ++r)
    for (size_t c = 0; c < out.cols; ++c) out.data[r * out.ld + c] = static_cast<float>(o[r * out.cols + c]);
}

void mha_forward(const MhaShape& s, const MhaWeights& w, const float* x, const float* context,
                 float* out, const ScoreMask& mask, const MhaTrace* trace) {
  const float* ctx = context ? context : x;
  const size_t hk = s.heads * s.d_k, hv = s.heads * s.d_v, nn = s.n_q * s.n_k;
  // x_b (n,d_model)·w (d_model,cols) + bias -> (n,cols), in double
  auto project = [&](const float* xb, size_t n, const float* wm, const float* bias, size_t cols) {
    const Doubles xd = to_doubles(xb, n * s.d_model), wd = to_doubles(wm, s.d_model * cols);
    Doubles y = matmul_d(xd.data(), s.d_model, wd.data(), cols, n, cols, s.d_model);
    if (bias)
      for (size_t r = 0; r < n; ++r)
        for (size_t c = 0; c < cols; ++c) y[r * cols + c] += bias[c];
    return y;
  };
  // the columns [c0, c0+width) of m (rows, stride) as a dense matrix
  auto columns = [](const Doubles& m, size_t rows, size_t stride, size_t c0, size_t width) {
    Doubles d(rows * width);
    for (size_t r = 0; r < rows; ++r)
      for (size_t c = 0; c < width; ++c) d[r * width + c] = m[r * stride + c0 + c];
    return d;
  };

  for (size_t b = 0; b < s.batch; ++b) {
    const float* xb = x + b * s.n_q * s.d_model;
    const float* cb = ctx + b * s.n_k * s.d_model;
    const Doubles q = project(xb, s.n_q, w.wq, w.bq, hk);
    const Doubles k = project(cb, s.n_k, w.wk, w.bk, hk);
    const Doubles v = project(cb, s.n_k, w.wv, w.bv, hv);
    Doubles concat(s.n_q * hv);
    for (size_t h = 0; h < s.heads; ++h) {
      AttentionTrace th{};
      if (trace) {
        const size_t offset = (b * s.heads + h) * nn;
        th = {trace->scores + offset, trace->scaled + offset, trace->masked + offset,
              trace->weights + offset};
      }
      const Doubles o = attention_d(columns(q, s.n_q, hk, h * s.d_k, s.d_k),
                                    columns(k, s.n_k, hk, h * s.d_k, s.d_k),
                                    columns(v, s.n_k, hv, h * s.d_v, s.d_v), s.n_q, s.n_k, s.d_k,
                                    s.d_v, mask, trace ? &th : nullptr);
      for (size_t r = 0; r < s.n_q; ++r)
        for (size_t c = 0; c < s.d_v; ++c) concat[r * hv + h * s.d_v + c] = o[r * s.d_v + c];
    }
    const Doubles wo = to_doubles(w.wo, hv * s.d_model);
    Doubles y = matmul_d(concat.data(), hv, wo.data(), s.d_model, s.n_q, s.d_model, hv);
    if (w.bo)
      for (size_t r = 0; r < s.n_q; ++r)
        for (size_t c = 0; c < s.d_model; ++c) y[r * s.d_model + c] += w.bo[c];
    store(y, out + b * s.n_q * s.d_model);
    if (trace) {
      store(q, trace->q + b * s.n_q * hk);
      store(k, trace->k + b * s.n_k * hk);
      store(v, trace->v + b * s.n_k * hv);
      store(concat, trace->concat + b * s.n_q * hv);
    }
  }
}

}  // namespace wa::ref
