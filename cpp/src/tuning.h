// The tuning constants of the fast paths, in one place (internal): the GEMM's tile and block
// sizes, attention's row and key blocks, the runs and passes of the heads path and the split
// of a decode. Results depend on them only within float rounding, never on the thread count.
// The tests derive the sizes that cross each edge from them (tests/cpp/testing.h).
#pragma once

#include <cstddef>

namespace wa {

namespace kernels {
// The micro-kernels' tiles of c (gemm_kernels.h): every kernel's b panels are kNR wide, its a
// panels as tall as its tile: mr rows, 4 or 6 in the kernels built (gemm/f32_gemm_kernels.def),
// never more than kMaxMR (gemm_select.cpp asserts it of each; the tests size their tile tails
// from it).
constexpr size_t kNR = 8;     // columns of c per tile: two f32x4
constexpr size_t kMaxMR = 6;  // the most rows of c a kernel's tile has
}  // namespace kernels

// ---- GEMM (gemm.cpp) ----

// k per packed slice: a 4x512 a panel (8 KB) and an 8x512 b panel (16 KB) fit a 32 KB L1, and
// each c tile is loaded and stored once per slice, half as often as with 256 (scripts/LAB.md,
// "The GEMM's loop per engine"; scripts/forensics/gemm_probe.mjs measures both).
constexpr size_t kKC = 512;
// Rows of c per task on one thread (more threads: fewer, gemm_split): a packed a block of 64
// rows is 128 KB, in L2.
constexpr size_t kMC = 64;
// Tasks per thread a product (its packing, the backward's kv heads) is split into on more
// than one thread: threads taking tasks from one counter end within a quarter task of each
// other, while a GEMM tile stays large.
constexpr size_t kTasksPerThread = 4;
// Steps of one kNR-column panel per unit of packing (pack_b_unit): 4 KB, so that a thin operand
// (v of d_v = 64: 8 panels) still packs on every thread.
constexpr size_t kPackSteps = 128;

// Below about a 64³ GEMM's worth of multiply-adds, waking the workers costs more than they
// save; each thread a call wakes needs half as much again (threading.h). The pool's cost per
// section is measured by scripts/bench/scaling.mjs (performance.md, "Threads").
constexpr double kSerialFlops = 64.0 * 64.0 * 64.0;

// ---- attention (attention_blocks.h, attention_heads.cpp) ----

// Query rows per task. Small enough to give two threads several tasks at n_q = 64, large
// enough to keep the GEMM kernel's row tiles full.
constexpr size_t kAttentionRowBlock = 32;
// Keys per step of the fused form: a (32,256) score block is 32 KB. Runs of keys (below) are
// multiples of it, so a run ends where a key block does.
constexpr size_t kKeyBlock = 256;
// Keys per packed run of a kv head when k and v come as tensors: the packed run is at most
// 4 MiB (4096 keys of d_k + d_v = 256), so a long prefill needs no whole-head copy.
constexpr size_t kPackedRunFloats = size_t(1) << 20;
// Packed runs per pass of the row-block path: as many kv heads as 4 MiB of them hold (8 heads
// of 512 keys at d_k = d_v = 64 take 2 MiB), at least one.
constexpr size_t kPassFloats = size_t(1) << 20;
// Query rows below which a call is a decode: the keys of each kv head are split into runs,
// each a task with the group's query rows stacked (they share every key panel read), and the
// runs' partial softmax states are combined in run order (split-K, "flash decoding").
constexpr size_t kDecodeRows = kAttentionRowBlock;
constexpr size_t kDecodeMaxStacked = 64;  // stacked query rows per decode task
constexpr size_t kDecodeMinRun = 512;     // keys per decode run, at least
constexpr size_t kDecodeMaxRuns = 64;     // runs per kv head, at most
static_assert(kDecodeMinRun % kKeyBlock == 0, "a decode run is whole key blocks");

// ---- compressed kv caches (kv_i8.cpp) ----

// Values of a key or value row per int8 block, each with its own bfloat16 scale (llama.cpp's
// q8_0 with float32's exponent range in the scale): keys carry outlier channels, and an outlier
// coarsens only its own block's step (kv-caches-and-dtypes.md). A block is four whole v panels.
constexpr size_t kKvQuantBlock = 32;
// Query rows the int8 kernels (kv_i8.cpp) hold in registers at once: 4 rows × 2 i32x4 of
// sums, plus the two int16 halves of a panel row and a row's operand, fit x86's 16 vector
// registers.
constexpr size_t kKvQuantRows = 4;
static_assert(kKvQuantBlock % kernels::kNR == 0, "an int8 block is whole v panels");
static_assert(kKeyBlock % kernels::kNR == 0, "a key block is whole panels");

}  // namespace wa
