// Rotary position embedding (wa/rotary.h): one table of cos/sin per row position, computed in
// double (positions reach the thousands, where float angles lose their digits), applied to
// every head of every sequence.
#include "wa/rotary.h"

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

namespace wa {
namespace {

void rotate(size_t batch, size_t heads, size_t rows, size_t d, HeadTensor<float> x, const Rotary& r,
            double sign) {
  const size_t dims = r.dims ? r.dims : d;
  if (dims % 2 != 0 || dims > d)
    throw std::invalid_argument("rotary: dims must be even and at most the head size: dims " +
                                std::to_string(dims) + ", d " + std::to_string(d));
  const size_t half = dims / 2;
  std::vector<float> cos_t(half), sin_t(half);
  for (size_t i = 0; i < rows; ++i) {
    const double p = static_cast<double>(r.offset + i);
    for (size_t t = 0; t < half; ++t) {
      const double angle =
          p * std::pow(r.base, -2.0 * static_cast<double>(t) / static_cast<double>(dims));
      cos_t[t] = static_cast<float>(std::cos(angle));
      sin_t[t] = static_cast<float>(sign * std::sin(angle));
    }
    for (size_t b = 0; b < batch; ++b)
      for (size_t h = 0; h < heads; ++h) {
        float* row = x.at(b, h) + i * x.row_stride;
        for (size_t t = 0; t < half; ++t) {
          float& xa = row[r.interleaved ? 2 * t : t];
          float& xb = row[r.interleaved ? 2 * t + 1 : t + half];
          const float a = xa, c = xb;
          xa = a * cos_t[t] - c * sin_t[t];
          xb = a * sin_t[t] + c * cos_t[t];
        }
      }
  }
}

}  // namespace

void rotary_forward(size_t batch, size_t heads, size_t rows, size_t d, HeadTensor<float> x,
                    const Rotary& r) {
  rotate(batch, heads, rows, d, x, r, 1.0);
}

void rotary_backward(size_t batch, size_t heads, size_t rows, size_t d, HeadTensor<float> dx,
                     const Rotary& r) {
  rotate(batch, heads, rows, d, dx, r, -1.0);
}

}  // namespace wa
