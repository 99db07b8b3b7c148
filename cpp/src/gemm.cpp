// GEMM dispatch: packing, cache blocking, tails and threads around the micro-kernel
// (gemm_select.h: the kernel of mr x kNR tiles chosen where the code runs).
//
// op(b) is packed once, whole, into kNR-column panels (zero-padded; layout in gemm_kernels.h);
// each task then owns about kMC rows of c over a group of kNC-column blocks (every column, when m has
// kGemmMinTasks row blocks) and, per kKC slice of k, packs its rows of op(a) into panels of the
// kernel's tile rows once and runs the kernel over its columns, b panels outer, a panels inner (BLIS
// order: one b panel stays in L1 while the a block streams from L2). Transposed operands
// are handled by the packing, so all three forms run the same kernel. A task's result
// depends only on its block, never on the thread running it.
#include <algorithm>

#include "gemm_kernels.h"
#include "gemm_packed.h"
#include "gemm_select.h"
#include "scratch.h"
#include "simd.h"
#include "sizes.h"
#include "threading.h"
#include "tuning.h"
#include "wa/thread_pool.h"

namespace wa {
namespace {

using kernels::kMaxMR;
using kernels::kNR;
using namespace simd;

constexpr size_t kLanes = 4;  // floats per f32x4
static_assert(kNR == 2 * kLanes, "the packing below moves a b tile row as 2 vectors");

size_t round_up(size_t x, size_t to) { return (x + to - 1) / to * to; }

// n packed a values -> each in the four lanes of a vector at dst + 4·i (GemmKernel::a_copies 4)
void broadcast_a_panels(const float* src, size_t n, float* dst) {
  for (size_t i = 0; i < n; ++i) store(dst + 4 * i, splat(src[i]));
}

// x (rows,cols) row stride ld: element (r,c), for the generic (edge) packing paths.
float at(const float* x, size_t ld, Transpose t, size_t r, size_t c) {
  return t == Transpose::yes ? x[c * ld + r] : x[r * ld + c];
}

// op(a) (m,k), rows [i0,i0+mc) x k [p0,p0+kc) -> tile_mr-row panels (the kernel's tile rows),
// each (kc,tile_mr): step p holds a(i..i+tile_mr-1, p).
void pack_a(Transpose ta, const float* a, size_t lda, size_t m, size_t i0, size_t mc, size_t p0,
            size_t kc, size_t tile_mr, float* dst) {
  for (size_t i = i0; i < i0 + mc; i += tile_mr, dst += tile_mr * kc) {
    const size_t mr = std::min(tile_mr, m - i);
    size_t r0 = 0;  // rows [0, r0) of the panel are packed
    if (mr == tile_mr && ta == Transpose::yes) {
      // a stored (k,m): the tile_mr values of a step are contiguous; copied a vector at a time
      // (a memcpy of tile_mr floats is a call per step in wasm: 8 % of a backward's time)
      const size_t vec = tile_mr / kLanes * kLanes;
      for (size_t p = 0; p < kc; ++p) {
        const float* src = a + (p0 + p) * lda + i;
        float* d = dst + p * tile_mr;
        size_t q = 0;
        for (; q < vec; q += kLanes) store(d + q, load(src + q));
        for (; q < tile_mr; ++q) d[q] = src[q];
      }
      r0 = tile_mr;
    } else if (ta == Transpose::no) {
      // a stored (m,k): kLanes rows at a time, kLanes steps at a time, transposed in registers
      for (; r0 + kLanes <= mr; r0 += kLanes) {
        const float* r = a + (i + r0) * lda + p0;
        size_t p = 0;
        for (; p + kLanes <= kc; p += kLanes) {
          f32x4 v0 = load(r + p), v1 = load(r + lda + p), v2 = load(r + 2 * lda + p);
          f32x4 v3 = load(r + 3 * lda + p);
          transpose4x4(v0, v1, v2, v3);
          float* d = dst + p * tile_mr + r0;
          store(d, v0), store(d + tile_mr, v1), store(d + 2 * tile_mr, v2);
          store(d + 3 * tile_mr, v3);
        }
        for (; p < kc; ++p)
          for (size_t q = r0; q < r0 + kLanes; ++q) dst[p * tile_mr + q] = r[(q - r0) * lda + p];
      }
    }
    for (size_t p = 0; p < kc; ++p)
      for (size_t q = r0; q < tile_mr; ++q)
        dst[p * tile_mr + q] = q < mr ? at(a, lda, ta, i + q, p0 + p) : 0.0f;
  }
}

// op(b) (k,n), columns [j0,j0+kNR) -> one panel (k,kNR): step p holds b(p, j0..j0+kNR-1).
void pack_b_panel(Transpose tb, const float* b, size_t ldb, size_t k, size_t n, size_t j0,
                  float* dst) {
  const size_t nr = std::min(kNR, n - j0);
  size_t p = 0;
  if (nr == kNR && tb == Transpose::no) {
    // b stored (k,n): a step is kNR contiguous floats, two vectors
    for (; p < k; ++p) {
      store(dst + p * kNR, load(b + p * ldb + j0));
      store(dst + p * kNR + kLanes, load(b + p * ldb + j0 + kLanes));
    }
  } else if (nr == kNR) {
    // b stored (n,k): kNR rows, kLanes steps at a time, as two 4x4 transposes
    const float* r0 = b + j0 * ldb;
    for (; p + kLanes <= k; p += kLanes) {
      for (size_t half = 0; half < 2; ++half) {
        const float* r = r0 + half * kLanes * ldb + p;
        f32x4 v0 = load(r), v1 = load(r + ldb), v2 = load(r + 2 * ldb), v3 = load(r + 3 * ldb);
        transpose4x4(v0, v1, v2, v3);
        float* d = dst + p * kNR + half * kLanes;
        store(d, v0), store(d + kNR, v1), store(d + 2 * kNR, v2), store(d + 3 * kNR, v3);
      }
    }
  }
  for (; p < k; ++p)
    for (size_t c = 0; c < kNR; ++c) dst[p * kNR + c] = c < nr ? at(b, ldb, tb, p, j0 + c) : 0.0f;
}

}  // namespace

size_t packed_b_floats(size_t k, size_t n) { return checked_product({round_up(n, kNR), k}); }

void pack_b(Transpose tb, size_t k, size_t n, const float* b, size_t ldb, float* packed,
            ThreadPool* pool) {
  const size_t panels = (n + kNR - 1) / kNR;
  // for (panel = 0; panel < panels; ++panel) pack it; in tasks of kPackPanelsPerTask panels
  parallel_for(pool, (panels + kPackPanelsPerTask - 1) / kPackPanelsPerTask, [&](size_t t) {
    const size_t end = std::min(panels, (t + 1) * kPackPanelsPerTask);
    for (size_t jp = t * kPackPanelsPerTask; jp < end; ++jp)
      pack_b_panel(tb, b, ldb, k, n, jp * kNR, packed + jp * kNR * k);  // panel jp: packed_b_block
  });
}

void gemm_packed_b(Transpose ta, size_t m, size_t n, size_t k, const float* a, size_t lda,
                   const float* packed_b, size_t packed_k, float* c, size_t ldc, bool accumulate,
                   ThreadPool* pool) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    if (!accumulate)
      for (size_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, 0.0f);
    return;
  }
  pool = pool_for(pool, static_cast<double>(m) * n * k);
  const kernels::GemmKernel& kernel = kernels::gemm_kernel_for_rows(m);
  const size_t tile_mr = kernel.mr;

  // Tasks own whole rows of c blocks (about kMC rows, every column) when there are rows enough
  // for kGemmMinTasks: each packs its rows of op(a) once per k slice, and no two tasks write the same
  // row of c (a cache line at a block edge would go back and forth between two cores). With
  // fewer row blocks, the columns are split in groups of blocks too. The m / tile_mr tiles of
  // rows are dealt out evenly, so row blocks differ by a tile at most: kMC / tile_mr · tile_mr
  // rows each would leave a short last block where tile_mr does not divide kMC (512 rows of 6x8
  // tiles: 8 blocks of 60 rows and one of 32, which 2 threads split 4.53 : 4 at best).
  const size_t tiles = (m + tile_mr - 1) / tile_mr;
  const size_t row_blocks = (m + kMC - 1) / kMC, col_blocks = (n + kNC - 1) / kNC;
  const size_t groups = std::min(col_blocks, (kGemmMinTasks + row_blocks - 1) / row_blocks);
  const size_t group_blocks = (col_blocks + groups - 1) / groups;  // column blocks per group
  const size_t col_groups = (col_blocks + group_blocks - 1) / group_blocks;
  // for (t = 0; t < row_blocks·col_groups; ++t)
  //   row block t / col_groups: tiles [r·tiles/row_blocks, (r+1)·tiles/row_blocks) of rows;
  //   column group t % col_groups
  parallel_for(pool, row_blocks * col_groups, [&](size_t t) {
    const size_t r = t / col_groups;
    const size_t i0 = r * tiles / row_blocks * tile_mr;
    const size_t mc = std::min(m, (r + 1) * tiles / row_blocks * tile_mr) - i0;
    const size_t j_first = t % col_groups * group_blocks * kNC;
    const size_t j_end = std::min(n, j_first + group_blocks * kNC);
    // a kernel whose panels hold each a value a_copies times: packed as usual after where the
    // copies go, then each value written a_copies times (broadcast_a_panels)
    const size_t panel_floats = round_up(mc, tile_mr) * kKC, copies = kernel.a_copies;
    float* packed_a =
        thread_scratch(ScratchSlot::gemm_a, panel_floats * (copies == 1 ? 1 : copies + 1));
    float* packed_once = packed_a + (copies == 1 ? 0 : panel_floats * copies);
    for (size_t p0 = 0; p0 < k; p0 += kKC) {
      const size_t kc = std::min(kKC, k - p0);
      pack_a(ta, a, lda, m, i0, mc, p0, kc, tile_mr, packed_once);
      if (copies != 1) broadcast_a_panels(packed_once, round_up(mc, tile_mr) * kc, packed_a);
      // the group's columns (kNC divides into kNR panels), panel after panel
      kernel.run(mc, j_end - j_first, kc, packed_a, packed_b_block(packed_b, packed_k, p0, j_first),
                 kNR * packed_k, c + i0 * ldc + j_first, ldc, accumulate || p0 > 0);
    }
  });
}

void gemm(Transpose ta, Transpose tb, size_t m, size_t n, size_t k, const float* a, size_t lda,
          const float* b, size_t ldb, float* c, size_t ldc, bool accumulate, ThreadPool* pool) {
  if (m == 0 || n == 0 || k == 0)
    return gemm_packed_b(ta, m, n, k, a, lda, nullptr, k, c, ldc, accumulate, pool);
  float* packed = thread_scratch(ScratchSlot::gemm_b, packed_b_floats(k, n));
  pool = pool_for(pool, static_cast<double>(m) * n * k);  // for the packing and the product
  pack_b(tb, k, n, b, ldb, packed, pool);
  gemm_packed_b(ta, m, n, k, a, lda, packed, k, c, ldc, accumulate, pool);
}

}  // namespace wa
