//===- AttentionCommon.cuh - Shared by the attention kernels --*- CUDA -*-===//
//
// What Attention.cu (entry points, the SIMT kernels, D_i) and AttentionTc.cu
// (the tensor-core kernels) share: a call's shape as the kernels take it,
// the causal bounds, and the tensor-core launchers' declarations (explicitly
// instantiated for bf16 and f16 in AttentionTc.cu). Attention.cu describes
// the algorithms.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_KERNELS_CUDA_ATTENTIONCOMMON_CUH
#define WEFT_RUNTIME_KERNELS_CUDA_ATTENTIONCOMMON_CUH

#include "runtime/kernels/cpu/AttentionShape.h"
#include "runtime/kernels/cuda/MathUtil.cuh"

#include <cuda_runtime.h>

#include <cstdint>

namespace weft::cuda::attention {

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.69314718055994531f;

/// A call's shape, as the kernels take it.
struct AttnDims {
  int64_t batch;
  int sq, sk, d, dv;
  int off; // sk - sq: query i sees key j <= i + off (causal)
  bool causal;
  float scale;
  float scaleLog2; // scale * log2(e)
  /// Problems interleaved row by row (seq-major [N, S, H, cols]: problem
  /// b = n * heads + h); 1: problem after problem ([B, S, cols]).
  int heads;
};

/// Where row i of problem b starts in a tensor of `rows` rows of `cols`
/// elements per problem (q, k, v, o and their gradients).
static __host__ __device__ inline int64_t rowOf(const AttnDims &p, int64_t b,
                                                int64_t i, int rows, int cols) {
  return cpu::attentionRow(b, i, rows, cols, p.heads);
}

/// The distance between a problem's consecutive rows of `cols` elements.
static __host__ __device__ inline int64_t rowStride(const AttnDims &p,
                                                    int cols) {
  return int64_t(p.heads) * cols;
}

/// The last key any query of rows [q0, q1) sees, or -1.
static __host__ __device__ inline int lastKeySeen(const AttnDims &p, int q0,
                                                  int q1) {
  if (p.sk == 0 || q1 <= q0)
    return -1;
  if (!p.causal)
    return p.sk - 1;
  const int64_t j = static_cast<int64_t>(q1 - 1) + p.off;
  return j < 0 ? -1 : (j >= p.sk ? p.sk - 1 : static_cast<int>(j));
}

/// First query that sees key j (Sq when none does).
static __host__ __device__ inline int firstQuerySeeing(const AttnDims &p,
                                                       int j) {
  if (!p.causal)
    return 0;
  const int64_t i = static_cast<int64_t>(j) - p.off;
  return i < 0 ? 0 : (i > p.sq ? p.sq : static_cast<int>(i));
}

template <class T> inline const T *in(const void *x) {
  return static_cast<const T *>(x);
}
template <class T> inline T *out(void *x) { return static_cast<T *>(x); }

/// Whether the tensor-core kernels were compiled with mma.sync (sm_80+).
bool tensorCoresCompiled();

/// The tensor-core forward and backward (T: __nv_bfloat16 or __half); the
/// backward reads D_i from `dvec` and launches the dK/dV then the dQ kernel.
template <class T>
void launchForwardTc(const void *q, const void *k, const void *v, void *o,
                     float *lse, const AttnDims &p, cudaStream_t stream);
template <class T>
void launchBackwardTc(const void *q, const void *k, const void *v,
                      const void *dout, const float *lse, const float *dvec,
                      void *dq, void *dk, void *dv, const AttnDims &p,
                      cudaStream_t stream);

} // namespace weft::cuda::attention

#endif // WEFT_RUNTIME_KERNELS_CUDA_ATTENTIONCOMMON_CUH
