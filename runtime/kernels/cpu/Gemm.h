//===- Gemm.h - Single-threaded sgemm tiles for conv and matmul -----------===//
//
// One call multiplies A by B on the calling thread:
//
//   C[m, n] = (accumulate ? C : rowBias broadcast along rows, or 0)
//             + op(A)[m, k] x op(B)[k, n]
//
// with op = identity or transpose and arbitrary leading dimensions
// (row-major storage: A is [m, k], or [k, m] when transposed). Callers split
// their problems over the thread pool themselves and keep each B block small
// enough for L2.
//
// On CPUs with AVX-512F the product runs on weft's own register-tiled
// kernels: a tile of up to 12 rows of C by 32 columns (two zmm vectors per
// row) stays in registers over the k loop, broadcasting one A element per
// row and loading two B vectors per k. A (either layout) and an
// untransposed B are read in place, so im2col can write straight into
// them; a transposed B is packed (transposed) one 32-column panel at a
// time, which pays when m is large enough to reuse each panel. The last
// vector of a row of tiles is masked, so n needs no padding and nothing past
// column n is read. Elsewhere the product goes to OpenBLAS (which the pool
// keeps single-threaded).
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_KERNELS_CPU_GEMM_H
#define WEFT_RUNTIME_KERNELS_CPU_GEMM_H

#include <cstdint>

// Functions carrying WEFT_TARGET_AVX512 may use AVX-512 intrinsics; call
// them only when gemmUsesOwnKernels() (which checks the CPU) is true.
#if defined(__x86_64__) && defined(__GNUC__)
#define WEFT_HAVE_AVX512_KERNELS 1
#define WEFT_TARGET_AVX512                                                     \
  __attribute__((target("avx512f,avx512vl,avx512dq,avx512bw,avx2,fma,bmi2")))
#else
#define WEFT_HAVE_AVX512_KERNELS 0
#endif

namespace weft {
namespace cpu {

/// C = (accumulate ? C : rowBias or 0) + op(A) x op(B); see above.
/// rowBias, when not null, holds m values (one per row of C).
/// Single-threaded.
void gemmTile(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
              bool transA, const float *b, int64_t ldb, bool transB, float *c,
              int64_t ldc, const float *rowBias, bool accumulate);

/// gemmTile without transposes.
inline void gemmTile(int64_t m, int64_t n, int64_t k, const float *a,
                     int64_t lda, const float *b, int64_t ldb, float *c,
                     int64_t ldc, const float *rowBias, bool accumulate) {
  gemmTile(m, n, k, a, lda, false, b, ldb, false, c, ldc, rowBias, accumulate);
}

/// Whether gemmTile runs weft's AVX-512 kernels on this CPU.
bool gemmUsesOwnKernels();

/// Forces gemmTile onto OpenBLAS (true) or back to the automatic choice
/// (false); lets tests cover both paths on one machine.
void gemmForceBlasForTesting(bool force);

} // namespace cpu
} // namespace weft

#endif // WEFT_RUNTIME_KERNELS_CPU_GEMM_H
