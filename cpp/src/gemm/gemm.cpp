// GEMM dispatch: packing, cache blocking, tails and threads around the micro-kernel
// (gemm_select.h: the kernel of mr x kNR tiles chosen where the code runs).
//
// op(b) is packed once, whole, into kNR-column panels (zero-padded; layout in gemm_kernels.h);
// c is then split in 2-D tiles (gemm_split: blocks of rows over groups of columns, as many as
// the threads need, pthreadpool's parallelize_2d_tile_2d and BLIS's jc/ic partition), and each
// task, per kKC slice of k, packs its rows of op(a) into panels of the kernel's tile rows once
// and runs the kernel over its columns, b panels outer, a panels inner (BLIS order: one b panel
// stays in L1 while the a block streams from L2). Transposed operands are handled by the
// packing, so all three forms run the same kernel. k is never split and tiles start on whole
// kernel tiles and panels, so every element of c is the same sum in the same order whatever the
// tiles and the thread running them: results do not depend on the thread count.
#include <algorithm>

#include "gemm/gemm_kernels.h"
#include "gemm/gemm_packed.h"
#include "gemm/gemm_select.h"
#include "runtime/scratch.h"
#include "runtime/sizes.h"
#include "runtime/threading.h"
#include "simd.h"
#include "tuning.h"
#include "wa/thread_pool.h"

namespace wa {
namespace {

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
      // a stored (k,m): a step's tile_mr values are contiguous, copied a vector at a time (a
      // memcpy is a call per step in wasm: scripts/LAB.md, "Copies and conversions in the small")
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

GemmSplit gemm_split(size_t m, size_t n, size_t tile_mr, size_t threads) {
  const size_t tiles = (m + tile_mr - 1) / tile_mr, panels = (n + kNR - 1) / kNR;
  // blocks of about kMC rows over every column: each task packs its rows of op(a) once per k
  // slice and writes whole rows of c (no cache line of c shared with another task)
  GemmSplit split{std::min(tiles, (m + kMC - 1) / kMC), 1};
  if (threads <= 1) return split;
  // then the longer side of a tile halved until every thread has kTasksPerThread tasks:
  // columns first (a column group re-packs the block's a rows, a row block re-reads b's panels)
  while (split.tasks() < kTasksPerThread * threads) {
    const double rows = double(m) / split.row_parts, cols = double(n) / split.col_parts;
    if (split.col_parts < panels && (cols >= rows || split.row_parts == tiles))
      split.col_parts = std::min(panels, 2 * split.col_parts);
    else if (split.row_parts < tiles)
      split.row_parts = std::min(tiles, 2 * split.row_parts);
    else
      break;  // one tile per task
  }
  return split;
}

size_t pack_b_units(size_t k, size_t n) {
  return (n + kNR - 1) / kNR * ((k + kPackSteps - 1) / kPackSteps);
}

void pack_b_unit(Transpose tb, size_t k, size_t n, const float* b, size_t ldb, float* packed,
                 size_t u) {
  const size_t parts = (k + kPackSteps - 1) / kPackSteps;
  const size_t jp = u / parts, p0 = u % parts * kPackSteps, steps = std::min(kPackSteps, k - p0);
  // steps [p0, p0 + steps) of panel jp: op(b) from row p0 on, the panel from step p0 on
  const float* from = b + (tb == Transpose::no ? p0 * ldb : p0);
  pack_b_panel(tb, from, ldb, steps, n, jp * kNR, packed + jp * kNR * k + p0 * kNR);
}

void pack_b(Transpose tb, size_t k, size_t n, const float* b, size_t ldb, float* packed,
            ThreadPool* pool) {
  const size_t units = pack_b_units(k, n);
  const size_t threads = pool ? static_cast<size_t>(pool->threads()) : 1;
  const size_t tasks = std::min(units, threads == 1 ? 1 : kTasksPerThread * threads);
  // for (u = 0; u < units; ++u) pack unit u; in tasks of units / tasks consecutive units
  parallel_for(pool, tasks, threads, [&](size_t t) {
    for (size_t u = t * units / tasks; u < (t + 1) * units / tasks; ++u)
      pack_b_unit(tb, k, n, b, ldb, packed, u);
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
  const double multiply_adds = static_cast<double>(m) * n * k;
  const size_t threads = threads_for(pool, multiply_adds);
  const kernels::GemmKernel& kernel = kernels::gemm_kernel_for_rows(m);
  const size_t tile_mr = kernel.mr;

  // Row block r: tiles [r·tiles/R, (r+1)·tiles/R) of tile_mr rows (blocks differ by a tile at
  // most); column group g: panels [g·panels/C, (g+1)·panels/C) of kNR columns.
  const GemmSplit split = gemm_split(m, n, tile_mr, threads);
  const size_t tiles = (m + tile_mr - 1) / tile_mr, panels = (n + kNR - 1) / kNR;
  const size_t R = split.row_parts, C = split.col_parts;
  // (r, g): row block r, column group g
  parallel_for_2d(pool, R, C, threads, [&](size_t r, size_t g) {
    const size_t i0 = r * tiles / R * tile_mr;
    const size_t mc = std::min(m, (r + 1) * tiles / R * tile_mr) - i0;
    const size_t j_first = g * panels / C * kNR;
    const size_t j_end = std::min(n, (g + 1) * panels / C * kNR);
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
      // the group's columns, panel after panel
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
  // packed on the threads the product runs on (none when it runs on the caller alone)
  ThreadPool* packing = threads_for(pool, static_cast<double>(m) * n * k) > 1 ? pool : nullptr;
  pack_b(tb, k, n, b, ldb, packed, packing);
  gemm_packed_b(ta, m, n, k, a, lda, packed, k, c, ldc, accumulate, pool);
}

}  // namespace wa
