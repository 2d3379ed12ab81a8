//===- DataKernelUtil.cuh - Shared code of the GPU data kernels ----------===//
//
// Device helpers of the elementwise, data-movement, gather and reduction
// kernels (Elementwise.cu, Compare.cu, Cast.cu, DataMovement.cu,
// Gather.cu, Reduce.cu): DeviceScalar.cuh's element types and integer
// division (shared with the fused kernels NVRTC compiles), 16-byte packs
// for vectorized loads, strided offset calculators (numpy broadcasting,
// transposes and slices all reduce to "element i of a contiguous range
// sits at sum(idx_d * stride_d)"), and deterministic warp/block
// reductions. Everything lives in weft::cuda::data so it cannot clash with
// the math kernels' helpers.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_KERNELS_CUDA_DATAKERNELUTIL_CUH
#define WEFT_RUNTIME_KERNELS_CUDA_DATAKERNELUTIL_CUH

#include "runtime/cuda/CudaRuntime.h"
#include "runtime/kernels/cpu/KernelArgs.h"
#include "runtime/kernels/cuda/DeviceScalar.cuh"

#include <cuda_fp16.h>

#include <cstdint>
#include <limits>
#include <type_traits>

namespace weft {
namespace cuda {
namespace data {

using cpu::kMaxRank;

/// Offset calculators up to this rank use 32-bit magic division; higher
/// ranks (rare after merging dims) take the 64-bit path.
constexpr int kFastRank = 8;
constexpr int64_t kInt32Limit = std::numeric_limits<int32_t>::max();

template <class T> struct TypeTag { using type = T; };

/// Calls f(TypeTag<T>{}) with the device storage type of `dtype`, for every
/// dtype (bool as Bool, u8 as uint8_t).
template <class F>
void dispatchAnyType(int64_t dtype, const cpu::KernelArgs &args, F &&f) {
  switch (dtype) {
  case WEFT_F32:
    return f(TypeTag<float>{});
  case WEFT_F16:
    return f(TypeTag<F16>{});
  case WEFT_BF16:
    return f(TypeTag<BF16>{});
  case WEFT_F64:
    return f(TypeTag<double>{});
  case WEFT_I64:
    return f(TypeTag<int64_t>{});
  case WEFT_I32:
    return f(TypeTag<int32_t>{});
  case WEFT_I8:
    return f(TypeTag<int8_t>{});
  case WEFT_U8:
    return f(TypeTag<uint8_t>{});
  case WEFT_BOOL:
    return f(TypeTag<Bool>{});
  default:
    args.unsupportedDType(dtype);
  }
}

//===-- packs -------------------------------------------------------------===//

/// V elements loaded or stored as one aligned access (at most 16 bytes).
template <class T, int V> struct alignas(sizeof(T) * V) Pack { T v[V]; };

/// Elements per 16-byte access of the wider of two element types.
template <class A, class B> constexpr int packWidth() {
  return 16 / (sizeof(A) > sizeof(B) ? sizeof(A) : sizeof(B));
}

inline bool aligned(const void *p, size_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

/// Unsigned integer of 1, 2, 4, 8 or 16 bytes for kernels that only move
/// elements (uint4 for 16: whole packs).
template <int Bytes> struct UnitOf;
template <> struct UnitOf<1> { using type = uint8_t; };
template <> struct UnitOf<2> { using type = uint16_t; };
template <> struct UnitOf<4> { using type = uint32_t; };
template <> struct UnitOf<8> { using type = uint64_t; };
template <> struct UnitOf<16> { using type = uint4; };

/// Calls f(UnitOf<bytes>{}) for a unit size of 1, 2, 4, 8 or 16 bytes.
template <class F> void dispatchUnit(int64_t bytes, F &&f) {
  switch (bytes) {
  case 1:
    return f(UnitOf<1>{});
  case 2:
    return f(UnitOf<2>{});
  case 4:
    return f(UnitOf<4>{});
  case 8:
    return f(UnitOf<8>{});
  default:
    return f(UnitOf<16>{});
  }
}

//===-- strided offsets ---------------------------------------------------===//

/// Kernels take calculators as `const __grid_constant__` parameters so the
/// dynamically indexed arrays of Offsets64 are read in place, not copied to
/// local memory.
///
/// Maps element i of a contiguous range over `rank` dims (outermost first)
/// to one offset per operand: sum over d of idx_d * stride[d][k]. Strides
/// may be negative (reversed slices). 32-bit version: rank <= kFastRank and
/// every index and offset below 2^31; the sums wrap in unsigned arithmetic
/// and the final offsets are exact.
template <int N> struct Offsets32 {
  using Index = uint32_t;
  using Offset = int32_t;
  int rank = 1;
  IntDivider dims[kFastRank];
  uint32_t stride[kFastRank][N] = {};

  __device__ void get(uint32_t i, int32_t (&off)[N]) const {
    uint32_t acc[N];
#pragma unroll
    for (int k = 0; k < N; ++k)
      acc[k] = 0;
#pragma unroll
    for (int d = kFastRank - 1; d >= 1; --d) {
      if (d < rank) {
        uint32_t q, r;
        dims[d].divmod(i, q, r);
#pragma unroll
        for (int k = 0; k < N; ++k)
          acc[k] += r * stride[d][k];
        i = q;
      }
    }
#pragma unroll
    for (int k = 0; k < N; ++k)
      off[k] = static_cast<int32_t>(acc[k] + i * stride[0][k]);
  }
};

/// The same for any rank up to kMaxRank and 64-bit sizes.
template <int N> struct Offsets64 {
  using Index = int64_t;
  using Offset = int64_t;
  int rank = 1;
  int64_t dims[kMaxRank] = {};
  int64_t stride[kMaxRank][N] = {};

  __device__ void get(int64_t i, int64_t (&off)[N]) const {
#pragma unroll
    for (int k = 0; k < N; ++k)
      off[k] = 0;
    for (int d = rank - 1; d >= 1; --d) {
      int64_t q = i / dims[d];
      int64_t r = i - q * dims[d];
#pragma unroll
      for (int k = 0; k < N; ++k)
        off[k] += r * stride[d][k];
      i = q;
    }
#pragma unroll
    for (int k = 0; k < N; ++k)
      off[k] += i * stride[0][k];
  }
};

/// Calls f(calc) with an Offsets32<N> or Offsets64<N> for dims[rank] and
/// strides[N][kMaxRank] (outermost first, rank >= 1): the 32-bit one when
/// the range (numel elements) and every operand (at most `addressed`
/// elements from its base) fit in int32.
template <int N, class F>
void withOffsets(int rank, const int64_t *dims,
                 const int64_t (*strides)[kMaxRank], int64_t numel,
                 int64_t addressed, F &&f) {
  if (rank <= kFastRank && numel <= kInt32Limit && addressed <= kInt32Limit) {
    Offsets32<N> c;
    c.rank = rank;
    for (int d = 0; d < rank; ++d) {
      c.dims[d] = IntDivider(static_cast<uint32_t>(dims[d] > 0 ? dims[d] : 1));
      for (int k = 0; k < N; ++k)
        c.stride[d][k] = static_cast<uint32_t>(strides[k][d]);
    }
    f(c);
  } else {
    Offsets64<N> c;
    c.rank = rank;
    for (int d = 0; d < rank; ++d) {
      c.dims[d] = dims[d] > 0 ? dims[d] : 1;
      for (int k = 0; k < N; ++k)
        c.stride[d][k] = strides[k][d];
    }
    f(c);
  }
}

//===-- reductions --------------------------------------------------------===//

/// Butterfly over the warp: every lane ends with the combination of all 32
/// values, combined in an order fixed by the lane numbers.
template <class T, class Op>
static __device__ inline T warpReduce(T v, const Op &op) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

/// Combination over a 1-D block of kThreads (a multiple of 32) threads,
/// valid in thread 0; `smem` holds 32 values. Callers that reuse `smem`
/// must synchronize first.
template <int kThreads, class T, class Op>
static __device__ inline T blockReduce(T v, const Op &op, T *smem) {
  v = warpReduce(v, op);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0)
    smem[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < kThreads / 32 ? smem[lane] : op.identity();
    v = warpReduce(v, op);
  }
  return v;
}

/// Records bad data found on the device: the first code stored wins.
static __device__ inline void reportDeviceError(int *word, int code) {
  atomicCAS(word, 0, code);
}

//===-- elementwise maps --------------------------------------------------===//

/// y[i] = op(x[i]) over n contiguous elements; with `vec`, packs of
/// packWidth<In, Out>() elements (both pointers aligned to their packs).
template <class In, class Out, class Op>
__global__ void __launch_bounds__(kBlock)
    mapKernel(const In *x, Out *y, int64_t n, bool vec, Op op) {
  constexpr int V = packWidth<In, Out>();
  const int64_t start = gridStart<int64_t>(), step = gridStep<int64_t>();
  int64_t done = 0;
  if (vec) {
    const int64_t packs = n / V;
    const Pack<In, V> *xp = reinterpret_cast<const Pack<In, V> *>(x);
    Pack<Out, V> *yp = reinterpret_cast<Pack<Out, V> *>(y);
    for (int64_t i = start; i < packs; i += step) {
      const Pack<In, V> a = xp[i];
      Pack<Out, V> b;
#pragma unroll
      for (int j = 0; j < V; ++j)
        b.v[j] = op(a.v[j]);
      yp[i] = b;
    }
    done = packs * V;
  }
  for (int64_t i = done + start; i < n; i += step)
    y[i] = op(x[i]);
}

/// c[i] = op(a[i], b[i]) over n contiguous elements, packed like mapKernel.
template <class T, class R, class Op>
__global__ void __launch_bounds__(kBlock)
    map2Kernel(const T *a, const T *b, R *c, int64_t n, bool vec, Op op) {
  constexpr int V = packWidth<T, R>();
  const int64_t start = gridStart<int64_t>(), step = gridStep<int64_t>();
  int64_t done = 0;
  if (vec) {
    const int64_t packs = n / V;
    const Pack<T, V> *ap = reinterpret_cast<const Pack<T, V> *>(a);
    const Pack<T, V> *bp = reinterpret_cast<const Pack<T, V> *>(b);
    Pack<R, V> *cp = reinterpret_cast<Pack<R, V> *>(c);
    for (int64_t i = start; i < packs; i += step) {
      const Pack<T, V> x = ap[i], y = bp[i];
      Pack<R, V> z;
#pragma unroll
      for (int j = 0; j < V; ++j)
        z.v[j] = op(x.v[j], y.v[j]);
      cp[i] = z;
    }
    done = packs * V;
  }
  for (int64_t i = done + start; i < n; i += step)
    c[i] = op(a[i], b[i]);
}

/// c[i] = op(a[offA(i)], b[offB(i)]) through an offset calculator.
template <class T, class R, class Op, class Calc>
__global__ void __launch_bounds__(kBlock)
    broadcast2Kernel(const T *a, const T *b, R *c, typename Calc::Index n,
                     const __grid_constant__ Calc calc, Op op) {
  using Index = typename Calc::Index;
  const Index step = gridStep<Index>();
  for (Index i = gridStart<Index>(); i < n; i += step) {
    typename Calc::Offset off[2];
    calc.get(i, off);
    c[i] = op(a[off[0]], b[off[1]]);
  }
}

/// A binary op with a scalar (one-element) operand, as a unary op for
/// mapKernel: the scalar is read through the cache by every element.
template <class Op, class T> struct WithScalarB {
  Op op;
  const T *b;
  __device__ auto operator()(T a) const { return op(a, *b); }
};
template <class Op, class T> struct WithScalarA {
  Op op;
  const T *a;
  __device__ auto operator()(T b) const { return op(*a, b); }
};

/// Launches y = op(x) over n contiguous elements on the compute stream.
template <class In, class Out, class Op>
void launchMap(const In *x, Out *y, int64_t n, Op op, const char *kernel) {
  if (n == 0)
    return;
  constexpr int V = packWidth<In, Out>();
  const bool vec =
      aligned(x, sizeof(Pack<In, V>)) && aligned(y, sizeof(Pack<Out, V>));
  mapKernel<<<blocksFor(vec ? (n + V - 1) / V : n), kBlock, 0,
              computeStream()>>>(x, y, n, vec, op);
  checkLaunch(kernel);
}

/// Launches c = op(a, b) with a and b broadcast to c by `plan` (a
/// cpu::BroadcastPlan<2>): same-shape operands and scalar operands take
/// the packed contiguous kernels, the rest the offset calculators.
template <class Plan, class T, class R, class Op>
void launchBinary(const Plan &plan, const T *a, const T *b, R *c, Op op,
                  const char *kernel) {
  const int64_t n = plan.numel;
  if (n == 0)
    return;
  if (plan.rank == 1) {
    const bool aRow = plan.strides[0][0] != 0, bRow = plan.strides[1][0] != 0;
    if (aRow && bRow) {
      constexpr int V = packWidth<T, R>();
      const bool vec = aligned(a, sizeof(Pack<T, V>)) &&
                       aligned(b, sizeof(Pack<T, V>)) &&
                       aligned(c, sizeof(Pack<R, V>));
      map2Kernel<<<blocksFor(vec ? (n + V - 1) / V : n), kBlock, 0,
                   computeStream()>>>(a, b, c, n, vec, op);
      checkLaunch(kernel);
      return;
    }
    if (aRow)
      return launchMap(a, c, n, WithScalarB<Op, T>{op, b}, kernel);
    if (bRow)
      return launchMap(b, c, n, WithScalarA<Op, T>{op, a}, kernel);
  }
  withOffsets<2>(plan.rank, plan.dims, plan.strides, n, n, [&](auto calc) {
    using Calc = decltype(calc);
    broadcast2Kernel<<<blocksFor(n), kBlock, 0, computeStream()>>>(
        a, b, c, static_cast<typename Calc::Index>(n), calc, op);
  });
  checkLaunch(kernel);
}

} // namespace data
} // namespace cuda
} // namespace weft

#endif // WEFT_RUNTIME_KERNELS_CUDA_DATAKERNELUTIL_CUH
