//===- TopKOrder.h - The order of weft_k_topk, for CPU and GPU ------------===//
//
// topk ranks a row's elements by a strict total order: by value (largest
// first, or smallest first), NaN above every number (PyTorch's topk), equal
// values in index order. Host and device code share it so the two backends
// pick the same elements in the same order, and share the checks of a call.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_KERNELS_CPU_TOPKORDER_H
#define WEFT_RUNTIME_KERNELS_CPU_TOPKORDER_H

#include "runtime/kernels/cpu/KernelArgs.h"

#include <cstdint>

#ifdef __CUDACC__
#define WEFT_TOPK_HD __host__ __device__
#else
#define WEFT_TOPK_HD
#endif

namespace weft {

/// Whether element (a, i) comes before element (b, j) of one row.
template <class T>
WEFT_TOPK_HD inline bool topkBefore(T a, int64_t i, T b, int64_t j,
                                    bool largest) {
  const bool aNan = a != a, bNan = b != b;
  if (aNan || bNan) {
    if (aNan && bNan)
      return i < j;
    // NaN is the largest: first when largest, last otherwise.
    return aNan == largest;
  }
  if (a != b)
    return largest ? a > b : a < b;
  return i < j;
}

/// A checked weft_k_topk call: x -> values, indices along `axis`.
struct TopKCall {
  const cpu::TensorArg *x, *values, *indices;
  int axis;
  int64_t extent, k, outer, inner;
  bool largest;
};

/// Checks the call's tensors and attributes (KernelABI.h) and stops with the
/// kernel's error when they do not fit.
inline TopKCall checkTopKCall(const cpu::KernelArgs &args) {
  args.expectTensors(3, 3);
  args.expectAttrs(2);
  const cpu::TensorArg &x = args.tensor(0);
  const cpu::TensorArg &values = args.tensor(1);
  const cpu::TensorArg &indices = args.tensor(2);
  args.expectDType(1, x.dtype);
  args.expectDType(2, WEFT_I64);
  const int64_t axis = args.attr(0);
  if (axis < 0 || axis >= x.rank)
    args.invalid("axis out of range");
  if (values.rank != x.rank || indices.rank != x.rank)
    args.invalid("results must have the input's rank");
  for (int d = 0; d < x.rank; ++d)
    if (values.dims[d] != indices.dims[d] ||
        (d != axis && values.dims[d] != x.dims[d]))
      args.invalid("result shapes do not match the input");
  if (values.dims[axis] > x.dims[axis])
    args.invalid("k exceeds the axis' extent");
  const int a = static_cast<int>(axis);
  return {&x,
          &values,
          &indices,
          a,
          x.dims[a],
          values.dims[a],
          x.extent(0, a),
          x.extent(a + 1, x.rank),
          args.attr(1) != 0};
}

} // namespace weft

#undef WEFT_TOPK_HD

#endif // WEFT_RUNTIME_KERNELS_CPU_TOPKORDER_H
