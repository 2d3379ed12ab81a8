//===- GradientRulesNormalization.cpp - Gradients of norms, softmax, loss -===//
//
// GradientOpInterface of weft.batch_norm, weft.layer_norm, weft.softmax,
// weft.log_softmax and weft.softmax_cross_entropy.
//
//===----------------------------------------------------------------------===//
#include "dialects/weft/GradientRules.h"

using namespace mlir;
using namespace weft;
using namespace weft::gradient;

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

// y = (x - mean) * k + bias with k = scale / sqrt(var + eps) per channel;
// with S = sum(g (x - mean)) and the sums over every dim but the channels:
// dx = g k, dscale = S / sqrt(var + eps), dbias = sum(g), and, for
// statistics computed in the graph (training-mode BatchNormalization: the
// batch's mean and variance, whose own rules carry these on to x),
// dmean = -sum(g) k and dvar = -S scale / (2 (var + eps)^(3/2)). Running
// statistics (parameters, constants) get none: nothing trains them by
// gradient descent.
LogicalResult
BatchNormOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                            SmallVectorImpl<Value> &operandGrads) {
  Value g = singleResultGrad(*this, resultGrads, operandGrads);
  if (!g)
    return success();
  Location loc = getLoc();
  RankedTensorType type = getType();
  int64_t rank = type.getRank();
  // [C, 1, ..., 1]: a per-channel vector that broadcasts against dims 1...
  SmallVector<int64_t> channelShape{type.getDimSize(1)};
  channelShape.append(rank - 2, 1);
  SmallVector<int64_t> axes{0};
  for (int64_t d = 2; d < rank; ++d)
    axes.push_back(d);
  auto channels = [&](Value v) { return reshape(b, loc, v, channelShape); };

  Value epsilon = scalarLike(b, loc, g, getEpsilon().convertToDouble());
  Value deviation = SqrtOp::create(b, loc, getVariance().getType(),
                                   add(b, loc, getVariance(), epsilon));
  Value inverse = div(b, loc, scalarLike(b, loc, g, 1.0), deviation);
  Value k = mul(b, loc, getScale(), inverse);
  operandGrads[0] = mul(b, loc, g, channels(k));
  Value centeredGrad = reduceSum(
      b, loc, mul(b, loc, g, sub(b, loc, getInput(), channels(getMean()))),
      axes, /*keepdims=*/false);
  operandGrads[1] = mul(b, loc, centeredGrad, inverse);
  operandGrads[2] = reduceSum(b, loc, g, axes, /*keepdims=*/false);
  auto computed = [](Value v) {
    return !v.getDefiningOp<ParamOp>() && !v.getDefiningOp<ConstantOp>();
  };
  if (computed(getMean()))
    operandGrads[3] = neg(b, loc, mul(b, loc, operandGrads[2], k));
  if (computed(getVariance())) {
    // -S scale / 2 * inverse^3
    Value cubed = mul(b, loc, inverse, mul(b, loc, inverse, inverse));
    operandGrads[4] = mul(b, loc, mul(b, loc, centeredGrad, getScale()),
                          mul(b, loc, cubed, scalarLike(b, loc, g, -0.5)));
  }
  return success();
}

// One weft.layer_norm_grad computes all three gradients.
LogicalResult
LayerNormOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                            SmallVectorImpl<Value> &operandGrads) {
  Value g = singleResultGrad(*this, resultGrads, operandGrads);
  if (!g)
    return success();
  Location loc = getLoc();
  // A result rounded to bf16/f16 (a folded cast): the cast's gradient, a
  // widening, first.
  Type inputType = getInput().getType();
  if (g.getType() != inputType)
    g = CastOp::create(b, loc, inputType, g);
  Type scaleType = getScale().getType();
  auto grads = LayerNormGradOp::create(
      b, loc, TypeRange{inputType, scaleType, scaleType}, getInput(),
      getScale(), g, getAxisAttr(), getEpsilonAttr());
  operandGrads[0] = grads.getInputGrad();
  operandGrads[1] = grads.getScaleGrad();
  if (Value bias = getBias())
    operandGrads[2] =
        reshape(b, loc, grads.getBiasGrad(),
                cast<RankedTensorType>(bias.getType()).getShape());
  return success();
}

//===----------------------------------------------------------------------===//
// Softmax
//===----------------------------------------------------------------------===//

LogicalResult SoftmaxOp::buildGradients(OpBuilder &b,
                                        ArrayRef<Value> resultGrads,
                                        SmallVectorImpl<Value> &operandGrads) {
  if (Value g = singleResultGrad(*this, resultGrads, operandGrads))
    operandGrads[0] =
        SoftmaxGradOp::create(b, getLoc(), getType(), getResult(), g,
                              getAxisAttr(), b.getBoolAttr(false));
  return success();
}

LogicalResult
LogSoftmaxOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                             SmallVectorImpl<Value> &operandGrads) {
  if (Value g = singleResultGrad(*this, resultGrads, operandGrads))
    operandGrads[0] =
        SoftmaxGradOp::create(b, getLoc(), getType(), getResult(), g,
                              getAxisAttr(), b.getBoolAttr(true));
  return success();
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

// The scores get the gradient; labels and class weights none.
LogicalResult
SoftmaxCrossEntropyOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                      SmallVectorImpl<Value> &operandGrads) {
  if (Value g = singleResultGrad(*this, resultGrads, operandGrads))
    operandGrads[0] = SoftmaxCrossEntropyGradOp::create(
        b, getLoc(), getScores().getType(), getScores(), getLabels(),
        getWeights(), g, getReductionAttr(), getIgnoreIndexAttr(),
        getClassesAttr());
  return success();
}
