//===- ImportRearrange.cpp - Ops that move or mark elements ---------------===//
//
// DepthToSpace and SpaceToDepth (a reshape, a transpose and a reshape),
// CumSum (a scan of shifted sums), OneHot and Hardmax (comparisons with a
// constant column of positions), EyeLike (a constant), all built from weft
// ops so autodiff, sharding and both backends' kernels apply unchanged.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/ImportExpr.h"
#include "frontends/onnx/OpImporters.h"

#include "dialects/weft/ShapeRules.h"
#include "dialects/weft/WeftOps.h"

using namespace mlir;
using namespace weft;
using namespace weft::onnx_import;

namespace {

/// reshape(x, before), transposed by `perm`, reshaped to `after`.
Value shuffle(NodeImporter &imp, Value x, ArrayRef<int64_t> before,
              ArrayRef<int64_t> perm, ArrayRef<int64_t> after) {
  Value r = imp.createReshape(x, before);
  if (!r)
    return {};
  Value t = imp.createInferred<TransposeOp>(
      r, imp.getBuilder().getDenseI64ArrayAttr(perm));
  return t ? imp.createReshape(t, after) : Value();
}

/// The NCHW input and blocksize of DepthToSpace / SpaceToDepth.
FailureOr<std::pair<Value, int64_t>> blockInput(NodeImporter &imp) {
  Value x = imp.getInput(0, "input");
  if (!x)
    return failure();
  if (getRank(x) != 4)
    return imp.emitError("input (" + formatType(x.getType()) +
                         ") must be 4-D (N, C, H, W)");
  if (!imp.hasAttr("blocksize"))
    return imp.emitError("missing required attribute 'blocksize'");
  int64_t b = imp.getIntAttr("blocksize", 1);
  if (b < 1)
    return imp.emitError("attribute 'blocksize' = " + Twine(b) +
                         " must be positive");
  return std::make_pair(x, b);
}

/// A constant of `shape` holding 0, 1, ... along `axis` (1 elsewhere in
/// the shape), i64.
Value positionsAlong(NodeImporter &imp, int64_t rank, int64_t axis, int64_t n) {
  SmallVector<int64_t> shape(rank, 1);
  shape[axis] = n;
  SmallVector<int64_t> values(n);
  for (int64_t i = 0; i < n; ++i)
    values[i] = i;
  return imp.createConstant(DenseElementsAttr::get(
      RankedTensorType::get(shape, imp.getBuilder().getI64Type()),
      ArrayRef<int64_t>(values)));
}

} // namespace

/// DepthToSpace: DCR (default) takes the blocks from the outer channels,
/// CRD from the inner ones.
LogicalResult onnx_import::importDepthToSpace(NodeImporter &imp) {
  FailureOr<std::pair<Value, int64_t>> in = blockInput(imp);
  if (failed(in))
    return failure();
  auto [x, b] = *in;
  ArrayRef<int64_t> s = getShape(x);
  const int64_t n = s[0], c = s[1], h = s[2], w = s[3];
  if (c % (b * b) != 0)
    return imp.emitError("channels (" + Twine(c) +
                         ") are not a multiple of blocksize^2 (" +
                         Twine(b * b) + ")");
  std::string mode = imp.getStringAttr("mode", "DCR");
  const int64_t d = c / (b * b);
  SmallVector<int64_t> after = {n, d, h * b, w * b};
  if (mode == "DCR")
    return imp.setResult(
        shuffle(imp, x, {n, b, b, d, h, w}, {0, 3, 4, 1, 5, 2}, after));
  if (mode == "CRD")
    return imp.setResult(
        shuffle(imp, x, {n, d, b, b, h, w}, {0, 1, 4, 2, 5, 3}, after));
  return imp.emitUnsupportedAttr("mode", "'" + mode + "'",
                                 "ONNX defines DCR and CRD");
}

LogicalResult onnx_import::importSpaceToDepth(NodeImporter &imp) {
  FailureOr<std::pair<Value, int64_t>> in = blockInput(imp);
  if (failed(in))
    return failure();
  auto [x, b] = *in;
  ArrayRef<int64_t> s = getShape(x);
  const int64_t n = s[0], c = s[1], h = s[2], w = s[3];
  if (h % b != 0 || w % b != 0)
    return imp.emitError("height and width (" + Twine(h) + ", " + Twine(w) +
                         ") are not multiples of blocksize " + Twine(b));
  return imp.setResult(shuffle(imp, x, {n, c, h / b, b, w / b, b},
                               {0, 3, 5, 1, 2, 4},
                               {n, c * b * b, h / b, w / b}));
}

/// CumSum along a constant axis: log2(n) rounds of x + x shifted by 1, 2,
/// 4, ... along the axis (exact for integers; floats sum in a tree order).
/// reverse runs on the axis reversed (a gather); exclusive shifts the
/// inclusive sums by one.
/// The running sums of `x` along `axis` (Hillis-Steele: log2(n) shifted
/// adds), excluding each element itself when `exclusive`, from the end when
/// `reverse`.
Value onnx_import::buildCumSum(NodeImporter &imp, Value x, int64_t axis,
                               bool exclusive, bool reverse) {
  Expr e(imp);
  int64_t rank = getRank(x);
  auto type = getTensorType(x);
  const int64_t n = type.getDimSize(axis);
  OpBuilder &b = imp.getBuilder();
  auto axisAttr = b.getI64IntegerAttr(axis);
  SmallVector<int64_t> flipped;
  for (int64_t i = n - 1; i >= 0; --i)
    flipped.push_back(i);
  Value flip = imp.createConstant(DenseElementsAttr::get(
      RankedTensorType::get({n}, b.getI64Type()), ArrayRef<int64_t>(flipped)));
  auto reversed = [&](Value v) {
    return v ? imp.createInferred<GatherOp>(v, flip, axisAttr) : Value();
  };
  // v shifted by `s` along the axis: s zeros, then v's first n - s.
  auto shifted = [&](Value v, int64_t s) -> Value {
    if (!v)
      return {};
    SmallVector<int64_t> zeroShape(type.getShape()), keptShape(type.getShape());
    zeroShape[axis] = s;
    keptShape[axis] = n - s;
    auto zeroType = type.clone(zeroShape);
    Value zeros = imp.createConstant(
        DenseElementsAttr::get(zeroType, b.getZeroAttr(type.getElementType())));
    Value kept = imp.create<SliceOp>(
        type.clone(keptShape), v,
        b.getDenseI64ArrayAttr(SmallVector<int64_t>(rank, 0)),
        b.getDenseI64ArrayAttr(SmallVector<int64_t>(rank, 1)));
    return kept && zeros
               ? imp.createInferred<ConcatOp>(ValueRange{zeros, kept}, axisAttr)
               : Value();
  };
  Value sum = reverse ? reversed(x) : x;
  for (int64_t s = 1; s < n; s *= 2)
    sum = e.add(sum, shifted(sum, s));
  if (exclusive && n > 0)
    sum = shifted(sum, 1);
  return reverse ? reversed(sum) : sum;
}

LogicalResult onnx_import::importCumSum(NodeImporter &imp) {
  Value x = imp.getNumberInput(0, "x");
  if (!x)
    return failure();
  std::optional<SmallVector<int64_t>> axisValue =
      imp.getConstantInts(1, "axis");
  if (!axisValue)
    return failure();
  int64_t rank = getRank(x);
  if (axisValue->size() != 1)
    return imp.emitError("input 'axis' must hold one value, not " +
                         formatShape(*axisValue));
  std::optional<int64_t> axis = normalizeAxis((*axisValue)[0], rank);
  if (!axis)
    return imp.emitError("axis " + Twine((*axisValue)[0]) +
                         " is out of range for " + formatType(x.getType()));
  return imp.setResult(buildCumSum(imp, x, *axis,
                                   imp.getIntAttr("exclusive", 0) != 0,
                                   imp.getIntAttr("reverse", 0) != 0));
}

/// OneHot: values[1] where the (non-negative, or counted from the end)
/// index equals the position along the new axis, values[0] elsewhere; an
/// index outside [-depth, depth) marks nothing.
LogicalResult onnx_import::importOneHot(NodeImporter &imp) {
  Expr e(imp);
  Value indices = imp.getInput(0, "indices");
  Value values = imp.getInput(2, "values");
  if (!indices || !values)
    return failure();
  std::optional<DenseElementsAttr> depthValue =
      imp.getConstantInput(1, "depth");
  if (!depthValue)
    return failure();
  if (depthValue->getNumElements() != 1)
    return imp.emitError("input 'depth' must hold one value");
  int64_t depth =
      isa<FloatType>(depthValue->getElementType())
          ? static_cast<int64_t>(
                (*depthValue->getValues<APFloat>().begin()).convertToDouble())
          : (*depthValue->getValues<APInt>().begin()).getSExtValue();
  if (depth < 1)
    return imp.emitError("depth " + Twine(depth) + " must be positive");
  if (getTensorType(values).getNumElements() != 2)
    return imp.emitError("input 'values' (" + formatType(values.getType()) +
                         ") must hold [off, on]");
  const int64_t rank = getRank(indices) + 1;
  int64_t axisAttr = imp.getIntAttr("axis", -1);
  std::optional<int64_t> axis = normalizeAxis(axisAttr, rank);
  if (!axis)
    return imp.emitError("attribute 'axis' = " + Twine(axisAttr) +
                         " is out of range for rank " + Twine(rank));
  OpBuilder &b = imp.getBuilder();
  Type i64 = b.getI64Type();
  Value index = imp.createCast(indices, i64);
  index = e.select(e.less(index, imp.createScalar(i64, 0)),
                   e.addScalar(index, static_cast<double>(depth)), index);
  SmallVector<int64_t> unsqueezed(getShape(indices));
  unsqueezed.insert(unsqueezed.begin() + *axis, 1);
  Value hit = e.binary<EqualOp>(imp.createReshape(index, unsqueezed),
                                positionsAlong(imp, rank, *axis, depth));
  Value flat = imp.createReshape(values, {2});
  auto pick = [&](int64_t i) {
    Value one = imp.createInferred<GatherOp>(
        flat,
        imp.createConstant(DenseElementsAttr::get(
            RankedTensorType::get({}, i64), ArrayRef<int64_t>{i})),
        b.getI64IntegerAttr(0));
    return one;
  };
  return imp.setResult(e.select(hit, pick(1), pick(0)));
}

/// Hardmax: 1 at the first maximum along the axis (opset 13: one axis,
/// default -1), 0 elsewhere; a NaN is the maximum wherever one is.
LogicalResult onnx_import::importHardmax(NodeImporter &imp) {
  Expr e(imp);
  Value x = imp.getInput(0, "input");
  if (!x)
    return failure();
  if (!isa<FloatType>(getElementType(x)))
    return imp.emitError("Hardmax takes floats, not " +
                         formatType(getElementType(x)));
  int64_t rank = getRank(x);
  std::optional<int64_t> axis = imp.getAxisAttr(x, -1);
  if (!axis)
    return failure();
  OpBuilder &b = imp.getBuilder();
  const int64_t n = getShape(x)[*axis];
  auto axes = b.getDenseI64ArrayAttr({*axis});
  Value top = imp.createInferred<ReduceMaxOp>(x, axes, b.getBoolAttr(true));
  Value hit = e.binary<OrOp>(e.binary<EqualOp>(x, top),
                             e.unary<NotOp>(e.binary<EqualOp>(x, x)));
  // The first hit: the largest of -position over the hits.
  Type i64 = b.getI64Type();
  Value position = positionsAlong(imp, rank, *axis, n);
  Value negated = e.select(hit, e.unary<NegOp>(position),
                           imp.createScalar(i64, static_cast<double>(-n)));
  Value first =
      imp.createInferred<ReduceMaxOp>(negated, axes, b.getBoolAttr(true));
  Value isFirst = e.binary<EqualOp>(e.unary<NegOp>(position), first);
  return imp.setResult(imp.createCast(isFirst, getElementType(x)));
}

/// EyeLike: a constant of the input's 2-D shape with ones on diagonal k,
/// of `dtype` (default: the input's element type).
LogicalResult onnx_import::importEyeLike(NodeImporter &imp) {
  Value x = imp.getInput(0, "input");
  if (!x)
    return failure();
  if (getRank(x) != 2)
    return imp.emitError("input (" + formatType(x.getType()) + ") must be 2-D");
  Type element = getElementType(x);
  if (imp.hasAttr("dtype") && !(element = imp.getElementTypeAttr("dtype")))
    return failure();
  int64_t k = imp.getIntAttr("k", 0);
  ArrayRef<int64_t> shape = getShape(x);
  auto type = RankedTensorType::get(shape, element);
  OpBuilder &b = imp.getBuilder();
  SmallVector<Attribute> elements;
  for (int64_t i = 0; i < shape[0]; ++i)
    for (int64_t j = 0; j < shape[1]; ++j)
      elements.push_back(j - i == k ? b.getOneAttr(element)
                                    : b.getZeroAttr(element));
  return imp.setResult(
      imp.createConstant(DenseElementsAttr::get(type, elements)));
}
