// Matrix multiply in the three forms attention needs.
//
// Matrices are row-major float32; ld* is the row stride in floats (ld >= columns), so a
// column slice of a wider matrix (one head of Q, say) is passed without copying.
//   gemm_nn: a (m,k), b (k,n) -> c (m,n) = a·b
//   gemm_nt: a (m,k), b (n,k) -> c (m,n) = a·bᵀ
//   gemm_tn: a (k,m), b (k,n) -> c (m,n) = aᵀ·b
// With accumulate, c += the product instead. k = 0 gives c = 0 (or c unchanged).
// pool splits the work over row and column blocks of c; null runs on the caller.
#pragma once

#include <cstddef>

namespace wa {

class ThreadPool;

enum class Transpose : bool { no = false, yes = true };

// c (m,n) [+]= op(a)·op(b), op(a) (m,k), op(b) (k,n); op = transpose when asked.
// pool: used when the product is large enough to pay for threads, else the caller runs it.
void gemm(Transpose ta, Transpose tb, size_t m, size_t n, size_t k, const float* a, size_t lda,
          const float* b, size_t ldb, float* c, size_t ldc, bool accumulate,
          ThreadPool* pool = nullptr);

inline void gemm_nn(size_t m, size_t n, size_t k, const float* a, size_t lda, const float* b,
                    size_t ldb, float* c, size_t ldc, bool accumulate = false,
                    ThreadPool* pool = nullptr) {
  gemm(Transpose::no, Transpose::no, m, n, k, a, lda, b, ldb, c, ldc, accumulate, pool);
}
inline void gemm_nt(size_t m, size_t n, size_t k, const float* a, size_t lda, const float* b,
                    size_t ldb, float* c, size_t ldc, bool accumulate = false,
                    ThreadPool* pool = nullptr) {
  gemm(Transpose::no, Transpose::yes, m, n, k, a, lda, b, ldb, c, ldc, accumulate, pool);
}
inline void gemm_tn(size_t m, size_t n, size_t k, const float* a, size_t lda, const float* b,
                    size_t ldb, float* c, size_t ldc, bool accumulate = false,
                    ThreadPool* pool = nullptr) {
  gemm(Transpose::yes, Transpose::no, m, n, k, a, lda, b, ldb, c, ldc, accumulate, pool);
}

}  // namespace wa
