// Scaled dot-product attention forward, in blocks of query rows:
//   s = q_block·kᵀ; w = softmax(mask(s·scale)); out_block = w·v.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "attention_rows.h"
#include "scratch.h"
#include "wa/attention.h"
#include "wa/gemm.h"
#include "wa/thread_pool.h"

namespace wa {

void attention_rows(ConstMatrix q, ConstMatrix k, ConstMatrix v, Matrix out,
                    const ScoreMask& mask, size_t r0, size_t r1, const AttentionTrace* trace) {
  const size_t rows = r1 - r0, n_k = k.rows, d_k = q.cols, d_v = v.cols;
  // Causal: query i sees keys j <= i, so keys from r1 on are masked for the whole block and
  // need not be scored. A trace shows every score, so it takes them all.
  const size_t cols = mask.causal && !trace ? std::min(n_k, r1) : n_k;

  float* scores;
  float* weights;
  size_t ld;
  if (trace) {
    ld = n_k;
    scores = trace->scores + r0 * ld;
    weights = trace->weights + r0 * ld;
  } else {
    ld = cols;
    scores = weights = thread_scratch(ScratchSlot::attention_scores, rows * cols);
  }

  // q_block (rows,d_k), k (cols,d_k) -> scores (rows,cols)
  gemm_nt(rows, cols, d_k, q.data + r0 * q.ld, q.ld, k.data, k.ld, scores, ld);
  if (trace)
    score_trace_rows(scores, ld, trace->scaled + r0 * ld, trace->masked + r0 * ld, r0, rows,
                     n_k, mask);
  // scores (rows,cols) -> weights (rows,cols)
  softmax_rows(scores, ld, weights, ld, r0, rows, cols, n_k, mask);
  // weights (rows,cols), v (cols,d_v) -> out_block (rows,d_v)
  gemm_nn(rows, d_v, cols, weights, ld, v.data, v.ld, out.data + r0 * out.ld, out.ld);
}

namespace {

std::string shape(const char* name, ConstMatrix m) {
  return std::string(name) + " (" + std::to_string(m.rows) + "," + std::to_string(m.cols) + ")";
}

void check_shapes(ConstMatrix q, ConstMatrix k, ConstMatrix v, ConstMatrix out) {
  std::string problem;
  if (!q.rows || !q.cols || !k.rows || !v.cols)
    problem = "every dimension must be at least 1";
  else if (k.cols != q.cols)
    problem = "k must have as many columns as q (d_k)";
  else if (v.rows != k.rows)
    problem = "v must have as many rows as k (n_k)";
  else if (out.rows != q.rows || out.cols != v.cols)
    problem = "out must be (n_q,d_v)";
  if (!problem.empty())
    throw std::invalid_argument("attention: " + problem + ": " + shape("q", q) + ", " +
                                shape("k", k) + ", " + shape("v", v) + ", " + shape("out", out));
}

}  // namespace

void attention_forward(ConstMatrix q, ConstMatrix k, ConstMatrix v, Matrix out,
                       const ScoreMask& mask, const AttentionTrace* trace, ThreadPool* pool) {
  check_shapes(q, k, v, out);
  const size_t blocks = (q.rows + kAttentionRowBlock - 1) / kAttentionRowBlock;
  // for (b = 0; b < blocks; ++b) rows [b·B, (b+1)·B)
  parallel_for(pool, blocks, [&](size_t b) {
    const size_t r0 = b * kAttentionRowBlock;
    attention_rows(q, k, v, out, mask, r0, std::min(q.rows, r0 + kAttentionRowBlock), trace);
  });
}

}  // namespace wa
