//===- GradientRulesElementwise.cpp - Gradients of elementwise ops --------===//
//
// GradientOpInterface of the unary, binary, where and cast ops. g is the
// result's gradient, y the result. A broadcast operand gets its
// contribution summed back to its shape (sumToShape). Integer and boolean
// values carry no gradient.
//
//===----------------------------------------------------------------------===//
#include "dialects/weft/GradientRules.h"

using namespace mlir;
using namespace weft;
using namespace weft::gradient;

/// The gradient of a broadcasting op's operand from its contribution of the
/// result's shape; none for a non-float operand.
static Value toOperand(OpBuilder &b, Location loc, Value contribution,
                       Value operand) {
  if (!isFloatTensor(operand.getType()))
    return Value();
  return sumToShape(b, loc, contribution,
                    cast<RankedTensorType>(operand.getType()));
}

//===----------------------------------------------------------------------===//
// Unary
//===----------------------------------------------------------------------===//

LogicalResult NegOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  if (Value g = singleResultGrad(*this, resultGrads, operandGrads))
    operandGrads[0] = neg(b, getLoc(), g);
  return success();
}

// d sqrt(x) = 1 / (2 sqrt(x)) = 1 / (2y).
LogicalResult SqrtOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                     SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  if (Value g = singleResultGrad(*this, resultGrads, operandGrads))
    operandGrads[0] =
        div(b, loc, g, mul(b, loc, getResult(), scalarLike(b, loc, g, 2.0)));
  return success();
}

// d exp(x) = y.
LogicalResult ExpOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  if (Value g = singleResultGrad(*this, resultGrads, operandGrads))
    operandGrads[0] = mul(b, getLoc(), g, getResult());
  return success();
}

// d log(x) = 1 / x.
LogicalResult LogOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  if (Value g = singleResultGrad(*this, resultGrads, operandGrads))
    operandGrads[0] = div(b, getLoc(), g, getInput());
  return success();
}

// d tanh(x) = 1 - y^2.
LogicalResult TanhOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                     SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  if (Value g = singleResultGrad(*this, resultGrads, operandGrads)) {
    Value y = getResult();
    Value slope = sub(b, loc, scalarLike(b, loc, g, 1.0), mul(b, loc, y, y));
    operandGrads[0] = mul(b, loc, g, slope);
  }
  return success();
}

static constexpr double kTwoOverSqrtPi = 1.12837916709551257390;

// d erf(x) = 2 / sqrt(pi) * exp(-x^2).
LogicalResult ErfOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  if (Value g = singleResultGrad(*this, resultGrads, operandGrads)) {
    Value x = getInput();
    Value gauss =
        ExpOp::create(b, loc, x.getType(), neg(b, loc, mul(b, loc, x, x)));
    Value slope = mul(b, loc, gauss, scalarLike(b, loc, g, kTwoOverSqrtPi));
    operandGrads[0] = mul(b, loc, g, slope);
  }
  return success();
}

// d sin(x) = cos(x).
LogicalResult SinOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  if (Value g = singleResultGrad(*this, resultGrads, operandGrads)) {
    Value x = getInput();
    operandGrads[0] =
        mul(b, loc, g, CosOp::create(b, loc, x.getType(), x).getResult());
  }
  return success();
}

// d cos(x) = -sin(x).
LogicalResult CosOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  if (Value g = singleResultGrad(*this, resultGrads, operandGrads)) {
    Value x = getInput();
    Value sine = SinOp::create(b, loc, x.getType(), x);
    operandGrads[0] = neg(b, loc, mul(b, loc, g, sine));
  }
  return success();
}

// d atan(x) = 1 / (1 + x^2).
LogicalResult AtanOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                     SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  if (Value g = singleResultGrad(*this, resultGrads, operandGrads)) {
    Value x = getInput();
    Value denominator =
        add(b, loc, mul(b, loc, x, x), scalarLike(b, loc, x, 1.0));
    operandGrads[0] = div(b, loc, g, denominator);
  }
  return success();
}

// Rounding is flat almost everywhere: no gradient reaches the input (as in
// PyTorch).
#define WEFT_ZERO_GRADIENT(OP)                                                 \
  LogicalResult OP::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,  \
                                   SmallVectorImpl<Value> &operandGrads) {     \
    (void)singleResultGrad(*this, resultGrads, operandGrads);                  \
    return success();                                                          \
  }
WEFT_ZERO_GRADIENT(FloorOp)
WEFT_ZERO_GRADIENT(CeilOp)
#undef WEFT_ZERO_GRADIENT

// Zero, like floor and ceil; the straight-through estimator's identity where
// the op says so.
LogicalResult RoundOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                      SmallVectorImpl<Value> &operandGrads) {
  Value g = singleResultGrad(*this, resultGrads, operandGrads);
  if (g && getStraightThrough())
    operandGrads[0] = g;
  return success();
}

// The gradient passes where x > 0 (PyTorch: zero at x == 0).
LogicalResult ReluOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                     SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  if (Value g = singleResultGrad(*this, resultGrads, operandGrads)) {
    Value x = getInput();
    Value zero = scalarLike(b, loc, g, 0.0);
    auto maskType = getType().clone(b.getI1Type());
    Value positive = GreaterOp::create(b, loc, maskType, x, zero);
    operandGrads[0] = WhereOp::create(b, loc, getType(), positive, g, zero);
  }
  return success();
}

// d sigmoid(x) = y (1 - y).
LogicalResult SigmoidOp::buildGradients(OpBuilder &b,
                                        ArrayRef<Value> resultGrads,
                                        SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  if (Value g = singleResultGrad(*this, resultGrads, operandGrads)) {
    Value y = getResult();
    Value slope = mul(b, loc, y, sub(b, loc, scalarLike(b, loc, g, 1.0), y));
    operandGrads[0] = mul(b, loc, g, slope);
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Binary
//===----------------------------------------------------------------------===//

LogicalResult AddOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  if (Value g = singleResultGrad(*this, resultGrads, operandGrads)) {
    operandGrads[0] = toOperand(b, loc, g, getLhs());
    operandGrads[1] = toOperand(b, loc, g, getRhs());
  }
  return success();
}

LogicalResult SubOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  if (Value g = singleResultGrad(*this, resultGrads, operandGrads)) {
    operandGrads[0] = toOperand(b, loc, g, getLhs());
    // Negate after the reduction: fewer elements.
    if (Value rhs = toOperand(b, loc, g, getRhs()))
      operandGrads[1] = neg(b, loc, rhs);
  }
  return success();
}

LogicalResult MulOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  if (Value g = singleResultGrad(*this, resultGrads, operandGrads)) {
    operandGrads[0] = toOperand(b, loc, mul(b, loc, g, getRhs()), getLhs());
    operandGrads[1] = toOperand(b, loc, mul(b, loc, g, getLhs()), getRhs());
  }
  return success();
}

// y = a / b: da = g / b, db = -g a / b^2 = -g y / b.
LogicalResult DivOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  if (Value g = singleResultGrad(*this, resultGrads, operandGrads)) {
    operandGrads[0] = toOperand(b, loc, div(b, loc, g, getRhs()), getLhs());
    Value contribution = div(b, loc, mul(b, loc, g, getResult()), getRhs());
    if (Value rhs = toOperand(b, loc, contribution, getRhs()))
      operandGrads[1] = neg(b, loc, rhs);
  }
  return success();
}

// y = a - b trunc(a / b): da = g, db = -g trunc(a / b) (torch.fmod's
// gradients; the quotient is piecewise constant).
LogicalResult RemOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  if (Value g = singleResultGrad(*this, resultGrads, operandGrads)) {
    operandGrads[0] = toOperand(b, loc, g, getLhs());
    Value quotient = div(b, loc, getLhs(), getRhs());
    Value negative =
        LessOp::create(b, loc, getType().clone(b.getI1Type()), quotient,
                       scalarLike(b, loc, quotient, 0.0));
    Value truncated =
        WhereOp::create(b, loc, quotient.getType(), negative,
                        CeilOp::create(b, loc, quotient.getType(), quotient),
                        FloorOp::create(b, loc, quotient.getType(), quotient));
    if (Value rhs = toOperand(b, loc, mul(b, loc, g, truncated), getRhs()))
      operandGrads[1] = neg(b, loc, rhs);
  }
  return success();
}

// y = a^b: da = g b a^(b-1), db = g y log(a) (NaN for a < 0, as in PyTorch;
// an exponent that is a constant has no gradient to compute).
LogicalResult PowOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  if (Value g = singleResultGrad(*this, resultGrads, operandGrads)) {
    Value base = getLhs(), exponent = getRhs();
    Value lowered = sub(b, loc, exponent, scalarLike(b, loc, g, 1.0));
    Value power = PowOp::create(b, loc, getType(), base, lowered);
    Value dBase = mul(b, loc, mul(b, loc, g, exponent), power);
    operandGrads[0] = toOperand(b, loc, dBase, base);
    Value logBase = LogOp::create(b, loc, base.getType(), base);
    Value dExponent = mul(b, loc, mul(b, loc, g, getResult()), logBase);
    operandGrads[1] = toOperand(b, loc, dExponent, exponent);
  }
  return success();
}

/// max and min: the operand that is selected gets the gradient; equal
/// operands share it equally (PyTorch's torch.maximum / torch.minimum).
/// `lhsWins` is the boolean where the lhs is selected strictly.
static void buildSelectionGradients(OpBuilder &b, Location loc, Value g,
                                    Value lhs, Value rhs, Value lhsWins,
                                    Value tie,
                                    SmallVectorImpl<Value> &operandGrads) {
  Type element = cast<RankedTensorType>(g.getType()).getElementType();
  Value share = add(
      b, loc, castTo(b, loc, lhsWins, element),
      mul(b, loc, castTo(b, loc, tie, element), scalar(b, loc, element, 0.5)));
  Value toLhs = mul(b, loc, g, share);
  operandGrads[0] = toOperand(b, loc, toLhs, lhs);
  operandGrads[1] = toOperand(b, loc, sub(b, loc, g, toLhs), rhs);
}

LogicalResult MaxOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  if (Value g = singleResultGrad(*this, resultGrads, operandGrads)) {
    auto maskType = getType().clone(b.getI1Type());
    Value wins = GreaterOp::create(b, loc, maskType, getLhs(), getRhs());
    Value tie = EqualOp::create(b, loc, maskType, getLhs(), getRhs());
    buildSelectionGradients(b, loc, g, getLhs(), getRhs(), wins, tie,
                            operandGrads);
  }
  return success();
}

LogicalResult MinOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  if (Value g = singleResultGrad(*this, resultGrads, operandGrads)) {
    auto maskType = getType().clone(b.getI1Type());
    Value wins = LessOp::create(b, loc, maskType, getLhs(), getRhs());
    Value tie = EqualOp::create(b, loc, maskType, getLhs(), getRhs());
    buildSelectionGradients(b, loc, g, getLhs(), getRhs(), wins, tie,
                            operandGrads);
  }
  return success();
}

//===----------------------------------------------------------------------===//
// where, cast
//===----------------------------------------------------------------------===//

// x gets g where the condition holds, y elsewhere; the condition none.
LogicalResult WhereOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                      SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  if (Value g = singleResultGrad(*this, resultGrads, operandGrads)) {
    Value zero = scalarLike(b, loc, g, 0.0);
    Value cond = getCondition();
    operandGrads[1] = toOperand(
        b, loc, WhereOp::create(b, loc, getType(), cond, g, zero), getX());
    operandGrads[2] = toOperand(
        b, loc, WhereOp::create(b, loc, getType(), cond, zero, g), getY());
  }
  return success();
}

// Float to float: the gradient converted back. From integers: none.
LogicalResult CastOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                     SmallVectorImpl<Value> &operandGrads) {
  Value g = singleResultGrad(*this, resultGrads, operandGrads);
  if (!g || !isFloatTensor(getInput().getType()))
    return success();
  auto inputType = cast<RankedTensorType>(getInput().getType());
  operandGrads[0] = g.getType() == inputType
                        ? g
                        : Value(CastOp::create(b, getLoc(), inputType, g));
  return success();
}

// Dropout: the gradient goes through the kept elements, scaled as they were:
// dx = where(mask, g / (1 - ratio), 0). The mask is the forward's (the step
// and the positions draw it; a recomputed forward draws the same one).
// The draws do not depend on `like`'s values: nothing flows back.
LogicalResult RandomOp::buildGradients(OpBuilder &b,
                                       ArrayRef<Value> resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  operandGrads.assign(getNumOperands(), Value());
  return success();
}

LogicalResult DropoutOp::buildGradients(OpBuilder &b,
                                        ArrayRef<Value> resultGrads,
                                        SmallVectorImpl<Value> &operandGrads) {
  operandGrads.assign(getNumOperands(), Value());
  Value g = resultGrads.empty() ? Value() : resultGrads[0];
  if (!g)
    return success();
  Location loc = getLoc();
  Value scaled =
      mul(b, loc, g,
          scalarLike(b, loc, g, 1.0 / (1.0 - getRatio().convertToDouble())));
  operandGrads[0] = WhereOp::create(b, loc, g.getType(), getMask(), scaled,
                                    scalarLike(b, loc, g, 0.0));
  return success();
}
