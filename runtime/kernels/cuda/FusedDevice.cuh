//===- FusedDevice.cuh - Device code of the GPU fused elementwise kernels -===//
//
// What weft_cuda_k_fused's two kernels share (Fused.cu): the parameter
// block (FusedParams, read in place from the constant bank as a
// __grid_constant__), the operands' loads and the results' stores over
// groups of V consecutive elements (16-byte accesses where the group is
// whole and the pointer allows, element by element otherwise), the element
// ops on such groups, and the grid-stride loop over the groups with its L2
// prefetch of the next group's full-shape operands.
//
// The interpreter (Fused.cu, compiled by nvcc) runs any program's micro-ops
// (FusedLowering.h) from the parameter block; the kernels FusedJit.h
// generates for one program run the same steps as straight-line code,
// compiled by NVRTC at run time, with every slot a named array in
// registers. Both call the functions below in the same order, so they give
// the same bits. This header compiles under both compilers: nothing here
// may need a header NVRTC lacks (RtcStd.cuh lists what it has).
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_KERNELS_CUDA_FUSEDDEVICE_CUH
#define WEFT_RUNTIME_KERNELS_CUDA_FUSEDDEVICE_CUH

#include "runtime/kernels/cuda/DeviceScalar.cuh"
#include "runtime/kernels/cuda/ElementwiseMath.cuh"
#include "weft/runtime/KernelABI.h"

namespace weft {
namespace cuda {
namespace fused {

using data::BF16;
using data::F16;

/// Elements per thread and group: one 16-byte load of a 16-bit operand.
constexpr int V = 8;
/// Dims of a General operand's offset calculator; operands whose
/// broadcast needs more are expanded into scratch memory first.
constexpr int kMaxDims = 6;
/// Micro-ops a parameter block holds (FusedLowering.h's kMaxFusedMicroOps).
constexpr int kMaxOps =
    2 * WEFT_FUSED_MAX_REGISTERS + 2 * WEFT_FUSED_MAX_RESULTS;

/// How an operand is read (cpu::FusedAccess's values).
enum AccessCode : uint8_t {
  kAccessFull,    // element i
  kAccessScalar,  // element 0
  kAccessSuffix,  // element i % period
  kAccessGeneral, // numpy strides over up to kMaxDims merged dims
};

struct DevResult {
  void *ptr;
  uint8_t dtype, vec;
};

/// Index: uint32_t (every offset below 2^31, magic-number division) or
/// int64_t; Div: IntDivider or Divider64 to match.
template <class Index, class Div> struct DevOperand {
  const void *ptr;
  uint8_t dtype, access, vec, rank;
  Div period;              // Suffix: the operand's element count
  Div dims[kMaxDims];      // General: merged dims, outermost first
  Index strides[kMaxDims]; // General: 0 where broadcast
};

template <class Index, class Div> struct FusedParams {
  Index numel;
  int numOps;
  int prefetch[2]; // full-shape operands prefetched for the next group
  float imm[WEFT_FUSED_MAX_REGISTERS];
  uint32_t ops[kMaxOps]; // the interpreter's program (packed micro-ops)
  DevResult result[WEFT_FUSED_MAX_RESULTS];
  DevOperand<Index, Div> operand[WEFT_FUSED_MAX_OPERANDS];
};

//===-- element access ----------------------------------------------------===//

template <class T> static __device__ inline T narrowTo(float v) {
  if constexpr (std::is_same_v<T, BF16>)
    return data::toBF16(v);
  else if constexpr (std::is_same_v<T, F16>)
    return data::toF16(v);
  else
    return v;
}

/// V elements from 16-byte aligned memory.
static __device__ inline void loadVec(const float *p, float (&v)[V]) {
  const float4 lo = reinterpret_cast<const float4 *>(p)[0];
  const float4 hi = reinterpret_cast<const float4 *>(p)[1];
  v[0] = lo.x, v[1] = lo.y, v[2] = lo.z, v[3] = lo.w;
  v[4] = hi.x, v[5] = hi.y, v[6] = hi.z, v[7] = hi.w;
}
template <class H>
static __device__ inline void loadVec(const H *p, float (&v)[V]) {
  const uint4 u = *reinterpret_cast<const uint4 *>(p);
  const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
  for (int e = 0; e < V; ++e)
    v[e] = data::widen(H{static_cast<uint16_t>(w[e / 2] >> (16 * (e % 2)))});
}

static __device__ inline void storeVec(float *p, const float (&v)[V]) {
  reinterpret_cast<float4 *>(p)[0] = make_float4(v[0], v[1], v[2], v[3]);
  reinterpret_cast<float4 *>(p)[1] = make_float4(v[4], v[5], v[6], v[7]);
}
template <class H>
static __device__ inline void storeVec(H *p, const float (&v)[V]) {
  uint32_t w[4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
    w[i] = static_cast<uint32_t>(narrowTo<H>(v[2 * i]).bits) |
           static_cast<uint32_t>(narrowTo<H>(v[2 * i + 1]).bits) << 16;
  *reinterpret_cast<uint4 *>(p) = make_uint4(w[0], w[1], w[2], w[3]);
}

/// Offset of element i in a General operand.
template <class Index, class Div>
static __device__ inline Index generalOffset(const DevOperand<Index, Div> &x,
                                             Index i) {
  Index off = 0;
#pragma unroll 1
  for (int d = x.rank - 1; d >= 1; --d) {
    Index q, r;
    x.dims[d].divmod(i, q, r);
    off += r * x.strides[d];
    i = q;
  }
  return off + i * x.strides[0];
}

/// The group's elements [base, base + V) of operand x, of element type T,
/// read as kAccess says (elements past numel, in the last group, read an
/// in-bounds element instead).
template <class T, int kAccess, class Index, class Div>
static __device__ inline void loadAs(const DevOperand<Index, Div> &x,
                                     Index base, bool whole, Index numel,
                                     float (&v)[V]) {
  const T *p = static_cast<const T *>(x.ptr);
  if constexpr (kAccess == kAccessFull) {
    if (whole && x.vec) {
      loadVec(p + base, v);
    } else {
#pragma unroll
      for (int e = 0; e < V; ++e)
        v[e] = data::widen(p[base + e < numel ? base + e : numel - 1]);
    }
  } else if constexpr (kAccess == kAccessScalar) {
    const float s = data::widen(p[0]);
#pragma unroll
    for (int e = 0; e < V; ++e)
      v[e] = s;
  } else if constexpr (kAccess == kAccessSuffix) {
    Index q, r;
    x.period.divmod(base, q, r);
    if (whole && x.vec) {
      loadVec(p + r, v);
      return;
    }
#pragma unroll
    for (int e = 0; e < V; ++e) {
      v[e] = data::widen(p[r]);
      if (++r == x.period.divisor)
        r = 0;
    }
  } else {
#pragma unroll
    for (int e = 0; e < V; ++e)
      v[e] = data::widen(
          p[generalOffset(x, base + e < numel ? base + e : numel - 1)]);
  }
}

/// loadAs with the access read from the operand.
template <class T, class Index, class Div>
static __device__ inline void loadTyped(const DevOperand<Index, Div> &x,
                                        Index base, bool whole, Index numel,
                                        float (&v)[V]) {
  switch (x.access) {
  case kAccessFull:
    return loadAs<T, kAccessFull>(x, base, whole, numel, v);
  case kAccessScalar:
    return loadAs<T, kAccessScalar>(x, base, whole, numel, v);
  case kAccessSuffix:
    return loadAs<T, kAccessSuffix>(x, base, whole, numel, v);
  default:
    return loadAs<T, kAccessGeneral>(x, base, whole, numel, v);
  }
}

/// loadTyped with the element type read from the operand.
template <class Index, class Div>
static __device__ inline void loadOperand(const DevOperand<Index, Div> &x,
                                          Index base, bool whole, Index numel,
                                          float (&v)[V]) {
  if (x.dtype == WEFT_BF16)
    loadTyped<BF16>(x, base, whole, numel, v);
  else if (x.dtype == WEFT_F16)
    loadTyped<F16>(x, base, whole, numel, v);
  else
    loadTyped<float>(x, base, whole, numel, v);
}

/// Stores the group's elements of a result of element type T.
template <class T, class Index>
static __device__ inline void storeAs(const DevResult &y, Index base,
                                      bool whole, Index numel,
                                      const float (&v)[V]) {
  T *p = static_cast<T *>(y.ptr) + base;
  if (whole && y.vec) {
    storeVec(p, v);
    return;
  }
#pragma unroll
  for (int e = 0; e < V; ++e)
    if (base + e < numel)
      p[e] = narrowTo<T>(v[e]);
}

/// storeAs with the element type read from the result.
template <class Index>
static __device__ inline void storeResult(const DevResult &y, Index base,
                                          bool whole, Index numel,
                                          const float (&v)[V]) {
  if (y.dtype == WEFT_BF16)
    storeAs<BF16>(y, base, whole, numel, v);
  else if (y.dtype == WEFT_F16)
    storeAs<F16>(y, base, whole, numel, v);
  else
    storeAs<float>(y, base, whole, numel, v);
}

//===-- element ops on groups ---------------------------------------------===//

static __device__ inline void copyAll(float (&d)[V], const float (&s)[V]) {
#pragma unroll
  for (int e = 0; e < V; ++e)
    d[e] = s[e];
}

static __device__ inline void fillAll(float (&d)[V], float s) {
#pragma unroll
  for (int e = 0; e < V; ++e)
    d[e] = s;
}

/// Rounds every element to dtype kType's precision (F32: unchanged).
template <int kType> static __device__ inline void roundAll(float (&d)[V]) {
#pragma unroll
  for (int e = 0; e < V; ++e) {
    if constexpr (kType == WEFT_BF16)
      d[e] = data::toFloat(data::toBF16(d[e]));
    else if constexpr (kType == WEFT_F16)
      d[e] = data::toFloat(data::toF16(d[e]));
  }
}

template <int kOp> static __device__ inline void unaryAll(float (&d)[V]) {
  const data::UnaryOp<float, kOp> op;
#pragma unroll
  for (int e = 0; e < V; ++e)
    d[e] = op(d[e]);
}

/// d = op(d, s) (or op(s, d) when reversed), element by element.
template <bool kReversed, class Op>
static __device__ inline void binaryAll(float (&d)[V], const float (&s)[V],
                                        Op op) {
#pragma unroll
  for (int e = 0; e < V; ++e)
    d[e] = kReversed ? op(s[e], d[e]) : op(d[e], s[e]);
}

/// binaryAll in a loop that is not unrolled (one copy of a large op): each
/// turn computes the first element and rotates the arrays by one.
template <bool kReversed, class Op>
static __device__ inline void binaryRotating(float (&d)[V], const float (&s)[V],
                                             Op op) {
  float x[V];
#pragma unroll
  for (int e = 0; e < V; ++e)
    x[e] = s[e];
#pragma unroll 1
  for (int n = 0; n < V; ++n) {
    const float r = kReversed ? op(x[0], d[0]) : op(d[0], x[0]);
#pragma unroll
    for (int e = 0; e < V - 1; ++e) {
      d[e] = d[e + 1];
      x[e] = x[e + 1];
    }
    d[V - 1] = r;
  }
}

// Additions, subtractions, products and quotients round each result: the
// compiler never contracts the __f*_rn intrinsics into an FMA.
template <int kOp> struct RoundedOp {
  __device__ float operator()(float x, float y) const {
    if constexpr (kOp == WEFT_BINARY_ADD)
      return __fadd_rn(x, y);
    else if constexpr (kOp == WEFT_BINARY_SUB)
      return __fsub_rn(x, y);
    else if constexpr (kOp == WEFT_BINARY_MUL)
      return __fmul_rn(x, y);
    else
      return __fdiv_rn(x, y);
  }
};
using AddRn = RoundedOp<WEFT_BINARY_ADD>;
using SubRn = RoundedOp<WEFT_BINARY_SUB>;
using MulRn = RoundedOp<WEFT_BINARY_MUL>;
using DivRn = RoundedOp<WEFT_BINARY_DIV>;
struct PowScalar {
  __device__ float operator()(float x, float y) const {
    return data::powByScalar(x, y);
  }
};
using PowOp = data::FloatPowOp<float>;
using MaxOp = data::PropagatingMaxOp<float>;
using MinOp = data::PropagatingMinOp<float>;

//===-- the loop over groups ----------------------------------------------===//

/// Calls body(base, whole) for each of this thread's groups (grid-stride),
/// after prefetching the next group's full-shape operands into L2.
template <class Index, class Div, class Body>
static __device__ inline void forEachGroup(const FusedParams<Index, Div> &p,
                                           Body &&body) {
  const Index numel = p.numel;
  const Index groups = numel / V + (numel % V != 0);
  const Index step = data::gridStep<Index>();
  for (Index g = data::gridStart<Index>(); g < groups; g += step) {
    const Index base = g * V;
    if (g + step < groups)
      for (int k = 0; k < 2; ++k)
        if (p.prefetch[k] >= 0) {
          const DevOperand<Index, Div> &x = p.operand[p.prefetch[k]];
          const char *next = static_cast<const char *>(x.ptr) +
                             static_cast<size_t>(base + step * V) *
                                 (x.dtype == WEFT_F32 ? 4 : 2);
          asm volatile("prefetch.global.L2 [%0];" ::"l"(next));
        }
    body(base, numel - base >= V);
  }
}

} // namespace fused
} // namespace cuda
} // namespace weft

#endif // WEFT_RUNTIME_KERNELS_CUDA_FUSEDDEVICE_CUH
