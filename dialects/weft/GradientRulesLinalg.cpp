//===- GradientRulesLinalg.cpp - Gradients of matmul, conv and pooling ----===//
//
// GradientOpInterface of weft.matmul, weft.conv, weft.max_pool and
// weft.avg_pool. Matrix products differentiate into matrix products (the
// transpose flags pick the right operand layouts, no transposes are
// materialized); convolution and pooling into the backward ops of
// WeftGradOps.td.
//
//===----------------------------------------------------------------------===//
#include "dialects/weft/GradientRules.h"

#include "dialects/weft/ShapeRules.h"

using namespace mlir;
using namespace weft;
using namespace weft::gradient;

//===----------------------------------------------------------------------===//
// matmul
//===----------------------------------------------------------------------===//

/// A matmul with its result type computed from the operands (the lhs type
/// when they do not fit, which the op's verifier then reports).
static Value matmul(OpBuilder &b, Location loc, Value lhs, Value rhs,
                    bool transposeA, bool transposeB) {
  auto l = cast<RankedTensorType>(lhs.getType());
  auto r = cast<RankedTensorType>(rhs.getType());
  FailureOr<SmallVector<int64_t>> shape =
      matmulShape(l.getShape(), r.getShape(), transposeA, transposeB);
  RankedTensorType type = failed(shape) ? l : l.clone(*shape);
  return MatMulOp::create(b, loc, type, lhs, rhs, b.getBoolAttr(transposeA),
                          b.getBoolAttr(transposeB));
}

// With op(X) = X or X^T as the flags say, C = op(A) op(B):
//   flags  dA              dB
//   0 0    g B^T           A^T g
//   0 1    g B             g^T A
//   1 0    B g^T           A g
//   1 1    B^T g^T         g^T A^T
// Each product has the result's batch dims; an operand whose batch dims
// were broadcast gets the sum over them.
LogicalResult MatMulOp::buildGradients(OpBuilder &b,
                                       ArrayRef<Value> resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  Value g = singleResultGrad(*this, resultGrads, operandGrads);
  if (!g)
    return success();
  Location loc = getLoc();
  Value a = getLhs(), bm = getRhs();
  bool ta = getTransposeA(), tb = getTransposeB();
  auto aType = cast<RankedTensorType>(a.getType());
  auto bType = cast<RankedTensorType>(bm.getType());
  // A weight shared by a batch (x [..., M, K] @ W): its gradient sums over the
  // batch, so fold the batch into the contraction: one [P*M, K]^T @ [P*M, N]
  // product instead of P small ones and a reduction over a P-times larger
  // intermediate.
  if (!ta && bType.getRank() == 2 && aType.getRank() > 2) {
    int64_t rows = 1;
    for (int64_t d : aType.getShape().drop_back())
      rows *= d;
    int64_t k = aType.getShape().back();
    int64_t n = cast<RankedTensorType>(g.getType()).getShape().back();
    Value a2 = reshape(b, loc, a, {rows, k});
    Value g2 = reshape(b, loc, g, {rows, n});
    operandGrads[0] = matmul(b, loc, g, bm, false, !tb);
    operandGrads[1] = tb ? matmul(b, loc, g2, a2, true, false)
                         : matmul(b, loc, a2, g2, true, false);
    return success();
  }
  Value da, db;
  if (!ta && !tb) {
    da = matmul(b, loc, g, bm, false, true);
    db = matmul(b, loc, a, g, true, false);
  } else if (!ta && tb) {
    da = matmul(b, loc, g, bm, false, false);
    db = matmul(b, loc, g, a, true, false);
  } else if (ta && !tb) {
    da = matmul(b, loc, bm, g, false, true);
    db = matmul(b, loc, a, g, false, false);
  } else {
    da = matmul(b, loc, bm, g, true, true);
    db = matmul(b, loc, g, a, true, true);
  }
  operandGrads[0] = sumToShape(b, loc, da, cast<RankedTensorType>(a.getType()));
  operandGrads[1] =
      sumToShape(b, loc, db, cast<RankedTensorType>(bm.getType()));
  return success();
}

//===----------------------------------------------------------------------===//
// conv
//===----------------------------------------------------------------------===//

// input: conv_grad_input; weight: conv_grad_weight; bias: the sum of g over
// every dim but the channels.
LogicalResult ConvOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                     SmallVectorImpl<Value> &operandGrads) {
  Value g = singleResultGrad(*this, resultGrads, operandGrads);
  if (!g)
    return success();
  Location loc = getLoc();
  Value input = getInput(), weight = getWeight();
  operandGrads[0] = ConvGradInputOp::create(b, loc, input.getType(), g, weight,
                                            getStridesAttr(), getPadsAttr(),
                                            getDilationsAttr(), getGroupAttr());
  operandGrads[1] = ConvGradWeightOp::create(
      b, loc, weight.getType(), input, g, getStridesAttr(), getPadsAttr(),
      getDilationsAttr(), getGroupAttr());
  if (Value bias = getBias()) {
    SmallVector<int64_t> axes{0};
    for (int64_t d = 2, rank = getType().getRank(); d < rank; ++d)
      axes.push_back(d);
    Value sum = reduceSum(b, loc, g, axes, /*keepdims=*/false);
    operandGrads[2] =
        reshape(b, loc, sum, cast<RankedTensorType>(bias.getType()).getShape());
  }
  return success();
}

// The transposed convolution is linear in each operand: its adjoint in
// `grad` is the forward convolution, and its weight gradient is the forward
// convolution's weight gradient with the roles of input and result gradient
// taken by g and `grad`.
LogicalResult
ConvGradInputOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                SmallVectorImpl<Value> &operandGrads) {
  Value g = singleResultGrad(*this, resultGrads, operandGrads);
  if (!g)
    return success();
  Location loc = getLoc();
  Value grad = getGrad(), weight = getWeight();
  operandGrads[0] = ConvOp::create(b, loc, grad.getType(), g, weight, Value(),
                                   getStridesAttr(), getPadsAttr(),
                                   getDilationsAttr(), getGroupAttr());
  operandGrads[1] = ConvGradWeightOp::create(
      b, loc, weight.getType(), g, grad, getStridesAttr(), getPadsAttr(),
      getDilationsAttr(), getGroupAttr());
  return success();
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

// Each window's gradient goes to its first maximum (PyTorch's rule).
LogicalResult MaxPoolOp::buildGradients(OpBuilder &b,
                                        ArrayRef<Value> resultGrads,
                                        SmallVectorImpl<Value> &operandGrads) {
  if (Value g = singleResultGrad(*this, resultGrads, operandGrads))
    operandGrads[0] = MaxPoolGradOp::create(
        b, getLoc(), getInput().getType(), getInput(), g, getKernelShapeAttr(),
        getStridesAttr(), getPadsAttr(), getDilationsAttr(), getCeilModeAttr());
  return success();
}

// Each window's gradient spread evenly over the elements it averaged.
LogicalResult AvgPoolOp::buildGradients(OpBuilder &b,
                                        ArrayRef<Value> resultGrads,
                                        SmallVectorImpl<Value> &operandGrads) {
  if (Value g = singleResultGrad(*this, resultGrads, operandGrads))
    operandGrads[0] = AvgPoolGradOp::create(
        b, getLoc(), getInput().getType(), g, getKernelShapeAttr(),
        getStridesAttr(), getPadsAttr(), getCeilModeAttr(),
        getCountIncludePadAttr());
  return success();
}

//===----------------------------------------------------------------------===//
// attention
//===----------------------------------------------------------------------===//

// One attention_grad gives all three; it reads the forward's result and
// lse, which nothing else differentiates (lse only feeds attention_grad).
LogicalResult
AttentionOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                            SmallVectorImpl<Value> &operandGrads) {
  operandGrads.assign(getNumOperands(), Value());
  if (resultGrads.size() > 1 && resultGrads[1])
    return emitOpError("cannot differentiate a use of its lse result");
  Value g = resultGrads.empty() ? Value() : resultGrads[0];
  if (!g)
    return success();
  auto grads = AttentionGradOp::create(
      b, getLoc(),
      TypeRange{getQuery().getType(), getKey().getType(), getValue().getType()},
      getQuery(), getKey(), getValue(), getResult(), getLse(), g,
      getScaleAttr(), getCausalAttr(), getSeqMajorAttr());
  operandGrads[0] = grads.getQueryGrad();
  operandGrads[1] = grads.getKeyGrad();
  operandGrads[2] = grads.getValueGrad();
  return success();
}
