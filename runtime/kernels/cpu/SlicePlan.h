//===- SlicePlan.h - Strided view of a slice, shared by slice and its grad
//-===//
//
// slice (DataMovement.cpp) and slice_grad (DataMovementGrad.cpp) walk the
// same strided view of the sliced tensor: per dim of the slice its extent
// and stride in the whole tensor, with unit dims folded into a base offset
// and dims that stay contiguous merged.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_KERNELS_CPU_SLICEPLAN_H
#define WEFT_RUNTIME_KERNELS_CPU_SLICEPLAN_H

#include "KernelArgs.h"

namespace weft {
namespace cpu {

struct SlicePlan {
  int64_t extent[kMaxRank], stride[kMaxRank];
  int rank = 0;     // at least 1
  int64_t base = 0; // offset of the first element in the whole tensor
  int64_t row() const { return extent[rank - 1]; }
  int64_t rowStride() const { return stride[rank - 1]; }
  /// Offset in the whole tensor (from base) of row i of the slice.
  int64_t rowOffset(int64_t i) const {
    int64_t off = 0, rest = i;
    for (int d = rank - 2; d >= 0; --d) {
      off += (rest % extent[d]) * stride[d];
      rest /= extent[d];
    }
    return off;
  }
};

/// Plans the slice `part` of `whole` (equal ranks) from the attributes
/// starts (attribute array 0, rank values) and steps (the next rank values).
inline SlicePlan makeSlicePlan(const KernelArgs &args, const TensorArg &whole,
                               const TensorArg &part) {
  const int r = whole.rank;
  const int64_t *starts = args.attrArray(0, 2 * r);
  const int64_t *steps = starts + r;
  SlicePlan p;
  int64_t xs = 1;
  int64_t xStride[kMaxRank];
  for (int d = r - 1; d >= 0; --d) {
    xStride[d] = xs;
    xs *= whole.dims[d];
  }
  for (int d = 0; d < r; ++d) {
    const int64_t count = part.dims[d];
    if (steps[d] == 0)
      args.invalid("slice step must not be 0");
    if (count > 0) {
      const int64_t last = starts[d] + (count - 1) * steps[d];
      if (starts[d] < 0 || starts[d] >= whole.dims[d] || last < 0 ||
          last >= whole.dims[d])
        args.invalid("slice runs outside the input");
    }
    p.base += starts[d] * xStride[d];
    if (count == 1)
      continue;
    const int64_t s = steps[d] * xStride[d];
    if (p.rank > 0 && p.stride[p.rank - 1] == s * count) {
      p.extent[p.rank - 1] *= count;
      p.stride[p.rank - 1] = s;
    } else {
      p.extent[p.rank] = count;
      p.stride[p.rank] = s;
      ++p.rank;
    }
  }
  if (p.rank == 0) {
    p.extent[0] = 1;
    p.stride[0] = 1;
    p.rank = 1;
  }
  return p;
}

} // namespace cpu
} // namespace weft

#endif // WEFT_RUNTIME_KERNELS_CPU_SLICEPLAN_H
