//===- ImportNeuralNet.cpp - Normalization, softmax, losses, reductions ---===//
//
// Axes are made non-negative here (weft ops take normalized axes only), and
// ONNX's optional extras are either mapped (SoftmaxCrossEntropyLoss's
// log_prob becomes a weft.log_softmax) or reported as unsupported (the
// training-mode outputs of LayerNormalization).
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/ImportExpr.h"
#include "frontends/onnx/OpImporters.h"

#include "dialects/weft/ShapeRules.h"
#include "dialects/weft/WeftOps.h"

#include "mlir/IR/Matchers.h"

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

/// ReduceSum takes its axes as an input (opset 13+); the other reductions
/// as an attribute before opset 18 and as an input from 18. Either form is
/// accepted. Empty axes reduce everything, or nothing with
/// noop_with_empty_axes (opset 18+, ReduceSum 13+). `build` makes the
/// reduction of the input over the normalized axes.
static LogicalResult importReduceWith(
    NodeImporter &imp,
    llvm::function_ref<Value(Value, ArrayRef<int64_t>, bool)> build) {
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
  Value result = build(input, *normalized, keepdims);
  if (!result)
    return failure();
  imp.setOutput(0, result);
  return success();
}

template <typename OpTy> static LogicalResult importReduce(NodeImporter &imp) {
  return importReduceWith(
      imp, [&](Value input, ArrayRef<int64_t> axes, bool keepdims) {
        OpBuilder &b = imp.getBuilder();
        return imp.createInferred<OpTy>(input, b.getDenseI64ArrayAttr(axes),
                                        b.getBoolAttr(keepdims));
      });
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

//===----------------------------------------------------------------------===//
// Reductions built from the others
//===----------------------------------------------------------------------===//

namespace {
/// Sums and maxima over `axes` for the composed reductions.
struct Reducer {
  NodeImporter &imp;
  ArrayRef<int64_t> axes;
  template <typename OpTy> Value reduce(Value x, bool keepdims) {
    OpBuilder &b = imp.getBuilder();
    return x ? imp.createInferred<OpTy>(x, b.getDenseI64ArrayAttr(axes),
                                        b.getBoolAttr(keepdims))
             : Value();
  }
  Value sum(Value x, bool keepdims) { return reduce<ReduceSumOp>(x, keepdims); }
  Value max(Value x, bool keepdims) { return reduce<ReduceMaxOp>(x, keepdims); }
};
} // namespace

static Value requireFloat(NodeImporter &imp, Value x) {
  if (x && !isa<FloatType>(getElementType(x))) {
    (void)imp.emitError("input 'data' has element type " +
                        formatType(getElementType(x)) +
                        "; this reduction takes float tensors");
    return {};
  }
  return x;
}

/// min = -max(-x) (floats and signed integers).
LogicalResult onnx_import::importReduceMin(NodeImporter &imp) {
  return importReduceWith(
      imp, [&](Value x, ArrayRef<int64_t> axes, bool keepdims) -> Value {
        Type type = getElementType(x);
        if (type.isUnsignedInteger() || type.isInteger(1) ||
            type.isInteger(8)) {
          (void)imp.emitError("ReduceMin of " + formatType(type) +
                              " is not supported");
          return {};
        }
        Expr e(imp);
        return e.unary<NegOp>(
            Reducer{imp, axes}.max(e.unary<NegOp>(x), keepdims));
      });
}

LogicalResult onnx_import::importReduceSumSquare(NodeImporter &imp) {
  return importReduceWith(
      imp, [&](Value x, ArrayRef<int64_t> axes, bool keepdims) {
        Expr e(imp);
        return Reducer{imp, axes}.sum(e.mul(x, x), keepdims);
      });
}

LogicalResult onnx_import::importReduceL1(NodeImporter &imp) {
  return importReduceWith(
      imp, [&](Value x, ArrayRef<int64_t> axes, bool keepdims) {
        return Reducer{imp, axes}.sum(Expr(imp).abs(x), keepdims);
      });
}

LogicalResult onnx_import::importReduceL2(NodeImporter &imp) {
  return importReduceWith(
      imp, [&](Value x, ArrayRef<int64_t> axes, bool keepdims) {
        Expr e(imp);
        return e.unary<SqrtOp>(
            Reducer{imp, axes}.sum(e.mul(requireFloat(imp, x), x), keepdims));
      });
}

LogicalResult onnx_import::importReduceLogSum(NodeImporter &imp) {
  return importReduceWith(
      imp, [&](Value x, ArrayRef<int64_t> axes, bool keepdims) {
        return Expr(imp).unary<LogOp>(
            Reducer{imp, axes}.sum(requireFloat(imp, x), keepdims));
      });
}

/// log(sum(exp(x - m))) + m with m the maximum (finite where x has one).
LogicalResult onnx_import::importReduceLogSumExp(NodeImporter &imp) {
  return importReduceWith(imp, [&](Value x, ArrayRef<int64_t> axes,
                                   bool keepdims) {
    Expr e(imp);
    Reducer r{imp, axes};
    x = requireFloat(imp, x);
    Value m = r.max(x, /*keepdims=*/true);
    Value lse = e.add(
        e.unary<LogOp>(r.sum(e.unary<ExpOp>(e.sub(x, m)), /*keepdims=*/true)),
        m);
    if (keepdims || !lse)
      return lse;
    SmallVector<int64_t> shape;
    for (auto [d, size] : llvm::enumerate(getShape(x)))
      if (!llvm::is_contained(axes, static_cast<int64_t>(d)))
        shape.push_back(size);
    return imp.createReshape(lse, shape);
  });
}

/// The product of x's last dim (of n elements), kept as a dim of 1: pairwise
/// products of its halves (an odd element carried along) until one is left.
/// Exact products (no logarithms), so zeros and signs come out right, and
/// the gradient of each factor is the product of the others through the
/// slices' and products' own rules; log2(n) ops.
static Value productOfLastDim(NodeImporter &imp, Value x) {
  Expr e(imp);
  while (x && getShape(x).back() > 1) {
    ArrayRef<int64_t> shape = getShape(x);
    int64_t n = shape.back(), half = n / 2;
    int64_t axis = static_cast<int64_t>(shape.size()) - 1;
    SmallVector<Type> pieces;
    for (int64_t size : {half, half, n - 2 * half}) {
      if (size == 0)
        continue;
      SmallVector<int64_t> piece(shape);
      piece.back() = size;
      pieces.push_back(RankedTensorType::get(piece, getElementType(x)));
    }
    SmallVector<Value> parts = imp.createMulti<SplitOp>(
        pieces, x, imp.getBuilder().getI64IntegerAttr(axis));
    if (parts.empty())
      return {};
    Value product = e.mul(parts[0], parts[1]);
    if (parts.size() == 3 && product)
      product = imp.createInferred<ConcatOp>(
          ValueRange{product, parts[2]},
          imp.getBuilder().getI64IntegerAttr(axis));
    x = product;
  }
  return x;
}

/// The products of `value` over `axes`, as a constant of `resultType`
/// (elements in order of the kept positions; floats multiplied in their own
/// precision, integers wrapping).
static DenseElementsAttr foldProduct(DenseElementsAttr value,
                                     ArrayRef<int64_t> axes,
                                     RankedTensorType resultType) {
  ArrayRef<int64_t> shape = value.getType().getShape();
  int64_t results = resultType.getNumElements();
  // Each input element's result position: its index with the reduced axes
  // dropped, in row-major order of the kept dims.
  auto resultIndex = [&](int64_t flat) {
    int64_t index = 0, scale = 1;
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      int64_t i = flat % shape[d];
      flat /= shape[d];
      if (llvm::is_contained(axes, d))
        continue;
      index += i * scale;
      scale *= shape[d];
    }
    return index;
  };
  if (auto floatType = dyn_cast<FloatType>(value.getElementType())) {
    SmallVector<APFloat> products(
        results, APFloat::getOne(floatType.getFloatSemantics()));
    for (auto [flat, v] : llvm::enumerate(value.getValues<APFloat>()))
      products[resultIndex(flat)].multiply(v, APFloat::rmNearestTiesToEven);
    return DenseElementsAttr::get(resultType, products);
  }
  unsigned width = value.getElementType().getIntOrFloatBitWidth();
  SmallVector<APInt> products(results, APInt(width, 1));
  for (auto [flat, v] : llvm::enumerate(value.getValues<APInt>()))
    products[resultIndex(flat)] *= v;
  return DenseElementsAttr::get(resultType, products);
}

/// ReduceProd: the reduced axes moved last and flattened into one, then
/// productOfLastDim. An empty reduction is 1.
LogicalResult onnx_import::importReduceProd(NodeImporter &imp) {
  return importReduceWith(
      imp, [&](Value x, ArrayRef<int64_t> axes, bool keepdims) -> Value {
        Type type = getElementType(x);
        if (type.isInteger(1)) {
          (void)imp.emitError("ReduceProd of booleans is not supported");
          return {};
        }
        ArrayRef<int64_t> shape = getShape(x);
        SmallVector<int64_t> permutation, kept, keptDims;
        int64_t count = 1;
        for (auto [d, size] : llvm::enumerate(shape)) {
          bool reduced = llvm::is_contained(axes, static_cast<int64_t>(d));
          keptDims.push_back(reduced ? 1 : size);
          if (reduced) {
            count *= size;
            continue;
          }
          permutation.push_back(d);
          kept.push_back(size);
        }
        SmallVector<int64_t> resultShape = keepdims ? keptDims : kept;
        if (count == 0) {
          auto resultType = RankedTensorType::get(resultShape, type);
          Attribute one =
              isa<FloatType>(type)
                  ? Attribute(imp.getBuilder().getFloatAttr(type, 1.0))
                  : Attribute(imp.getBuilder().getIntegerAttr(type, 1));
          return imp.createConstant(DenseElementsAttr::get(resultType, one));
        }
        // A constant (a shape's element count, as exports compute it)
        // folds here: the product op chain below would not. Parameters do
        // not: they train.
        DenseElementsAttr value;
        if (matchPattern(x, m_Constant(&value)))
          return imp.createConstant(foldProduct(
              value, axes, RankedTensorType::get(resultShape, type)));
        permutation.append(axes.begin(), axes.end());
        Value moved = x;
        if (!llvm::equal(permutation, llvm::seq<int64_t>(0, shape.size())))
          moved = imp.createInferred<TransposeOp>(
              x, imp.getBuilder().getDenseI64ArrayAttr(permutation));
        SmallVector<int64_t> flat(kept);
        flat.push_back(count);
        Value product = productOfLastDim(
            imp, moved ? imp.createReshape(moved, flat) : Value());
        return product ? imp.createReshape(product, resultShape) : Value();
      });
}

/// ArgMax / ArgMin: the first (or, with select_last_index, the last)
/// position of the extreme along `axis`, from a reduce_max and a comparison:
/// positions that hold the extreme keep their index, the others an index
/// past the end (or -1), and a reduction picks the first (last). A NaN is
/// the extreme wherever one is (as in numpy and PyTorch).
static LogicalResult importArgExtreme(NodeImporter &imp, bool isMax) {
  Expr e(imp);
  Value x = imp.getInput(0, "data");
  if (!x)
    return failure();
  Type type = getElementType(x);
  if (type.isUnsignedInteger() || type.isInteger(1))
    return imp.emitError(Twine(isMax ? "ArgMax" : "ArgMin") + " of " +
                         formatType(type) + " is not supported");
  int64_t rank = getRank(x);
  int64_t axisAttr = imp.getIntAttr("axis", 0);
  std::optional<int64_t> axis = normalizeAxis(axisAttr, rank);
  if (!axis)
    return imp.emitError("attribute 'axis' = " + Twine(axisAttr) +
                         " is out of range for " + formatType(x.getType()));
  bool keepdims = imp.getIntAttr("keepdims", 1) != 0;
  bool last = imp.getIntAttr("select_last_index", 0) != 0;
  int64_t n = getShape(x)[*axis];
  if (n == 0)
    return imp.emitError("axis " + Twine(*axis) + " of " +
                         formatType(x.getType()) +
                         " is empty: there is no extreme to point at");
  Reducer r{imp, ArrayRef<int64_t>(*axis)};
  Value v = isMax ? x : e.unary<NegOp>(x);
  Value extreme = r.max(v, /*keepdims=*/true);
  Value hit = e.binary<EqualOp>(v, extreme);
  if (isa<FloatType>(type))
    hit = e.binary<OrOp>(hit, e.unary<NotOp>(e.binary<EqualOp>(v, v)));
  SmallVector<int64_t> positionShape(rank, 1);
  positionShape[*axis] = n;
  SmallVector<int64_t> positions;
  for (int64_t i = 0; i < n; ++i)
    positions.push_back(last ? i : -i);
  auto i64 = imp.getBuilder().getI64Type();
  Value index = imp.createConstant(DenseElementsAttr::get(
      RankedTensorType::get(positionShape, i64), ArrayRef(positions)));
  // Largest of i (last) or of -i (first), the misses at -1 or -n.
  Value miss = imp.createScalar(i64, last ? -1 : -n);
  Value picked = r.max(e.select(hit, index, miss), keepdims);
  if (!last)
    picked = e.unary<NegOp>(picked);
  if (!picked)
    return failure();
  imp.setOutput(0, picked);
  return success();
}

LogicalResult onnx_import::importArgMax(NodeImporter &imp) {
  return importArgExtreme(imp, /*isMax=*/true);
}
LogicalResult onnx_import::importArgMin(NodeImporter &imp) {
  return importArgExtreme(imp, /*isMax=*/false);
}

/// TopK: weft.topk, K a constant (the shapes are static). The results are
/// always sorted, which `sorted = 0` allows.
LogicalResult onnx_import::importTopK(NodeImporter &imp) {
  Value x = imp.getInput(0, "X");
  if (!x)
    return failure();
  Type type = getElementType(x);
  if (type.isInteger(1) || type.isUnsignedInteger())
    return imp.emitError("TopK of " + formatType(type) + " is not supported");
  std::optional<SmallVector<int64_t>> k = imp.getConstantInts(1, "K");
  if (!k)
    return failure();
  std::optional<int64_t> axis = imp.getAxisAttr(x, -1);
  if (!axis)
    return failure();
  int64_t extent = getShape(x)[*axis];
  if (k->size() != 1 || (*k)[0] < 0 || (*k)[0] > extent)
    return imp.emitError("input 'K' = " + formatShape(*k) +
                         " must be one number in [0, " + Twine(extent) +
                         "], the extent of axis " + Twine(*axis) + " of " +
                         formatType(x.getType()));
  SmallVector<int64_t> shape(getShape(x));
  shape[*axis] = (*k)[0];
  OpBuilder &b = imp.getBuilder();
  SmallVector<Type> types = {getTensorType(x).clone(shape),
                             RankedTensorType::get(shape, b.getI64Type())};
  SmallVector<Value> results = imp.createMulti<TopKOp>(
      types, x, b.getI64IntegerAttr((*k)[0]), b.getI64IntegerAttr(*axis),
      b.getBoolAttr(imp.getIntAttr("largest", 1) != 0));
  if (results.empty())
    return failure();
  imp.setOutput(0, results[0]);
  imp.setOutput(1, results[1]);
  return success();
}

/// Input `i` (named `what`) of a node that takes float tensors only.
static Value getFloatTensor(NodeImporter &imp, unsigned i, StringRef what) {
  Value x = imp.getInput(i, what);
  if (x && !isa<FloatType>(getElementType(x))) {
    (void)imp.emitError("input " + what + " has element type " +
                        formatType(getElementType(x)) + "; " + imp.getOpType() +
                        " takes float tensors");
    return {};
  }
  return x;
}

/// LRN: x / (bias + alpha / size * s)^beta, s the sum of squares over a
/// window of `size` channels around each (floor((size-1)/2) before,
/// ceil((size-1)/2) after, zeros beyond the ends). The window sum is an
/// average pool (padding counted) times `size`, over x^2 seen as
/// [N, 1, C, rest], so the pool's kernels and gradient serve.
LogicalResult onnx_import::importLRN(NodeImporter &imp) {
  Expr e(imp);
  Value x = getFloatTensor(imp, 0, "X");
  if (!x)
    return failure();
  ArrayRef<int64_t> shape = getShape(x);
  if (shape.size() < 2)
    return imp.emitError("input X (" + formatType(x.getType()) +
                         ") needs a channel dimension (N, C, D...)");
  if (!imp.hasAttr("size"))
    return imp.emitError("missing required attribute 'size'");
  int64_t size = imp.getIntAttr("size", 1);
  double alpha = imp.getFloatAttr("alpha", 1e-4);
  double beta = imp.getFloatAttr("beta", 0.75);
  double bias = imp.getFloatAttr("bias", 1.0);
  if (imp.hasError())
    return failure();
  if (size < 1)
    return imp.emitUnsupportedAttr("size", Twine(size), "it must be positive");
  int64_t rest = 1;
  for (int64_t d : shape.drop_front(2))
    rest *= d;
  OpBuilder &b = imp.getBuilder();
  Value squares = imp.createReshape(e.mul(x, x), {shape[0], 1, shape[1], rest});
  Value mean =
      squares ? imp.createInferred<AvgPoolOp>(
                    squares, b.getDenseI64ArrayAttr({size, 1}),
                    b.getDenseI64ArrayAttr({1, 1}),
                    b.getDenseI64ArrayAttr({(size - 1) / 2, 0, size / 2, 0}),
                    b.getBoolAttr(false), b.getBoolAttr(true))
              : Value();
  // mean * size * alpha / size = mean * alpha.
  Value base =
      mean ? e.addScalar(e.mulScalar(imp.createReshape(mean, shape), alpha),
                         bias)
           : Value();
  return imp.setResult(
      e.div(x, e.binary<PowOp>(base, base ? e.scalar(base, beta) : Value())));
}

/// LpNormalization: x / ||x||_p along `axis` (p 1 or 2; no epsilon, as the
/// ONNX reference).
LogicalResult onnx_import::importLpNormalization(NodeImporter &imp) {
  Expr e(imp);
  Value x = getFloatTensor(imp, 0, "input");
  if (!x)
    return failure();
  std::optional<int64_t> axis = imp.getAxisAttr(x, -1);
  int64_t p = imp.getIntAttr("p", 2);
  if (!axis || imp.hasError())
    return failure();
  if (p != 1 && p != 2)
    return imp.emitUnsupportedAttr("p", Twine(p), "ONNX defines p = 1 and 2");
  const int64_t axes[] = {*axis};
  Reducer r{imp, axes};
  Value norm = p == 1 ? r.sum(e.abs(x), /*keepdims=*/true)
                      : e.unary<SqrtOp>(r.sum(e.mul(x, x), /*keepdims=*/true));
  return imp.setResult(e.div(x, norm));
}

/// MeanVarianceNormalization over `axes` (default 0, 2, 3), as ONNX's
/// function body: (x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9).
LogicalResult onnx_import::importMeanVarianceNormalization(NodeImporter &imp) {
  Expr e(imp);
  Value x = getFloatTensor(imp, 0, "X");
  if (!x)
    return failure();
  std::optional<SmallVector<int64_t>> axes = normalizeAxes(
      imp, imp.getIntsAttr("axes", {0, 2, 3}), getRank(x), "attribute 'axes'");
  if (!axes || imp.hasError())
    return failure();
  OpBuilder &b = imp.getBuilder();
  auto mean = [&](Value v) {
    return v ? imp.createInferred<ReduceMeanOp>(
                   v, b.getDenseI64ArrayAttr(*axes), b.getBoolAttr(true))
             : Value();
  };
  Value m = mean(x);
  Value variance = e.sub(mean(e.mul(x, x)), e.mul(m, m));
  Value deviation = e.addScalar(e.unary<SqrtOp>(variance), 1e-9);
  return imp.setResult(e.div(e.sub(x, m), deviation));
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
