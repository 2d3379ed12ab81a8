//===- ImportElementwise.cpp - Elementwise ONNX ops -----------------------===//
//
// Unary math, binary arithmetic with numpy broadcasting, comparisons, logic,
// Where and Cast map one to one onto weft ops (Max/Min with more than two
// inputs become a chain).
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/OnnxModelLoader.h"
#include "frontends/onnx/OpImporters.h"

#include "dialects/weft/WeftOps.h"

using namespace mlir;
using namespace weft;
using namespace weft::onnx_import;

template <typename OpTy> static LogicalResult importBinary(NodeImporter &imp) {
  Value lhs = imp.getInput(0, "A");
  Value rhs = imp.getInput(1, "B");
  if (!lhs || !rhs || failed(imp.checkSameElementType(lhs, rhs, "A", "B")))
    return failure();
  Value result = imp.createInferred<OpTy>(lhs, rhs);
  if (!result)
    return failure();
  imp.setOutput(0, result);
  return success();
}

/// Max, Min and Sum take one or more inputs: a chain of binary ops.
template <typename OpTy> static Value buildVariadic(NodeImporter &imp) {
  Value result = imp.getInput(0, "data_0");
  for (unsigned i = 1, e = imp.getNumInputs(); result && i < e; ++i) {
    std::string name = "data_" + std::to_string(i);
    Value next = imp.getInput(i, name);
    if (!next || failed(imp.checkSameElementType(result, next, "data_0", name)))
      return {};
    result = imp.createInferred<OpTy>(result, next);
  }
  return result;
}

template <typename OpTy>
static LogicalResult importVariadic(NodeImporter &imp) {
  Value result = buildVariadic<OpTy>(imp);
  if (!result)
    return failure();
  imp.setOutput(0, result);
  return success();
}

template <typename OpTy> static LogicalResult importUnary(NodeImporter &imp) {
  Value input = imp.getInput(0, "X");
  if (!input)
    return failure();
  Value result = imp.create<OpTy>(input.getType(), input);
  if (!result)
    return failure();
  imp.setOutput(0, result);
  return success();
}

LogicalResult onnx_import::importAdd(NodeImporter &imp) {
  return importBinary<AddOp>(imp);
}
LogicalResult onnx_import::importSub(NodeImporter &imp) {
  return importBinary<SubOp>(imp);
}
LogicalResult onnx_import::importMul(NodeImporter &imp) {
  return importBinary<MulOp>(imp);
}
LogicalResult onnx_import::importDiv(NodeImporter &imp) {
  return importBinary<DivOp>(imp);
}
LogicalResult onnx_import::importMax(NodeImporter &imp) {
  return importVariadic<MaxOp>(imp);
}
LogicalResult onnx_import::importMin(NodeImporter &imp) {
  return importVariadic<MinOp>(imp);
}
LogicalResult onnx_import::importSum(NodeImporter &imp) {
  return importVariadic<AddOp>(imp);
}
/// Mean: the Sum chain divided by the input count.
LogicalResult onnx_import::importMean(NodeImporter &imp) {
  Value sum = buildVariadic<AddOp>(imp);
  if (!sum)
    return failure();
  if (imp.getNumInputs() > 1) {
    if (!isa<FloatType>(getElementType(sum)))
      return imp.emitError("Mean takes float tensors, not " +
                           formatType(getElementType(sum)));
    Value count = imp.createScalar(getElementType(sum), imp.getNumInputs());
    sum = count ? imp.createInferred<DivOp>(sum, count) : Value();
    if (!sum)
      return failure();
  }
  imp.setOutput(0, sum);
  return success();
}
LogicalResult onnx_import::importAnd(NodeImporter &imp) {
  return importBinary<AndOp>(imp);
}
LogicalResult onnx_import::importOr(NodeImporter &imp) {
  return importBinary<OrOp>(imp);
}
LogicalResult onnx_import::importEqual(NodeImporter &imp) {
  return importBinary<EqualOp>(imp);
}
LogicalResult onnx_import::importLess(NodeImporter &imp) {
  return importBinary<LessOp>(imp);
}
LogicalResult onnx_import::importGreater(NodeImporter &imp) {
  return importBinary<GreaterOp>(imp);
}
LogicalResult onnx_import::importLessOrEqual(NodeImporter &imp) {
  return importBinary<LessEqualOp>(imp);
}
LogicalResult onnx_import::importGreaterOrEqual(NodeImporter &imp) {
  return importBinary<GreaterEqualOp>(imp);
}

/// Pow's exponent may have another element type than its base: it is cast to
/// the base's type.
LogicalResult onnx_import::importPow(NodeImporter &imp) {
  Value base = imp.getInput(0, "X");
  Value exponent = imp.getInput(1, "Y");
  if (!base || !exponent)
    return failure();
  exponent = imp.createCast(exponent, getElementType(base));
  if (!exponent)
    return failure();
  Value result = imp.createInferred<PowOp>(base, exponent);
  if (!result)
    return failure();
  imp.setOutput(0, result);
  return success();
}

LogicalResult onnx_import::importSqrt(NodeImporter &imp) {
  return importUnary<SqrtOp>(imp);
}
LogicalResult onnx_import::importNeg(NodeImporter &imp) {
  return importUnary<NegOp>(imp);
}
LogicalResult onnx_import::importExp(NodeImporter &imp) {
  return importUnary<ExpOp>(imp);
}
LogicalResult onnx_import::importLog(NodeImporter &imp) {
  return importUnary<LogOp>(imp);
}
LogicalResult onnx_import::importTanh(NodeImporter &imp) {
  return importUnary<TanhOp>(imp);
}
LogicalResult onnx_import::importErf(NodeImporter &imp) {
  return importUnary<ErfOp>(imp);
}
LogicalResult onnx_import::importRelu(NodeImporter &imp) {
  return importUnary<ReluOp>(imp);
}
LogicalResult onnx_import::importSigmoid(NodeImporter &imp) {
  return importUnary<SigmoidOp>(imp);
}
LogicalResult onnx_import::importSin(NodeImporter &imp) {
  return importUnary<SinOp>(imp);
}
LogicalResult onnx_import::importCos(NodeImporter &imp) {
  return importUnary<CosOp>(imp);
}
LogicalResult onnx_import::importAtan(NodeImporter &imp) {
  return importUnary<AtanOp>(imp);
}
LogicalResult onnx_import::importFloor(NodeImporter &imp) {
  return importUnary<FloorOp>(imp);
}
LogicalResult onnx_import::importCeil(NodeImporter &imp) {
  return importUnary<CeilOp>(imp);
}
LogicalResult onnx_import::importRound(NodeImporter &imp) {
  return importUnary<RoundOp>(imp);
}
LogicalResult onnx_import::importNot(NodeImporter &imp) {
  return importUnary<NotOp>(imp);
}

LogicalResult onnx_import::importWhere(NodeImporter &imp) {
  Value condition = imp.getInput(0, "condition");
  Value x = imp.getInput(1, "X");
  Value y = imp.getInput(2, "Y");
  if (!condition || !x || !y ||
      failed(imp.checkSameElementType(x, y, "X", "Y")))
    return failure();
  Value result = imp.createInferred<WhereOp>(condition, x, y);
  if (!result)
    return failure();
  imp.setOutput(0, result);
  return success();
}

/// Cast's `saturate` (opset 19) only concerns float8 types, which weft does
/// not have.
LogicalResult onnx_import::importCast(NodeImporter &imp) {
  Value input = imp.getInput(0, "input");
  if (!input)
    return failure();
  if (!imp.hasAttr("to"))
    return imp.emitError("missing required attribute 'to'");
  Type to = imp.getElementTypeAttr("to");
  if (!to)
    return failure();
  return imp.setResult(imp.createCast(input, to));
}

/// CastLike: a cast to the element type of `target_type`.
LogicalResult onnx_import::importCastLike(NodeImporter &imp) {
  Value input = imp.getInput(0, "input");
  Value like = imp.getInput(1, "target_type");
  if (!input || !like)
    return failure();
  return imp.setResult(imp.createCast(input, getElementType(like)));
}
