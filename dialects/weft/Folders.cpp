//===- Folders.cpp - Constant folding and simplification of weft ops ------===//
//
// fold() of the ops marked hasFolder; the element arithmetic lives in
// ElementFolding.cpp and the rewrite patterns in Canonicalization.cpp. The
// importer builds ops with createOrFold, so folders run on IR no verifier
// has seen yet: each checks the shapes it relies on and declines to fold
// rather than trust them. Folded results always have the op's result type.
//
// Element semantics match the runtime: integer division truncates toward
// zero, ui8 and i1 are unsigned, float max/min propagate NaN, comparisons
// with NaN are false.
//
//===----------------------------------------------------------------------===//
#include "dialects/weft/ElementFolding.h"
#include "dialects/weft/ShapeRules.h"
#include "dialects/weft/WeftOps.h"

#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace weft;
using namespace weft::folding;

//===----------------------------------------------------------------------===//
// Elementwise folding on constants
//===----------------------------------------------------------------------===//

static OpFoldResult foldUnaryConstant(Unary kind, Attribute inputAttr,
                                      RankedTensorType type) {
  DenseElementsAttr input = denseOf(inputAttr);
  if (!input || input.getType() != type)
    return {};
  int64_t count = input.isSplat() ? 1 : type.getNumElements();
  if (count > kMaxFoldedElements)
    return {};
  if (isa<FloatType>(type.getElementType())) {
    auto values = input.getValues<APFloat>();
    return buildElements<APFloat>(
        type, count, [&](int64_t i) { return applyFloat(kind, values[i]); });
  }
  bool isUnsigned = isUnsignedInt(type.getElementType());
  auto values = input.getValues<APInt>();
  return buildElements<APInt>(type, count, [&](int64_t i) {
    return applyInt(kind, values[i], isUnsigned);
  });
}

/// Folds `fn(i, j)` of lhs element i and rhs element j over the broadcast of
/// two constants into a constant of `type` (element kind T).
template <typename T, typename Fn>
static DenseElementsAttr foldBroadcast(DenseElementsAttr lhs,
                                       DenseElementsAttr rhs,
                                       RankedTensorType type, Fn &&fn) {
  if (!lhs || !rhs || lhs.getElementType() != rhs.getElementType())
    return {};
  FailureOr<SmallVector<int64_t>> shape =
      broadcastShapes(shapeOf(lhs), shapeOf(rhs));
  if (failed(shape) || ArrayRef<int64_t>(*shape) != type.getShape())
    return {};
  if (lhs.isSplat() && rhs.isSplat())
    return buildElements<T>(type, 1, [&](int64_t) { return fn(0, 0); });
  if (type.getNumElements() > kMaxFoldedElements)
    return {};
  SmallVector<int64_t> l = broadcastOffsets(shapeOf(lhs), type.getShape());
  SmallVector<int64_t> r = broadcastOffsets(shapeOf(rhs), type.getShape());
  return buildElements<T>(type, type.getNumElements(),
                          [&](int64_t k) { return fn(l[k], r[k]); });
}

static OpFoldResult foldBinaryConstants(Binary kind, Attribute lhsAttr,
                                        Attribute rhsAttr,
                                        RankedTensorType type) {
  DenseElementsAttr lhs = denseOf(lhsAttr), rhs = denseOf(rhsAttr);
  if (!lhs || !rhs || lhs.getElementType() != type.getElementType() ||
      rhs.getElementType() != type.getElementType())
    return {};
  if (isa<FloatType>(type.getElementType())) {
    auto l = lhs.getValues<APFloat>(), r = rhs.getValues<APFloat>();
    return foldBroadcast<APFloat>(lhs, rhs, type, [&](int64_t i, int64_t j) {
      return applyFloat(kind, l[i], r[j]);
    });
  }
  bool isUnsigned = isUnsignedInt(type.getElementType());
  auto l = lhs.getValues<APInt>(), r = rhs.getValues<APInt>();
  return foldBroadcast<APInt>(lhs, rhs, type, [&](int64_t i, int64_t j) {
    return applyInt(kind, l[i], r[j], isUnsigned);
  });
}

/// Identities of a binary op: x op c == x, or a constant result, for the
/// constant operand `c` (on either side where the op commutes).
static OpFoldResult foldBinaryIdentity(Binary kind, Value lhs, Value rhs,
                                       Attribute lhsAttr, Attribute rhsAttr,
                                       RankedTensorType type) {
  auto same = [&](Value v) -> OpFoldResult {
    return v.getType() == type ? v : OpFoldResult();
  };
  bool isInt = isa<IntegerType>(type.getElementType());
  bool commutes = kind == Binary::Add || kind == Binary::Mul ||
                  kind == Binary::Max || kind == Binary::Min ||
                  kind == Binary::And || kind == Binary::Or;
  // The neutral element of the op, and its absorbing element for integers.
  std::optional<int64_t> neutral, absorbing;
  switch (kind) {
  case Binary::Add:
  case Binary::Sub:
    neutral = 0;
    break;
  case Binary::Mul:
    neutral = 1;
    if (isInt) // Float x * 0 is NaN for inf and NaN.
      absorbing = 0;
    break;
  case Binary::Div:
  case Binary::Pow:
    neutral = 1;
    break;
  case Binary::And:
    neutral = 1;
    absorbing = 0;
    break;
  case Binary::Or:
    neutral = 0;
    absorbing = 1;
    break;
  case Binary::Rem:
  case Binary::Max:
  case Binary::Min:
    break;
  }
  if (neutral) {
    if (isSplatOf(rhsAttr, *neutral))
      if (OpFoldResult r = same(lhs))
        return r;
    if (commutes && isSplatOf(lhsAttr, *neutral))
      if (OpFoldResult r = same(rhs))
        return r;
  }
  if (absorbing &&
      (isSplatOf(rhsAttr, *absorbing) || isSplatOf(lhsAttr, *absorbing)))
    return intSplat(type, *absorbing);
  if (lhs == rhs) {
    // max(x, x), min(x, x), and(x, x), or(x, x) are x; x - x is 0 for
    // integers (floats: inf - inf is NaN).
    if (kind == Binary::Max || kind == Binary::Min || kind == Binary::And ||
        kind == Binary::Or)
      return same(lhs);
    if (kind == Binary::Sub && isInt)
      return intSplat(type, 0);
  }
  return {};
}

static OpFoldResult foldBinary(Binary kind, Value lhs, Value rhs,
                               Attribute lhsAttr, Attribute rhsAttr,
                               RankedTensorType type) {
  if (OpFoldResult folded = foldBinaryConstants(kind, lhsAttr, rhsAttr, type))
    return folded;
  return foldBinaryIdentity(kind, lhs, rhs, lhsAttr, rhsAttr, type);
}

static OpFoldResult foldComparison(Comparison kind, Value lhs, Value rhs,
                                   Attribute lhsAttr, Attribute rhsAttr,
                                   RankedTensorType type) {
  if (!type.getElementType().isInteger(1))
    return {};
  DenseElementsAttr l = denseOf(lhsAttr), r = denseOf(rhsAttr);
  if (l && r && l.getElementType() == r.getElementType()) {
    Type element = l.getElementType();
    if (isa<FloatType>(element)) {
      auto lv = l.getValues<APFloat>(), rv = r.getValues<APFloat>();
      return foldBroadcast<bool>(l, r, type, [&](int64_t i, int64_t j) {
        return std::optional<bool>(compareFloat(kind, lv[i], rv[j]));
      });
    }
    bool isUnsigned = isUnsignedInt(element);
    auto lv = l.getValues<APInt>(), rv = r.getValues<APInt>();
    return foldBroadcast<bool>(l, r, type, [&](int64_t i, int64_t j) {
      return std::optional<bool>(compareInt(kind, lv[i], rv[j], isUnsigned));
    });
  }
  // x cmp x is known for integers (NaN makes floats unequal to themselves).
  auto operand = dyn_cast<RankedTensorType>(lhs.getType());
  if (lhs == rhs && operand && isa<IntegerType>(operand.getElementType()) &&
      operand.getShape() == type.getShape()) {
    bool reflexive = kind == Comparison::Equal ||
                     kind == Comparison::LessEqual ||
                     kind == Comparison::GreaterEqual;
    return intSplat(type, reflexive ? 1 : 0);
  }
  return {};
}

//===----------------------------------------------------------------------===//
// Elementwise ops
//===----------------------------------------------------------------------===//

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

/// neg(neg(x)) and not(not(x)) are x.
template <typename OpTy> static OpFoldResult foldInvolution(OpTy op) {
  if (auto inner = op.getInput().template getDefiningOp<OpTy>())
    if (inner.getInput().getType() == op.getType())
      return inner.getInput();
  return {};
}

OpFoldResult NegOp::fold(FoldAdaptor adaptor) {
  if (OpFoldResult folded =
          foldUnaryConstant(Unary::Neg, adaptor.getInput(), getType()))
    return folded;
  return foldInvolution(*this);
}

OpFoldResult NotOp::fold(FoldAdaptor adaptor) {
  if (OpFoldResult folded =
          foldUnaryConstant(Unary::Not, adaptor.getInput(), getType()))
    return folded;
  return foldInvolution(*this);
}

OpFoldResult ReluOp::fold(FoldAdaptor adaptor) {
  if (OpFoldResult folded =
          foldUnaryConstant(Unary::Relu, adaptor.getInput(), getType()))
    return folded;
  if (getInput().getDefiningOp<ReluOp>())
    return getInput();
  return {};
}

#define WEFT_FOLD_UNARY(OP, KIND)                                              \
  OpFoldResult OP::fold(FoldAdaptor adaptor) {                                 \
    return foldUnaryConstant(Unary::KIND, adaptor.getInput(), getType());      \
  }
WEFT_FOLD_UNARY(SqrtOp, Sqrt)
WEFT_FOLD_UNARY(ExpOp, Exp)
WEFT_FOLD_UNARY(LogOp, Log)
WEFT_FOLD_UNARY(TanhOp, Tanh)
WEFT_FOLD_UNARY(ErfOp, Erf)
WEFT_FOLD_UNARY(SigmoidOp, Sigmoid)
WEFT_FOLD_UNARY(SinOp, Sin)
WEFT_FOLD_UNARY(CosOp, Cos)
WEFT_FOLD_UNARY(FloorOp, Floor)
WEFT_FOLD_UNARY(CeilOp, Ceil)
WEFT_FOLD_UNARY(RoundOp, Round)
WEFT_FOLD_UNARY(AtanOp, Atan)
#undef WEFT_FOLD_UNARY

#define WEFT_FOLD_BINARY(OP, KIND)                                             \
  OpFoldResult OP::fold(FoldAdaptor adaptor) {                                 \
    return foldBinary(Binary::KIND, getLhs(), getRhs(), adaptor.getLhs(),      \
                      adaptor.getRhs(), getType());                            \
  }
WEFT_FOLD_BINARY(AddOp, Add)
WEFT_FOLD_BINARY(SubOp, Sub)
WEFT_FOLD_BINARY(MulOp, Mul)
WEFT_FOLD_BINARY(DivOp, Div)
WEFT_FOLD_BINARY(RemOp, Rem)
WEFT_FOLD_BINARY(PowOp, Pow)
WEFT_FOLD_BINARY(MaxOp, Max)
WEFT_FOLD_BINARY(MinOp, Min)
WEFT_FOLD_BINARY(AndOp, And)
WEFT_FOLD_BINARY(OrOp, Or)
#undef WEFT_FOLD_BINARY

#define WEFT_FOLD_COMPARISON(OP, KIND)                                         \
  OpFoldResult OP::fold(FoldAdaptor adaptor) {                                 \
    return foldComparison(Comparison::KIND, getLhs(), getRhs(),                \
                          adaptor.getLhs(), adaptor.getRhs(), getType());      \
  }
WEFT_FOLD_COMPARISON(EqualOp, Equal)
WEFT_FOLD_COMPARISON(LessOp, Less)
WEFT_FOLD_COMPARISON(GreaterOp, Greater)
WEFT_FOLD_COMPARISON(LessEqualOp, LessEqual)
WEFT_FOLD_COMPARISON(GreaterEqualOp, GreaterEqual)
#undef WEFT_FOLD_COMPARISON

template <typename T>
static DenseElementsAttr
selectElements(DenseElementsAttr cond, DenseElementsAttr x, DenseElementsAttr y,
               RankedTensorType type) {
  ArrayRef<int64_t> shape = type.getShape();
  SmallVector<int64_t> c = broadcastOffsets(shapeOf(cond), shape);
  SmallVector<int64_t> xo = broadcastOffsets(shapeOf(x), shape);
  SmallVector<int64_t> yo = broadcastOffsets(shapeOf(y), shape);
  auto cv = cond.getValues<APInt>();
  auto xv = x.getValues<T>(), yv = y.getValues<T>();
  return buildElements<T>(type, type.getNumElements(), [&](int64_t k) {
    return std::optional<T>(cv[c[k]].isZero() ? yv[yo[k]] : xv[xo[k]]);
  });
}

OpFoldResult WhereOp::fold(FoldAdaptor adaptor) {
  RankedTensorType type = getType();
  DenseElementsAttr cond = denseOf(adaptor.getCondition());
  DenseElementsAttr x = denseOf(adaptor.getX()), y = denseOf(adaptor.getY());
  if (cond && !cond.getElementType().isInteger(1))
    return {};
  if (cond && cond.isSplat() &&
      isBroadcastableTo(shapeOf(cond), type.getShape())) {
    bool pickX = !cond.getSplatValue<APInt>().isZero();
    Value chosen = pickX ? getX() : getY();
    if (chosen.getType() == type)
      return chosen;
    if (DenseElementsAttr folded = broadcastConstant(pickX ? x : y, type))
      return folded;
  }
  if (getX() == getY() && getX().getType() == type)
    return getX();
  if (!cond || !x || !y || x.getElementType() != type.getElementType() ||
      y.getElementType() != type.getElementType() ||
      type.getNumElements() > kMaxFoldedElements)
    return {};
  for (DenseElementsAttr operand : {cond, x, y})
    if (!isBroadcastableTo(shapeOf(operand), type.getShape()))
      return {};
  if (isa<FloatType>(type.getElementType()))
    return selectElements<APFloat>(cond, x, y, type);
  return selectElements<APInt>(cond, x, y, type);
}

//===----------------------------------------------------------------------===//
// Cast
//===----------------------------------------------------------------------===//

OpFoldResult CastOp::fold(FoldAdaptor adaptor) {
  RankedTensorType type = getType();
  if (getInput().getType() == type)
    return getInput();
  // Back to the type a widening came from (bf16 -> f32 -> bf16, say): the
  // widening was exact, so this is its input.
  if (auto inner = getInput().getDefiningOp<CastOp>()) {
    auto from =
        dyn_cast<FloatType>(inner.getInput().getType().getElementType());
    auto to = dyn_cast<FloatType>(inner.getType().getElementType());
    if (from && to && inner.getInput().getType() == type &&
        to.getWidth() > from.getWidth() &&
        to.getFPMantissaWidth() >= from.getFPMantissaWidth())
      return inner.getInput();
  }
  DenseElementsAttr input = denseOf(adaptor.getInput());
  if (!input || shapeOf(input) != type.getShape())
    return {};
  int64_t count = input.isSplat() ? 1 : type.getNumElements();
  if (count > kMaxFoldedElements)
    return {};
  Type from = input.getElementType(), to = type.getElementType();
  bool fromUnsigned = isUnsignedInt(from);
  if (auto toFloat = dyn_cast<FloatType>(to)) {
    if (isa<FloatType>(from)) {
      auto values = input.getValues<APFloat>();
      return buildElements<APFloat>(type, count, [&](int64_t i) {
        return castToFloat(values[i], toFloat);
      });
    }
    auto values = input.getValues<APInt>();
    return buildElements<APFloat>(type, count, [&](int64_t i) {
      return castToFloat(values[i], fromUnsigned, toFloat);
    });
  }
  auto toInt = dyn_cast<IntegerType>(to);
  if (!toInt)
    return {};
  if (isa<FloatType>(from)) {
    auto values = input.getValues<APFloat>();
    return buildElements<APInt>(
        type, count, [&](int64_t i) { return castToInt(values[i], toInt); });
  }
  auto values = input.getValues<APInt>();
  return buildElements<APInt>(type, count, [&](int64_t i) {
    return castToInt(values[i], fromUnsigned, toInt);
  });
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

namespace {
enum class Reduction { Sum, Mean, Max };
} // namespace

/// Reduces a constant over `axes`. Float sums accumulate in double.
static OpFoldResult foldReduce(Reduction kind, Value input, Attribute inputAttr,
                               ArrayRef<int64_t> axes, bool keepdims,
                               RankedTensorType type) {
  auto inputType = dyn_cast<RankedTensorType>(input.getType());
  if (!inputType || !inputType.hasStaticShape())
    return {};
  ArrayRef<int64_t> shape = inputType.getShape();
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i] < 0 || axes[i] >= inputType.getRank() ||
        (i > 0 && axes[i] <= axes[i - 1]))
      return {};
  if (ArrayRef<int64_t>(reducedShape(shape, axes, keepdims)) !=
          type.getShape() ||
      inputType.getElementType() != type.getElementType())
    return {};
  SmallVector<int64_t> kept = reducedShape(shape, axes, /*keepdims=*/true);
  // Reducing dims of size 1 changes nothing.
  if (axes.size() > 0 && inputType == type &&
      llvm::all_of(axes, [&](int64_t a) { return shape[a] == 1; }))
    return input;

  DenseElementsAttr data = denseOf(inputAttr);
  int64_t inputCount = inputType.getNumElements();
  int64_t outputCount = type.getNumElements();
  if (!data || outputCount == 0)
    return {};
  int64_t group = inputCount / outputCount;
  bool isFloat = isa<FloatType>(type.getElementType());
  if (group == 0) {
    // Reducing an empty axis: the sum is 0, max and mean are undefined.
    if (kind != Reduction::Sum)
      return {};
    return isFloat ? DenseElementsAttr::get(
                         type,
                         APFloat::getZero(cast<FloatType>(type.getElementType())
                                              .getFloatSemantics()))
                   : intSplat(type, 0);
  }
  if (data.isSplat()) {
    if (kind != Reduction::Sum)
      return data.resizeSplat(type);
    if (isFloat) {
      APFloat v = data.getSplatValue<APFloat>();
      return DenseElementsAttr::get(
          type, fromDouble(toDouble(v) * group, v.getSemantics()));
    }
    APInt v = data.getSplatValue<APInt>();
    return DenseElementsAttr::get(
        type, ArrayRef<APInt>(v * APInt(v.getBitWidth(), group)));
  }
  if (inputCount > kMaxFoldedElements)
    return {};

  // The output element each input element accumulates into.
  SmallVector<int64_t> strides = rowMajorStrides(kept);
  for (int64_t a : axes)
    strides[a] = 0;
  SmallVector<int64_t> target = stridedOffsets(shape, strides);
  if (isFloat) {
    auto values = data.getValues<APFloat>();
    const llvm::fltSemantics &semantics =
        cast<FloatType>(type.getElementType()).getFloatSemantics();
    if (kind == Reduction::Max) {
      SmallVector<std::optional<APFloat>> best(outputCount);
      for (int64_t i = 0; i < inputCount; ++i) {
        std::optional<APFloat> &b = best[target[i]];
        b = b ? llvm::maximum(*b, values[i]) : values[i];
      }
      return buildElements<APFloat>(type, outputCount,
                                    [&](int64_t o) { return best[o]; });
    }
    SmallVector<double> sums(outputCount, 0.0);
    for (int64_t i = 0; i < inputCount; ++i)
      sums[target[i]] += toDouble(values[i]);
    double divisor = kind == Reduction::Mean ? double(group) : 1.0;
    return buildElements<APFloat>(type, outputCount, [&](int64_t o) {
      return std::optional<APFloat>(fromDouble(sums[o] / divisor, semantics));
    });
  }
  if (kind == Reduction::Mean)
    return {};
  bool isUnsigned = isUnsignedInt(type.getElementType());
  auto values = data.getValues<APInt>();
  SmallVector<std::optional<APInt>> acc(outputCount);
  for (int64_t i = 0; i < inputCount; ++i) {
    std::optional<APInt> &a = acc[target[i]];
    if (!a)
      a = values[i];
    else
      a = applyInt(kind == Reduction::Sum ? Binary::Add : Binary::Max, *a,
                   values[i], isUnsigned);
  }
  return buildElements<APInt>(type, outputCount,
                              [&](int64_t o) { return acc[o]; });
}

OpFoldResult ReduceSumOp::fold(FoldAdaptor adaptor) {
  return foldReduce(Reduction::Sum, getInput(), adaptor.getInput(), getAxes(),
                    getKeepdims(), getType());
}

OpFoldResult ReduceMeanOp::fold(FoldAdaptor adaptor) {
  return foldReduce(Reduction::Mean, getInput(), adaptor.getInput(), getAxes(),
                    getKeepdims(), getType());
}

OpFoldResult ReduceMaxOp::fold(FoldAdaptor adaptor) {
  return foldReduce(Reduction::Max, getInput(), adaptor.getInput(), getAxes(),
                    getKeepdims(), getType());
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  RankedTensorType type = getType();
  if (getInput().getType() == type)
    return getInput();
  if (DenseElementsAttr input = denseOf(adaptor.getInput()))
    if (type.hasStaticShape() &&
        input.getElementType() == type.getElementType() &&
        input.getNumElements() == type.getNumElements())
      return input.reshape(type);
  // reshape(reshape(x)) is reshape(x), or x itself: rewritten in place.
  if (auto inner = getInput().getDefiningOp<ReshapeOp>()) {
    Value source = inner.getInput();
    if (source.getType() == type)
      return source;
    auto sourceType = dyn_cast<RankedTensorType>(source.getType());
    if (sourceType && sourceType.hasStaticShape() &&
        sourceType.getElementType() == type.getElementType() &&
        sourceType.getNumElements() == type.getNumElements()) {
      getInputMutable().assign(source);
      return getResult();
    }
  }
  return {};
}

OpFoldResult TransposeOp::fold(FoldAdaptor adaptor) {
  RankedTensorType type = getType();
  auto inputType = dyn_cast<RankedTensorType>(getInput().getType());
  ArrayRef<int64_t> permutation = getPermutation();
  if (!inputType || !inputType.hasStaticShape() ||
      !isPermutation(permutation, inputType.getRank()) ||
      ArrayRef<int64_t>(transposedShape(inputType.getShape(), permutation)) !=
          type.getShape())
    return {};
  bool identity =
      llvm::equal(permutation, llvm::seq<int64_t>(0, permutation.size()));
  if (identity && inputType == type)
    return getInput();
  if (DenseElementsAttr input = denseOf(adaptor.getInput())) {
    if (input.getElementType() != type.getElementType())
      return {};
    if (input.isSplat())
      return input.resizeSplat(type);
    if (type.getNumElements() <= kMaxFoldedElements) {
      SmallVector<int64_t> inputStrides = rowMajorStrides(inputType.getShape());
      SmallVector<int64_t> strides;
      for (int64_t p : permutation)
        strides.push_back(inputStrides[p]);
      return copyElements(input, type,
                          stridedOffsets(type.getShape(), strides));
    }
  }
  // transpose(transpose(x)) is one transpose (or x): rewritten in place.
  if (auto inner = getInput().getDefiningOp<TransposeOp>()) {
    Value source = inner.getInput();
    auto sourceType = dyn_cast<RankedTensorType>(source.getType());
    ArrayRef<int64_t> first = inner.getPermutation();
    if (!sourceType || !isPermutation(first, sourceType.getRank()) ||
        first.size() != permutation.size() ||
        sourceType.getElementType() != type.getElementType())
      return {};
    SmallVector<int64_t> composed;
    for (int64_t p : permutation)
      composed.push_back(first[p]);
    if (ArrayRef<int64_t>(transposedShape(sourceType.getShape(), composed)) !=
        type.getShape())
      return {};
    if (sourceType == type &&
        llvm::equal(composed, llvm::seq<int64_t>(0, composed.size())))
      return source;
    setPermutation(composed);
    getInputMutable().assign(source);
    return getResult();
  }
  return {};
}

template <typename T>
static DenseElementsAttr concatElements(ArrayRef<DenseElementsAttr> inputs,
                                        int64_t axis, RankedTensorType type) {
  int64_t outer = numElements(type.getShape().take_front(axis));
  int64_t inner = numElements(type.getShape().drop_front(axis + 1));
  SmallVector<T> values;
  values.reserve(type.getNumElements());
  for (int64_t o = 0; o < outer; ++o) {
    for (DenseElementsAttr input : inputs) {
      int64_t chunk = shapeOf(input)[axis] * inner;
      auto elements = input.getValues<T>();
      for (int64_t i = 0; i < chunk; ++i)
        values.push_back(elements[o * chunk + i]);
    }
  }
  return DenseElementsAttr::get(type, values);
}

OpFoldResult ConcatOp::fold(FoldAdaptor adaptor) {
  RankedTensorType type = getType();
  if (getInputs().size() == 1 && getInputs()[0].getType() == type)
    return getInputs()[0];
  int64_t axis = getAxisAttr().getInt();
  if (axis < 0 || axis >= type.getRank() || getInputs().empty())
    return {};
  SmallVector<DenseElementsAttr> inputs;
  int64_t total = 0;
  for (Attribute attr : adaptor.getInputs()) {
    DenseElementsAttr input = denseOf(attr);
    if (!input || input.getElementType() != type.getElementType() ||
        input.getType().getRank() != type.getRank())
      return {};
    for (int64_t d = 0; d < type.getRank(); ++d)
      if (d != axis && shapeOf(input)[d] != type.getDimSize(d))
        return {};
    total += shapeOf(input)[axis];
    inputs.push_back(input);
  }
  if (total != type.getDimSize(axis))
    return {};
  bool sameSplat = llvm::all_of(inputs, [&](DenseElementsAttr input) {
    return input.isSplat() && input.getSplatValue<Attribute>() ==
                                  inputs[0].getSplatValue<Attribute>();
  });
  if (sameSplat)
    return inputs[0].resizeSplat(type);
  if (type.getNumElements() > kMaxFoldedElements)
    return {};
  if (isa<FloatType>(type.getElementType()))
    return concatElements<APFloat>(inputs, axis, type);
  return concatElements<APInt>(inputs, axis, type);
}

/// Whether the slice takes only elements inside the input (what the
/// verifier checks, re-checked because folders run before verification).
static bool isInBoundsSlice(ArrayRef<int64_t> input, ArrayRef<int64_t> result,
                            ArrayRef<int64_t> starts, ArrayRef<int64_t> steps) {
  if (input.size() != result.size() || starts.size() != input.size() ||
      steps.size() != input.size())
    return false;
  for (size_t d = 0; d < input.size(); ++d) {
    if (steps[d] == 0 || result[d] < 0)
      return false;
    if (result[d] == 0)
      continue;
    int64_t offset, last;
    if (starts[d] < 0 || starts[d] >= input[d] ||
        llvm::MulOverflow(result[d] - 1, steps[d], offset) ||
        llvm::AddOverflow(starts[d], offset, last) || last < 0 ||
        last >= input[d])
      return false;
  }
  return true;
}

// A slice gradient that places its gradient over the whole input is the
// gradient itself.
OpFoldResult SliceGradOp::fold(FoldAdaptor) {
  auto gradType = dyn_cast<RankedTensorType>(getGrad().getType());
  if (!gradType || gradType != getType() || !gradType.hasStaticShape() ||
      !llvm::all_of(getStarts(), [](int64_t s) { return s == 0; }) ||
      !llvm::all_of(getSteps(), [](int64_t s) { return s == 1; }))
    return {};
  return getGrad();
}

OpFoldResult SliceOp::fold(FoldAdaptor adaptor) {
  RankedTensorType type = getType();
  auto inputType = dyn_cast<RankedTensorType>(getInput().getType());
  ArrayRef<int64_t> starts = getStarts(), steps = getSteps();
  if (!inputType || !inputType.hasStaticShape() || !type.hasStaticShape() ||
      !isInBoundsSlice(inputType.getShape(), type.getShape(), starts, steps))
    return {};
  if (inputType == type &&
      llvm::all_of(starts, [](int64_t s) { return s == 0; }) &&
      llvm::all_of(steps, [](int64_t s) { return s == 1; }))
    return getInput();
  DenseElementsAttr input = denseOf(adaptor.getInput());
  if (!input ||
      (!input.isSplat() && type.getNumElements() > kMaxFoldedElements))
    return {};
  if (input.isSplat())
    return input.getElementType() == type.getElementType()
               ? input.resizeSplat(type)
               : DenseElementsAttr();
  SmallVector<int64_t> inputStrides = rowMajorStrides(inputType.getShape());
  SmallVector<int64_t> strides;
  int64_t base = 0;
  for (size_t d = 0; d < starts.size(); ++d) {
    base += starts[d] * inputStrides[d];
    strides.push_back(steps[d] * inputStrides[d]);
  }
  return copyElements(input, type,
                      stridedOffsets(type.getShape(), strides, base));
}

OpFoldResult GatherOp::fold(FoldAdaptor adaptor) {
  DenseElementsAttr data = denseOf(adaptor.getData());
  DenseElementsAttr indices = denseOf(adaptor.getIndices());
  RankedTensorType type = getType();
  if (!data || !indices || !isa<IntegerType>(indices.getElementType()))
    return {};
  ArrayRef<int64_t> dataShape = shapeOf(data);
  int64_t axis = getAxisAttr().getInt();
  if (axis < 0 || axis >= static_cast<int64_t>(dataShape.size()) ||
      ArrayRef<int64_t>(gatheredShape(dataShape, shapeOf(indices), axis)) !=
          type.getShape() ||
      data.getElementType() != type.getElementType())
    return {};
  if (data.isSplat() && type.getNumElements() > 0) {
    // Every index must still be in range for the gather to be defined.
    int64_t dim = dataShape[axis];
    for (const APInt &index : indices.getValues<APInt>()) {
      int64_t i = index.getSExtValue();
      if (i < -dim || i >= dim)
        return {};
    }
    return data.resizeSplat(type);
  }
  if (type.getNumElements() > kMaxFoldedElements)
    return {};
  int64_t dim = dataShape[axis];
  int64_t outer = numElements(dataShape.take_front(axis));
  int64_t inner = numElements(dataShape.drop_front(axis + 1));
  SmallVector<int64_t> rows;
  for (const APInt &index : indices.getValues<APInt>()) {
    int64_t i = index.getSExtValue();
    if (i < -dim || i >= dim)
      return {};
    rows.push_back(i < 0 ? i + dim : i);
  }
  SmallVector<int64_t> offsets;
  offsets.reserve(type.getNumElements());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t row : rows)
      for (int64_t i = 0; i < inner; ++i)
        offsets.push_back((o * dim + row) * inner + i);
  return copyElements(data, type, offsets);
}

OpFoldResult BroadcastToOp::fold(FoldAdaptor adaptor) {
  RankedTensorType type = getType();
  if (getInput().getType() == type)
    return getInput();
  if (DenseElementsAttr folded =
          broadcastConstant(denseOf(adaptor.getInput()), type))
    return folded;
  // broadcast_to(broadcast_to(x)) is broadcast_to(x): rewritten in place.
  if (auto inner = getInput().getDefiningOp<BroadcastToOp>()) {
    Value source = inner.getInput();
    auto sourceType = dyn_cast<RankedTensorType>(source.getType());
    if (!sourceType || sourceType.getElementType() != type.getElementType() ||
        !isBroadcastableTo(sourceType.getShape(), type.getShape()))
      return {};
    if (sourceType == type)
      return source;
    getInputMutable().assign(source);
    return getResult();
  }
  return {};
}
