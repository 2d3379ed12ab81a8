//===- ImportNormalization.cpp - Batch, layer, instance, group norms -----===//
//
// BatchNormalization (inference, and training mode with the batch's
// statistics), LayerNormalization (weft.layer_norm; its training-mode
// outputs are reported as unsupported), and InstanceNormalization and
// GroupNormalization, both weft.layer_norm of rows of the input seen as
// [N, groups, rest] followed by their per-channel or per-group scale and
// bias.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/ImportExpr.h"
#include "frontends/onnx/OpImporters.h"

#include "dialects/weft/ShapeRules.h"
#include "dialects/weft/WeftOps.h"

using namespace mlir;
using namespace weft;
using namespace weft::onnx_import;

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

/// Training-mode BatchNormalization: x normalized with the statistics of
/// its own batch (per channel, over every other dim; the biased variance),
/// so gradients flow through them, and under data parallelism they are the
/// whole global batch's (the reductions become all-reduces). ONNX's
/// running_mean and running_var outputs mix the inputs with the batch's
/// statistics by `momentum`. When the running statistics are parameters and
/// the import is a training step's, they are also stored back for the next
/// step with PyTorch's rule (the unbiased variance; its momentum is 1 -
/// ONNX's), so a trained model exports usable inference statistics.
static LogicalResult importBatchNormTraining(NodeImporter &imp, Value input,
                                             Value scale, Value bias,
                                             Value mean, Value variance,
                                             double epsilon) {
  ArrayRef<int64_t> shape = getShape(input);
  int64_t rank = shape.size();
  if (rank < 2)
    return imp.emitError("input X (" + formatType(input.getType()) +
                         ") needs a channel dimension");
  OpBuilder &b = imp.getBuilder();
  SmallVector<int64_t> axes{0};
  int64_t count = shape[0];
  for (int64_t d = 2; d < rank; ++d) {
    axes.push_back(d);
    count *= shape[d];
  }
  Expr e(imp);
  auto meanOver = [&](Value v) {
    return v ? imp.createInferred<ReduceMeanOp>(v, b.getDenseI64ArrayAttr(axes),
                                                b.getBoolAttr(true))
             : Value();
  };
  Value batchMean = meanOver(input);
  Value centered = e.sub(input, batchMean);
  Value batchVar = meanOver(e.mul(centered, centered));
  if (!batchVar)
    return failure();
  int64_t channels = shape[1];
  Value meanC = imp.createReshape(batchMean, {channels});
  Value varC = imp.createReshape(batchVar, {channels});
  if (!meanC || !varC ||
      failed(imp.setResult(imp.createInferred<BatchNormOp>(
          input, scale, bias, meanC, varC, b.getF64FloatAttr(epsilon)))))
    return failure();

  double momentum = imp.getFloatAttr("momentum", 0.9);
  auto running = [&](Value old, Value current) {
    return e.add(e.mulScalar(old, momentum),
                 e.mulScalar(current, 1.0 - momentum));
  };
  if (imp.isOutputUsed(1))
    imp.setOutput(1, running(mean, meanC));
  if (imp.isOutputUsed(2))
    imp.setOutput(2, running(variance, varC));
  if (imp.isOutputUsed(3) || imp.isOutputUsed(4))
    return imp.emitError("outputs 'saved_mean' and 'saved_var' are not "
                         "supported");
  if (!imp.isTrainingStep() || !mean.getDefiningOp<ParamOp>() ||
      !variance.getDefiningOp<ParamOp>())
    return success(!imp.hasError());
  if (count < 2)
    return imp.emitError("input X (" + formatType(input.getType()) +
                         ") has one value per channel: training-mode "
                         "BatchNormalization needs more (PyTorch refuses it "
                         "too)");
  Value unbiased = e.mulScalar(varC, double(count) / double(count - 1));
  if (failed(imp.createParamUpdate(mean, running(mean, meanC), "input_mean")) ||
      failed(imp.createParamUpdate(variance, running(variance, unbiased),
                                   "input_var")))
    return failure();
  return success(!imp.hasError());
}

/// BatchNormalization. Opset 14 on says training mode with `training_mode`;
/// before it (version 9), a node in training mode lists the extra outputs
/// (PyTorch's training export names all five).
LogicalResult onnx_import::importBatchNormalization(NodeImporter &imp) {
  Value input = imp.getInput(0, "X");
  Value scale = imp.getInput(1, "scale");
  Value bias = imp.getInput(2, "B");
  Value mean = imp.getInput(3, "input_mean");
  Value variance = imp.getInput(4, "input_var");
  if (!input || !scale || !bias || !mean || !variance)
    return failure();
  double epsilon = imp.getFloatAttr("epsilon", 1e-5);
  bool training = false;
  if (imp.getOpset() >= 14) {
    int64_t mode = imp.getIntAttr("training_mode", 0);
    if (mode != 0 && mode != 1)
      return imp.emitUnsupportedAttr("training_mode", Twine(mode),
                                     "ONNX allows 0 and 1");
    training = mode == 1;
  } else {
    for (unsigned i = 1; i < imp.getNumOutputs(); ++i)
      training |= !imp.getNode().output(i).empty();
  }
  if (training)
    return importBatchNormTraining(imp, input, scale, bias, mean, variance,
                                   epsilon);
  if (imp.isOutputUsed(1) || imp.isOutputUsed(2))
    return imp.emitError("outputs 'running_mean' and 'running_var' are only "
                         "defined in training mode");
  return imp.setResult(imp.createInferred<BatchNormOp>(
      input, scale, bias, mean, variance,
      imp.getBuilder().getF64FloatAttr(epsilon)));
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

/// `x` seen as [N, groups, size] rows, each normalized to zero mean and unit
/// variance (weft.layer_norm with unit scale, the node's epsilon); null
/// after an error.
static Value normalizeRows(NodeImporter &imp, Value x, int64_t groups,
                           int64_t size) {
  Type type = getElementType(x);
  Value ones = imp.createConstant(
      DenseElementsAttr::get(RankedTensorType::get({size}, type),
                             imp.getBuilder().getFloatAttr(type, 1.0)));
  Value rows = imp.createReshape(x, {getShape(x)[0], groups, size});
  if (!ones || !rows)
    return {};
  OpBuilder &b = imp.getBuilder();
  return imp.createInferred<LayerNormOp>(
      rows, ones, Value(), b.getI64IntegerAttr(2),
      b.getF64FloatAttr(imp.getFloatAttr("epsilon", 1e-5)));
}

/// InstanceNormalization: a layer norm of each (n, c)'s spatial values (the
/// input seen as [N, C, S]) with unit scale, then the per-channel scale and
/// bias. PyTorch exports GroupNorm this way too.
LogicalResult onnx_import::importInstanceNormalization(NodeImporter &imp) {
  Expr e(imp);
  Value x = imp.getInput(0, "input");
  Value scale = imp.getInput(1, "scale");
  Value bias = imp.getInput(2, "B");
  if (!x || !scale || !bias)
    return failure();
  ArrayRef<int64_t> shape = getShape(x);
  if (shape.size() < 3)
    return imp.emitError("input (" + formatType(x.getType()) +
                         ") needs at least one spatial dimension (N, C, D...)");
  int64_t channels = shape[1];
  for (auto [name, v] :
       {std::make_pair("scale", scale), std::make_pair("B", bias)})
    if (getShape(v) != ArrayRef<int64_t>{channels})
      return imp.emitError(
          "input '" + Twine(name) + "' (" + formatType(v.getType()) +
          ") should hold one value per channel (" + Twine(channels) + ")");
  int64_t spatial = 1;
  for (int64_t d : shape.drop_front(2))
    spatial *= d;
  Value normalized = normalizeRows(imp, x, channels, spatial);
  if (!normalized)
    return failure();
  SmallVector<int64_t> column(shape.size() - 1, 1);
  column[0] = channels;
  Value result = e.add(e.mul(imp.createReshape(normalized, shape),
                             imp.createReshape(scale, column)),
                       imp.createReshape(bias, column));
  if (!result)
    return failure();
  imp.setOutput(0, result);
  return success();
}

// GroupNormalization (opset 18; 21 changed scale and bias from one value
// per group to one per channel): each sample's channels in num_groups
// groups, each group normalized over its channels and positions together
// (weft.layer_norm of the [N, groups, rest] rows), then scaled and shifted.
LogicalResult onnx_import::importGroupNormalization(NodeImporter &imp) {
  Expr e(imp);
  Value x = imp.getInput(0, "X");
  Value scale = imp.getInput(1, "scale");
  Value bias = imp.getInput(2, "bias");
  if (!x || !scale || !bias)
    return failure();
  ArrayRef<int64_t> shape = getShape(x);
  if (shape.size() < 3 || !isa<FloatType>(getElementType(x)))
    return imp.emitError("input X (" + formatType(x.getType()) +
                         ") should be a float tensor (N, C, D...) with at "
                         "least one spatial dimension");
  if (!imp.hasAttr("num_groups"))
    return imp.emitError("attribute 'num_groups' is required");
  const int64_t groups = imp.getIntAttr("num_groups", 0);
  const int64_t channels = shape[1];
  if (groups < 1 || channels % groups != 0)
    return imp.emitError("num_groups " + Twine(groups) +
                         " does not divide the " + Twine(channels) +
                         " channels of X (" + formatType(x.getType()) + ")");
  const bool perChannel = imp.getOpset() >= 21;
  const int64_t count = perChannel ? channels : groups;
  for (auto [name, v] :
       {std::make_pair("scale", scale), std::make_pair("bias", bias)})
    if (getShape(v) != ArrayRef<int64_t>{count} ||
        getElementType(v) != getElementType(x))
      return imp.emitError("input '" + Twine(name) + "' (" +
                           formatType(v.getType()) + ") should hold one " +
                           formatType(getElementType(x)) + " value per " +
                           (perChannel ? "channel (opset 21 and later: "
                                       : "group (opsets 18 to 20: ") +
                           Twine(count) + ")");
  int64_t spatial = 1;
  for (int64_t d : shape.drop_front(2))
    spatial *= d;
  Value normalized = normalizeRows(imp, x, groups, channels / groups * spatial);
  if (!normalized)
    return failure();
  Value result;
  if (perChannel) {
    SmallVector<int64_t> column(shape.size() - 1, 1);
    column[0] = channels;
    result = e.add(e.mul(imp.createReshape(normalized, shape),
                         imp.createReshape(scale, column)),
                   imp.createReshape(bias, column));
  } else {
    // [N, groups, channels / groups * spatial] against [groups, 1].
    result = imp.createReshape(
        e.add(e.mul(normalized, imp.createReshape(scale, {groups, 1})),
              imp.createReshape(bias, {groups, 1})),
        shape);
  }
  return imp.setResult(result);
}
