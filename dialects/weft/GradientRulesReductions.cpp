//===- GradientRulesReductions.cpp - Gradients of the reductions ----------===//
//
// GradientOpInterface of weft.reduce_sum, weft.reduce_mean and
// weft.reduce_max: the result's gradient, with the reduced dims kept as 1s,
// broadcast back over them.
//
//===----------------------------------------------------------------------===//
#include "dialects/weft/GradientRules.h"

#include "dialects/weft/ShapeRules.h"

using namespace mlir;
using namespace weft;
using namespace weft::gradient;

/// `v` (a reduction's result or its gradient) with the reduced dims as 1s.
template <typename OpTy> static Value keptDims(OpBuilder &b, OpTy op, Value v) {
  return reshape(
      b, op.getLoc(), v,
      reducedShape(op.getInput().getType().getShape(), op.getAxes(), true));
}

/// `v` broadcast to the input's shape.
template <typename OpTy>
static Value toInputShape(OpBuilder &b, OpTy op, Value v) {
  if (v.getType() == op.getInput().getType())
    return v;
  return BroadcastToOp::create(b, op.getLoc(), op.getInput().getType(), v);
}

LogicalResult
ReduceSumOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                            SmallVectorImpl<Value> &operandGrads) {
  Value g = singleResultGrad(*this, resultGrads, operandGrads);
  if (!g)
    return success();
  g = keptDims(b, *this, g);
  // A bf16 input summed in f32 (a folded widening): the widening's
  // gradient, a narrowing, after the broadcast.
  auto input = cast<RankedTensorType>(getInput().getType());
  Type wide = cast<RankedTensorType>(g.getType()).getElementType();
  if (wide != input.getElementType()) {
    auto full = input.clone(wide);
    if (g.getType() != full)
      g = BroadcastToOp::create(b, getLoc(), full, g);
    operandGrads[0] = CastOp::create(b, getLoc(), input, g);
    return success();
  }
  operandGrads[0] = toInputShape(b, *this, g);
  return success();
}

// The sum's gradient divided by the number of elements averaged.
LogicalResult
ReduceMeanOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                             SmallVectorImpl<Value> &operandGrads) {
  Value g = singleResultGrad(*this, resultGrads, operandGrads);
  if (!g)
    return success();
  Location loc = getLoc();
  int64_t count = 1;
  for (int64_t axis : getAxes())
    count *= getInput().getType().getDimSize(axis);
  Value scaled = mul(b, loc, keptDims(b, *this, g),
                     scalarLike(b, loc, g, 1.0 / std::max<int64_t>(count, 1)));
  operandGrads[0] = toInputShape(b, *this, scaled);
  return success();
}

// The gradient goes to the positions holding the maximum; several equal
// maxima share it equally (PyTorch's amax). mask = (x == max), dx = mask * g
// / count(mask), per reduced slice.
LogicalResult
ReduceMaxOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                            SmallVectorImpl<Value> &operandGrads) {
  Value g = singleResultGrad(*this, resultGrads, operandGrads);
  if (!g)
    return success();
  Location loc = getLoc();
  Value x = getInput();
  RankedTensorType inputType = getInput().getType();
  Value maximum = keptDims(b, *this, getResult());
  Value isMax =
      EqualOp::create(b, loc, inputType.clone(b.getI1Type()), x, maximum);
  Value mask = castTo(b, loc, isMax, inputType.getElementType());
  Value count = reduceSum(b, loc, mask, getAxes(), /*keepdims=*/true);
  Value share = div(b, loc, keptDims(b, *this, g), count);
  operandGrads[0] = mul(b, loc, mask, share);
  return success();
}
