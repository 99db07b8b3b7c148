// The ONNX Attention operator in double: see onnx_attention_reference.h for the contract.
// Written for clarity, one query row at a time; nothing here is fast.
#include "onnx_attention_reference.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace wa::ref::onnx {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("onnx reference: " + what);
}

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

// The additive bias of query i, key j in batch b, query head h: 0 or −∞ from the structural
// masks, plus the user's mask value.
struct Bias {
  const Attention& a;
  size_t n;  // keys in all

  long offset(size_t b) const {
    if (a.has_past) return static_cast<long>(a.n_past);
    if (!a.kv_length.empty()) return static_cast<long>(a.kv_length[b]) - static_cast<long>(a.n_q);
    return 0;
  }

  double mask(size_t b, size_t h, size_t i, size_t j) const {
    const std::vector<size_t>& dims = a.mask.dims;
    if (dims.empty()) return 0;
    if (j >= dims.back()) return kNegInf;  // padded column
    const size_t full[4] = {b, h, i, j};
    size_t index = 0;
    for (size_t axis = 0; axis < dims.size(); ++axis) {
      const size_t coord = full[4 - dims.size() + axis];
      index = index * dims[axis] + (dims[axis] == 1 ? 0 : coord);
    }
    const double m = a.mask.values[index];
    return a.mask.boolean ? (m != 0 ? 0 : kNegInf) : m;
  }

  double operator()(size_t b, size_t h, size_t i, size_t j) const {
    const long frontier = static_cast<long>(i) + offset(b);  // the query's absolute position
    const long key = static_cast<long>(j);
    if (a.causal && key > frontier) return kNegInf;
    if (a.left >= 0 && frontier - key > a.left) return kNegInf;
    if (a.right >= 0 && key - frontier > a.right) return kNegInf;
    if (!a.kv_length.empty() && key >= a.kv_length[b]) return kNegInf;
    return mask(b, h, i, j);
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

// One query row's scores in every qk mode and its weights (mode 3).
struct Row {
  Doubles raw, capped, masked, weights;
};

Row score_row(const Attention& a, const Prepared& p, const Bias& bias, size_t b, size_t h,
              size_t i) {
  const size_t g = h / (a.q_heads / a.kv_heads);
  const double* q = &p.q[((b * a.q_heads + h) * a.n_q + i) * a.d_k];
  Row r{Doubles(p.n), Doubles(p.n), Doubles(p.n), Doubles(p.n, 0.0)};
  bool all_masked = true;
  for (size_t j = 0; j < p.n; ++j) {
    const double* k = &p.k[((b * a.kv_heads + g) * p.n + j) * a.d_k];
    double dot = 0;
    for (size_t t = 0; t < a.d_k; ++t) dot += q[t] * k[t];
    r.raw[j] = p.scale * dot;
    r.capped[j] = a.softcap > 0 ? a.softcap * std::tanh(r.raw[j] / a.softcap) : r.raw[j];
    const double beta = bias(b, h, i, j);
    if (beta != kNegInf) all_masked = false;
    r.masked[j] = r.capped[j] + beta;
  }
  if (all_masked) return r;  // every key disallowed: zero weights
  double max = kNegInf, sum = 0;
  for (double s : r.masked) max = std::max(max, s);
  for (size_t j = 0; j < p.n; ++j) sum += r.weights[j] = std::exp(r.masked[j] - max);
  for (double& w : r.weights) w /= sum;
  return r;
}

}  // namespace

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

Outputs attention_forward(const Attention& a) {
  const Prepared p = prepare(a);
  const Bias bias{a, p.n};
  Outputs out;
  out.present_k = p.k;
  out.present_v = p.v;
  for (Doubles& qk : out.qk) qk.assign(a.batch * a.q_heads * a.n_q * p.n, 0.0);
  Doubles y(a.batch * a.q_heads * a.n_q * a.d_v, 0.0);
  for (size_t b = 0; b < a.batch; ++b)
    for (size_t h = 0; h < a.q_heads; ++h)
      for (size_t i = 0; i < a.n_q; ++i) {
        const Row r = score_row(a, p, bias, b, h, i);
        const size_t row = (b * a.q_heads + h) * a.n_q + i, g = h / (a.q_heads / a.kv_heads);
        std::copy(r.raw.begin(), r.raw.end(), out.qk[0].begin() + row * p.n);
        std::copy(r.capped.begin(), r.capped.end(), out.qk[1].begin() + row * p.n);
        std::copy(r.masked.begin(), r.masked.end(), out.qk[2].begin() + row * p.n);
        std::copy(r.weights.begin(), r.weights.end(), out.qk[3].begin() + row * p.n);
        for (size_t j = 0; j < p.n; ++j)
          for (size_t t = 0; t < a.d_v; ++t)
            y[row * a.d_v + t] += r.weights[j] * p.v[((b * a.kv_heads + g) * p.n + j) * a.d_v + t];
      }
  out.y = from_4d(y, a.three_d, a.batch, a.q_heads, a.n_q, a.d_v);
  return out;
}

Grads attention_backward(const Attention& a, const Doubles& dy_in) {
  const Prepared p = prepare(a);
  const Bias bias{a, p.n};
  const Doubles dy = to_4d(dy_in, a.three_d, a.batch, a.q_heads, a.n_q, a.d_v);
  Doubles dq(p.q.size(), 0.0), dk(p.k.size(), 0.0), dv(p.v.size(), 0.0);  // present-sized dk, dv
  for (size_t b = 0; b < a.batch; ++b)
    for (size_t h = 0; h < a.q_heads; ++h)
      for (size_t i = 0; i < a.n_q; ++i) {
        const Row r = score_row(a, p, bias, b, h, i);
        const size_t row = (b * a.q_heads + h) * a.n_q + i, g = h / (a.q_heads / a.kv_heads);
        const double* dyi = &dy[row * a.d_v];
        // y_i = Σ_j p_j v_j  ->  dv_j += p_j dy_i, dp_j = dy_i·v_j
        Doubles dp(p.n, 0.0);
        for (size_t j = 0; j < p.n; ++j) {
          const size_t kv = (b * a.kv_heads + g) * p.n + j;
          for (size_t t = 0; t < a.d_v; ++t) {
            dv[kv * a.d_v + t] += r.weights[j] * dyi[t];
            dp[j] += dyi[t] * p.v[kv * a.d_v + t];
          }
        }
        // p = softmax(s)  ->  ds_j = p_j (dp_j − Σ_l p_l dp_l); the bias adds no gradient
        double pdp = 0;
        for (size_t j = 0; j < p.n; ++j) pdp += r.weights[j] * dp[j];
        for (size_t j = 0; j < p.n; ++j) {
          double ds = r.weights[j] * (dp[j] - pdp);
          // capped = c·tanh(raw / c)  ->  d raw = ds · (1 − tanh²(raw / c))
          if (a.softcap > 0) {
            const double th = std::tanh(r.raw[j] / a.softcap);
            ds *= 1 - th * th;
          }
          // raw = scale · q_i·k_j  ->  dq_i += scale·ds·k_j, dk_j += scale·ds·q_i
          const size_t kv = (b * a.kv_heads + g) * p.n + j;
          for (size_t t = 0; t < a.d_k; ++t) {
            dq[row * a.d_k + t] += p.scale * ds * p.k[kv * a.d_k + t];
            dk[kv * a.d_k + t] += p.scale * ds * p.q[row * a.d_k + t];
          }
        }
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
  return grads;
}

}  // namespace wa::ref::onnx
