//===- MathUtil.cuh - Shared helpers of the GPU math kernels --------------===//
//
// Device and host helpers of the GEMM, normalization, softmax, loss,
// optimizer, convolution and pooling kernels (MatMul.cu, RowOps.cu,
// Loss.cu, Optimizers.cu, Conv.cu, Pooling.cu):
//
// - element loads and stores in f32 / bf16 / f16 (arithmetic is always
//   f32; narrowing rounds to nearest even once, as the CPU kernels do);
// - warp and block reductions whose summation order is fixed by the launch
//   shape alone, so every call repeats bitwise (a resumed training run
//   must follow the uninterrupted one);
// - a carve-up of one weft::cuda::scratch() buffer into a kernel call's
//   temporaries (scratch() hands out one buffer, reused by the next call);
// - the window geometry of conv and the pools, usable on the device.
//
// Everything lives in weft::cuda::math; device helpers are static inline
// so each .cu file keeps its own copy (no relocatable device code).
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_KERNELS_CUDA_MATHUTIL_CUH
#define WEFT_RUNTIME_KERNELS_CUDA_MATHUTIL_CUH

#include "runtime/cuda/CudaRuntime.h"
#include "runtime/kernels/cpu/ConvGeometry.h"
#include "runtime/kernels/cuda/Gemm.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstddef>
#include <cstdint>

namespace weft {
namespace cuda {
namespace math {

//===-- Host helpers ------------------------------------------------------===//

__host__ __device__ inline int64_t ceilDiv(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

/// Blocks of a launch over `items` items, `perBlock` per block; capped, so
/// the kernels loop over the rest.
inline unsigned gridFor(int64_t items, int64_t perBlock) {
  int64_t blocks = ceilDiv(items, perBlock);
  if (blocks < 1)
    blocks = 1;
  const int64_t cap = int64_t(1) << 30;
  return static_cast<unsigned>(blocks > cap ? cap : blocks);
}

/// Offsets of a kernel call's temporaries inside one scratch() buffer, each
/// aligned to 256 bytes (what cuBLASLt and vector loads like best).
class ScratchPlan {
public:
  /// Reserves `bytes`; returns the reservation's index for at().
  int add(size_t bytes) {
    offsets_[count_] = total_;
    total_ += (bytes + 255) / 256 * 256;
    return count_++;
  }
  /// Takes the buffer (one scratch() call); reservations are then valid
  /// until the next scratch() call of any kernel.
  void allocate() {
    base_ = total_ ? static_cast<char *>(weft::cuda::scratch(total_)) : nullptr;
  }
  template <class T> T *at(int index) const {
    return reinterpret_cast<T *>(base_ + offsets_[index]);
  }

private:
  static constexpr int kMax = 8;
  size_t offsets_[kMax] = {};
  size_t total_ = 0;
  int count_ = 0;
  char *base_ = nullptr;
};

//===-- Element access ----------------------------------------------------===//

static __device__ inline float toFloat(float v) { return v; }
static __device__ inline float toFloat(__nv_bfloat16 v) {
  return __bfloat162float(v);
}
static __device__ inline float toFloat(__half v) { return __half2float(v); }

static __device__ inline void storeFloat(float *p, float v) { *p = v; }
static __device__ inline void storeFloat(__nv_bfloat16 *p, float v) {
  *p = __float2bfloat16_rn(v);
}
static __device__ inline void storeFloat(__half *p, float v) {
  *p = __float2half_rn(v);
}

/// Element i of a buffer whose dtype (WEFT_F32 or WEFT_BF16) is only known
/// at run time: the less hot conv kernels take any mix of the two, as the
/// CPU's runBF16AsF32 does, without one instantiation per combination.
static __device__ inline float loadAs(const void *p, int64_t i, bool bf16) {
  return bf16 ? __bfloat162float(static_cast<const __nv_bfloat16 *>(p)[i])
              : static_cast<const float *>(p)[i];
}
static __device__ inline void storeAs(void *p, int64_t i, bool bf16, float v) {
  if (bf16)
    static_cast<__nv_bfloat16 *>(p)[i] = __float2bfloat16_rn(v);
  else
    static_cast<float *>(p)[i] = v;
}

//===-- Reductions --------------------------------------------------------===//

constexpr float kNegInf = -__builtin_huge_valf();

/// Sum over the 32 lanes of a warp (all lanes get the same bits: the
/// butterfly adds the same pairs in every lane, and float addition is
/// commutative).
static __device__ inline float warpSum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}
static __device__ inline double warpSum(double v) {
  for (int offset = 16; offset > 0; offset >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}
/// Largest value over the warp. NaN never enters (as the CPU's rowMax,
/// partial maxima start at -inf and `x > m` skips NaN).
static __device__ inline float warpMax(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    float o = __shfl_xor_sync(0xffffffffu, v, offset);
    v = o > v ? o : v;
  }
  return v;
}

/// Sum over the block (blockDim.x a multiple of 32, at most 1024); every
/// thread gets the result. `shared` holds 32 values. Safe to call again at
/// once with the same `shared`.
template <class T> static __device__ inline T blockSum(T v, T *shared) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int warps = blockDim.x >> 5;
  v = warpSum(v);
  __syncthreads(); // a previous call may still read `shared`
  if (lane == 0)
    shared[warp] = v;
  __syncthreads();
  // Every warp reduces the partials the same way, so all threads agree.
  T t = lane < warps ? shared[lane] : T(0);
  return warpSum(t);
}

static __device__ inline float blockMax(float v, float *shared) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int warps = blockDim.x >> 5;
  v = warpMax(v);
  __syncthreads();
  if (lane == 0)
    shared[warp] = v;
  __syncthreads();
  float t = lane < warps ? shared[lane] : kNegInf;
  return warpMax(t);
}

//===-- Window geometry ---------------------------------------------------===//

/// WindowGeometry (runtime/kernels/cpu/ConvGeometry.h: 1-3 spatial dims
/// normalized to 3) as a kernel argument.
struct Window {
  int64_t in[3], out[3], kernel[3], stride[3], padBegin[3], padEnd[3],
      dilation[3];

  static Window from(const weft::cpu::WindowGeometry &g) {
    Window w;
    for (int d = 0; d < 3; ++d) {
      w.in[d] = g.in[d];
      w.out[d] = g.out[d];
      w.kernel[d] = g.kernel[d];
      w.stride[d] = g.stride[d];
      w.padBegin[d] = g.padBegin[d];
      w.padEnd[d] = g.padEnd[d];
      w.dilation[d] = g.dilation[d];
    }
    return w;
  }

  __host__ __device__ int64_t inSize() const { return in[0] * in[1] * in[2]; }
  __host__ __device__ int64_t outSize() const {
    return out[0] * out[1] * out[2];
  }
  __host__ __device__ int64_t taps() const {
    return kernel[0] * kernel[1] * kernel[2];
  }

  /// Taps k in [0, kernel) of output position o along dim d that lie in
  /// [0, in): [lo, hi) (WindowGeometry::validTaps).
  __host__ __device__ void validTaps(int d, int64_t o, int64_t &lo,
                                     int64_t &hi) const {
    const int64_t start = o * stride[d] - padBegin[d];
    const int64_t dil = dilation[d];
    lo = start >= 0 ? 0 : (-start + dil - 1) / dil;
    const int64_t top = in[d] - 1 - start;
    hi = top < 0 ? 0 : top / dil + 1;
    if (hi > kernel[d])
      hi = kernel[d];
    if (lo > hi)
      lo = hi;
  }

  /// Input index along dim d read by tap k of output o (may be outside).
  __host__ __device__ int64_t inputIndex(int d, int64_t o, int64_t k) const {
    return o * stride[d] - padBegin[d] + k * dilation[d];
  }

  /// Output index along d whose tap k reads input index i, or -1.
  __host__ __device__ int64_t outputOf(int d, int64_t i, int64_t k) const {
    const int64_t num = i + padBegin[d] - k * dilation[d];
    if (num < 0 || num % stride[d] != 0)
      return -1;
    const int64_t o = num / stride[d];
    return o < out[d] ? o : -1;
  }

  /// Outputs along d whose window [o*stride - padBegin, + (kernel-1) *
  /// dilation] covers input index i: [lo, hi) (taps not checked).
  __host__ __device__ void coveringOutputs(int d, int64_t i, int64_t &lo,
                                           int64_t &hi) const {
    const int64_t last = i + padBegin[d];                       // o*s <=
    const int64_t first = last - (kernel[d] - 1) * dilation[d]; // o*s >=
    lo = first <= 0 ? 0 : (first + stride[d] - 1) / stride[d];
    hi = last < 0 ? 0 : last / stride[d] + 1;
    if (hi > out[d])
      hi = out[d];
    if (lo > hi)
      lo = hi;
  }
};

} // namespace math
} // namespace cuda
} // namespace weft

#endif // WEFT_RUNTIME_KERNELS_CUDA_MATHUTIL_CUH
