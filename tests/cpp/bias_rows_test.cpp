// The projections' bias passes (cpp/src/attention/bias_rows.h) against a double reference, on
// shapes from one element to one large enough to feed 16 threads, with odd row and column
// counts (a row or column tail in the last task): the bias added to every row exactly as one
// float addition, the column sums within float summation's error, and both bitwise the same
// on 1, 2, 3, 4, 8 and 16 threads. Where the build has threads, the large shape's pass is seen
// to run on several of them, so the comparison is not between two serial runs.
#include <cmath>
#include <memory>
#include <vector>

#include "attention/bias_rows.h"
#include "testing.h"
#include "wa/build_info.h"

namespace wa {
namespace {

struct Shape {
  size_t rows, cols;
};
// 1 element; a few rows of a tail width; one row; a shape the pass keeps on the caller; one
// that feeds 2 threads; one that feeds 16 (threading.h: a thread per 2^17 elements)
const Shape kShapes[] = {{1, 1}, {3, 17}, {1, 1031}, {129, 33}, {601, 513}, {2053, 1031}};

// pools of 2, 3, 4, 8 and 16 threads, started once
const std::vector<std::unique_ptr<ThreadPool>>& pools() {
  static std::vector<std::unique_ptr<ThreadPool>> p;
  if (p.empty())
    for (int t : {2, 3, 4, 8, 16}) p.emplace_back(new ThreadPool(t));
  return p;
}

// the most threads any call on pool took while run() ran
size_t threads_taken(ThreadPool& pool, const std::function<void()>& run) {
  std::vector<ThreadPool::Call> calls;
  pool.record_calls(&calls);
  run();
  pool.record_calls(nullptr);
  size_t most = 1;
  for (const ThreadPool::Call& c : calls) most = std::max(most, std::min(c.tasks, c.threads));
  return most;
}

TEST_CASE("add_bias_rows adds the bias to every row as one float addition, on any thread count") {
  for (const Shape& s : kShapes) {
    const std::vector<float> c0 = test::random_floats(s.rows * s.cols, 41),
                             bias = test::random_floats(s.cols, 42, -4.0f, 4.0f);
    std::vector<float> expected(c0.size());
    for (size_t r = 0; r < s.rows; ++r)
      for (size_t j = 0; j < s.cols; ++j)  // a sum of two floats, rounded once: exact in double
        expected[r * s.cols + j] =
            static_cast<float>(static_cast<double>(c0[r * s.cols + j]) + bias[j]);
    INFO("rows " << s.rows << ", cols " << s.cols);
    std::vector<float> serial = c0;
    add_bias_rows(serial.data(), s.rows, s.cols, bias.data(), nullptr);
    const test::Diff d = test::max_abs_diff(serial, expected);
    INFO("largest difference from the reference " << d.max_abs << " at " << d.at);
    CHECK(test::bitwise_equal(serial, expected));
    for (const auto& pool : pools()) {
      std::vector<float> c = c0;
      const size_t took = threads_taken(
          *pool, [&] { add_bias_rows(c.data(), s.rows, s.cols, bias.data(), pool.get()); });
      INFO(pool->threads() << " threads (the pass took " << took << ")");
      CHECK(test::bitwise_equal(c, serial));
      if (s.rows * s.cols > 2'000'000 && pool->threads() > 1) CHECK(took > 1);
    }
  }
  std::vector<float> c = {1, 2};
  add_bias_rows(c.data(), 1, 2, nullptr, pools().back().get());
  CHECK(c == std::vector<float>{1, 2});  // no bias: nothing added
}

TEST_CASE("column_sums sums each column over the rows in order, on any thread count") {
  for (const Shape& s : kShapes) {
    const std::vector<float> m = test::random_floats(s.rows * s.cols, 43);
    std::vector<double> exact(s.cols, 0.0);
    for (size_t r = 0; r < s.rows; ++r)
      for (size_t j = 0; j < s.cols; ++j) exact[j] += m[r * s.cols + j];
    INFO("rows " << s.rows << ", cols " << s.cols);
    std::vector<float> serial(s.cols, 99.0f);  // overwritten, not added to
    column_sums(m.data(), s.rows, s.cols, serial.data(), nullptr);
    // |values| < 1: a sum of rows floats is off by at most rows · eps · rows in float
    const double bound = static_cast<double>(s.rows) * s.rows * 6e-8;
    double worst = 0;
    for (size_t j = 0; j < s.cols; ++j) worst = std::max(worst, std::fabs(serial[j] - exact[j]));
    INFO("largest difference from the double reference " << worst << " (bound " << bound << ")");
    CHECK(worst <= bound);
    for (const auto& pool : pools()) {
      std::vector<float> sums(s.cols, -7.0f);
      const size_t took = threads_taken(
          *pool, [&] { column_sums(m.data(), s.rows, s.cols, sums.data(), pool.get()); });
      INFO(pool->threads() << " threads (the pass took " << took << ")");
      CHECK(test::bitwise_equal(sums, serial));
      if (s.rows * s.cols > 2'000'000 && pool->threads() > 1) CHECK(took > 1);
    }
  }
}

}  // namespace
}  // namespace wa
