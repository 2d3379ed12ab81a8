//===- Fused.cu - GPU fused elementwise kernel ----------------------------===//
//
// The GPU twin of runtime/kernels/cpu/Fused.cpp: one pass over memory for a
// chain of elementwise instructions (FusedProgram.h, decoded and checked on
// the host as the CPU kernel does). The host lowers the program to the
// micro-ops of FusedLowering.h, which travel by value in the kernel's
// parameters (__grid_constant__: read in place from the constant bank,
// under the 4 KB limit) with the operands' broadcast descriptions.
//
// Each thread runs the micro-ops on groups of V consecutive elements
// (grid-stride): the dispatch is paid once per V elements, and the
// machine's register (acc) and each step's input (t) stay in GPU
// registers. Operands are read with 16-byte loads when
// the group is whole and the operand's pointer (and period) allow, element
// by element otherwise; results are stored the same way. The full-shape
// operands of the next group are prefetched into L2.
//
// The bits are those of the unfused GPU kernels: ElementwiseMath.cuh's
// element functions (as weft_cuda_k_unary / weft_cuda_k_binary) and
// DataKernelUtil.cuh's rounding (as weft_cuda_k_cast). Additions,
// subtractions, products and quotients use the __f*_rn intrinsics, which
// the compiler never contracts into an FMA with a neighbouring
// instruction. pow, the largest function, runs element by element in a
// loop so the kernel holds one copy of it per form.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cpu/Broadcast.h"
#include "runtime/kernels/cpu/FusedProgram.h"
#include "runtime/kernels/cuda/CudaKernels.h"
#include "runtime/kernels/cuda/DataKernelUtil.cuh"
#include "runtime/kernels/cuda/ElementwiseMath.cuh"
#include "runtime/kernels/cuda/FusedLowering.h"

#include <vector>

using namespace weft;
using namespace weft::cuda;
using namespace weft::cuda::data;
using cpu::FusedAccess;
using cpu::FusedProgram;

namespace {

/// Elements per thread and group: one 16-byte load of a 16-bit operand.
constexpr int V = 8;
/// Dims of a General operand's offset calculator; operands whose
/// broadcast needs more are expanded into scratch memory first.
constexpr int kMaxDims = 6;
/// Slots of the small and the large kernel: the runtime reserves local
/// memory for every thread the GPU holds at the largest size a launched
/// kernel declares, so most programs take the small one.
constexpr int kFewSlots = 8;
constexpr int kMaxSlots = WEFT_FUSED_MAX_REGISTERS;

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

/// A micro-op packed in 32 bits (see FusedMicroOp).
constexpr uint32_t kSourceShift = 8, kIndexShift = 11, kRoundShift = 17,
                   kSpillBit = 1u << 19, kSpillShift = 20, kResultShift = 26;

uint32_t packMicroOp(const FusedMicroOp &m) {
  return m.code | uint32_t(m.source) << kSourceShift |
         uint32_t(m.index) << kIndexShift | uint32_t(m.round) << kRoundShift |
         (m.spill ? kSpillBit : 0u) | uint32_t(m.spillSlot) << kSpillShift |
         uint32_t(m.result) << kResultShift;
}

template <class Index, class Div> struct FusedParams {
  Index numel;
  int numOps;
  int prefetch[2]; // full-shape operands prefetched for the next group
  float imm[WEFT_FUSED_MAX_REGISTERS];
  uint32_t ops[kMaxFusedMicroOps];
  DevResult result[WEFT_FUSED_MAX_RESULTS];
  DevOperand<Index, Div> operand[WEFT_FUSED_MAX_OPERANDS];
};
static_assert(sizeof(FusedParams<uint32_t, IntDivider>) <= 4000, "params");
static_assert(sizeof(FusedParams<int64_t, Divider64>) <= 4000, "params");

//===-- element access ----------------------------------------------------===//

template <class T> static __device__ inline T narrowTo(float v) {
  if constexpr (std::is_same_v<T, BF16>)
    return toBF16(v);
  else if constexpr (std::is_same_v<T, F16>)
    return toF16(v);
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
    v[e] = widen(H{static_cast<uint16_t>(w[e / 2] >> (16 * (e % 2)))});
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

/// The group's elements [base, base + V) of operand x (elements past
/// numel, in the last group, read an in-bounds element instead).
template <class T, class Index, class Div>
static __device__ inline void loadTyped(const DevOperand<Index, Div> &x,
                                        Index base, bool whole, Index numel,
                                        float (&v)[V]) {
  const T *p = static_cast<const T *>(x.ptr);
  switch (x.access) {
  case static_cast<uint8_t>(FusedAccess::Full):
    if (whole && x.vec) {
      loadVec(p + base, v);
    } else {
#pragma unroll
      for (int e = 0; e < V; ++e)
        v[e] = widen(p[base + e < numel ? base + e : numel - 1]);
    }
    return;
  case static_cast<uint8_t>(FusedAccess::Scalar): {
    const float s = widen(p[0]);
#pragma unroll
    for (int e = 0; e < V; ++e)
      v[e] = s;
    return;
  }
  case static_cast<uint8_t>(FusedAccess::Suffix): {
    Index q, r;
    x.period.divmod(base, q, r);
    if (whole && x.vec) {
      loadVec(p + r, v);
      return;
    }
#pragma unroll
    for (int e = 0; e < V; ++e) {
      v[e] = widen(p[r]);
      if (++r == x.period.divisor)
        r = 0;
    }
    return;
  }
  default:
#pragma unroll
    for (int e = 0; e < V; ++e)
      v[e] =
          widen(p[generalOffset(x, base + e < numel ? base + e : numel - 1)]);
  }
}

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

template <class T, class Index>
static __device__ inline void storeTyped(const DevResult &y, Index base,
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

template <class Index>
static __device__ inline void storeResult(const DevResult &y, Index base,
                                          bool whole, Index numel,
                                          const float (&v)[V]) {
  if (y.dtype == WEFT_BF16)
    storeTyped<BF16>(y, base, whole, numel, v);
  else if (y.dtype == WEFT_F16)
    storeTyped<F16>(y, base, whole, numel, v);
  else
    storeTyped<float>(y, base, whole, numel, v);
}

//===-- the machine -------------------------------------------------------===//

template <int kOp> static __device__ inline void unaryAll(float (&d)[V]) {
  const UnaryOp<float, kOp> op;
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

struct AddRn {
  __device__ float operator()(float x, float y) const {
    return __fadd_rn(x, y);
  }
};
struct SubRn {
  __device__ float operator()(float x, float y) const {
    return __fsub_rn(x, y);
  }
};
struct MulRn {
  __device__ float operator()(float x, float y) const {
    return __fmul_rn(x, y);
  }
};
struct DivRn {
  __device__ float operator()(float x, float y) const {
    return __fdiv_rn(x, y);
  }
};
struct PowScalar {
  __device__ float operator()(float x, float y) const {
    return powByScalar(x, y);
  }
};

template <class Index, class Div, int kSlots>
__global__ void __launch_bounds__(kBlock)
    fusedKernel(const __grid_constant__ FusedParams<Index, Div> p) {
  float file[kSlots][V];
  const Index numel = p.numel;
  const Index groups = numel / V + (numel % V != 0);
  const Index step = gridStep<Index>();
  for (Index g = gridStart<Index>(); g < groups; g += step) {
    const Index base = g * V;
    const bool whole = numel - base >= V;
    if (g + step < groups)
      for (int k = 0; k < 2; ++k)
        if (p.prefetch[k] >= 0) {
          const DevOperand<Index, Div> &x = p.operand[p.prefetch[k]];
          const char *next = static_cast<const char *>(x.ptr) +
                             static_cast<size_t>(base + step * V) *
                                 (x.dtype == WEFT_F32 ? 4 : 2);
          asm volatile("prefetch.global.L2 [%0];" ::"l"(next));
        }
    float acc[V] = {};
    for (int j = 0; j < p.numOps; ++j) {
      const uint32_t w = p.ops[j];
      if (w & kSpillBit) {
        const int s = (w >> kSpillShift) & 63;
#pragma unroll
        for (int e = 0; e < V; ++e)
          file[s][e] = acc[e];
      }
      // The step's input.
      float t[V];
      const int index = (w >> kIndexShift) & 63;
      switch ((w >> kSourceShift) & 7) {
      case kSourceAcc:
#pragma unroll
        for (int e = 0; e < V; ++e)
          t[e] = acc[e];
        break;
      case kSourceImm: {
        const float s = p.imm[index];
#pragma unroll
        for (int e = 0; e < V; ++e)
          t[e] = s;
        break;
      }
      case kSourceSlot:
#pragma unroll
        for (int e = 0; e < V; ++e)
          t[e] = file[index][e];
        break;
      case kSourceOperand:
        loadOperand(p.operand[index], base, whole, numel, t);
        break;
      default:
        break;
      }
      const int code = static_cast<int>(w & 0xffu);
      switch (code) {
      case WEFT_UNARY_NEG:
        unaryAll<WEFT_UNARY_NEG>(acc);
        break;
      case WEFT_UNARY_SQRT:
        unaryAll<WEFT_UNARY_SQRT>(acc);
        break;
      case WEFT_UNARY_EXP:
        unaryAll<WEFT_UNARY_EXP>(acc);
        break;
      case WEFT_UNARY_LOG:
        unaryAll<WEFT_UNARY_LOG>(acc);
        break;
      case WEFT_UNARY_TANH:
        unaryAll<WEFT_UNARY_TANH>(acc);
        break;
      case WEFT_UNARY_ERF:
        unaryAll<WEFT_UNARY_ERF>(acc);
        break;
      case WEFT_UNARY_RELU:
        unaryAll<WEFT_UNARY_RELU>(acc);
        break;
      case WEFT_UNARY_SIGMOID:
        unaryAll<WEFT_UNARY_SIGMOID>(acc);
        break;
      case kMicroBinary + WEFT_BINARY_ADD:
        binaryAll<false>(acc, t, AddRn{});
        break;
      case kMicroBinary + WEFT_BINARY_SUB:
        binaryAll<false>(acc, t, SubRn{});
        break;
      case kMicroBinary + WEFT_BINARY_MUL:
        binaryAll<false>(acc, t, MulRn{});
        break;
      case kMicroBinary + WEFT_BINARY_DIV:
        binaryAll<false>(acc, t, DivRn{});
        break;
      case kMicroBinary + WEFT_BINARY_POW:
        binaryRotating<false>(acc, t, FloatPowOp<float>{});
        break;
      case kMicroBinary + WEFT_BINARY_MAX:
        binaryAll<false>(acc, t, PropagatingMaxOp<float>{});
        break;
      case kMicroBinary + WEFT_BINARY_MIN:
        binaryAll<false>(acc, t, PropagatingMinOp<float>{});
        break;
      case kMicroBinaryRev + WEFT_BINARY_ADD:
        binaryAll<true>(acc, t, AddRn{});
        break;
      case kMicroBinaryRev + WEFT_BINARY_SUB:
        binaryAll<true>(acc, t, SubRn{});
        break;
      case kMicroBinaryRev + WEFT_BINARY_MUL:
        binaryAll<true>(acc, t, MulRn{});
        break;
      case kMicroBinaryRev + WEFT_BINARY_DIV:
        binaryAll<true>(acc, t, DivRn{});
        break;
      case kMicroBinaryRev + WEFT_BINARY_POW:
        binaryRotating<true>(acc, t, FloatPowOp<float>{});
        break;
      case kMicroBinaryRev + WEFT_BINARY_MAX:
        binaryAll<true>(acc, t, PropagatingMaxOp<float>{});
        break;
      case kMicroBinaryRev + WEFT_BINARY_MIN:
        binaryAll<true>(acc, t, PropagatingMinOp<float>{});
        break;
      case kMicroPowScalar:
        binaryRotating<false>(acc, t, PowScalar{});
        break;
      case kMicroPowScalarRev:
        binaryRotating<true>(acc, t, PowScalar{});
        break;
      case kMicroMove:
#pragma unroll
        for (int e = 0; e < V; ++e)
          acc[e] = t[e];
        break;
      case kMicroKeep:
        break;
      default: // kMicroStore
        storeResult(p.result[(w >> kResultShift) & 7], base, whole, numel, t);
        break;
      }
      const int round = (w >> kRoundShift) & 3;
      if (round == WEFT_BF16) {
#pragma unroll
        for (int e = 0; e < V; ++e)
          acc[e] = toFloat(toBF16(acc[e]));
      } else if (round == WEFT_F16) {
#pragma unroll
        for (int e = 0; e < V; ++e)
          acc[e] = toFloat(toF16(acc[e]));
      }
    }
  }
}

//===-- host --------------------------------------------------------------===//

/// Fills operand i's description; `expanded` (when not null) holds the
/// operand expanded to the full shape.
template <class Index, class Div>
void describeOperand(const cpu::KernelArgs &args, const FusedProgram &prog,
                     int i, void *expanded, DevOperand<Index, Div> &x) {
  const cpu::TensorArg &arg = args.tensor(i);
  x.ptr = expanded ? expanded : arg.data;
  x.dtype = static_cast<uint8_t>(arg.dtype);
  const FusedAccess access = expanded ? FusedAccess::Full : prog.access[i];
  x.access = static_cast<uint8_t>(access);
  x.rank = 1;
  const bool aligned16 = aligned(x.ptr, 16);
  x.vec = aligned16 && access == FusedAccess::Full;
  if (access == FusedAccess::Suffix) {
    x.period = Div(static_cast<Index>(arg.numel));
    x.vec = aligned16 && arg.numel % V == 0;
  } else if (access == FusedAccess::General) {
    const cpu::TensorArg *ins[1] = {&arg};
    const cpu::BroadcastPlan<1> plan =
        cpu::makeBroadcastPlan(args, args.tensor(prog.numOperands), ins);
    x.rank = static_cast<uint8_t>(plan.rank);
    for (int d = 0; d < plan.rank; ++d) {
      x.dims[d] = Div(static_cast<Index>(plan.dims[d]));
      x.strides[d] = static_cast<Index>(plan.strides[0][d]);
    }
  }
}

template <class Index, class Div>
void launchFused(const cpu::KernelArgs &args, const FusedProgram &prog) {
  FusedParams<Index, Div> p = {};
  p.numel = static_cast<Index>(prog.numel);
  for (int i = 0; i < prog.numImms; ++i)
    p.imm[i] = prog.imm[i];

  const FusedMicroProgram micro = lowerFusedCall(args, prog);
  if (micro.ops.size() > static_cast<size_t>(kMaxFusedMicroOps))
    args.invalid("program too long for the GPU kernel");
  p.numOps = static_cast<int>(micro.ops.size());
  for (size_t j = 0; j < micro.ops.size(); ++j)
    p.ops[j] = packMicroOp(micro.ops[j]);

  // General operands beyond kMaxDims merged dims: expanded to the full
  // shape first (rare: it takes several alternating broadcast dims).
  const cpu::TensorArg &iter = args.tensor(prog.numOperands);
  int64_t offsets[WEFT_FUSED_MAX_OPERANDS];
  int64_t scratchBytes = 0;
  for (int i = 0; i < prog.numOperands; ++i) {
    offsets[i] = -1;
    if (!prog.live[i] || prog.access[i] != FusedAccess::General)
      continue;
    const cpu::TensorArg &arg = args.tensor(i);
    const cpu::TensorArg *ins[1] = {&arg};
    if (cpu::makeBroadcastPlan(args, iter, ins).rank <= kMaxDims)
      continue;
    offsets[i] = scratchBytes;
    scratchBytes += (prog.numel * arg.elemSize() + 255) / 256 * 256;
  }
  char *scratchBase =
      scratchBytes > 0 ? static_cast<char *>(scratch(scratchBytes)) : nullptr;
  for (int i = 0; i < prog.numOperands; ++i) {
    void *expanded = nullptr;
    if (offsets[i] >= 0) {
      const cpu::TensorArg &arg = args.tensor(i);
      expanded = scratchBase + offsets[i];
      std::vector<int64_t> desc = {2, arg.dtype, arg.rank};
      desc.insert(desc.end(), arg.dims, arg.dims + arg.rank);
      desc.insert(desc.end(), {arg.dtype, iter.rank});
      desc.insert(desc.end(), iter.dims, iter.dims + iter.rank);
      desc.push_back(0);
      void *bufs[2] = {arg.data, expanded};
      weft_cuda_k_expand(bufs, desc.data());
    }
    describeOperand(args, prog, i, expanded, p.operand[i]);
  }
  // Prefetch the first two full-shape operands the program reads.
  p.prefetch[0] = p.prefetch[1] = -1;
  int numPrefetch = 0;
  for (const FusedMicroOp &m : micro.ops)
    if (m.source == kSourceOperand && numPrefetch < 2 &&
        p.operand[m.index].access == static_cast<uint8_t>(FusedAccess::Full) &&
        (numPrefetch == 0 || p.prefetch[0] != m.index))
      p.prefetch[numPrefetch++] = m.index;
  for (int t = 0; t < prog.numResults; ++t) {
    const cpu::TensorArg &y = args.tensor(prog.numOperands + t);
    p.result[t].ptr = y.data;
    p.result[t].dtype = static_cast<uint8_t>(y.dtype);
    p.result[t].vec = aligned(y.data, 16);
  }
  const int blocks = blocksFor((prog.numel + V - 1) / V);
  if (micro.numSlots <= kFewSlots)
    fusedKernel<Index, Div, kFewSlots>
        <<<blocks, kBlock, 0, computeStream()>>>(p);
  else
    fusedKernel<Index, Div, kMaxSlots>
        <<<blocks, kBlock, 0, computeStream()>>>(p);
  checkLaunch("fused");
}

} // namespace

extern "C" void weft_cuda_k_fused(void *const *bufs, const int64_t *desc) {
  cpu::KernelArgs args("fused", bufs, desc);
  const FusedProgram prog = cpu::decodeFusedProgram(args);
  if (prog.numel == 0)
    return;
  // 32-bit indices while every index and offset stays below 2^31.
  if (prog.numel + V <= kInt32Limit)
    launchFused<uint32_t, IntDivider>(args, prog);
  else
    launchFused<int64_t, Divider64>(args, prog);
}
