//===- ImportActivations.cpp - ONNX ops built from weft's elementwise ops -===//
//
// Activations and small math ops that PyTorch exports (ReLU6 as Clip,
// MobileNetV3's HardSigmoid/HardSwish, rsqrt as Reciprocal, ...) have no weft
// op of their own: each becomes the few elementwise weft ops of its ONNX
// definition, so folding, autodiff, sharding, fusion and every backend's
// kernels apply to them unchanged. Selections are `weft.where`s on
// comparisons rather than max/min, so gradients follow PyTorch's: clamp
// passes the gradient at its bounds, leaky_relu gives alpha at 0, abs 0.
// Branches a selection drops are kept finite (exp of min(x, 0)), so their
// zeroed gradient cannot become 0 * inf.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/ImportExpr.h"
#include "frontends/onnx/OpImporters.h"

#include "dialects/weft/WeftOps.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace weft;
using namespace weft::onnx_import;

/// Input 0 ("X"), which must have a float element type.
static Value getFloatInput(NodeImporter &imp, StringRef what = "X") {
  Value x = imp.getInput(0, what);
  if (x && !isa<FloatType>(getElementType(x))) {
    (void)imp.emitError("input '" + what + "' has element type " +
                        formatType(getElementType(x)) +
                        "; this op takes float tensors");
    return {};
  }
  return x;
}

LogicalResult onnx_import::importReciprocal(NodeImporter &imp) {
  Expr e(imp);
  Value x = getFloatInput(imp);
  return imp.setResult(e.div(e.scalar(x, 1.0), x));
}

LogicalResult onnx_import::importAbs(NodeImporter &imp) {
  Expr e(imp);
  Value x = imp.getInput(0, "X");
  if (x && getElementType(x).isUnsignedInteger())
    return imp.setResult(x);
  return imp.setResult(e.abs(x));
}

/// Clip (opset 11+): optional scalar inputs min and max.
LogicalResult onnx_import::importClip(NodeImporter &imp) {
  Expr e(imp);
  Value x = imp.getInput(0, "input");
  if (!x)
    return failure();
  Value bounds[2] = {imp.getOptionalInput(1), imp.getOptionalInput(2)};
  const char *names[2] = {"min", "max"};
  for (int i = 0; i < 2; ++i) {
    Value bound = bounds[i];
    if (!bound)
      continue;
    if (getRank(bound) != 0 &&
        !(getRank(bound) == 1 && getShape(bound)[0] == 1))
      return imp.emitError(std::string("input '") + names[i] +
                           "' must be a scalar, not " +
                           formatType(bound.getType()));
    if (failed(imp.checkSameElementType(bound, x, names[i], "input")))
      return failure();
    bounds[i] = imp.createReshape(bound, {});
  }
  Value result = e.clip(x, bounds[0], bounds[1]);
  // A Clip between a QuantizeLinear and its DequantizeLinear (PyTorch's
  // fake-quantize to a reduced range) clips the float form too.
  if (Value floatForm = imp.getFloatForm(x)) {
    Type type = getElementType(floatForm);
    auto toFloat = [&](Value bound) {
      return bound ? imp.createCast(bound, type) : Value();
    };
    imp.setFloatForm(result,
                     e.clip(floatForm, toFloat(bounds[0]), toFloat(bounds[1])));
  }
  return imp.setResult(result);
}

LogicalResult onnx_import::importHardSigmoid(NodeImporter &imp) {
  Expr e(imp);
  Value x = getFloatInput(imp);
  return imp.setResult(e.hardSigmoid(x, imp.getFloatAttr("alpha", 0.2),
                                     imp.getFloatAttr("beta", 0.5)));
}

/// x * max(0, min(1, x / 6 + 1 / 2)).
LogicalResult onnx_import::importHardSwish(NodeImporter &imp) {
  Expr e(imp);
  Value x = getFloatInput(imp);
  return imp.setResult(e.mul(x, e.hardSigmoid(x, 1.0 / 6.0, 0.5)));
}

LogicalResult onnx_import::importLeakyRelu(NodeImporter &imp) {
  Expr e(imp);
  Value x = getFloatInput(imp);
  return imp.setResult(e.leakyRelu(x, imp.getFloatAttr("alpha", 0.01)));
}

/// PRelu: slope broadcast to X (unidirectionally).
LogicalResult onnx_import::importPRelu(NodeImporter &imp) {
  Expr e(imp);
  Value x = getFloatInput(imp);
  Value slope = imp.getInput(1, "slope");
  if (!x || !slope || failed(imp.checkSameElementType(x, slope, "X", "slope")))
    return failure();
  // A 1-D slope of the channel count that does not broadcast is opset 6's
  // per-channel form, which version converters carry over unchanged: it
  // becomes [C, 1, ..., 1].
  ArrayRef<int64_t> xShape = getShape(x), slopeShape = getShape(slope);
  if (slopeShape.size() == 1 && xShape.size() > 2 &&
      slopeShape[0] == xShape[1] && slopeShape[0] != xShape.back() &&
      slopeShape[0] != 1) {
    SmallVector<int64_t> channel(xShape.size() - 1, 1);
    channel[0] = slopeShape[0];
    slope = imp.createReshape(slope, channel);
  }
  return imp.setResult(
      e.select(e.greater(x, e.scalar(x, 0.0)), x, e.mul(x, slope)));
}

LogicalResult onnx_import::importElu(NodeImporter &imp) {
  Expr e(imp);
  Value x = getFloatInput(imp);
  return imp.setResult(e.elu(x, imp.getFloatAttr("alpha", 1.0)));
}

LogicalResult onnx_import::importSelu(NodeImporter &imp) {
  Expr e(imp);
  Value x = getFloatInput(imp);
  double alpha = imp.getFloatAttr("alpha", 1.67326319217681884765625);
  double gamma = imp.getFloatAttr("gamma", 1.05070102214813232421875);
  return imp.setResult(e.mulScalar(e.elu(x, alpha), gamma));
}

LogicalResult onnx_import::importSoftplus(NodeImporter &imp) {
  Expr e(imp);
  return imp.setResult(e.softplus(getFloatInput(imp)));
}

/// Softsign: x / (1 + |x|).
LogicalResult onnx_import::importSoftsign(NodeImporter &imp) {
  Expr e(imp);
  Value x = getFloatInput(imp, "input");
  return imp.setResult(e.softsign(x));
}

/// ThresholdedRelu: x where x > alpha (default 1), else 0.
LogicalResult onnx_import::importThresholdedRelu(NodeImporter &imp) {
  Expr e(imp);
  Value x = getFloatInput(imp);
  return imp.setResult(e.thresholdedRelu(x, imp.getFloatAttr("alpha", 1.0)));
}

/// Sign: 1, 0 or -1 (NaN stays NaN); no gradient flows through it.
LogicalResult onnx_import::importSign(NodeImporter &imp) {
  Expr e(imp);
  Value x = imp.getInput(0, "input");
  if (!x)
    return failure();
  Value zero = e.scalar(x, 0.0);
  Value sign = e.select(e.greater(x, zero), e.scalar(x, 1.0), zero);
  if (!getElementType(x).isUnsignedInteger())
    sign = e.select(e.less(x, zero), e.scalar(x, -1.0), sign);
  if (isa<FloatType>(getElementType(x)))
    sign = e.select(e.binary<EqualOp>(x, x), sign, x);
  return imp.setResult(sign);
}

/// Mish (opset 18): x * tanh(softplus(x)).
LogicalResult onnx_import::importMish(NodeImporter &imp) {
  Expr e(imp);
  Value x = getFloatInput(imp);
  return imp.setResult(e.mul(x, e.unary<TanhOp>(e.softplus(x))));
}

/// Gelu (opset 20): the erf form as PyTorch exports it before opset 20
/// (x * (1 + erf(x / sqrt 2)) * 0.5), so the passes that know GELU see the
/// same ops; approximate = "tanh" is 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715
/// x^3))).
LogicalResult onnx_import::importGelu(NodeImporter &imp) {
  Expr e(imp);
  Value x = getFloatInput(imp);
  if (!x)
    return failure();
  std::string approximate = imp.getStringAttr("approximate", "none");
  Value inner;
  if (approximate == "none") {
    inner = e.unary<ErfOp>(e.div(x, e.scalar(x, std::sqrt(2.0))));
  } else if (approximate == "tanh") {
    Value cube = e.mul(e.mul(x, x), x);
    Value poly = e.add(x, e.mulScalar(cube, 0.044715));
    inner = e.unary<TanhOp>(e.mulScalar(poly, std::sqrt(2.0 / M_PI)));
  } else {
    return imp.emitUnsupportedAttr("approximate", "'" + approximate + "'",
                                   "ONNX defines 'none' and 'tanh'");
  }
  return imp.setResult(e.mulScalar(e.mul(x, e.addScalar(inner, 1.0)), 0.5));
}

/// Mod: fmod = 1 takes the dividend's sign, as C's fmod (floats require it);
/// fmod = 0 (integers only) the divisor's, as Python's %. Both start from
/// weft.rem, the exact truncated remainder; fmod = 0 then adds b where the
/// remainder is non-zero and its sign differs from b's. Constant operands
/// (the shape arithmetic exporters emit) fold.
LogicalResult onnx_import::importMod(NodeImporter &imp) {
  Expr e(imp);
  Value a = imp.getNumberInput(0, "A");
  Value b = imp.getInput(1, "B");
  if (!a || !b || failed(imp.checkSameElementType(a, b, "A", "B")))
    return failure();
  Type type = getElementType(a);
  bool fmod = imp.getIntAttr("fmod", 0) != 0;
  bool isFloat = isa<FloatType>(type);
  if (isFloat && !fmod)
    return imp.emitUnsupportedAttr("fmod", "0",
                                   "ONNX requires fmod = 1 for floats");
  if (std::optional<DenseElementsAttr> divisor = imp.matchConstant(b);
      divisor && !isFloat &&
      llvm::any_of(divisor->getValues<APInt>(),
                   [](const APInt &v) { return v.isZero(); }))
    return imp.emitError("integer Mod by zero (input 'B' holds a 0)");
  Value remainder = imp.createInferred<RemOp>(a, b);
  if (fmod)
    return imp.setResult(remainder);
  Value zero = e.scalar(remainder, 0.0);
  Value nonZero = e.unary<NotOp>(e.binary<EqualOp>(remainder, zero));
  Value signsDiffer = e.unary<NotOp>(
      e.binary<EqualOp>(e.less(remainder, zero), e.less(b, zero)));
  return imp.setResult(e.select(e.binary<AndOp>(nonZero, signsDiffer),
                                e.add(remainder, b), remainder));
}

/// Celu: max(0, x) + min(0, alpha * (exp(x / alpha) - 1)), an elu of
/// x / alpha scaled by alpha.
LogicalResult onnx_import::importCelu(NodeImporter &imp) {
  Expr e(imp);
  Value x = getFloatInput(imp);
  double alpha = imp.getFloatAttr("alpha", 1.0);
  if (alpha == 0.0)
    return imp.emitError("attribute 'alpha' must not be 0");
  return imp.setResult(
      e.mulScalar(e.elu(e.mulScalar(x, 1.0 / alpha), 1.0), alpha));
}

/// Shrink: x + bias below -lambd, x - bias above lambd, 0 between.
LogicalResult onnx_import::importShrink(NodeImporter &imp) {
  Expr e(imp);
  Value x = imp.getNumberInput(0, "input");
  if (!x)
    return failure();
  double lambd = imp.getFloatAttr("lambd", 0.5);
  double bias = imp.getFloatAttr("bias", 0.0);
  Value below = e.less(x, e.scalar(x, -lambd));
  Value above = e.greater(x, e.scalar(x, lambd));
  return imp.setResult(
      e.select(below, e.addScalar(x, bias),
               e.select(above, e.addScalar(x, -bias), e.scalar(x, 0.0))));
}

/// Xor of booleans: a != b.
LogicalResult onnx_import::importXor(NodeImporter &imp) {
  Expr e(imp);
  Value a = imp.getInput(0, "A");
  Value b = imp.getInput(1, "B");
  if (!a || !b || failed(imp.checkSameElementType(a, b, "A", "B")))
    return failure();
  if (!getElementType(a).isInteger(1))
    return imp.emitError("Xor takes booleans, not " +
                         formatType(getElementType(a)));
  return imp.setResult(e.unary<NotOp>(e.binary<EqualOp>(a, b)));
}

/// IsNaN: x != x.
LogicalResult onnx_import::importIsNaN(NodeImporter &imp) {
  Expr e(imp);
  Value x = getFloatInput(imp);
  return imp.setResult(e.unary<NotOp>(e.binary<EqualOp>(x, x)));
}

/// IsInf: x == +inf and/or x == -inf (detect_positive, detect_negative).
LogicalResult onnx_import::importIsInf(NodeImporter &imp) {
  Expr e(imp);
  Value x = getFloatInput(imp);
  bool positive = imp.getIntAttr("detect_positive", 1) != 0;
  bool negative = imp.getIntAttr("detect_negative", 1) != 0;
  if (!x)
    return failure();
  const double inf = std::numeric_limits<double>::infinity();
  Value isPos = e.binary<EqualOp>(x, e.scalar(x, inf));
  Value isNeg = e.binary<EqualOp>(x, e.scalar(x, -inf));
  if (positive && negative)
    return imp.setResult(e.binary<OrOp>(isPos, isNeg));
  if (positive)
    return imp.setResult(isPos);
  if (negative)
    return imp.setResult(isNeg);
  // Neither: all false.
  return imp.setResult(e.binary<AndOp>(isPos, isNeg));
}

/// The hyperbolic functions and their inverses, and tan, from exp, log,
/// sqrt, sin and cos (as PyTorch's formulas; not correctly rounded).
LogicalResult onnx_import::importSinh(NodeImporter &imp) {
  Expr e(imp);
  Value x = getFloatInput(imp, "input");
  return imp.setResult(e.mulScalar(
      e.sub(e.unary<ExpOp>(x), e.unary<ExpOp>(e.unary<NegOp>(x))), 0.5));
}

LogicalResult onnx_import::importCosh(NodeImporter &imp) {
  Expr e(imp);
  Value x = getFloatInput(imp, "input");
  return imp.setResult(e.mulScalar(
      e.add(e.unary<ExpOp>(x), e.unary<ExpOp>(e.unary<NegOp>(x))), 0.5));
}

LogicalResult onnx_import::importTan(NodeImporter &imp) {
  Expr e(imp);
  Value x = getFloatInput(imp, "input");
  return imp.setResult(e.div(e.unary<SinOp>(x), e.unary<CosOp>(x)));
}

/// asinh(x) = sign(x) * log(|x| + sqrt(x^2 + 1)) (odd, and exact in sign
/// for large negative x).
LogicalResult onnx_import::importAsinh(NodeImporter &imp) {
  Expr e(imp);
  Value x = getFloatInput(imp, "input");
  if (!x)
    return failure();
  Value a = e.abs(x);
  Value magnitude =
      e.unary<LogOp>(e.add(a, e.unary<SqrtOp>(e.addScalar(e.mul(x, x), 1.0))));
  return imp.setResult(e.select(e.less(x, e.scalar(x, 0.0)),
                                e.unary<NegOp>(magnitude), magnitude));
}

LogicalResult onnx_import::importAcosh(NodeImporter &imp) {
  Expr e(imp);
  Value x = getFloatInput(imp, "input");
  return imp.setResult(e.unary<LogOp>(
      e.add(x, e.unary<SqrtOp>(e.addScalar(e.mul(x, x), -1.0)))));
}

LogicalResult onnx_import::importAtanh(NodeImporter &imp) {
  Expr e(imp);
  Value x = getFloatInput(imp, "input");
  Value one = e.scalar(x, 1.0);
  return imp.setResult(
      e.mulScalar(e.unary<LogOp>(e.div(e.add(one, x), e.sub(one, x))), 0.5));
}

/// asin(x) = atan(x / sqrt((1 - x)(1 + x))): +-pi/2 at +-1 (x / 0), NaN
/// beyond; 1 - x and 1 + x are exact where they matter (near +-1).
LogicalResult onnx_import::importAsin(NodeImporter &imp) {
  Expr e(imp);
  Value x = getFloatInput(imp, "input");
  if (!x)
    return failure();
  Value one = e.scalar(x, 1.0);
  Value cosine = e.unary<SqrtOp>(e.mul(e.sub(one, x), e.add(one, x)));
  return imp.setResult(e.unary<AtanOp>(e.div(x, cosine)));
}

/// acos(x) = 2 atan(sqrt((1 - x) / (1 + x))): 0 at 1, pi at -1 (the root of
/// 2 / 0), NaN beyond.
LogicalResult onnx_import::importAcos(NodeImporter &imp) {
  Expr e(imp);
  Value x = getFloatInput(imp, "input");
  if (!x)
    return failure();
  Value one = e.scalar(x, 1.0);
  Value half =
      e.unary<AtanOp>(e.unary<SqrtOp>(e.div(e.sub(one, x), e.add(one, x))));
  return imp.setResult(e.mulScalar(half, 2.0));
}
