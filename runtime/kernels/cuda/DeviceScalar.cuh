//===- DeviceScalar.cuh - Element types and index helpers of GPU kernels --===//
//
// The device code the data kernels share with the fused kernels weft
// compiles at run time (FusedJit.h): the 16-bit float storage types with
// the runtime's rounding (Float16.h), magic-number integer division and
// the grid-stride loop's start and step. It compiles under nvcc and NVRTC
// (__CUDACC_RTC__: no C++ library or CUDA headers there, RtcStd.cuh stands
// in, and the half conversions are their PTX instructions).
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_KERNELS_CUDA_DEVICESCALAR_CUH
#define WEFT_RUNTIME_KERNELS_CUDA_DEVICESCALAR_CUH

#ifdef __CUDACC_RTC__
#include "runtime/kernels/cuda/RtcStd.cuh"
#else
#include <cuda_fp16.h>

#include <cstdint>
#include <limits>
#include <type_traits>
#endif

namespace weft {
namespace cuda {
namespace data {

//===-- element types -----------------------------------------------------===//

/// Storage of the 16-bit floats and of bool where it must be told apart
/// from u8 (cast); arithmetic on the floats goes through float.
struct F16 {
  uint16_t bits;
};
struct BF16 {
  uint16_t bits;
};
struct Bool {
  uint8_t bits;
};

static __device__ inline float toFloat(F16 v) {
#ifdef __CUDACC_RTC__
  // __half2float's instruction (cuda_fp16.h is not NVRTC's).
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(v.bits));
  return f;
#else
  return __half2float(__ushort_as_half(v.bits));
#endif
}
static __device__ inline float toFloat(BF16 v) {
  return __uint_as_float(static_cast<uint32_t>(v.bits) << 16);
}

/// float -> bfloat16, nearest even; NaN made quiet keeping its top payload
/// bits, bit for bit as floatToBFloat16 does on the host.
static __device__ inline BF16 toBF16(float f) {
  uint32_t x = __float_as_uint(f);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return BF16{static_cast<uint16_t>((x >> 16) | 0x0040u)};
  x += 0x7fffu + ((x >> 16) & 1u);
  return BF16{static_cast<uint16_t>(x >> 16)};
}

/// float -> IEEE half, nearest even (the hardware conversion); NaN payloads
/// as floatToHalf keeps them.
static __device__ inline F16 toF16(float f) {
  uint32_t x = __float_as_uint(f);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return F16{static_cast<uint16_t>(((x >> 16) & 0x8000u) | 0x7e00u |
                                     ((x >> 13) & 0x1ffu))};
#ifdef __CUDACC_RTC__
  // __float2half_rn's instruction.
  uint16_t h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return F16{h};
#else
  return F16{__half_as_ushort(__float2half_rn(f))};
#endif
}

/// The value an element compares and converts by: float for the 16-bit
/// floats, 0/1 for bool, the element itself otherwise.
static __device__ inline float widen(F16 v) { return toFloat(v); }
static __device__ inline float widen(BF16 v) { return toFloat(v); }
static __device__ inline bool widen(Bool v) { return v.bits != 0; }
template <class T> static __device__ inline T widen(T v) { return v; }

//===-- integer division --------------------------------------------------===//

/// Division by a fixed divisor in [1, 2^31) as a multiply-high and a shift
/// (the round-up method of Granlund and Montgomery), exact for dividends
/// below 2^31: a 32-bit `/` costs about twenty instructions on the GPU.
struct IntDivider {
  uint32_t divisor = 1;
  uint32_t magic = 1;
  uint32_t shift = 0;

  IntDivider() = default;
  explicit IntDivider(uint32_t d) : divisor(d) {
    while ((uint64_t(1) << shift) < d)
      ++shift;
    magic = static_cast<uint32_t>(
        ((uint64_t(1) << 32) * ((uint64_t(1) << shift) - d)) / d + 1);
  }
  __device__ uint32_t div(uint32_t n) const {
    return (__umulhi(n, magic) + n) >> shift;
  }
  __device__ void divmod(uint32_t n, uint32_t &q, uint32_t &r) const {
    q = div(n);
    r = n - q * divisor;
  }
};

/// Plain 64-bit division with IntDivider's interface, for sizes of 2^31
/// elements and more.
struct Divider64 {
  int64_t divisor = 1;

  Divider64() = default;
  explicit Divider64(int64_t d) : divisor(d) {}
  __device__ void divmod(int64_t n, int64_t &q, int64_t &r) const {
    q = n / divisor;
    r = n - q * divisor;
  }
};

//===-- grid-stride loops -------------------------------------------------===//

/// First element of this thread in a grid-stride loop, and the step.
template <class Index> static __device__ inline Index gridStart() {
  return static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x;
}
template <class Index> static __device__ inline Index gridStep() {
  return static_cast<Index>(gridDim.x) * blockDim.x;
}

} // namespace data
} // namespace cuda
} // namespace weft

#endif // WEFT_RUNTIME_KERNELS_CUDA_DEVICESCALAR_CUH
