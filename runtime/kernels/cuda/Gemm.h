//===- Gemm.h - Row-major GEMM on the compute stream (cuBLASLt) -----------===//
//
// The matrix products of the GPU math kernels (matmul, and conv and its
// gradients after im2col) go through one entry point that speaks row-major
// like the rest of the runtime. It runs cuBLASLt, whose layouts are
// column-major, by computing C^T = op(B)^T op(A)^T: a row-major matrix read
// as column-major is its transpose, so only the operand order and the
// dimensions swap, never the data.
//
// Each distinct problem (dtypes, shape, leading dims, batch strides, pointer
// alignments) gets its descriptors built and an algorithm chosen by
// cuBLASLt's heuristic once; later calls reuse them, so the same shape
// always runs the same algorithm and repeats bitwise. f32 products compute
// in full fp32 (CUBLAS_COMPUTE_32F) so GPU plans match the CPU's to 1e-5;
// WEFT_CUDA_TF32=1 in the environment switches them to TF32 tensor cores.
// bf16 and f16 products accumulate in fp32 and round once to the output.
// When cuBLASLt offers no algorithm (an odd layout), a plain tiled kernel
// with fp32 accumulation computes the product instead.
//
// Host-only header: the tests include it to exercise the fallback.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_KERNELS_CUDA_GEMM_H
#define WEFT_RUNTIME_KERNELS_CUDA_GEMM_H

#include <library_types.h>

#include <cstdint>

namespace weft {
namespace cuda {
namespace math {

/// One operand of gemm(): row-major storage (a [rows, cols] matrix with
/// `ld` elements per row), used transposed when `trans`; consecutive
/// matrices of a batch are `stride` elements apart (0: one matrix shared by
/// the whole batch).
struct GemmOperand {
  const void *data = nullptr;
  cudaDataType_t type = CUDA_R_32F;
  bool trans = false;
  int64_t ld = 0;
  int64_t stride = 0;
};

/// The output of gemm(): row-major [m, n] matrices, `ld` elements per row,
/// `stride` elements apart.
struct GemmResult {
  void *data = nullptr;
  cudaDataType_t type = CUDA_R_32F;
  int64_t ld = 0;
  int64_t stride = 0;
};

/// For b in [0, batch): C_b = op(A_b)[m, k] x op(B_b)[k, n] + beta * C_b,
/// enqueued on computeStream(). A and B have the same dtype (f32, bf16 or
/// f16); C is that dtype or f32. `kernel` names the weft kernel in errors.
/// k == 0 sets C to beta * C.
void gemm(const char *kernel, int64_t m, int64_t n, int64_t k, int64_t batch,
          const GemmOperand &a, const GemmOperand &b, const GemmResult &c,
          float beta);

/// Routes every gemm() through the fallback kernel (true) or back to
/// cuBLASLt (false), so tests cover both on one GPU.
void gemmForceFallbackForTesting(bool force);

/// dst[i] = src[i] converted between WEFT_F32, WEFT_BF16 and WEFT_F16
/// (narrowing rounds to nearest even), enqueued on computeStream().
void convertElements(const void *src, int64_t srcDType, void *dst,
                     int64_t dstDType, int64_t n);

} // namespace math
} // namespace cuda
} // namespace weft

#endif // WEFT_RUNTIME_KERNELS_CUDA_GEMM_H
