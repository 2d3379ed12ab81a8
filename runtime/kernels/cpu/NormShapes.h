//===- NormShapes.h - Operand checks and axis splits of normalizations ----===//
//
// What layer_norm / softmax (Normalization.cpp) and their gradients
// (NormalizationGrad.cpp) must agree on: the dtype check, how the axis
// attribute splits a tensor into rows, and the column chunks a softmax over
// a non-innermost axis works on.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_KERNELS_CPU_NORMSHAPES_H
#define WEFT_RUNTIME_KERNELS_CPU_NORMSHAPES_H

#include "KernelArgs.h"

#include <initializer_list>

namespace weft {
namespace cpu {

/// Fails unless every tensor operand is f32.
inline void expectAllF32(const KernelArgs &args) {
  for (int i = 0; i < args.numTensors(); ++i)
    if (args.tensor(i).dtype != WEFT_F32)
      args.unsupportedDType(args.tensor(i).dtype);
}

/// Every tensor f32 but the last, the result, which may also be bf16 or f16:
/// the kernel computes in f32 and rounds each result once, as a cast after
/// it would (weft-fuse-elementwise folds such a cast into layer_norm).
inline void expectF32RoundedResult(const KernelArgs &args) {
  const int last = args.numTensors() - 1;
  for (int i = 0; i < last; ++i)
    if (args.tensor(i).dtype != WEFT_F32)
      args.unsupportedDType(args.tensor(i).dtype);
  const int64_t out = args.tensor(last).dtype;
  if (out != WEFT_F32 && out != WEFT_BF16 && out != WEFT_F16)
    args.unsupportedDType(out);
}

/// layer_norm's rows: `x` as [rows, inner], inner the product of the dims
/// from `axis` (attribute 0, in [0, rank]) on.
struct NormRows {
  int64_t inner, rows;
};

inline NormRows layerNormRows(const KernelArgs &args, const TensorArg &x) {
  const int64_t axis = args.attr(0);
  if (axis < 0 || axis > x.rank)
    args.invalid("axis out of range");
  NormRows r;
  r.inner = x.extent(static_cast<int>(axis), x.rank);
  r.rows = r.inner == 0 ? 0 : x.numel / r.inner;
  return r;
}

/// A softmax axis of `x` (rank >= 1): `x` as [outer, n, inner].
/// layer_norm_grad's checks (x, scale, dy -> dx, dscale, dbias; all f32;
/// axis, epsilon): its rows, shared by the CPU and GPU kernels.
inline NormRows checkLayerNormGrad(const KernelArgs &args) {
  args.expectTensors(6, 6);
  args.expectAttrs(2);
  expectAllF32(args);
  const NormRows nr = layerNormRows(args, args.tensor(0));
  args.expectSameNumel(0, 2);
  args.expectSameNumel(0, 3);
  for (int i : {1, 4, 5})
    if (args.tensor(i).numel != nr.inner)
      args.invalid("scale, dscale and dbias must hold prod(x.dims[axis:]) "
                   "values");
  return nr;
}

struct SoftmaxAxis {
  int64_t outer, n, inner;
};

inline SoftmaxAxis softmaxAxis(const KernelArgs &args, const TensorArg &x,
                               int64_t axis) {
  if (axis < 0 || axis >= x.rank)
    args.invalid("axis out of range");
  SoftmaxAxis a;
  a.n = x.dims[axis];
  a.inner = x.extent(static_cast<int>(axis) + 1, x.rank);
  a.outer = x.extent(0, static_cast<int>(axis));
  return a;
}

/// Tasks of a softmax over a non-innermost axis: (block, column chunk)
/// pairs, so a softmax over a leading axis still spreads over the pool.
struct SoftmaxColumnChunks {
  static constexpr int64_t kColumns = 512;
  int64_t inner, chunks, width; // width: most columns of a chunk

  explicit SoftmaxColumnChunks(int64_t innerExtent)
      : inner(innerExtent), chunks((innerExtent + kColumns - 1) / kColumns),
        width(innerExtent < kColumns ? innerExtent : kColumns) {}

  /// Task t covers columns [j0, j1) of block r.
  void task(int64_t t, int64_t &r, int64_t &j0, int64_t &j1) const {
    r = t / chunks;
    j0 = (t % chunks) * kColumns;
    j1 = j0 + kColumns < inner ? j0 + kColumns : inner;
  }
};

} // namespace cpu
} // namespace weft

#endif // WEFT_RUNTIME_KERNELS_CPU_NORMSHAPES_H
