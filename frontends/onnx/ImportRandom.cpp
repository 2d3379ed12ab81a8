//===- ImportRandom.cpp - RandomNormal/Uniform(Like), Bernoulli -----------===//
//
// ONNX's random generators (and Multinomial's draws) become weft.random
// (runtime/kernels/cpu/
// RandomDraw.h): each element's number is a function of the seed, the
// node's stream (random ops and dropouts in node order share one count), the
// training step and the element's position in the whole tensor, so every
// plan draws the single-device numbers and a resumed run the same ones as an
// uninterrupted run. A training step's import reads the step counter (new
// numbers every step); an inference import draws step 0's every run.
// ONNX's `seed` is a float: its bit pattern keys the generator (0 without
// one; nodes still differ by their streams).
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/ImportExpr.h"
#include "frontends/onnx/OpImporters.h"

#include "dialects/weft/WeftOps.h"

#include <cstring>

using namespace mlir;
using namespace weft;
using namespace weft::onnx_import;

/// The generator's key: the bits of the f32 `seed` attribute, 0 without one.
static int64_t seedOf(NodeImporter &imp) {
  if (!imp.hasAttr("seed"))
    return 0;
  float seed = static_cast<float>(imp.getFloatAttr("seed", 0.0));
  uint32_t bits;
  std::memcpy(&bits, &seed, sizeof(bits));
  return bits;
}

/// A weft.random of `type`'s shape and element type, drawn against `like`
/// (a tensor of that shape; only its shape is read).
static Value createRandom(NodeImporter &imp, RankedTensorType type, Value like,
                          StringRef distribution, double a, double b) {
  if (!isa<FloatType>(type.getElementType())) {
    (void)imp.emitError("the output's element type " +
                        formatType(type.getElementType()) +
                        " is not a float type");
    return {};
  }
  OpBuilder &builder = imp.getBuilder();
  Value step = imp.getDrawStep();
  auto offsetsType =
      RankedTensorType::get({type.getRank()}, builder.getI64Type());
  Value offsets = imp.createConstant(
      DenseElementsAttr::get(offsetsType, builder.getI64IntegerAttr(0)));
  if (!step || !offsets || !like)
    return {};
  return imp.create<RandomOp>(
      type, like, step, offsets, builder.getStringAttr(distribution),
      builder.getF64FloatAttr(a), builder.getF64FloatAttr(b),
      builder.getI64IntegerAttr(seedOf(imp)),
      builder.getI64IntegerAttr(imp.takeDropoutStream()),
      builder.getDenseI64ArrayAttr(type.getShape()));
}

/// RandomNormal / RandomUniform: the `shape` attribute's tensor of `dtype`
/// (default float); a bool splat of that shape stands in for `like`.
static LogicalResult importRandomOfShape(NodeImporter &imp,
                                         StringRef distribution, double a,
                                         double b) {
  if (!imp.hasAttr("shape"))
    return imp.emitError("missing required attribute 'shape'");
  SmallVector<int64_t> shape = imp.getIntsAttr("shape");
  if (llvm::any_of(shape, [](int64_t d) { return d < 0; }))
    return imp.emitError("attribute 'shape' = " + formatShape(shape) +
                         " holds a negative dim");
  Type elementType = imp.hasAttr("dtype") ? imp.getElementTypeAttr("dtype")
                                          : Type(imp.getBuilder().getF32Type());
  if (!elementType || imp.hasError())
    return failure();
  auto likeType = RankedTensorType::get(shape, imp.getBuilder().getI1Type());
  Value like = imp.createConstant(DenseElementsAttr::get(likeType, false));
  return imp.setResult(createRandom(imp,
                                    RankedTensorType::get(shape, elementType),
                                    like, distribution, a, b));
}

/// RandomNormalLike / RandomUniformLike: the input's shape, `dtype` or else
/// the input's element type.
static LogicalResult importRandomLike(NodeImporter &imp, StringRef distribution,
                                      double a, double b) {
  Value like = imp.getInput(0, "input");
  if (!like)
    return failure();
  Type elementType = imp.hasAttr("dtype") ? imp.getElementTypeAttr("dtype")
                                          : getElementType(like);
  if (!elementType || imp.hasError())
    return failure();
  return imp.setResult(createRandom(imp, getTensorType(like).clone(elementType),
                                    like, distribution, a, b));
}

LogicalResult onnx_import::importRandomNormal(NodeImporter &imp) {
  return importRandomOfShape(imp, "normal", imp.getFloatAttr("mean", 0.0),
                             imp.getFloatAttr("scale", 1.0));
}

LogicalResult onnx_import::importRandomUniform(NodeImporter &imp) {
  return importRandomOfShape(imp, "uniform", imp.getFloatAttr("low", 0.0),
                             imp.getFloatAttr("high", 1.0));
}

LogicalResult onnx_import::importRandomNormalLike(NodeImporter &imp) {
  return importRandomLike(imp, "normal", imp.getFloatAttr("mean", 0.0),
                          imp.getFloatAttr("scale", 1.0));
}

LogicalResult onnx_import::importRandomUniformLike(NodeImporter &imp) {
  return importRandomLike(imp, "uniform", imp.getFloatAttr("low", 0.0),
                          imp.getFloatAttr("high", 1.0));
}

/// Bernoulli: 1 where a uniform draw in [0, 1) is below the input's
/// probability, in `dtype` (default the input's type).
LogicalResult onnx_import::importBernoulli(NodeImporter &imp) {
  Expr e(imp);
  Value p = imp.getInput(0, "input");
  if (!p)
    return failure();
  RankedTensorType type = getTensorType(p);
  if (!isa<FloatType>(type.getElementType()))
    return imp.emitError("input (" + formatType(type) +
                         ") must hold float probabilities");
  Type elementType = imp.hasAttr("dtype") ? imp.getElementTypeAttr("dtype")
                                          : type.getElementType();
  if (!elementType || imp.hasError())
    return failure();
  Value u = createRandom(imp, type, p, "uniform", 0.0, 1.0);
  Value hit = e.less(u, p);
  return imp.setResult(hit ? imp.createCast(hit, elementType) : Value());
}

/// Multinomial: `sample_size` class indices per row of unnormalized log
/// probabilities [batch_size, class_size], by inverse transform sampling:
/// with c the running sum of softmax(input) along the classes, a uniform
/// draw u in [0, 1) picks the number of classes whose c lies below u (at
/// most class_size - 1, where rounding leaves the last sum under u). Counted
/// in f32: exact below 2^24 classes.
LogicalResult onnx_import::importMultinomial(NodeImporter &imp) {
  Expr e(imp);
  OpBuilder &b = imp.getBuilder();
  Value x = imp.getInput(0, "input");
  if (!x)
    return failure();
  RankedTensorType type = getTensorType(x);
  if (type.getRank() != 2 || !isa<FloatType>(type.getElementType()))
    return imp.emitError("input (" + formatType(type) +
                         ") must be float [batch_size, class_size]");
  int64_t samples = imp.getIntAttr("sample_size", 1);
  if (samples < 1)
    return imp.emitUnsupportedAttr("sample_size", Twine(samples),
                                   "it must be positive");
  Type outType = imp.hasAttr("dtype") ? imp.getElementTypeAttr("dtype")
                                      : Type(b.getI32Type());
  if (!outType || imp.hasError())
    return failure();
  if (!outType.isInteger(32) && !outType.isInteger(64))
    return imp.emitError("attribute 'dtype' must be int32 or int64, not " +
                         formatType(outType));
  int64_t batch = type.getDimSize(0), classes = type.getDimSize(1);
  if (classes < 1 || classes >= (int64_t(1) << 24))
    return imp.emitError("input (" + formatType(type) +
                         ") must have between 1 and 2^24 - 1 classes");
  Value p = imp.create<SoftmaxOp>(type, x, b.getI64IntegerAttr(1));
  Value running = p ? buildCumSum(imp, p, 1, false, false) : Value();
  auto drawShape = SmallVector<int64_t>{batch, samples};
  Value like = imp.createConstant(DenseElementsAttr::get(
      RankedTensorType::get(drawShape, b.getI1Type()), false));
  Value u = createRandom(imp, type.clone(drawShape), like, "uniform", 0.0, 1.0);
  if (!running || !u)
    return failure();
  Value below = e.less(imp.createReshape(running, {batch, 1, classes}),
                       imp.createReshape(u, {batch, samples, 1}));
  Value count = imp.createInferred<ReduceSumOp>(
      imp.createCast(below, b.getF32Type()), b.getDenseI64ArrayAttr({2}),
      b.getBoolAttr(false));
  Value index = e.min(count, e.scalar(count, static_cast<double>(classes - 1)));
  return imp.setResult(index ? imp.createCast(index, outType) : Value());
}
