//===- ImportQuantize.cpp - QuantizeLinear, DequantizeLinear --------------===//
//
// ONNX's linear quantization (the QDQ form PyTorch's quantization exports,
// and onnxruntime's quantized models) built from weft's elementwise ops, in
// float: DequantizeLinear is (x - zero_point) * scale; QuantizeLinear is
// round_half_even(x / scale) + zero_point saturated to the integer type;
// DynamicQuantizeLinear finds the uint8 scale and zero point from the data's
// range first. Per-axis scales and zero points (1-D, along `axis`)
// broadcast. Round has no gradient, so gradients stop at QuantizeLinear
// (PyTorch's fake-quantize passes them straight through instead).
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
  Value value = imp.createCast(x, floatType);
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

/// round_half_even(x / scale) + zero, saturated to `type`'s range and cast.
static Value quantize(NodeImporter &imp, Value x, Value scale, Value zero,
                      Type type) {
  Expr e(imp);
  std::optional<std::pair<double, double>> range = rangeOf(type);
  if (!range) {
    (void)imp.emitError("quantizing to " + formatType(type) +
                        " is not supported: weft quantizes to int8 and uint8");
    return {};
  }
  Value q = e.unary<RoundOp>(e.div(x, scale));
  if (zero)
    q = e.add(q, zero);
  q = e.clip(q, e.scalar(q, range->first), e.scalar(q, range->second));
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
  return imp.setResult(quantize(imp, value, alongAxis(imp, scale, x, "y_scale"),
                                zeroFloat, type));
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
  Value y = quantize(imp, x, divisor, zeroPoint, u8);
  if (!y)
    return failure();
  imp.setOutput(0, y);
  imp.setOutput(1, scale);
  imp.setOutput(2, imp.createCast(zeroPoint, u8));
  return success();
}
