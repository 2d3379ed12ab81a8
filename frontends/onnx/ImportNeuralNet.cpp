//===- ImportNeuralNet.cpp - Softmax, losses, reductions, LRN ------------===//
//
// Axes are made non-negative here (weft ops take normalized axes only), and
// ONNX's optional extras are mapped (SoftmaxCrossEntropyLoss's log_prob
// becomes a weft.log_softmax). The batch, layer, instance and group
// normalizations are in ImportNormalization.cpp.
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
