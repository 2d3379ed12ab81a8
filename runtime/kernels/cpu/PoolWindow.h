//===- PoolWindow.h - Pool attributes, window checks and avg divisors -----===//
//
// What max_pool / avg_pool (Pooling.cpp) and their gradients (PoolingGrad.cpp)
// must agree on: the layout of the pool attributes, the NC... operand checks
// and the divisor avg_pool applies to each output position.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_KERNELS_CPU_POOLWINDOW_H
#define WEFT_RUNTIME_KERNELS_CPU_POOLWINDOW_H

#include "ConvGeometry.h"

#include <vector>

namespace weft {
namespace cpu {

/// Checks that `x` and `y` (or their gradients) are NC... tensors of equal
/// rank with matching N and C.
inline void checkPoolOperands(const KernelArgs &args, const TensorArg &x,
                              const TensorArg &y) {
  if (x.rank < 3 || y.rank != x.rank || y.dims[0] != x.dims[0] ||
      y.dims[1] != x.dims[1])
    args.invalid("expected NC... tensors with matching N and C");
}

/// max_pool's attributes: s kernel dims, s strides, 2s pads, s dilations.
inline WindowGeometry makeMaxPoolGeometry(const KernelArgs &args,
                                          const TensorArg &x,
                                          const TensorArg &y) {
  const int s = x.rank - 2;
  const int64_t *a = args.attrArray(0, 5 * s);
  return makeWindowGeometry(args, x, y, a, a + s, a + 2 * s, a + 4 * s);
}

/// avg_pool's attributes: count_include_pad (returned in `countPad`), then
/// s kernel dims, s strides and 2s pads.
inline WindowGeometry makeAvgPoolGeometry(const KernelArgs &args,
                                          const TensorArg &x,
                                          const TensorArg &y, bool &countPad) {
  const int s = x.rank - 2;
  const int64_t *a = args.attrArray(0, 1 + 4 * s);
  countPad = a[0] != 0;
  return makeWindowGeometry(args, x, y, a + 1, a + 1 + s, a + 1 + 2 * s,
                            nullptr);
}

/// Taps of output position o along dim d inside [-padBegin, in + padEnd).
/// (This and divideByTaps are constexpr so that the GPU kernels, Pooling.cu,
/// call them on the device too.)
constexpr int64_t paddedTaps(const WindowGeometry &g, int d, int64_t o) {
  int64_t start = o * g.stride[d] - g.padBegin[d];
  int64_t lo = start < -g.padBegin[d] ? -g.padBegin[d] : start;
  int64_t end = start + g.kernel[d];
  int64_t limit = g.in[d] + g.padEnd[d];
  int64_t hi = end > limit ? limit : end;
  return hi > lo ? hi - lo : 0;
}

/// avg_pool's divisor factor of output position o along dim d: the taps
/// inside the padded input (countPad) or inside the input itself.
inline int64_t tapCount(const WindowGeometry &g, bool countPad, int d,
                        int64_t o) {
  if (countPad)
    return paddedTaps(g, d, o);
  int64_t lo, hi;
  g.validTaps(d, o, lo, hi);
  return hi - lo;
}

/// tapCount along the last dim for each output column.
inline std::vector<int64_t> lastDimTapCounts(const WindowGeometry &g,
                                             bool countPad) {
  std::vector<int64_t> counts(static_cast<size_t>(g.out[2]));
  for (int64_t i = 0; i < g.out[2]; ++i)
    counts[i] = tapCount(g, countPad, 2, i);
  return counts;
}

/// `v` divided by avg_pool's divisor `count`: a window entirely in the
/// padding averages nothing, 0 (not NaN).
constexpr float divideByTaps(float v, int64_t count) {
  return count > 0 ? v / static_cast<float>(count) : 0.0f;
}

} // namespace cpu
} // namespace weft

#endif // WEFT_RUNTIME_KERNELS_CPU_POOLWINDOW_H
