// The ONNX Attention operator (opsets 23-25) in double, written from its specification: the
// contract the package's option-rich attention (GQA, past keys, masks of every rank, causal with
// an offset, windows, per-batch key lengths, softcap, qk outputs, rotary positions) is held to.
//
// Letters: b batch, hq query heads, hkv key/value heads (hq % hkv == 0; query head h reads kv
// head h / (hq / hkv)), n_q queries, n_past cached keys, n_new new keys, n = n_past + n_new keys
// in all, d_k, d_v head sizes.
//   4-D layout: q (b,hq,n_q,d_k), k (b,hkv,n_new,d_k), v (b,hkv,n_new,d_v), y (b,hq,n_q,d_v)
//   3-D layout: q (b,n_q,hq·d_k), k (b,n_new,hkv·d_k), v (b,n_new,hkv·d_v), y (b,n_q,hq·d_v)
//   past_k (b,hkv,n_past,d_k), past_v (b,hkv,n_past,d_v) -> present_k (b,hkv,n,d_k), present_v
//   qk (b,hq,n_q,n)
//
// Score of query i, key j in head h:  s = scale · q_i·k_j                        (qk mode 0)
//                                     s = softcap · tanh(s / softcap) if softcap > 0  (mode 1)
//                                     s = s + bias(b,h,i,j)                             (mode 2)
//                                     p = softmax_j(s), a zero row if every bias is −∞  (mode 3)
// bias = mask (additive, or boolean: true keeps → 0, false → −∞; right-aligned broadcast from
// rank 1..4 over (b,hq,n_q,n); a mask with fewer than n columns is padded with masked columns)
//      + causal: −∞ unless j ≤ i + offset
//      + window: −∞ unless (i + offset) − j ≤ left and j − (i + offset) ≤ right (−1: that side
//                unbounded)
//      + padding: −∞ unless j < kv_length[b]
// offset = n_past with a past; kv_length[b] − n_q with kv_length (and no past); else 0.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace wa::ref::onnx {

using Doubles = std::vector<double>;

enum class QkMode { kScaled = 0, kSoftcapped = 1, kMasked = 2, kWeights = 3 };

struct Mask {
  // dims right-aligned to (b,hq,n_q,n_mask): rank 1..4 sizes, each 1 (broadcast) or full;
  // the last, n_mask ≤ n, is padded to n with masked columns. Empty dims: no mask.
  std::vector<size_t> dims;
  bool boolean = false;  // values are 0/1 keep flags instead of additive biases
  Doubles values;        // row-major over dims
};

struct Attention {
  size_t batch = 1, q_heads = 1, kv_heads = 1, n_q = 0, n_past = 0, n_new = 0, d_k = 0, d_v = 0;
  bool three_d = false;             // inputs and output in the 3-D layout
  Doubles q, k, v, past_k, past_v;  // past_* empty when n_past == 0 and no past is given
  bool has_past = false;
  Mask mask;
  bool causal = false;
  double scale = 0;                // 0: 1/√d_k
  double softcap = 0;              // 0: none
  long left = -1, right = -1;      // window sides, −1 unbounded
  std::vector<int32_t> kv_length;  // per batch; empty: none
  // Rotary positions on q and k (applied before attention, per head): the pair (x_a, x_b) at
  // position p turns by p·base^(−2t/dims), t the pair's index. Pairs are (2t, 2t+1) when
  // interleaved, (t, t + dims/2) otherwise; dims 0 = d_k. Positions: q row i is at
  // rotary_offset + n_past + i, new key j at rotary_offset + n_past + j (past keys are
  // cached already rotated).
  bool rotary = false;
  double rotary_base = 10000;
  size_t rotary_dims = 0;
  bool rotary_interleaved = false;
  size_t rotary_offset = 0;
};

struct Outputs {
  Doubles y, present_k, present_v;
  Doubles qk[4];  // (b,hq,n_q,n) for each QkMode
};

Outputs attention_forward(const Attention& a);

// Rotary positions on x (rows, d) in place, row r at position positions[r].
void rotary(Doubles& x, size_t rows, size_t d, const std::vector<size_t>& positions, double base,
            size_t dims, bool interleaved, bool inverse = false);

// Gradients of Σ dy ⊙ y with respect to q, k, v (the new keys and values; no past), shaped as
// the inputs. Backs out each forward pass in reverse: P·V, softmax (Jacobian-vector product),
// the bias (no gradient), softcap (tanh′), scale·q·k, and rotary (the inverse rotation).
struct Grads {
  Doubles dq, dk, dv;
};
Grads attention_backward(const Attention& a, const Doubles& dy);

}  // namespace wa::ref::onnx
