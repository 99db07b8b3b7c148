// Rotary position embedding (RoPE), in place on heads (wa/attention_heads.h's HeadTensor).
// Row i of every head stands at position p = offset + i. Of its first `dims` entries (0: all d,
// even), pair t is (t, t + dims/2) — or (2t, 2t+1) when interleaved — and turns by the angle
// p·base^(−2t/dims):
//   (x_a, x_b) -> (x_a·cos − x_b·sin, x_a·sin + x_b·cos)
// A query at position p and a key at position r then score q·R(p − r)·k: attention sees only
// their distance. Entries past dims stay as they are.
#pragma once

#include <cstddef>

#include "wa/attention_heads.h"

namespace wa {

struct Rotary {
  size_t offset = 0;    // position of row 0
  double base = 10000;  // the wavelength base
  size_t dims = 0;      // entries rotated per row; 0 = all
  bool interleaved = false;
};

// x (batch, heads, rows, d) -> rotated in place. Throws std::invalid_argument when dims is odd
// or past d.
void rotary_forward(size_t batch, size_t heads, size_t rows, size_t d, HeadTensor<float> x,
                    const Rotary& r);

// The backward of rotary_forward: dx (batch, heads, rows, d), the gradient of the rotated rows,
// -> the gradient of the rows before rotation, in place: the transpose of a rotation is its
// inverse, the same pairs turned by −angle.
void rotary_backward(size_t batch, size_t heads, size_t rows, size_t d, HeadTensor<float> dx,
                     const Rotary& r);

}  // namespace wa
