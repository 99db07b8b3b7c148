// Scaled dot-product attention, forward and backward: the public entries. They check shapes
// and hand the work on:
//   forward   a matrix is one head of one sequence: attention_heads_forward with
//             batch = heads = 1 (attention_heads.cpp: row blocks, key runs, the decode split)
//   backward  the weights recomputed in the forward's blocks, then the backward from them
//             (attention_blocks.h).
#include <stdexcept>
#include <string>
#include <vector>

#include "attention/attention_blocks.h"
#include "attention/softmax_rows.h"
#include "runtime/sizes.h"
#include "wa/attention.h"
#include "wa/attention_heads.h"

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

// m (rows,cols) as head 0 of sequence 0 of a (1,1,rows,cols) tensor
template <class T, class M>
HeadTensor<T> one_head(M m) {
  return {m.data, 0, 0, m.ld};
}

}  // namespace

void attention_forward(ConstMatrix q, ConstMatrix k, ConstMatrix v, Matrix out, float scale,
                       const ScoreMask& mask, const AttentionTrace* trace, ThreadPool* pool) {
  check_shapes(q, k, v, out);
  const HeadsShape s{1, 1, 1, q.rows, k.rows, q.cols, v.cols};
  attention_heads_forward(s, one_head<const float>(q), one_head<const float>(k),
                          one_head<const float>(v), one_head<float>(out), scale, HeadsMask{mask},
                          trace, pool);
}

void attention_backward(ConstMatrix q, ConstMatrix k, ConstMatrix v, ConstMatrix d_out, Matrix dq,
                        Matrix dk, Matrix dv, float scale, const ScoreMask& mask,
                        const AttentionBackwardTrace* trace, ThreadPool* pool, float* d_sink) {
  check_backward_shapes(q, k, v, d_out, dq, dk, dv);
  check_sink("attention backward", mask.sink, 0);
  const size_t n_q = q.rows, n_k = k.rows;
  // The forward's first passes again: q (n_q,d_k), k (n_k,d_k) -> P (n_q,n_k)
  std::vector<float> own;
  float* p = trace ? trace->weights : (own.resize(checked_product({n_q, n_k})), own.data());
  attention_weights(q, k, scale, mask, {p, n_q, n_k, n_k}, pool);
  attention_backward_from_weights(q, k, v, {p, n_q, n_k, n_k}, d_out, dq, dk, dv, scale, mask, pool,
                                  trace ? trace->d_weights : nullptr,
                                  trace ? trace->d_scores : nullptr, d_sink);
}

}  // namespace wa
