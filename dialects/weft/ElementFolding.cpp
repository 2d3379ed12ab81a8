//===- ElementFolding.cpp - Arithmetic on constant tensors ----------------===//
//
// The element-level work behind weft's folders: reading DenseElementsAttr
// constants, moving their elements and computing on them the way the runtime
// kernels do.
//
//===----------------------------------------------------------------------===//
#include "dialects/weft/ElementFolding.h"
#include "dialects/weft/ShapeRules.h"

#include "llvm/ADT/APSInt.h"

#include <cmath>

using namespace mlir;

namespace weft::folding {

//===----------------------------------------------------------------------===//
// Constant access
//===----------------------------------------------------------------------===//

DenseElementsAttr denseOf(Attribute attr) {
  return dyn_cast_or_null<DenseElementsAttr>(attr);
}

bool isUnsignedInt(Type type) {
  auto integer = dyn_cast<IntegerType>(type);
  return integer && (integer.isUnsigned() || integer.getWidth() == 1);
}

ArrayRef<int64_t> shapeOf(DenseElementsAttr attr) {
  return attr.getType().getShape();
}

/// Whether `attr` is a constant whose elements all equal `value`; for floats
/// 0 matches both zeros.
bool isSplatOf(Attribute attr, int64_t value) {
  DenseElementsAttr dense = denseOf(attr);
  if (!dense || !dense.isSplat())
    return false;
  if (isa<FloatType>(dense.getElementType())) {
    APFloat v = dense.getSplatValue<APFloat>();
    return value == 0 ? v.isZero() : v.isExactlyValue(double(value));
  }
  APInt v = dense.getSplatValue<APInt>();
  return v == APInt(v.getBitWidth(), value);
}

/// A splat of `type` holding the integer `value`; null when the type has no
/// shape (unverified IR from a builder).
DenseElementsAttr intSplat(RankedTensorType type, int64_t value) {
  if (!type.hasStaticShape() || !isa<IntegerType>(type.getElementType()))
    return {};
  APInt v(type.getElementTypeBitWidth(), value);
  return DenseElementsAttr::get(type, ArrayRef<APInt>(v));
}

SmallVector<int64_t> rowMajorStrides(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;)
    strides[d - 1] = strides[d] * shape[d];
  return strides;
}

/// `base + sum_d index[d] * strides[d]` for every index of `shape`, in
/// row-major order: the source offset of each element of a strided view.
SmallVector<int64_t> stridedOffsets(ArrayRef<int64_t> shape,
                                    ArrayRef<int64_t> strides, int64_t base) {
  SmallVector<int64_t> offsets;
  int64_t count = numElements(shape);
  if (count <= 0)
    return offsets;
  offsets.reserve(count);
  SmallVector<int64_t> index(shape.size(), 0);
  int64_t offset = base;
  for (int64_t k = 0; k < count; ++k) {
    offsets.push_back(offset);
    for (size_t d = shape.size(); d-- > 0;) {
      offset += strides[d];
      if (++index[d] < shape[d])
        break;
      offset -= strides[d] * index[d];
      index[d] = 0;
    }
  }
  return offsets;
}

/// For each element of shape `to`, the offset of the element of shape
/// `from` that broadcasts to it. Requires isBroadcastableTo(from, to).
SmallVector<int64_t> broadcastOffsets(ArrayRef<int64_t> from,
                                      ArrayRef<int64_t> to) {
  SmallVector<int64_t> fromStrides = rowMajorStrides(from);
  SmallVector<int64_t> strides(to.size(), 0);
  size_t lead = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i)
    strides[lead + i] = from[i] == 1 ? 0 : fromStrides[i];
  return stridedOffsets(to, strides);
}

template <typename T>
static DenseElementsAttr copyElementsAs(DenseElementsAttr input,
                                        RankedTensorType type,
                                        ArrayRef<int64_t> offsets) {
  auto values = input.getValues<T>();
  return buildElements<T>(type, offsets.size(), [&](int64_t i) {
    return std::optional<T>(values[offsets[i]]);
  });
}

/// The constant of `type` whose element i is element offsets[i] of `input`:
/// data movement. Same element type; offsets must be in range.
DenseElementsAttr copyElements(DenseElementsAttr input, RankedTensorType type,
                               ArrayRef<int64_t> offsets) {
  if (input.getElementType() != type.getElementType() ||
      static_cast<int64_t>(offsets.size()) != type.getNumElements())
    return {};
  if (input.isSplat())
    return input.resizeSplat(type);
  if (isa<FloatType>(type.getElementType()))
    return copyElementsAs<APFloat>(input, type, offsets);
  return copyElementsAs<APInt>(input, type, offsets);
}

/// `input` broadcast to `type`, or null when it does not broadcast.
DenseElementsAttr broadcastConstant(DenseElementsAttr input,
                                    RankedTensorType type) {
  if (!input || input.getElementType() != type.getElementType() ||
      !isBroadcastableTo(shapeOf(input), type.getShape()))
    return {};
  if (input.isSplat())
    return input.resizeSplat(type);
  if (type.getNumElements() > kMaxFoldedElements)
    return {};
  return copyElements(input, type,
                      broadcastOffsets(shapeOf(input), type.getShape()));
}

//===----------------------------------------------------------------------===//
// Scalar arithmetic
//===----------------------------------------------------------------------===//

double toDouble(const APFloat &value) {
  APFloat copy = value;
  bool lost;
  copy.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven, &lost);
  return copy.convertToDouble();
}

APFloat fromDouble(double value, const llvm::fltSemantics &semantics) {
  APFloat result(value);
  bool lost;
  result.convert(semantics, APFloat::rmNearestTiesToEven, &lost);
  return result;
}

std::optional<APFloat> applyFloat(Unary kind, const APFloat &x) {
  const llvm::fltSemantics &semantics = x.getSemantics();
  double v = toDouble(x);
  switch (kind) {
  case Unary::Neg:
    return -x;
  case Unary::Relu:
    return x.isNegative() && !x.isNaN() ? APFloat::getZero(semantics) : x;
  case Unary::Sqrt:
    return fromDouble(std::sqrt(v), semantics);
  case Unary::Exp:
    return fromDouble(std::exp(v), semantics);
  case Unary::Log:
    return fromDouble(std::log(v), semantics);
  case Unary::Tanh:
    return fromDouble(std::tanh(v), semantics);
  case Unary::Erf:
    return fromDouble(std::erf(v), semantics);
  case Unary::Sigmoid:
    return fromDouble(1.0 / (1.0 + std::exp(-v)), semantics);
  case Unary::Sin:
    return fromDouble(std::sin(v), semantics);
  case Unary::Cos:
    return fromDouble(std::cos(v), semantics);
  case Unary::Atan:
    return fromDouble(std::atan(v), semantics);
  case Unary::Floor:
  case Unary::Ceil:
  case Unary::Round: {
    APFloat r = x;
    r.roundToIntegral(kind == Unary::Floor  ? APFloat::rmTowardNegative
                      : kind == Unary::Ceil ? APFloat::rmTowardPositive
                                            : APFloat::rmNearestTiesToEven);
    return r;
  }
  case Unary::Not:
    return std::nullopt;
  }
  return std::nullopt;
}

std::optional<APInt> applyInt(Unary kind, const APInt &x, bool isUnsigned) {
  switch (kind) {
  case Unary::Neg:
    return -x;
  case Unary::Relu:
    return !isUnsigned && x.isNegative() ? APInt::getZero(x.getBitWidth()) : x;
  case Unary::Not:
    return ~x;
  default:
    return std::nullopt;
  }
}

std::optional<APFloat> applyFloat(Binary kind, const APFloat &a,
                                  const APFloat &b) {
  switch (kind) {
  case Binary::Add:
    return a + b;
  case Binary::Sub:
    return a - b;
  case Binary::Mul:
    return a * b;
  case Binary::Div:
    return a / b;
  case Binary::Rem: {
    APFloat r = a; // IEEE fmod: exact, with the dividend's sign
    r.mod(b);
    return r;
  }
  case Binary::Pow:
    return fromDouble(std::pow(toDouble(a), toDouble(b)), a.getSemantics());
  case Binary::Max:
    return llvm::maximum(a, b);
  case Binary::Min:
    return llvm::minimum(a, b);
  case Binary::And:
  case Binary::Or:
    return std::nullopt;
  }
  return std::nullopt;
}

/// a^b with wrap-around. A negative exponent gives 1 / a^-b truncated
/// toward zero, as the runtime computes it: 1 or -1 for a = 1 or -1, else 0.
static APInt intPower(const APInt &a, const APInt &b, bool isUnsigned) {
  unsigned width = a.getBitWidth();
  if (!isUnsigned && b.isNegative()) {
    if (a.isOne())
      return a;
    if (a.isAllOnes()) // -1
      return b[0] ? a : APInt(width, 1);
    return APInt::getZero(width);
  }
  APInt result(width, 1), base = a;
  for (unsigned bit = 0, e = b.getActiveBits(); bit < e; ++bit) {
    if (b[bit])
      result *= base;
    base *= base;
  }
  return result;
}

std::optional<APInt> applyInt(Binary kind, const APInt &a, const APInt &b,
                              bool isUnsigned) {
  switch (kind) {
  case Binary::Add:
    return a + b;
  case Binary::Sub:
    return a - b;
  case Binary::Mul:
    return a * b;
  case Binary::Div:
    // Division by zero stops the runtime with an error: left to it. sdiv
    // wraps INT_MIN / -1 to INT_MIN like the runtime.
    if (b.isZero())
      return std::nullopt;
    return isUnsigned ? a.udiv(b) : a.sdiv(b);
  case Binary::Rem:
    // As Div; srem gives 0 for INT_MIN % -1 like the runtime.
    if (b.isZero())
      return std::nullopt;
    return isUnsigned ? a.urem(b) : a.srem(b);
  case Binary::Pow:
    return intPower(a, b, isUnsigned);
  case Binary::Max:
    return isUnsigned ? llvm::APIntOps::umax(a, b) : llvm::APIntOps::smax(a, b);
  case Binary::Min:
    return isUnsigned ? llvm::APIntOps::umin(a, b) : llvm::APIntOps::smin(a, b);
  case Binary::And:
    return a & b;
  case Binary::Or:
    return a | b;
  }
  return std::nullopt;
}

bool compareFloat(Comparison kind, const APFloat &a, const APFloat &b) {
  APFloat::cmpResult c = a.compare(b);
  switch (kind) {
  case Comparison::Equal:
    return c == APFloat::cmpEqual;
  case Comparison::Less:
    return c == APFloat::cmpLessThan;
  case Comparison::Greater:
    return c == APFloat::cmpGreaterThan;
  case Comparison::LessEqual:
    return c == APFloat::cmpLessThan || c == APFloat::cmpEqual;
  case Comparison::GreaterEqual:
    return c == APFloat::cmpGreaterThan || c == APFloat::cmpEqual;
  }
  return false;
}

bool compareInt(Comparison kind, const APInt &a, const APInt &b,
                bool isUnsigned) {
  switch (kind) {
  case Comparison::Equal:
    return a == b;
  case Comparison::Less:
    return isUnsigned ? a.ult(b) : a.slt(b);
  case Comparison::Greater:
    return isUnsigned ? a.ugt(b) : a.sgt(b);
  case Comparison::LessEqual:
    return isUnsigned ? a.ule(b) : a.sle(b);
  case Comparison::GreaterEqual:
    return isUnsigned ? a.uge(b) : a.sge(b);
  }
  return false;
}

//===----------------------------------------------------------------------===//
// Cast
//===----------------------------------------------------------------------===//

/// One element converted as the runtime converts it: float to integer
/// truncates toward zero (out of range or NaN does not fold), anything to i1
/// is x != 0, float narrowing rounds to nearest even.
std::optional<APInt> castToInt(const APFloat &x, IntegerType to) {
  if (to.getWidth() == 1)
    return APInt(1, !x.isZero());
  llvm::APSInt result(to.getWidth(), isUnsignedInt(to));
  bool exact;
  if (x.convertToInteger(result, APFloat::rmTowardZero, &exact) &
      APFloat::opInvalidOp)
    return std::nullopt;
  return APInt(result);
}

std::optional<APInt> castToInt(const APInt &x, bool fromUnsigned,
                               IntegerType to) {
  if (to.getWidth() == 1)
    return APInt(1, !x.isZero());
  return fromUnsigned ? x.zextOrTrunc(to.getWidth())
                      : x.sextOrTrunc(to.getWidth());
}

std::optional<APFloat> castToFloat(const APFloat &x, FloatType to) {
  APFloat result = x;
  bool lost;
  result.convert(to.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
  return result;
}

std::optional<APFloat> castToFloat(const APInt &x, bool fromUnsigned,
                                   FloatType to) {
  APFloat result(to.getFloatSemantics());
  result.convertFromAPInt(x, !fromUnsigned, APFloat::rmNearestTiesToEven);
  return result;
}

} // namespace weft::folding
