//===- ImportNeuralNet.cpp - Normalization, softmax, losses, reductions ---===//
//
// Axes are made non-negative here (weft ops take normalized axes only), and
// ONNX's optional extras are either mapped (SoftmaxCrossEntropyLoss's
// log_prob becomes a weft.log_softmax) or reported as unsupported (the
// training-mode outputs of the normalizations).
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/OpImporters.h"

#include "dialects/weft/ShapeRules.h"
#include "dialects/weft/WeftOps.h"

using namespace mlir;
using namespace weft;
using namespace weft::onnx_import;

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

LogicalResult onnx_import::importBatchNormalization(NodeImporter &imp) {
  Value input = imp.getInput(0, "X");
  Value scale = imp.getInput(1, "scale");
  Value bias = imp.getInput(2, "B");
  Value mean = imp.getInput(3, "input_mean");
  Value variance = imp.getInput(4, "input_var");
  if (!input || !scale || !bias || !mean || !variance)
    return failure();
  if (int64_t training = imp.getIntAttr("training_mode", 0))
    return imp.emitUnsupportedAttr("training_mode", Twine(training),
                                   "weft imports the inference form only");
  if (imp.isOutputUsed(1) || imp.isOutputUsed(2))
    return imp.emitError("outputs 'running_mean' and 'running_var' are not "
                         "supported (training mode)");
  double epsilon = imp.getFloatAttr("epsilon", 1e-5);
  Value result = imp.createInferred<BatchNormOp>(
      input, scale, bias, mean, variance,
      imp.getBuilder().getF64FloatAttr(epsilon));
  if (!result)
    return failure();
  imp.setOutput(0, result);
  return success();
}

/// Brings LayerNormalization's Scale or B to the normalized shape: leading 1s
/// beyond its rank are dropped, and a smaller but broadcastable shape is
/// broadcast.
static Value fitToNormalizedShape(NodeImporter &imp, Value value,
                                  ArrayRef<int64_t> normalizedShape,
                                  StringRef what) {
  ArrayRef<int64_t> shape = getShape(value);
  while (shape.size() > normalizedShape.size() && shape.front() == 1)
    shape = shape.drop_front();
  if (!isBroadcastableTo(shape, normalizedShape)) {
    (void)imp.emitError("input '" + what + "' (" + formatType(value.getType()) +
                        ") does not broadcast to the normalized shape " +
                        formatShape(normalizedShape));
    return {};
  }
  value = imp.createReshape(value, shape);
  if (!value || shape == normalizedShape)
    return value;
  return imp.create<BroadcastToOp>(getTensorType(value).clone(normalizedShape),
                                   value);
}

LogicalResult onnx_import::importLayerNormalization(NodeImporter &imp) {
  Value input = imp.getInput(0, "X");
  Value scale = imp.getInput(1, "Scale");
  Value bias = imp.getOptionalInput(2);
  if (!input || !scale)
    return failure();
  if (imp.isOutputUsed(1) || imp.isOutputUsed(2))
    return imp.emitError("outputs 'Mean' and 'InvStdDev' are not supported");
  int64_t rank = getRank(input);
  int64_t axisAttr = imp.getIntAttr("axis", -1);
  std::optional<int64_t> axis = normalizeAxis(axisAttr, rank);
  if (!axis)
    return imp.emitError("attribute 'axis' = " + Twine(axisAttr) +
                         " is out of range for input X (" +
                         formatType(input.getType()) + ")");
  ArrayRef<int64_t> normalizedShape = getShape(input).drop_front(*axis);
  scale = fitToNormalizedShape(imp, scale, normalizedShape, "Scale");
  if (!scale)
    return failure();
  if (bias) {
    bias = fitToNormalizedShape(imp, bias, normalizedShape, "B");
    if (!bias)
      return failure();
  }
  OpBuilder &builder = imp.getBuilder();
  Value result = imp.createInferred<LayerNormOp>(
      input, scale, bias, builder.getI64IntegerAttr(*axis),
      builder.getF64FloatAttr(imp.getFloatAttr("epsilon", 1e-5)));
  if (!result)
    return failure();
  imp.setOutput(0, result);
  return success();
}

//===----------------------------------------------------------------------===//
// Softmax, losses
//===----------------------------------------------------------------------===//

/// Softmax and LogSoftmax (opset 13+: one axis, default -1).
template <typename OpTy>
static LogicalResult importSoftmaxLike(NodeImporter &imp) {
  Value input = imp.getInput(0, "input");
  if (!input)
    return failure();
  int64_t axisAttr = imp.getIntAttr("axis", -1);
  std::optional<int64_t> axis = normalizeAxis(axisAttr, getRank(input));
  if (!axis)
    return imp.emitError("attribute 'axis' = " + Twine(axisAttr) +
                         " is out of range for input (" +
                         formatType(input.getType()) + ")");
  Value result = imp.create<OpTy>(input.getType(), input,
                                  imp.getBuilder().getI64IntegerAttr(*axis));
  if (!result)
    return failure();
  imp.setOutput(0, result);
  return success();
}

LogicalResult onnx_import::importSoftmax(NodeImporter &imp) {
  return importSoftmaxLike<SoftmaxOp>(imp);
}

LogicalResult onnx_import::importLogSoftmax(NodeImporter &imp) {
  return importSoftmaxLike<LogSoftmaxOp>(imp);
}

LogicalResult onnx_import::importSoftmaxCrossEntropyLoss(NodeImporter &imp) {
  Value scores = imp.getInput(0, "scores");
  Value labels = imp.getInput(1, "labels");
  Value weights = imp.getOptionalInput(2);
  if (!scores || !labels)
    return failure();
  if (getRank(scores) < 2)
    return imp.emitError("input 'scores' (" + formatType(scores.getType()) +
                         ") needs a class dimension (N, C, ...)");
  std::string reduction = imp.getStringAttr("reduction", "mean");
  if (reduction != "mean" && reduction != "sum" && reduction != "none")
    return imp.emitUnsupportedAttr("reduction", "'" + reduction + "'",
                                   "expected mean, sum or none");
  OpBuilder &builder = imp.getBuilder();
  IntegerAttr ignoreIndex;
  if (imp.hasAttr("ignore_index"))
    ignoreIndex = builder.getI64IntegerAttr(imp.getIntAttr("ignore_index", 0));
  Value loss = imp.createInferred<SoftmaxCrossEntropyOp>(
      scores, labels, weights, builder.getStringAttr(reduction), ignoreIndex,
      IntegerAttr());
  if (!loss)
    return failure();
  imp.setOutput(0, loss);
  if (imp.isOutputUsed(1)) {
    Value logProb = imp.create<LogSoftmaxOp>(scores.getType(), scores,
                                             builder.getI64IntegerAttr(1));
    if (!logProb)
      return failure();
    imp.setOutput(1, logProb);
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

/// ReduceSum takes its axes as an input (opset 13+); ReduceMean and
/// ReduceMax as an attribute before opset 18 and as an input from 18. Either
/// form is accepted. Empty axes reduce everything, or nothing with
/// noop_with_empty_axes (opset 18+, ReduceSum 13+).
template <typename OpTy> static LogicalResult importReduce(NodeImporter &imp) {
  Value input = imp.getInput(0, "data");
  if (!input)
    return failure();
  SmallVector<int64_t> axes;
  if (imp.hasInput(1)) {
    std::optional<SmallVector<int64_t>> values = imp.getConstantInts(1, "axes");
    if (!values)
      return failure();
    axes = *values;
  } else {
    axes = imp.getIntsAttr("axes");
  }
  bool keepdims = imp.getIntAttr("keepdims", 1) != 0;
  bool noopWithEmptyAxes = imp.getIntAttr("noop_with_empty_axes", 0) != 0;
  if (imp.hasError())
    return failure();
  int64_t rank = getRank(input);
  if (axes.empty()) {
    if (noopWithEmptyAxes) {
      imp.setOutput(0, input);
      return success();
    }
    for (int64_t axis = 0; axis < rank; ++axis)
      axes.push_back(axis);
  }
  std::optional<SmallVector<int64_t>> normalized =
      normalizeAxes(imp, axes, rank, "axes");
  if (!normalized)
    return failure();
  if (normalized->empty()) {
    // A scalar reduced over all (no) axes is itself.
    imp.setOutput(0, input);
    return success();
  }
  OpBuilder &builder = imp.getBuilder();
  Value result =
      imp.createInferred<OpTy>(input, builder.getDenseI64ArrayAttr(*normalized),
                               builder.getBoolAttr(keepdims));
  if (!result)
    return failure();
  imp.setOutput(0, result);
  return success();
}

LogicalResult onnx_import::importReduceMean(NodeImporter &imp) {
  return importReduce<ReduceMeanOp>(imp);
}

LogicalResult onnx_import::importReduceSum(NodeImporter &imp) {
  return importReduce<ReduceSumOp>(imp);
}

LogicalResult onnx_import::importReduceMax(NodeImporter &imp) {
  return importReduce<ReduceMaxOp>(imp);
}
