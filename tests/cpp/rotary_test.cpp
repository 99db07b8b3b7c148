// Rotary positions against the reference rotation (double), in both pair layouts and with
// partial dims, through 3-D and 4-D heads; the backward is the transpose (inverse) rotation.
#include <cmath>
#include <stdexcept>

#include "reference.h"
#include "testing.h"
#include "wa/rotary.h"

namespace wa {
namespace {

TEST_CASE("rotary matches the reference rotation, every layout and pair order") {
  const size_t batch = 2, heads = 3, rows = 17, d = 10;
  for (bool interleaved : {false, true})
    for (size_t dims : {size_t{0}, size_t{6}})
      for (bool three_d : {false, true}) {
        INFO("interleaved " << interleaved << ", dims " << dims << ", 3-D " << three_d);
        const Rotary r{4095, 500, dims, interleaved};
        std::vector<float> x = test::random_floats(batch * heads * rows * d, 3);
        const std::vector<float> before = x;
        const HeadTensor<float> t =
            three_d ? heads_3d(x.data(), heads, rows, d) : heads_4d(x.data(), heads, rows, d);
        rotary_forward(batch, heads, rows, d, t, r);
        double worst = 0;
        for (size_t b = 0; b < batch; ++b)
          for (size_t h = 0; h < heads; ++h) {
            const HeadTensor<const float> src = three_d ? heads_3d(before.data(), heads, rows, d)
                                                        : heads_4d(before.data(), heads, rows, d);
            ref::Doubles block;
            for (size_t i = 0; i < rows; ++i)
              for (size_t c = 0; c < d; ++c) block.push_back(src.at(b, h)[i * src.row_stride + c]);
            std::vector<size_t> pos(rows);
            for (size_t i = 0; i < rows; ++i) pos[i] = r.offset + i;
            ref::rotary(block, rows, d, pos, r.base, dims, interleaved);
            for (size_t i = 0; i < rows; ++i)
              for (size_t c = 0; c < d; ++c)
                worst =
                    std::max(worst, std::fabs(t.at(b, h)[i * t.row_stride + c] - block[i * d + c]));
          }
        CHECK(worst <= 1e-6);
        rotary_backward(batch, heads, rows, d, t, r);  // the inverse: back where it started
        CHECK_CLOSE(x, before, 1e-6);
      }
}

TEST_CASE("rotary refuses odd dims or dims past the head size") {
  std::vector<float> x(8);
  CHECK_THROWS_AS(rotary_forward(1, 1, 1, 8, heads_4d(x.data(), 1, 1, 8), {0, 10000, 3, false}),
                  std::invalid_argument);
  CHECK_THROWS_AS(rotary_forward(1, 1, 1, 8, heads_4d(x.data(), 1, 1, 8), {0, 10000, 10, false}),
                  std::invalid_argument);
}

}  // namespace
}  // namespace wa
