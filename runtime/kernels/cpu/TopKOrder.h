//===- TopKOrder.h - The order of weft_k_topk, for CPU and GPU ------------===//
//
// topk ranks a row's elements by a strict total order: by value (largest
// first, or smallest first), NaN above every number (PyTorch's topk), equal
// values in index order. Host and device code share it so the two backends
// pick the same elements in the same order.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_KERNELS_CPU_TOPKORDER_H
#define WEFT_RUNTIME_KERNELS_CPU_TOPKORDER_H

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

} // namespace weft

#undef WEFT_TOPK_HD

#endif // WEFT_RUNTIME_KERNELS_CPU_TOPKORDER_H
