// A builder that runs one GEMM micro-kernel (gemm_kernels.h) on m rows and n columns of c,
// modeled on XNNPACK's GemmMicrokernelTester: set the kernel's tile rows mr, then m (one tile or
// several), n (one b panel or several), k, the row stride of c, the distance between b's panels
// and whether the kernel accumulates, then Test(kernel) packs random a and b the way gemm.cpp
// does and checks c against a double reference.
//
// What a kernel must do, and what Test checks:
//   c (m,n) [+]= a (m,k) · b (k,n), within 2·k·eps·Σ|a||b| (+ |c|) of the double sum
//   only c's m x n tile is written: every other float of c's rows and stride keeps its value
//   the packed panels' padding (rows past m of a, columns past n of b, the floats between two
//     b panels) never reaches c: Test fills it with NaN, which would show in any element that
//     read it
#pragma once

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "gemm/gemm_kernels.h"
#include "testing.h"

namespace wa::test {

using kernels::GemmMicrokernel;

class GemmMicrokernelTester {
 public:
  // the kernel's tile rows: the packed a panel's rows per step
  GemmMicrokernelTester& mr(size_t mr) { return mr_ = mr, *this; }
  // how many times the kernel's packed a holds each value (GemmKernel::a_copies)
  GemmMicrokernelTester& a_copies(size_t copies) { return a_copies_ = copies, *this; }
  GemmMicrokernelTester& m(size_t m) { return m_ = m, *this; }
  GemmMicrokernelTester& n(size_t n) { return n_ = n, *this; }
  GemmMicrokernelTester& k(size_t k) { return k_ = k, *this; }
  // c's row stride in floats; 0 (the default) means n
  GemmMicrokernelTester& cm_stride(size_t stride) { return cm_stride_ = stride, *this; }
  // floats from one b panel to the next, past the k·kNR a panel holds; 0 (the default): none
  GemmMicrokernelTester& b_gap(size_t gap) { return b_gap_ = gap, *this; }
  GemmMicrokernelTester& accumulate(bool on) { return accumulate_ = on, *this; }
  GemmMicrokernelTester& seed(uint32_t seed) { return seed_ = seed, *this; }

  // A kernel of gemm_kernels.h's table: its tile rows and a's copies are its own.
  void Test(const kernels::GemmKernel& kernel) const {
    GemmMicrokernelTester with = *this;
    with.mr(kernel.mr).a_copies(kernel.a_copies).Test(kernel.run);
  }

  void Test(GemmMicrokernel kernel) const {
    using kernels::kNR;
    const size_t ldc = cm_stride_ ? cm_stride_ : n_;
    REQUIRE(m_ >= 1);
    REQUIRE(n_ >= 1);
    REQUIRE(ldc >= n_);
    const size_t b_stride = k_ * kNR + b_gap_;
    INFO("m=" << m_ << " n=" << n_ << " k=" << k_ << " cm_stride=" << ldc
              << " b_stride=" << b_stride << " accumulate=" << accumulate_);

    const float nan = std::numeric_limits<float>::quiet_NaN();
    const std::vector<float> a = random_floats(m_ * k_, seed_);      // (m,k)
    const std::vector<float> b = random_floats(k_ * n_, seed_ + 1);  // (k,n)
    // packed a: ceil(m/mr) panels (k,mr), step p of panel t holding a(t·mr..t·mr+mr-1, p);
    // packed b: ceil(n/kNR) panels (k,kNR) b_stride apart, step p of panel q holding
    // b(p, q·kNR..q·kNR+kNR-1)
    const size_t panels = (m_ + mr_ - 1) / mr_, b_panels = (n_ + kNR - 1) / kNR;
    std::vector<float> packed_a(panels * k_ * mr_ * a_copies_, nan),
        packed_b(b_panels * b_stride, nan);
    for (size_t p = 0; p < k_; ++p) {
      for (size_t i = 0; i < m_; ++i)
        for (size_t copy = 0; copy < a_copies_; ++copy)
          packed_a[(i / mr_ * mr_ * k_ + p * mr_ + i % mr_) * a_copies_ + copy] = a[i * k_ + p];
      for (size_t j = 0; j < n_; ++j)
        packed_b[j / kNR * b_stride + p * kNR + j % kNR] = b[p * n_ + j];
    }
    // c: m rows of stride ldc plus a row after them; sentinels wherever the tile is not
    const float sentinel = -12345.0f;
    std::vector<float> c((m_ + 1) * ldc, sentinel);
    const std::vector<float> c_init = random_floats(m_ * n_, seed_ + 2);
    for (size_t i = 0; i < m_; ++i)
      for (size_t j = 0; j < n_; ++j) c[i * ldc + j] = c_init[i * n_ + j];

    kernel(m_, n_, k_, packed_a.data(), packed_b.data(), b_stride, c.data(), ldc, accumulate_);

    double worst = 0;  // the largest |c - reference| seen, over its bound
    for (size_t i = 0; i < m_; ++i) {
      for (size_t j = 0; j < n_; ++j) {
        double sum = accumulate_ ? c_init[i * n_ + j] : 0.0;
        double magnitude = accumulate_ ? std::fabs(c_init[i * n_ + j]) : 0.0;
        for (size_t p = 0; p < k_; ++p) {
          sum += static_cast<double>(a[i * k_ + p]) * b[p * n_ + j];
          magnitude += std::fabs(static_cast<double>(a[i * k_ + p]) * b[p * n_ + j]);
        }
        const double bound = 2.0 * (k_ + 1) * FLT_EPSILON * magnitude + 1e-30;
        const double error = std::fabs(c[i * ldc + j] - sum);
        INFO("c(" << i << "," << j << ") = " << c[i * ldc + j] << ", reference " << sum
                  << ", bound " << bound);
        CHECK(error <= bound);  // also fails for NaN
        worst = std::max(worst, error / bound);
      }
      for (size_t j = n_; j < ldc; ++j) {
        INFO("c(" << i << "," << j << ") is outside the tile");
        CHECK(c[i * ldc + j] == sentinel);
      }
    }
    for (size_t j = 0; j < ldc; ++j) {
      INFO("c(" << m_ << "," << j << ") is in the row after the tile");
      CHECK(c[m_ * ldc + j] == sentinel);
    }
    INFO("largest error / bound " << worst);
  }

 private:
  size_t mr_ = 4, a_copies_ = 1, m_ = 4, n_ = kernels::kNR, k_ = 1, cm_stride_ = 0, b_gap_ = 0;
  bool accumulate_ = false;
  uint32_t seed_ = 1;
};

}  // namespace wa::test
