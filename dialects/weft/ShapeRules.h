//===- ShapeRules.h - Shape arithmetic of weft ops --------------*- C++ -*-===//
//
// The shape rules of weft ops as plain functions over static shapes, so the
// ONNX importer computes the same shapes the ops' type inference checks.
// Shapes are fully static: weft has no dynamic dimensions.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_DIALECTS_WEFT_SHAPERULES_H
#define WEFT_DIALECTS_WEFT_SHAPERULES_H

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <optional>

namespace weft {

/// The numpy (and ONNX multidirectional) broadcast of two shapes: aligned on
/// the right, each pair of dims equal or one of them 1. Fails when a pair
/// differs and neither is 1.
mlir::FailureOr<llvm::SmallVector<int64_t>>
broadcastShapes(llvm::ArrayRef<int64_t> lhs, llvm::ArrayRef<int64_t> rhs);

/// Whether `from` broadcasts to exactly `to` (ONNX Expand, weft.broadcast_to):
/// rank(from) <= rank(to) and, aligned on the right, each dim of `from` is 1
/// or equal to the dim of `to`.
bool isBroadcastableTo(llvm::ArrayRef<int64_t> from,
                       llvm::ArrayRef<int64_t> to);

/// Output length of a sliding window along one dim: convolution (ceilMode
/// false) and pooling. floor (or ceil) of
/// (in + padBegin + padEnd - dilation * (kernel - 1) - 1) / stride, plus 1.
/// With ceilMode the last window must start inside the input or the begin
/// padding (the ONNX / PyTorch rule), else it is dropped. Returns a value
/// < 1 when no window fits or the arguments are out of range (stride or
/// dilation < 1, kernel < 1, overflow); callers report that.
int64_t pooledSize(int64_t in, int64_t kernel, int64_t stride, int64_t padBegin,
                   int64_t padEnd, int64_t dilation, bool ceilMode);

/// An ONNX axis in [-rank, rank) made non-negative; nullopt when out of range.
std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank);

/// The product of the dims (1 for rank 0).
int64_t numElements(llvm::ArrayRef<int64_t> shape);

/// The shape after reducing `axes` (non-negative, in range): dims become 1
/// with keepdims, else they are dropped.
llvm::SmallVector<int64_t> reducedShape(llvm::ArrayRef<int64_t> shape,
                                        llvm::ArrayRef<int64_t> axes,
                                        bool keepdims);

/// Whether `permutation` holds each of 0..rank-1 exactly once.
bool isPermutation(llvm::ArrayRef<int64_t> permutation, int64_t rank);

/// result.dims[i] = shape[permutation[i]]; `permutation` must be valid.
llvm::SmallVector<int64_t> transposedShape(llvm::ArrayRef<int64_t> shape,
                                           llvm::ArrayRef<int64_t> permutation);

/// data.dims[:axis] + indices.dims + data.dims[axis+1:]; axis must be in
/// [0, rank(data)).
llvm::SmallVector<int64_t> gatheredShape(llvm::ArrayRef<int64_t> data,
                                         llvm::ArrayRef<int64_t> indices,
                                         int64_t axis);

/// The result of weft.matmul: broadcast batch dims followed by M and N.
/// Fails when an operand has rank < 2, the contracted dims differ or the
/// batch dims do not broadcast.
mlir::FailureOr<llvm::SmallVector<int64_t>>
matmulShape(llvm::ArrayRef<int64_t> lhs, llvm::ArrayRef<int64_t> rhs,
            bool transposeA, bool transposeB);

/// One dim of an ONNX Slice in weft.slice's form.
struct SliceBounds {
  int64_t start; ///< In [0, dim), or 0 when dim == 0.
  int64_t size;  ///< Number of elements taken, >= 0.
};

/// ONNX Slice's clamping of (start, end, step) over a dim of length `dim`
/// (negative start / end count from the end, out-of-range values clamp).
/// The result satisfies weft.slice's verifier. `step` must be non-zero
/// (returns {0, 0} otherwise).
SliceBounds normalizeSlice(int64_t start, int64_t end, int64_t step,
                           int64_t dim);

} // namespace weft

#endif // WEFT_DIALECTS_WEFT_SHAPERULES_H
