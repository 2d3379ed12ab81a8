//===- GradientRules.cpp - Building blocks of weft's gradient rules -------===//
#include "dialects/weft/GradientRules.h"

#include "dialects/weft/ShapeRules.h"

#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;
using namespace weft;

bool gradient::isFloatTensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && isa<FloatType>(tensor.getElementType());
}

Value gradient::splat(OpBuilder &b, Location loc, RankedTensorType type,
                      double value) {
  DenseElementsAttr attr;
  if (auto integer = dyn_cast<IntegerType>(type.getElementType())) {
    APInt v(integer.getWidth(), static_cast<int64_t>(value),
            /*isSigned=*/true);
    attr = DenseElementsAttr::get(type, ArrayRef<APInt>(v));
  } else {
    auto element = cast<FloatType>(type.getElementType());
    APFloat v = FloatAttr::get(element, value).getValue();
    attr = DenseElementsAttr::get(type, ArrayRef<APFloat>(v));
  }
  return ConstantOp::create(b, loc, cast<ElementsAttr>(attr));
}

Value gradient::scalar(OpBuilder &b, Location loc, Type elementType,
                       double value) {
  return splat(b, loc, RankedTensorType::get({}, elementType), value);
}

Value gradient::scalarLike(OpBuilder &b, Location loc, Value like,
                           double value) {
  return scalar(b, loc, cast<RankedTensorType>(like.getType()).getElementType(),
                value);
}

/// The broadcast type of two tensors, or the lhs type when they do not
/// broadcast (the op's verifier reports it).
static RankedTensorType broadcastType(Value lhs, Value rhs) {
  auto l = cast<RankedTensorType>(lhs.getType());
  auto r = cast<RankedTensorType>(rhs.getType());
  FailureOr<SmallVector<int64_t>> shape =
      broadcastShapes(l.getShape(), r.getShape());
  return failed(shape) ? l : l.clone(*shape);
}

Value gradient::add(OpBuilder &b, Location loc, Value lhs, Value rhs) {
  return AddOp::create(b, loc, broadcastType(lhs, rhs), lhs, rhs);
}

Value gradient::sub(OpBuilder &b, Location loc, Value lhs, Value rhs) {
  return SubOp::create(b, loc, broadcastType(lhs, rhs), lhs, rhs);
}

Value gradient::mul(OpBuilder &b, Location loc, Value lhs, Value rhs) {
  return MulOp::create(b, loc, broadcastType(lhs, rhs), lhs, rhs);
}

Value gradient::div(OpBuilder &b, Location loc, Value lhs, Value rhs) {
  return DivOp::create(b, loc, broadcastType(lhs, rhs), lhs, rhs);
}

Value gradient::neg(OpBuilder &b, Location loc, Value x) {
  return NegOp::create(b, loc, x.getType(), x);
}

Value gradient::castTo(OpBuilder &b, Location loc, Value x, Type elementType) {
  auto type = cast<RankedTensorType>(x.getType());
  return CastOp::create(b, loc, type.clone(elementType), x);
}

Value gradient::reshape(OpBuilder &b, Location loc, Value x,
                        ArrayRef<int64_t> shape) {
  auto type = cast<RankedTensorType>(x.getType());
  if (type.getShape() == shape)
    return x;
  return ReshapeOp::create(b, loc, type.clone(shape), x);
}

Value gradient::reduceSum(OpBuilder &b, Location loc, Value x,
                          ArrayRef<int64_t> axes, bool keepdims) {
  auto type = cast<RankedTensorType>(x.getType());
  return ReduceSumOp::create(
      b, loc, type.clone(reducedShape(type.getShape(), axes, keepdims)), x,
      b.getDenseI64ArrayAttr(axes), b.getBoolAttr(keepdims));
}

Value gradient::sumToShape(OpBuilder &b, Location loc, Value grad,
                           RankedTensorType type) {
  ArrayRef<int64_t> from = cast<RankedTensorType>(grad.getType()).getShape();
  ArrayRef<int64_t> to = type.getShape();
  if (from == to)
    return grad;
  // Dims the broadcast prepended, then dims it stretched from 1. A target of
  // higher rank cannot come from broadcasting; the reshape's verifier
  // reports the mismatch.
  SmallVector<int64_t> axes;
  size_t lead = from.size() > to.size() ? from.size() - to.size() : 0;
  for (size_t i = 0; i < from.size(); ++i)
    if (i < lead || (to[i - lead] == 1 && from[i] != 1))
      axes.push_back(i);
  if (!axes.empty())
    grad = reduceSum(b, loc, grad, axes, /*keepdims=*/true);
  return reshape(b, loc, grad, to);
}

Value gradient::gradOrZeros(OpBuilder &b, Location loc, Value grad, Type type) {
  if (grad)
    return grad;
  return splat(b, loc, cast<RankedTensorType>(type), 0.0);
}

Value gradient::singleResultGrad(Operation *op, ArrayRef<Value> resultGrads,
                                 SmallVectorImpl<Value> &operandGrads) {
  operandGrads.assign(op->getNumOperands(), Value());
  if (op->getNumResults() != 1 || resultGrads.size() != 1 ||
      !isFloatTensor(op->getResult(0).getType()))
    return Value();
  return resultGrads[0];
}
