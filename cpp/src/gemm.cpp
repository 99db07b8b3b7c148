// GEMM dispatch: packing, cache blocking, tails and threads around the 4x8 micro-kernel.
//
// op(b) is packed once, whole, into NR-column panels (zero-padded); each task then owns a
// block of c (MC rows x NC columns) and, per KC slice of k, packs its rows of op(a) into
// MR-row panels and runs the kernel over the block, b panels outer, a panels inner (BLIS
// order: one b panel stays in L1 while the a block streams from L2). Transposed operands
// are handled by the packing, so all three forms run the same kernel. A task's result
// depends only on its block, never on the thread running it.
#include <algorithm>
#include <cstring>

#include "gemm_kernels.h"
#include "scratch.h"
#include "wa/gemm.h"
#include "wa/thread_pool.h"

namespace wa {
namespace {

using kernels::kGemmMR;
using kernels::kGemmNR;

constexpr size_t kKC = 256;  // k per packed slice: a 4x256 a panel is 4 KB, an 8x256 b panel 8 KB
constexpr size_t kMC = 64;   // rows of c per task: its packed a block is 64 KB, in L2
constexpr size_t kNC = 256;  // columns of c per task
constexpr size_t kSerialFlops = 64 * 64 * 64;  // below this, waking threads costs more than it saves

// op(x) as a (rows,cols) matrix over the stored one.
struct Operand {
  const float* data;
  size_t ld;
  Transpose t;
  float at(size_t r, size_t c) const { return t == Transpose::yes ? data[c * ld + r] : data[r * ld + c]; }
};

size_t round_up(size_t x, size_t to) { return (x + to - 1) / to * to; }

// op(a) (m,k): rows [i0,i0+mc) x k [p0,p0+kc) -> MR-row panels, (kc,MR) each.
void pack_a(const Operand& a, size_t m, size_t i0, size_t mc, size_t p0, size_t kc, float* dst) {
  for (size_t i = i0; i < i0 + mc; i += kGemmMR) {
    const size_t mr = std::min(kGemmMR, m - i);
    for (size_t p = p0; p < p0 + kc; ++p) {
      for (size_t r = 0; r < kGemmMR; ++r) dst[r] = r < mr ? a.at(i + r, p) : 0.0f;
      dst += kGemmMR;
    }
  }
}

// op(b) (k,n): columns [j0,j0+NR) -> one panel (k,NR).
void pack_b_panel(const Operand& b, size_t k, size_t n, size_t j0, float* dst) {
  const size_t nr = std::min(kGemmNR, n - j0);
  if (b.t == Transpose::no && nr == kGemmNR) {
    for (size_t p = 0; p < k; ++p, dst += kGemmNR)
      std::memcpy(dst, b.data + p * b.ld + j0, kGemmNR * sizeof(float));
    return;
  }
  for (size_t p = 0; p < k; ++p, dst += kGemmNR)
    for (size_t c = 0; c < kGemmNR; ++c) dst[c] = c < nr ? b.at(p, j0 + c) : 0.0f;
}

}  // namespace

void gemm(Transpose ta, Transpose tb, size_t m, size_t n, size_t k, const float* a, size_t lda,
          const float* b, size_t ldb, float* c, size_t ldc, bool accumulate, ThreadPool* pool) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    if (!accumulate)
      for (size_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, 0.0f);
    return;
  }
  if (static_cast<double>(m) * n * k < kSerialFlops) pool = nullptr;

  const Operand opa{a, lda, ta}, opb{b, ldb, tb};
  const size_t panels = (n + kGemmNR - 1) / kGemmNR;
  float* packed_b = thread_scratch(ScratchSlot::gemm_b, panels * kGemmNR * k);

  // for (panel = 0; panel < panels; ++panel) pack panel; in chunks of 8 panels per task
  constexpr size_t kPanelsPerTask = 8;
  parallel_for(pool, (panels + kPanelsPerTask - 1) / kPanelsPerTask, [&](size_t t) {
    const size_t end = std::min(panels, (t + 1) * kPanelsPerTask);
    for (size_t jp = t * kPanelsPerTask; jp < end; ++jp)
      pack_b_panel(opb, k, n, jp * kGemmNR, packed_b + jp * kGemmNR * k);
  });

  const size_t row_blocks = (m + kMC - 1) / kMC, col_blocks = (n + kNC - 1) / kNC;
  parallel_for(pool, row_blocks * col_blocks, [&](size_t t) {
    const size_t i0 = t / col_blocks * kMC, j0 = t % col_blocks * kNC;
    const size_t mc = std::min(kMC, m - i0), nc = std::min(kNC, n - j0);
    float* packed_a = thread_scratch(ScratchSlot::gemm_a, round_up(mc, kGemmMR) * kKC);
    for (size_t p0 = 0; p0 < k; p0 += kKC) {
      const size_t kc = std::min(kKC, k - p0);
      pack_a(opa, m, i0, mc, p0, kc, packed_a);
      for (size_t j = j0; j < j0 + nc; j += kGemmNR) {
        const float* b_panel = packed_b + j * k + p0 * kGemmNR;  // panel j/NR starts at j*k
        const size_t nr = std::min(kGemmNR, n - j);
        for (size_t i = i0; i < i0 + mc; i += kGemmMR) {
          kernels::f32_gemm_4x8_vec128(std::min(kGemmMR, m - i), nr, kc,
                                       packed_a + (i - i0) * kc, b_panel, c + i * ldc + j, ldc,
                                       accumulate || p0 > 0);
        }
      }
    }
  });
}

}  // namespace wa
