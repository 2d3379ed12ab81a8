//===- Compare.cu - GPU compare and where kernels -------------------------===//
//
// compare: every dtype, 16-bit floats compared as float, a bool result.
// where: z = cond ? x : y with numpy broadcasting of all three, elements
// moved as unsigned integers of their size so every dtype is handled (the
// CPU kernels Elementwise.cpp and Where.cpp).
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/cuda/CudaKernels.h"
#include "runtime/kernels/cuda/DataKernelUtil.cuh"

#include "runtime/kernels/cpu/Broadcast.h"
#include "runtime/kernels/cpu/DTypes.h"

using namespace weft;
using namespace weft::cuda;
using namespace weft::cuda::data;

namespace {

//===-- compare -----------------------------------------------------------===//

template <class T, int kOp> struct CompareOp {
  __device__ uint8_t operator()(T a, T b) const {
    const auto x = widen(a);
    const auto y = widen(b);
    if constexpr (kOp == WEFT_CMP_EQ)
      return static_cast<uint8_t>(x == y);
    else if constexpr (kOp == WEFT_CMP_LT)
      return static_cast<uint8_t>(x < y);
    else if constexpr (kOp == WEFT_CMP_GT)
      return static_cast<uint8_t>(x > y);
    else if constexpr (kOp == WEFT_CMP_LE)
      return static_cast<uint8_t>(x <= y);
    else
      return static_cast<uint8_t>(x >= y);
  }
};

template <class T>
void compareTyped(const cpu::KernelArgs &args, int64_t op,
                  const cpu::BroadcastPlan<2> &plan, const T *a, const T *b,
                  uint8_t *c) {
  switch (op) {
  case WEFT_CMP_EQ:
    return launchBinary(plan, a, b, c, CompareOp<T, WEFT_CMP_EQ>{}, "compare");
  case WEFT_CMP_LT:
    return launchBinary(plan, a, b, c, CompareOp<T, WEFT_CMP_LT>{}, "compare");
  case WEFT_CMP_GT:
    return launchBinary(plan, a, b, c, CompareOp<T, WEFT_CMP_GT>{}, "compare");
  case WEFT_CMP_LE:
    return launchBinary(plan, a, b, c, CompareOp<T, WEFT_CMP_LE>{}, "compare");
  case WEFT_CMP_GE:
    return launchBinary(plan, a, b, c, CompareOp<T, WEFT_CMP_GE>{}, "compare");
  default:
    fatal(kExitFailure, "kernel %s: unknown op %lld", args.kernel(),
          static_cast<long long>(op));
  }
}

//===-- where -------------------------------------------------------------===//

/// Same-shape where over n elements; with `vec`, packs of 16 bytes of x.
template <class U>
__global__ void __launch_bounds__(kBlock)
    whereContiguous(const uint8_t *cond, const U *x, const U *y, U *z,
                    int64_t n, bool vec) {
  constexpr int V = 16 / sizeof(U);
  const int64_t start = gridStart<int64_t>(), step = gridStep<int64_t>();
  int64_t done = 0;
  if (vec) {
    const int64_t packs = n / V;
    for (int64_t i = start; i < packs; i += step) {
      const Pack<uint8_t, V> c =
          reinterpret_cast<const Pack<uint8_t, V> *>(cond)[i];
      const Pack<U, V> a = reinterpret_cast<const Pack<U, V> *>(x)[i];
      const Pack<U, V> b = reinterpret_cast<const Pack<U, V> *>(y)[i];
      Pack<U, V> r;
#pragma unroll
      for (int j = 0; j < V; ++j)
        r.v[j] = c.v[j] ? a.v[j] : b.v[j];
      reinterpret_cast<Pack<U, V> *>(z)[i] = r;
    }
    done = packs * V;
  }
  for (int64_t i = done + start; i < n; i += step)
    z[i] = cond[i] ? x[i] : y[i];
}

template <class U, class Calc>
__global__ void __launch_bounds__(kBlock)
    whereBroadcast(const uint8_t *cond, const U *x, const U *y, U *z,
                   typename Calc::Index n, const __grid_constant__ Calc calc) {
  using Index = typename Calc::Index;
  const Index step = gridStep<Index>();
  for (Index i = gridStart<Index>(); i < n; i += step) {
    typename Calc::Offset off[3];
    calc.get(i, off);
    z[i] = cond[off[0]] ? x[off[1]] : y[off[2]];
  }
}

template <class U>
void whereTyped(const cpu::BroadcastPlan<3> &plan, const uint8_t *cond,
                const U *x, const U *y, U *z) {
  const int64_t n = plan.numel;
  if (n == 0)
    return;
  const bool contiguous = plan.rank == 1 && plan.strides[0][0] != 0 &&
                          plan.strides[1][0] != 0 && plan.strides[2][0] != 0;
  if (contiguous) {
    constexpr int V = 16 / sizeof(U);
    const bool vec =
        aligned(cond, V) && aligned(x, 16) && aligned(y, 16) && aligned(z, 16);
    whereContiguous<<<blocksFor(vec ? (n + V - 1) / V : n), kBlock, 0,
                      computeStream()>>>(cond, x, y, z, n, vec);
  } else {
    withOffsets<3>(plan.rank, plan.dims, plan.strides, n, n, [&](auto calc) {
      using Calc = decltype(calc);
      whereBroadcast<U, Calc><<<blocksFor(n), kBlock, 0, computeStream()>>>(
          cond, x, y, z, static_cast<typename Calc::Index>(n), calc);
    });
  }
  checkLaunch("where");
}

} // namespace

extern "C" void weft_cuda_k_compare(void *const *bufs, const int64_t *desc) {
  cpu::KernelArgs args("compare", bufs, desc);
  args.expectTensors(3, 3);
  args.expectAttrs(1);
  const cpu::TensorArg &a = args.tensor(0);
  const cpu::TensorArg &b = args.tensor(1);
  const cpu::TensorArg &c = args.tensor(2);
  args.expectDType(1, a.dtype);
  args.expectDType(2, WEFT_BOOL);
  const int64_t op = args.attr(0);
  const cpu::TensorArg *ins[2] = {&a, &b};
  const cpu::BroadcastPlan<2> plan = cpu::makeBroadcastPlan(args, c, ins);
  dispatchAnyType(a.dtype, args, [&](auto tag) {
    using T = typename decltype(tag)::type;
    compareTyped<T>(args, op, plan, a.as<T>(), b.as<T>(), c.as<uint8_t>());
  });
}

extern "C" void weft_cuda_k_where(void *const *bufs, const int64_t *desc) {
  cpu::KernelArgs args("where", bufs, desc);
  args.expectTensors(4, 4);
  const cpu::TensorArg &cond = args.tensor(0);
  const cpu::TensorArg &x = args.tensor(1);
  const cpu::TensorArg &y = args.tensor(2);
  const cpu::TensorArg &z = args.tensor(3);
  args.expectDType(0, WEFT_BOOL);
  args.expectDType(2, x.dtype);
  args.expectDType(3, x.dtype);
  const cpu::TensorArg *ins[3] = {&cond, &x, &y};
  const cpu::BroadcastPlan<3> plan = cpu::makeBroadcastPlan(args, z, ins);
  cpu::dispatchByElementSize(x.elemSize(), args, [&](auto tag) {
    using U = typename decltype(tag)::type;
    whereTyped<U>(plan, cond.as<uint8_t>(), x.as<U>(), y.as<U>(), z.as<U>());
  });
}
