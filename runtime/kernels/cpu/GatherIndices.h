//===- GatherIndices.h - Index checks of gather and scatter_add -----------===//
//
// gather (DataMovement.cpp) and its gradient scatter_add
// (DataMovementGrad.cpp) accept indices in [-extent, extent), negative ones
// counting from the end.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_KERNELS_CPU_GATHERINDICES_H
#define WEFT_RUNTIME_KERNELS_CPU_GATHERINDICES_H

#include "KernelArgs.h"

namespace weft {
namespace cpu {

/// Fails unless index `v` lies in [-extent, extent).
inline void checkGatherIndex(const char *kernel, int64_t v, int64_t extent) {
  if (v < -extent || v >= extent)
    fatal(kExitBadInput, "%s: index %lld out of range [-%lld, %lld)", kernel,
          static_cast<long long>(v), static_cast<long long>(extent),
          static_cast<long long>(extent));
}

/// The row a checked index `v` names.
inline int64_t normalizeGatherIndex(int64_t v, int64_t extent) {
  return v < 0 ? v + extent : v;
}

/// gather's checks (data, indices -> y; axis): the axis, shared by the CPU
/// and GPU kernels.
inline int64_t checkGather(const KernelArgs &args) {
  args.expectTensors(3, 3);
  args.expectAttrs(1);
  const TensorArg &data = args.tensor(0);
  args.expectDType(2, data.dtype);
  const int64_t axis = args.attr(0);
  if (axis < 0 || axis >= data.rank)
    args.invalid("axis out of range");
  if (args.tensor(2).numel !=
      data.extent(0, static_cast<int>(axis)) * args.tensor(1).numel *
          data.extent(static_cast<int>(axis) + 1, data.rank))
    args.invalid("result size does not match data and indices");
  return axis;
}

} // namespace cpu
} // namespace weft

#endif // WEFT_RUNTIME_KERNELS_CPU_GATHERINDICES_H
