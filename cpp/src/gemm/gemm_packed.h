// GEMM with op(b) packed once, for products that reuse it (attention multiplies every block of
// queries by the same k and v). Internal: the packed layout is gemm_kernels.h's.
//   pack_b         op(b) (k,n) -> packed_b_floats(k, n) floats, kNR-column panels of k steps
//   gemm_packed_b  c (m,n) [+]= op(a)·op(b) from it
// gemm() (wa/gemm.h) is exactly pack_b + gemm_packed_b.
#pragma once

#include <cstddef>

#include "gemm/gemm_kernels.h"
#include "wa/gemm.h"

namespace wa {

size_t packed_b_floats(size_t k, size_t n);

// The tasks of a product c (m,n) on `threads` threads: its rows in row_parts blocks of whole
// kernel tiles (tile_mr rows), its columns in col_parts groups of whole kNR panels; task t is row
// block t / col_parts over column group t % col_parts. One thread: blocks of about kMC rows over
// every column; more: at least kTasksPerThread tasks per thread, unless each is one tile.
struct GemmSplit {
  size_t row_parts, col_parts;
  size_t tasks() const { return row_parts * col_parts; }
};
GemmSplit gemm_split(size_t m, size_t n, size_t tile_mr, size_t threads);

// The packing of op(b) (k,n) in units, each up to kPackSteps steps of one panel (panel
// u / parts, steps [u % parts · kPackSteps, ...), parts = ⌈k / kPackSteps⌉): pack_b_units of
// them, each written by pack_b_unit and by no other, for callers that pack several operands in
// one parallel call.
size_t pack_b_units(size_t k, size_t n);
void pack_b_unit(Transpose tb, size_t k, size_t n, const float* b, size_t ldb, float* packed,
                 size_t u);

// op(b) (k,n) -> packed. pool spreads the units over all its threads (null: all on the
// caller); the caller decides whether the work is worth threads (threading.h).
void pack_b(Transpose tb, size_t k, size_t n, const float* b, size_t ldb, float* packed,
            ThreadPool* pool = nullptr);

// c (m,n) [+]= op(a) (m,k) · op(b) (k,n), op(b) packed with k = packed_k (the panels' stride);
// packed_b may point inside a packed operand (packed_b_block) to use a sub-block of it.
void gemm_packed_b(Transpose ta, size_t m, size_t n, size_t k, const float* a, size_t lda,
                   const float* packed_b, size_t packed_k, float* c, size_t ldc, bool accumulate,
                   ThreadPool* pool = nullptr);

// Rows [p0, ...) and columns [j0, ...) of a packed op(b) (packed_k,n), j0 a multiple of kNR:
// pass it to gemm_packed_b with the same packed_k.
inline const float* packed_b_block(const float* packed, size_t packed_k, size_t p0, size_t j0) {
  return packed + j0 * packed_k + p0 * kernels::kNR;
}

}  // namespace wa
