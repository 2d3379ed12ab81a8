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
// - the row access of the row-wise kernels (softmax, the norms, the
//   losses): one row per warp held in registers, or one column per thread;
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
#include <type_traits>

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

//===-- Rows --------------------------------------------------------------===//

/// Rows per block of the warp-per-row kernels (one warp each).
constexpr int kWarpRows = 4;
/// Threads of the block-per-row kernels.
constexpr int kRowThreads = 512;
/// Longest row a warp holds in registers.
constexpr int64_t kWarpRowMax = 1024;

/// A lane's share of a row: register slot j * VEC + q holds element
/// (j * 32 + lane) * VEC + q, so each load instruction of the warp reads
/// 32 * VEC consecutive floats.
template <int VEC>
static __device__ inline int64_t slotIndex(int j, int lane, int q) {
  return (static_cast<int64_t>(j) * 32 + lane) * VEC + q;
}

/// The element of the row that slot s of the lane holds.
template <int VEC>
static __device__ inline int64_t slotElement(int s, int lane) {
  return slotIndex<VEC>(s / VEC, lane, s % VEC);
}

/// Whether slot s of the lane holds an element of a row of n.
template <int VEC>
static __device__ inline bool slotValid(int s, int lane, int64_t n) {
  return slotElement<VEC>(s, lane) < n;
}

/// Loads the lane's share of row[0, n); slots past the row get `fill`.
/// VEC == 4 needs n % 4 == 0 and a 16-byte aligned row.
template <int VPT, int VEC>
static __device__ inline void loadRow(const float *row, int64_t n, int lane,
                                      float (&v)[VPT], float fill) {
#pragma unroll
  for (int j = 0; j < VPT / VEC; ++j) {
    const int64_t base = slotIndex<VEC>(j, lane, 0);
    if constexpr (VEC == 4) {
      if (base < n) {
        const float4 t = *reinterpret_cast<const float4 *>(row + base);
        v[4 * j] = t.x;
        v[4 * j + 1] = t.y;
        v[4 * j + 2] = t.z;
        v[4 * j + 3] = t.w;
      } else {
        v[4 * j] = v[4 * j + 1] = v[4 * j + 2] = v[4 * j + 3] = fill;
      }
    } else {
      v[j] = base < n ? row[base] : fill;
    }
  }
}

/// Stores the lane's share of row[0, n) (slots past the row are dropped).
template <int VPT, int VEC>
static __device__ inline void storeRow(float *row, int64_t n, int lane,
                                       const float (&v)[VPT]) {
#pragma unroll
  for (int j = 0; j < VPT / VEC; ++j) {
    const int64_t base = slotIndex<VEC>(j, lane, 0);
    if (base >= n)
      continue;
    if constexpr (VEC == 4) {
      *reinterpret_cast<float4 *>(row + base) =
          make_float4(v[4 * j], v[4 * j + 1], v[4 * j + 2], v[4 * j + 3]);
    } else {
      row[base] = v[j];
    }
  }
}

/// VEC values stored as 16-bit floats, each the bits round(v) gives (in its
/// low 16 bits): one 8-byte store when VEC == 4 (p 8-byte aligned).
template <int VEC, class T, class Round>
static __device__ inline void storeVec16(T *p, const float *v, Round round) {
  if constexpr (VEC == 4)
    *reinterpret_cast<uint2 *>(p) = make_uint2(round(v[0]) | round(v[1]) << 16,
                                               round(v[2]) | round(v[3]) << 16);
  else
    *reinterpret_cast<uint16_t *>(p) = static_cast<uint16_t>(round(v[0]));
}

/// storeRow for a row of 16-bit floats (bf16 or f16), each value rounded
/// by `round` as storeVec16 does; VEC == 4 needs an 8-byte aligned row.
template <int VPT, int VEC, class T, class Round>
static __device__ inline void storeRow16(T *row, int64_t n, int lane,
                                         const float (&v)[VPT], Round round) {
#pragma unroll
  for (int j = 0; j < VPT / VEC; ++j) {
    const int64_t base = slotIndex<VEC>(j, lane, 0);
    if (base < n)
      storeVec16<VEC>(row + base, v + VEC * j, round);
  }
}

/// Row r of the rows this warp handles in a warp-per-row launch, and the
/// step to its next.
static __device__ inline int64_t firstWarpRow() {
  return static_cast<int64_t>(blockIdx.x) * kWarpRows + (threadIdx.x >> 5);
}
static __device__ inline int64_t warpRowStep() {
  return static_cast<int64_t>(gridDim.x) * kWarpRows;
}

/// Largest value of a row held in the warp's slots (padding slots hold
/// -inf); every lane gets it.
template <int VPT>
static __device__ inline float warpRowMax(const float (&v)[VPT]) {
  float m = kNegInf;
#pragma unroll
  for (int s = 0; s < VPT; ++s)
    m = v[s] > m ? v[s] : m;
  return warpMax(m);
}

/// One thread's strided column x[base + k * stride], k in [0, n): its
/// largest value into `m`, and the sum of e^(x - m) over it in order.
static __device__ inline float columnExpSum(const float *x, int64_t base,
                                            int64_t n, int64_t stride,
                                            float &m) {
  m = kNegInf;
  for (int64_t k = 0; k < n; ++k) {
    const float v = x[base + k * stride];
    m = v > m ? v : m;
  }
  float sum = 0.0f;
  for (int64_t k = 0; k < n; ++k)
    sum += expf(x[base + k * stride] - m);
  return sum;
}

/// Whether p allows float4 access (16-byte aligned).
inline bool aligned16(const void *p) {
  return (reinterpret_cast<uintptr_t>(p) & 15u) == 0;
}

/// A compile-time int, the argument of the dispatchers' callbacks.
template <int N> using Int = std::integral_constant<int, N>;

/// Calls f(Int<VPT>, Int<VEC>) for a warp-per-row kernel over rows of n
/// <= kWarpRowMax elements: VPT slots per lane, float4 access when `vec4`.
template <class F> void dispatchWarpRow(int64_t n, bool vec4, F &&f) {
  if (n <= 32)
    return f(Int<1>(), Int<1>());
  if (n <= 64)
    return f(Int<2>(), Int<1>());
  if (n <= 128)
    return vec4 ? f(Int<4>(), Int<4>()) : f(Int<4>(), Int<1>());
  if (n <= 256)
    return vec4 ? f(Int<8>(), Int<4>()) : f(Int<8>(), Int<1>());
  if (n <= 512)
    return vec4 ? f(Int<16>(), Int<4>()) : f(Int<16>(), Int<1>());
  return vec4 ? f(Int<32>(), Int<4>()) : f(Int<32>(), Int<1>());
}

//===-- Window geometry ---------------------------------------------------===//

/// WindowGeometry (runtime/kernels/cpu/ConvGeometry.h: 1-3 spatial dims
/// normalized to 3) as a kernel argument. Its constexpr methods (inSize,
/// outSize, kernelSize, validTaps) serve on the device as they are; the
/// index maths of the GPU loops is added here. Positions and taps split
/// into (d, h, w), the last fastest.
struct Window : weft::cpu::WindowGeometry {
  static Window from(const weft::cpu::WindowGeometry &g) {
    Window w;
    static_cast<weft::cpu::WindowGeometry &>(w) = g;
    return w;
  }

  /// Output position p as (od, oh, ow).
  __host__ __device__ void splitOutput(int64_t p, int64_t (&o)[3]) const {
    o[2] = p % out[2];
    o[1] = p / out[2] % out[1];
    o[0] = p / (out[2] * out[1]);
  }
  /// Input position q as (id, ih, iw).
  __host__ __device__ void splitInput(int64_t q, int64_t (&i)[3]) const {
    i[0] = q / (in[1] * in[2]);
    i[1] = q / in[2] % in[1];
    i[2] = q % in[2];
  }
  /// Tap t as (td, th, tw).
  __host__ __device__ void splitTap(int64_t t, int64_t (&k)[3]) const {
    k[2] = t % kernel[2];
    k[1] = t / kernel[2] % kernel[1];
    k[0] = t / (kernel[2] * kernel[1]);
  }
  /// The number of output position (od, oh, ow) in its plane, and of tap
  /// (kd, kh, kw) in the window.
  __host__ __device__ int64_t outputAt(int64_t od, int64_t oh,
                                       int64_t ow) const {
    return (od * out[1] + oh) * out[2] + ow;
  }
  __host__ __device__ int64_t tapAt(int64_t kd, int64_t kh, int64_t kw) const {
    return (kd * kernel[1] + kh) * kernel[2] + kw;
  }

  /// Output position p as `o`, and along each dim the taps [lo, hi) of its
  /// window that lie inside the input (validTaps).
  __host__ __device__ void outputWindow(int64_t p, int64_t (&o)[3],
                                        int64_t (&lo)[3],
                                        int64_t (&hi)[3]) const {
    splitOutput(p, o);
    for (int d = 0; d < 3; ++d)
      validTaps(d, o[d], lo[d], hi[d]);
  }

  /// Input index along dim d read by tap k of output o (may be outside).
  __host__ __device__ int64_t inputIndex(int d, int64_t o, int64_t k) const {
    return o * stride[d] - padBegin[d] + k * dilation[d];
  }

  /// The input-plane offset read by tap (kd, kh, kw) of output position o
  /// (a tap inside the input).
  __host__ __device__ int64_t tapOffset(const int64_t (&o)[3], int64_t kd,
                                        int64_t kh, int64_t kw) const {
    return (inputIndex(0, o[0], kd) * in[1] + inputIndex(1, o[1], kh)) * in[2] +
           inputIndex(2, o[2], kw);
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

  /// Input position q as `i`, and along each dim the outputs [lo, hi)
  /// whose windows cover it (coveringOutputs).
  __host__ __device__ void coveringWindow(int64_t q, int64_t (&i)[3],
                                          int64_t (&lo)[3],
                                          int64_t (&hi)[3]) const {
    splitInput(q, i);
    for (int d = 0; d < 3; ++d)
      coveringOutputs(d, i[d], lo[d], hi[d]);
  }
};

/// Calls f(a, b, c) for every (a, b, c) of the box [lo, hi), c fastest: the
/// taps of a window in window order, or the outputs covering an input.
template <class F>
static __device__ inline void forEachInBox(const int64_t (&lo)[3],
                                           const int64_t (&hi)[3], F &&f) {
  for (int64_t a = lo[0]; a < hi[0]; ++a)
    for (int64_t b = lo[1]; b < hi[1]; ++b)
      for (int64_t c = lo[2]; c < hi[2]; ++c)
        f(a, b, c);
}

} // namespace math
} // namespace cuda
} // namespace weft

#endif // WEFT_RUNTIME_KERNELS_CUDA_MATHUTIL_CUH
