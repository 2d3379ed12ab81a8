//===- ElementFolding.h - Arithmetic on constant tensors -------*- C++ -*-===//
//-*-===//
//
// Element-level helpers of weft's folders (Folders.cpp): access to
// DenseElementsAttr constants, data movement by source offsets, and scalar
// arithmetic with the runtime's semantics (integer division truncates toward
// zero, ui8 and i1 are unsigned, float max/min propagate NaN, comparisons
// with NaN are false). Functions returning nullopt or a null attribute
// decline to fold.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_DIALECTS_WEFT_ELEMENTFOLDING_H
#define WEFT_DIALECTS_WEFT_ELEMENTFOLDING_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/APInt.h"

#include <optional>

namespace weft::folding {

/// Results that are not splats are built element by element and copied into
/// the IR; beyond this many elements folding is not worth its time and memory.
constexpr int64_t kMaxFoldedElements = 1 << 20;

//===----------------------------------------------------------------------===//
// Constant access and data movement
//===----------------------------------------------------------------------===//

mlir::DenseElementsAttr denseOf(mlir::Attribute attr);
llvm::ArrayRef<int64_t> shapeOf(mlir::DenseElementsAttr attr);

/// ui8 and i1: compared, divided and widened without sign.
bool isUnsignedInt(mlir::Type type);

/// Whether `attr` is a constant whose elements all equal `value`; for floats
/// 0 matches both zeros.
bool isSplatOf(mlir::Attribute attr, int64_t value);

/// A splat of integer `type` holding `value`; null when the type has no
/// static shape (unverified IR from a builder).
mlir::DenseElementsAttr intSplat(mlir::RankedTensorType type, int64_t value);

llvm::SmallVector<int64_t> rowMajorStrides(llvm::ArrayRef<int64_t> shape);

/// `base + sum_d index[d] * strides[d]` for every index of `shape`, in
/// row-major order: the source offset of each element of a strided view.
llvm::SmallVector<int64_t> stridedOffsets(llvm::ArrayRef<int64_t> shape,
                                          llvm::ArrayRef<int64_t> strides,
                                          int64_t base = 0);

/// For each element of shape `to`, the offset of the element of shape
/// `from` that broadcasts to it. Requires isBroadcastableTo(from, to).
llvm::SmallVector<int64_t> broadcastOffsets(llvm::ArrayRef<int64_t> from,
                                            llvm::ArrayRef<int64_t> to);

/// The constant of `type` whose element i is element offsets[i] of `input`.
/// Same element type; offsets must be in range.
mlir::DenseElementsAttr copyElements(mlir::DenseElementsAttr input,
                                     mlir::RankedTensorType type,
                                     llvm::ArrayRef<int64_t> offsets);

/// `input` broadcast to `type`, or null when it does not broadcast.
mlir::DenseElementsAttr broadcastConstant(mlir::DenseElementsAttr input,
                                          mlir::RankedTensorType type);

/// A constant of `type` from `count` values (1 makes a splat) computed by
/// `element(i) -> std::optional<T>`; nullopt abandons the fold. T is APInt,
/// APFloat or bool (i1).
template <typename T, typename Fn>
mlir::DenseElementsAttr buildElements(mlir::RankedTensorType type,
                                      int64_t count, Fn &&element) {
  if (!type.hasStaticShape() || (count != 1 && count != type.getNumElements()))
    return {};
  llvm::SmallVector<T> values;
  values.reserve(count);
  for (int64_t i = 0; i < count; ++i) {
    std::optional<T> value = element(i);
    if (!value)
      return {};
    values.push_back(std::move(*value));
  }
  return mlir::DenseElementsAttr::get(type, llvm::ArrayRef<T>(values));
}

//===----------------------------------------------------------------------===//
// Scalar arithmetic
//===----------------------------------------------------------------------===//

enum class Unary {
  Neg,
  Sqrt,
  Exp,
  Log,
  Tanh,
  Erf,
  Relu,
  Sigmoid,
  Sin,
  Cos,
  Floor,
  Ceil,
  Round,
  Atan,
  Not
};
enum class Binary { Add, Sub, Mul, Div, Rem, Pow, Max, Min, And, Or };
enum class Comparison { Equal, Less, Greater, LessEqual, GreaterEqual };

double toDouble(const llvm::APFloat &value);
llvm::APFloat fromDouble(double value, const llvm::fltSemantics &semantics);

std::optional<llvm::APFloat> applyFloat(Unary kind, const llvm::APFloat &x);
std::optional<llvm::APInt> applyInt(Unary kind, const llvm::APInt &x,
                                    bool isUnsigned);
std::optional<llvm::APFloat> applyFloat(Binary kind, const llvm::APFloat &a,
                                        const llvm::APFloat &b);
/// Declines integer division by zero.
std::optional<llvm::APInt> applyInt(Binary kind, const llvm::APInt &a,
                                    const llvm::APInt &b, bool isUnsigned);
bool compareFloat(Comparison kind, const llvm::APFloat &a,
                  const llvm::APFloat &b);
bool compareInt(Comparison kind, const llvm::APInt &a, const llvm::APInt &b,
                bool isUnsigned);

/// One element converted as weft.cast converts it: float to integer
/// truncates toward zero (NaN and out of range decline), anything to i1 is
/// x != 0, float narrowing rounds to nearest even.
std::optional<llvm::APInt> castToInt(const llvm::APFloat &x,
                                     mlir::IntegerType to);
std::optional<llvm::APInt> castToInt(const llvm::APInt &x, bool fromUnsigned,
                                     mlir::IntegerType to);
std::optional<llvm::APFloat> castToFloat(const llvm::APFloat &x,
                                         mlir::FloatType to);
std::optional<llvm::APFloat> castToFloat(const llvm::APInt &x,
                                         bool fromUnsigned, mlir::FloatType to);

} // namespace weft::folding

#endif // WEFT_DIALECTS_WEFT_ELEMENTFOLDING_H
