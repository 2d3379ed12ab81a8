//===- ReduceAxes.h - The reduce kernel's attributes, checked -------------===//
//
// What weft_k_reduce (CPU) and weft_cuda_k_reduce (GPU) read from a call
// (x -> y; op, naxes, axes[naxes]) and check the same way: the op, which
// of x's dims are reduced, and the element counts.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_KERNELS_CPU_REDUCEAXES_H
#define WEFT_RUNTIME_KERNELS_CPU_REDUCEAXES_H

#include "KernelArgs.h"

namespace weft {
namespace cpu {

struct ReduceAxes {
  int64_t op = WEFT_REDUCE_SUM;
  bool reduced[kMaxRank] = {};
  /// Elements combined into each result, and the result's element count.
  int64_t reducedCount = 1, outCount = 1;
};

/// Fails (naming the kernel) on an unknown op, an axis out of range or a
/// result whose size does not match the reduced input.
inline ReduceAxes checkReduceAxes(const KernelArgs &args, const TensorArg &x,
                                  const TensorArg &y) {
  ReduceAxes r;
  r.op = args.attr(0);
  const int64_t naxes = args.attr(1);
  const int64_t *axes = args.attrArray(2, naxes);
  if (r.op != WEFT_REDUCE_SUM && r.op != WEFT_REDUCE_MEAN &&
      r.op != WEFT_REDUCE_MAX)
    args.invalid("unknown reduce op");
  for (int64_t i = 0; i < naxes; ++i) {
    if (axes[i] < 0 || axes[i] >= x.rank)
      args.invalid("axis out of range");
    r.reduced[axes[i]] = true;
  }
  for (int d = 0; d < x.rank; ++d)
    if (r.reduced[d])
      r.reducedCount *= x.dims[d];
  r.outCount = r.reducedCount == 0 ? y.numel : x.numel / r.reducedCount;
  if (y.numel != r.outCount)
    args.invalid("result size does not match the reduced input");
  return r;
}

} // namespace cpu
} // namespace weft

#endif // WEFT_RUNTIME_KERNELS_CPU_REDUCEAXES_H
