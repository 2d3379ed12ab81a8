//===- ImportQuantize.cpp - QuantizeLinear, DequantizeLinear --------------===//
//
// ONNX's linear quantization (the QDQ form PyTorch's quantization exports,
// and onnxruntime's quantized models) built from weft's elementwise ops, in
// float: DequantizeLinear is (x - zero_point) * scale; QuantizeLinear is
// round_half_even(x / scale) + zero_point saturated to the integer type;
// DynamicQuantizeLinear finds the uint8 scale and zero point from the data's
// range first. Per-axis scales and zero points (1-D, along `axis`)
// broadcast.
//
// Training through the QDQ pairs of PyTorch's fake-quantize follows
// PyTorch: QuantizeLinear's rounding is straight-through, a DequantizeLinear
// (after a Clip, too) of its result reads the float values it quantized
// (NodeImporter::getFloatForm) rather than the integers, so the gradient
// passes where the rounded value lies within the integer range (bounds
// included) and is zero outside; the pair's scales are frozen parameters
// (buffers in PyTorch).
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/ImportExpr.h"
#include "frontends/onnx/OpImporters.h"

#include "dialects/weft/WeftOps.h"

using namespace mlir;
using namespace weft;
using namespace weft::onnx_import;

/// A scale or zero point shaped to broadcast against `x`: a scalar stays
/// as it is; a 1-D one lies along `axis` (per-axis quantization).
static Value alongAxis(NodeImporter &imp, Value v, Value x, StringRef what) {
  if (!v)
    return {};
  int64_t rank = getRank(x);
  if (getRank(v) == 0 || (getRank(v) == 1 && getShape(v)[0] == 1))
    return imp.createReshape(v, {});
  if (getRank(v) != 1) {
    (void)imp.emitError("input '" + what + "' (" + formatType(v.getType()) +
                        ") must be a scalar or 1-D (per axis); blocked "
                        "quantization is not supported");
    return {};
  }
  std::optional<int64_t> axis = imp.getAxisAttr(x, 1);
  if (!axis)
    return {};
  if (getShape(x)[*axis] != getShape(v)[0]) {
    (void)imp.emitError("input '" + what + "' holds " + Twine(getShape(v)[0]) +
                        " values; axis " + Twine(*axis) + " of x has " +
                        Twine(getShape(x)[*axis]));
    return {};
  }
  SmallVector<int64_t> shape(rank, 1);
  shape[*axis] = getShape(v)[0];
  return imp.createReshape(v, shape);
}

/// Refuses what these importers do not build: blocked quantization
/// (opset 21's block_size).
static LogicalResult checkUnblocked(NodeImporter &imp) {
  int64_t block = imp.getIntAttr("block_size", 0);
  if (block != 0)
    return imp.emitUnsupportedAttr("block_size", Twine(block),
                                   "blocked quantization is not supported");
  return success();
}

/// Marks `scale`, when a float parameter, as not trained.
static void freezeScale(Value scale) {
  if (auto param = scale.getDefiningOp<ParamOp>())
    param.setFrozen(true);
}

/// The saturation bounds of an 8-bit integer type.
static std::optional<std::pair<double, double>> rangeOf(Type type) {
  if (type.isUnsignedInteger(8) || type.isInteger(8)) {
    if (type.isUnsignedInteger())
      return std::make_pair(0.0, 255.0);
    return std::make_pair(-128.0, 127.0);
  }
  return std::nullopt;
}

LogicalResult onnx_import::importDequantizeLinear(NodeImporter &imp) {
  Expr e(imp);
  Value x = imp.getInput(0, "x");
  Value scale = imp.getInput(1, "x_scale");
  if (!x || !scale || failed(checkUnblocked(imp)))
    return failure();
  Type floatType = getElementType(scale);
  if (!isa<FloatType>(floatType))
    return imp.emitError("input 'x_scale' must be a float tensor, not " +
                         formatType(scale.getType()));
  if (!isa<IntegerType>(getElementType(x)))
    return imp.emitError("input 'x' (" + formatType(x.getType()) +
                         ") must hold integers");
  // The second half of a fake-quantize pair: its scale is a buffer too. A
  // DequantizeLinear of stored integers (weight-only quantization) keeps a
  // trainable scale.
  Value floatForm = imp.getFloatForm(x);
  if (floatForm)
    freezeScale(scale);
  Value value = imp.createCast(floatForm ? floatForm : x, floatType);
  if (Value zero = imp.getOptionalInput(2)) {
    if (getElementType(zero) != getElementType(x))
      return imp.emitError("input 'x_zero_point' (" +
                           formatType(zero.getType()) +
                           ") must have x's element type");
    value = e.sub(value, imp.createCast(alongAxis(imp, zero, x, "x_zero_point"),
                                        floatType));
  }
  return imp.setResult(e.mul(value, alongAxis(imp, scale, x, "x_scale")));
}

/// round_half_even(scaled) + zero, saturated to `type`'s range, in float
/// (scaled: x / scale, or an integer product times its factor); the
/// rounding's gradient is straight-through when `straightThrough`.
static Value quantizedValues(NodeImporter &imp, Value scaled, Value zero,
                             Type type, bool straightThrough) {
  Expr e(imp);
  std::optional<std::pair<double, double>> range = rangeOf(type);
  if (!range) {
    (void)imp.emitError("quantizing to " + formatType(type) +
                        " is not supported: weft quantizes to int8 and uint8");
    return {};
  }
  if (!scaled)
    return {};
  Value q = imp.create<RoundOp>(scaled.getType(), scaled, straightThrough);
  if (zero)
    q = e.add(q, zero);
  return e.clip(q, e.scalar(q, range->first), e.scalar(q, range->second));
}

/// quantizedValues cast to `type`, with no gradient.
static Value quantize(NodeImporter &imp, Value scaled, Value zero, Type type) {
  Value q = quantizedValues(imp, scaled, zero, type, false);
  return q ? imp.createCast(q, type) : Value();
}

LogicalResult onnx_import::importQuantizeLinear(NodeImporter &imp) {
  Value x = imp.getInput(0, "x");
  Value scale = imp.getInput(1, "y_scale");
  if (!x || !scale || failed(checkUnblocked(imp)))
    return failure();
  Type floatType = getElementType(scale);
  if (!isa<FloatType>(floatType))
    return imp.emitError("input 'y_scale' must be a float tensor, not " +
                         formatType(scale.getType()));
  Value zero = imp.getOptionalInput(2);
  Type type =
      zero
          ? getElementType(zero)
          : Type(IntegerType::get(&imp.getContext(), 8, IntegerType::Unsigned));
  if (imp.hasAttr("output_dtype")) {
    Type given = imp.getElementTypeAttr("output_dtype");
    if (!given)
      return failure();
    if (zero && given != type)
      return imp.emitError("attribute 'output_dtype' (" + formatType(given) +
                           ") differs from y_zero_point's type " +
                           formatType(type));
    type = given;
  }
  Value value = imp.createCast(x, floatType);
  Value zeroFloat =
      zero ? imp.createCast(alongAxis(imp, zero, x, "y_zero_point"), floatType)
           : Value();
  if (zero && !zeroFloat)
    return failure();
  Expr e(imp);
  freezeScale(scale);
  Value q = quantizedValues(
      imp, e.div(value, alongAxis(imp, scale, x, "y_scale")), zeroFloat, type,
      /*straightThrough=*/true);
  Value y = q ? imp.createCast(q, type) : Value();
  imp.setFloatForm(y, q);
  return imp.setResult(y);
}

/// DynamicQuantizeLinear: uint8 with scale (max(0, max x) - min(0, min x)) /
/// 255 and zero point saturate(round(-min(0, min x) / scale)); outputs y,
/// y_scale, y_zero_point.
LogicalResult onnx_import::importDynamicQuantizeLinear(NodeImporter &imp) {
  Expr e(imp);
  Value x = imp.getInput(0, "x");
  if (!x)
    return failure();
  if (!getElementType(x).isF32())
    return imp.emitError("input 'x' (" + formatType(x.getType()) +
                         ") must be f32");
  SmallVector<int64_t> all;
  for (int64_t d = 0; d < getRank(x); ++d)
    all.push_back(d);
  OpBuilder &b = imp.getBuilder();
  auto reduce = [&](Value v) {
    return v ? imp.createInferred<ReduceMaxOp>(v, b.getDenseI64ArrayAttr(all),
                                               b.getBoolAttr(false))
             : Value();
  };
  Value zero = e.scalar(x, 0.0);
  Value hi = e.binary<MaxOp>(reduce(x), zero);
  Value lo = e.binary<MinOp>(e.unary<NegOp>(reduce(e.unary<NegOp>(x))), zero);
  Value scale = e.mulScalar(e.sub(hi, lo), 1.0 / 255.0);
  // An all-zero x has no range and a zero scale: it divides by 1 instead
  // (y and the zero point 0), where the scale's 0 would give NaNs.
  Value divisor =
      e.select(e.binary<EqualOp>(scale, zero), e.scalar(x, 1.0), scale);
  Value zeroPoint = e.clip(e.unary<RoundOp>(e.div(e.unary<NegOp>(lo), divisor)),
                           e.scalar(x, 0.0), e.scalar(x, 255.0));
  Type u8 = IntegerType::get(&imp.getContext(), 8, IntegerType::Unsigned);
  Value y = quantize(imp, e.div(x, divisor), zeroPoint, u8);
  if (!y)
    return failure();
  imp.setOutput(0, y);
  imp.setOutput(1, scale);
  imp.setOutput(2, imp.createCast(zeroPoint, u8));
  return success();
}

//===----------------------------------------------------------------------===//
// Integer products: QLinearMatMul, QLinearConv, MatMulInteger, ConvInteger
//===----------------------------------------------------------------------===//
//
// The integer operands, less their zero points, are products of f32 values
// (exact while a sum of products stays below 2^24: int8 operands of K
// terms up to 256 in the worst case, far more for typical data), then
// requantized as ONNX's reference does: the product times
// (a_scale * b_scale / y_scale), rounded half to even, plus y_zero_point,
// saturated.

/// `x` (an 8-bit integer input named `what`) in f32, less its zero point
/// `zero` (absent: 0) shaped by `shape` (a per-row or per-channel zero point
/// gets a dim there; empty: a scalar).
static Value centered(NodeImporter &imp, Value x, Value zero, StringRef what,
                      ArrayRef<int64_t> zeroShape) {
  Expr e(imp);
  if (!x)
    return {};
  if (!isa<IntegerType>(getElementType(x))) {
    (void)imp.emitError("input '" + what + "' (" + formatType(x.getType()) +
                        ") must hold integers");
    return {};
  }
  Type f32 = imp.getBuilder().getF32Type();
  Value value = imp.createCast(x, f32);
  if (!zero)
    return value;
  if (getElementType(zero) != getElementType(x)) {
    (void)imp.emitError("the zero point of '" + what + "' (" +
                        formatType(zero.getType()) +
                        ") must have its element type");
    return {};
  }
  int64_t count = getTensorType(zero).getNumElements();
  Value shaped = count == 1 ? imp.createReshape(zero, {})
                            : imp.createReshape(zero, zeroShape);
  if (count != 1 && (zeroShape.empty() || !shaped))
    return {};
  return e.sub(value, imp.createCast(shaped, f32));
}

/// A scale (scalar, or one per row / channel shaped by `shape`) in f32.
static Value scaleOf(NodeImporter &imp, Value scale, StringRef what,
                     ArrayRef<int64_t> shape) {
  if (!scale)
    return {};
  if (!isa<FloatType>(getElementType(scale))) {
    (void)imp.emitError("input '" + what + "' must be a float tensor, not " +
                        formatType(scale.getType()));
    return {};
  }
  Value f = imp.createCast(scale, imp.getBuilder().getF32Type());
  return getTensorType(scale).getNumElements() == 1
             ? imp.createReshape(f, {})
             : imp.createReshape(f, shape);
}

/// Requantizes an f32 integer product: round(product * (a_scale * b_scale /
/// y_scale)) + y_zero_point, saturated to y_zero_point's type.
static Value requantize(NodeImporter &imp, Value product, Value aScale,
                        Value bScale, Value yScale, Value yZero) {
  Expr e(imp);
  if (!product || !aScale || !bScale || !yScale || !yZero)
    return {};
  Value factor = e.div(e.mul(aScale, bScale), yScale);
  Value zero = imp.createCast(imp.createReshape(yZero, {}),
                              imp.getBuilder().getF32Type());
  return quantize(imp, e.mul(product, factor), zero, getElementType(yZero));
}

/// The integer products' operands are matrices (or batches of them; a
/// 1-D one is a row or a column).
static LogicalResult checkMatrices(NodeImporter &imp, Value a, Value b) {
  if (getRank(a) >= 1 && getRank(b) >= 1)
    return success();
  return imp.emitError(imp.getOpType() + " of a scalar (" +
                       formatType(a.getType()) + ", " +
                       formatType(b.getType()) + ")");
}

LogicalResult onnx_import::importQLinearMatMul(NodeImporter &imp) {
  Value a = imp.getInput(0, "a"), b = imp.getInput(3, "b");
  if (!a || !b || failed(checkMatrices(imp, a, b)))
    return failure();
  int64_t m = getRank(a) >= 2 ? getShape(a)[getRank(a) - 2] : 1;
  int64_t n = getShape(b).back();
  // Per-row (a) and per-column (b) zero points and scales.
  SmallVector<int64_t> rows = {m, 1}, cols = {1, n};
  Value product = buildMatMul(
      imp, centered(imp, a, imp.getInput(2, "a_zero_point"), "a", rows),
      centered(imp, b, imp.getInput(5, "b_zero_point"), "b", cols));
  return imp.setResult(requantize(
      imp, product, scaleOf(imp, imp.getInput(1, "a_scale"), "a_scale", rows),
      scaleOf(imp, imp.getInput(4, "b_scale"), "b_scale", cols),
      scaleOf(imp, imp.getInput(6, "y_scale"), "y_scale", {}),
      imp.getInput(7, "y_zero_point")));
}

LogicalResult onnx_import::importQLinearConv(NodeImporter &imp) {
  Value x = imp.getInput(0, "x"), w = imp.getInput(3, "w");
  if (!x || !w)
    return failure();
  int64_t rank = getRank(w);
  if (rank < 3)
    return imp.emitError("input 'w' (" + formatType(w.getType()) +
                         ") needs spatial dimensions");
  // Per output channel: [M, 1, ...] for the weights, [1, M, 1, ...] for the
  // result.
  SmallVector<int64_t> weightShape(rank, 1), channelShape(rank, 1);
  weightShape[0] = channelShape[1] = getShape(w)[0];
  Value bias;
  if (Value b = imp.getOptionalInput(8))
    bias = imp.createCast(b, imp.getBuilder().getF32Type());
  Value product = buildConv(
      imp, centered(imp, x, imp.getInput(2, "x_zero_point"), "x", {}),
      centered(imp, w, imp.getInput(5, "w_zero_point"), "w", weightShape),
      bias);
  return imp.setResult(requantize(
      imp, product, scaleOf(imp, imp.getInput(1, "x_scale"), "x_scale", {}),
      scaleOf(imp, imp.getInput(4, "w_scale"), "w_scale", channelShape),
      scaleOf(imp, imp.getInput(6, "y_scale"), "y_scale", {}),
      imp.getInput(7, "y_zero_point")));
}

/// An f32 integer product as the int32 ONNX asks for (rounded: exact sums
/// are integers already).
static Value toInt32(NodeImporter &imp, Value product) {
  Expr e(imp);
  Value rounded = e.unary<RoundOp>(product);
  return rounded ? imp.createCast(rounded, imp.getBuilder().getI32Type())
                 : Value();
}

LogicalResult onnx_import::importMatMulInteger(NodeImporter &imp) {
  Value a = imp.getInput(0, "A"), b = imp.getInput(1, "B");
  if (!a || !b || failed(checkMatrices(imp, a, b)))
    return failure();
  int64_t m = getRank(a) >= 2 ? getShape(a)[getRank(a) - 2] : 1;
  int64_t n = getShape(b).back();
  return imp.setResult(toInt32(
      imp,
      buildMatMul(imp, centered(imp, a, imp.getOptionalInput(2), "A", {m, 1}),
                  centered(imp, b, imp.getOptionalInput(3), "B", {1, n}))));
}

LogicalResult onnx_import::importConvInteger(NodeImporter &imp) {
  Value x = imp.getInput(0, "x"), w = imp.getInput(1, "w");
  if (!x || !w)
    return failure();
  if (getRank(w) < 3)
    return imp.emitError("input 'w' (" + formatType(w.getType()) +
                         ") needs spatial dimensions");
  SmallVector<int64_t> weightShape(getRank(w), 1);
  weightShape[0] = getShape(w)[0];
  return imp.setResult(toInt32(
      imp,
      buildConv(imp, centered(imp, x, imp.getOptionalInput(2), "x", {}),
                centered(imp, w, imp.getOptionalInput(3), "w", weightShape),
                Value())));
}
