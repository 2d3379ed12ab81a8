//===- ImportElements.cpp - GatherElements and ScatterElements ------------===//
//
// Both index single elements: indices has data's rank, and each index
// replaces the coordinate along `axis` of its own position. weft builds
// them on the flattened data: each index becomes a flat position (a
// constant offset for the other coordinates plus index * the axis'
// stride), which one weft.gather (or weft.scatter_add) along the only dim
// of the flattened data reads (or writes). So autodiff, sharding and both
// backends' kernels apply unchanged.
//
// An index outside [-extent, extent) of its axis is an error, as in ONNX:
// its flat position is moved past the flattened data, where the gather
// kernels stop the run with "index out of range".
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

/// The operands both ops share, checked: data, indices (data's rank, no
/// larger than data outside the axis) and the axis.
struct ElementIndexing {
  Value data, indices;
  int64_t axis = 0;
};

/// Inputs 0 ("data") and 1 ("indices", int32 or int64) of the gathers and
/// scatters.
LogicalResult readDataAndIndices(NodeImporter &imp, Value &data,
                                 Value &indices) {
  data = imp.getInput(0, "data");
  indices = imp.getInput(1, "indices");
  if (!data || !indices)
    return failure();
  Type element = getElementType(indices);
  if (!element.isInteger(64) && !element.isInteger(32))
    return imp.emitError("indices must be int32 or int64, not " +
                         formatType(indices.getType()));
  return success();
}

FailureOr<ElementIndexing> readIndexing(NodeImporter &imp, StringRef op) {
  ElementIndexing ix;
  if (failed(readDataAndIndices(imp, ix.data, ix.indices)))
    return failure();
  ArrayRef<int64_t> dataShape = getShape(ix.data);
  ArrayRef<int64_t> indexShape = getShape(ix.indices);
  int64_t rank = static_cast<int64_t>(dataShape.size());
  std::optional<int64_t> axis = imp.getAxisAttr(ix.data, 0);
  if (!axis)
    return failure();
  ix.axis = *axis;
  bool fits = static_cast<int64_t>(indexShape.size()) == rank;
  for (int64_t d = 0; fits && d < rank; ++d)
    fits = d == *axis || indexShape[d] <= dataShape[d];
  if (!fits)
    return imp.emitError(
        Twine(op) + ": indices (" + formatType(ix.indices.getType()) +
        ") must have the rank of data (" + formatType(ix.data.getType()) +
        ") and no larger dims outside axis " + Twine(*axis));
  if (std::optional<DenseElementsAttr> values = imp.matchConstant(ix.indices)) {
    int64_t extent = dataShape[*axis];
    for (const APInt &v : values->getValues<APInt>()) {
      int64_t index = v.getSExtValue();
      if (index < -extent || index >= extent)
        return imp.emitError("index " + Twine(index) +
                             " is out of range for axis " + Twine(*axis) +
                             " of " + formatType(ix.data.getType()));
    }
  }
  return ix;
}

/// The flat position in data of every index (indices' shape, i64); an
/// index out of range gets data's element count (past the end).
Value flatPositions(NodeImporter &imp, const ElementIndexing &ix) {
  Expr e(imp);
  ArrayRef<int64_t> dataShape = getShape(ix.data);
  ArrayRef<int64_t> indexShape = getShape(ix.indices);
  const int64_t rank = static_cast<int64_t>(dataShape.size());
  SmallVector<int64_t> strides(rank, 1);
  for (int64_t d = rank - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * dataShape[d + 1];
  int64_t count = 1, total = 1;
  for (int64_t d : indexShape)
    count *= d;
  for (int64_t d : dataShape)
    total *= d;
  SmallVector<int64_t> offsets(count, 0);
  for (int64_t i = 0; i < count; ++i) {
    int64_t rest = i;
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (d != ix.axis)
        offsets[i] += (rest % indexShape[d]) * strides[d];
      rest /= indexShape[d];
    }
  }
  Type i64 = imp.getBuilder().getI64Type();
  Value offset = imp.createConstant(DenseElementsAttr::get(
      RankedTensorType::get(indexShape, i64), ArrayRef<int64_t>(offsets)));
  Value index = imp.createCast(ix.indices, i64);
  const int64_t extent = dataShape[ix.axis];
  Value zero = imp.createScalar(i64, 0);
  // Negative indices count from the end.
  index = e.select(e.less(index, zero), e.addScalar(index, extent), index);
  Value valid = e.binary<AndOp>(
      e.unary<NotOp>(e.less(index, zero)),
      e.less(index, imp.createScalar(i64, static_cast<double>(extent))));
  Value flat = e.add(offset, e.mulScalar(index, strides[ix.axis]));
  return e.select(valid, flat,
                  imp.createScalar(i64, static_cast<double>(total)));
}

} // namespace

/// GatherElements: one weft.gather of the flattened data at the flat
/// positions (its gradient is a scatter_add into the flattened data).
LogicalResult onnx_import::importGatherElements(NodeImporter &imp) {
  FailureOr<ElementIndexing> ix = readIndexing(imp, "GatherElements");
  if (failed(ix))
    return failure();
  int64_t total = getTensorType(ix->data).getNumElements();
  Value flatData = imp.createReshape(ix->data, {total});
  Value positions = flatPositions(imp, *ix);
  if (!flatData || !positions)
    return failure();
  return imp.setResult(imp.createInferred<GatherOp>(
      flatData, positions, imp.getBuilder().getI64IntegerAttr(0)));
}

/// Scatters rows: data2 [P, S] with row rows[n] (i64 [count], P or more
/// past the end: an error at run time) set to (none) or increased by (add,
/// f32) updates2[n] ([count, S]). reduction = none: with constant rows the
/// row each one takes (the last update naming it, as the constant ScatterND
/// does) is fixed at import; with computed rows a scatter_add of each
/// update's number + 1, as f32 (exact below 2^24 updates), says which
/// update each row takes, if any. The updates are then gathered from
/// there. ONNX leaves repeated indices undefined under none; computed ones
/// add their numbers up here.
static Value scatterRows(NodeImporter &imp, Value data2, Value rows,
                         Value updates2, StringRef reduction) {
  Expr e(imp);
  if (!data2 || !rows || !updates2)
    return {};
  OpBuilder &b = imp.getBuilder();
  Type f32 = b.getF32Type(), i64 = b.getI64Type();
  auto dataType = getTensorType(data2);
  const int64_t p = dataType.getDimSize(0);
  const int64_t count = getShape(rows)[0];
  auto axis0 = b.getI64IntegerAttr(0);
  if (reduction == "add") {
    Value sums =
        imp.create<ScatterAddOp>(dataType.clone(f32), rows, updates2, axis0);
    return e.add(data2, sums);
  }
  if (count == 0)
    return data2;
  Value taken, from;
  if (std::optional<DenseElementsAttr> fixed = imp.matchConstant(rows)) {
    SmallVector<int64_t> source(p, -1);
    int64_t n = 0;
    for (const APInt &row : fixed->getValues<APInt>()) {
      int64_t r = row.getSExtValue();
      if (r >= 0 && r < p)
        source[r] = n;
      ++n;
    }
    SmallVector<bool> mask;
    SmallVector<int64_t> index;
    for (int64_t s : source) {
      mask.push_back(s >= 0);
      index.push_back(s >= 0 ? s : 0);
    }
    taken = imp.createConstant(DenseElementsAttr::get(
        RankedTensorType::get({p}, b.getI1Type()), ArrayRef<bool>(mask)));
    from = imp.createConstant(DenseElementsAttr::get(
        RankedTensorType::get({p}, i64), ArrayRef<int64_t>(index)));
  } else {
    SmallVector<float> ordinals;
    for (int64_t j = 0; j < count; ++j)
      ordinals.push_back(static_cast<float>(j + 1));
    Value ordinal = imp.createConstant(DenseElementsAttr::get(
        RankedTensorType::get({count}, f32), ArrayRef<float>(ordinals)));
    Value source = imp.create<ScatterAddOp>(RankedTensorType::get({p}, f32),
                                            rows, ordinal, axis0);
    taken = e.greater(source, imp.createScalar(f32, 0.5));
    // Untouched rows read update 0 (and keep data).
    from = e.select(taken, e.addScalar(imp.createCast(source, i64), -1),
                    imp.createScalar(i64, 0));
  }
  Value picked = imp.createInferred<GatherOp>(updates2, from, axis0);
  SmallVector<int64_t> column(dataType.getRank(), 1);
  column[0] = p;
  return e.select(imp.createReshape(taken, column), picked, data2);
}

/// The checks of a scatter's reduction for computed operands: none and add
/// (f32 data).
static LogicalResult checkScatterReduction(NodeImporter &imp,
                                           StringRef reduction, Value data,
                                           int64_t count) {
  if (reduction == "add" && !getElementType(data).isF32())
    return imp.emitUnsupportedAttr("reduction", "'add'",
                                   "weft sums into f32 data only");
  if (reduction != "none" && reduction != "add")
    return imp.emitUnsupportedAttr("reduction", "'" + reduction.str() + "'",
                                   "weft supports none and add");
  constexpr int64_t kExactF32 = int64_t(1) << 24;
  if (reduction == "none" && count >= kExactF32)
    return imp.emitError("a scatter of " + Twine(count) +
                         " updates is not supported (at most " +
                         Twine(kExactF32 - 1) + ")");
  return success();
}

/// A scatter's input 2, 'updates', of data's element type; null after an
/// error.
static Value readUpdates(NodeImporter &imp, Value data) {
  Value updates = imp.getInput(2, "updates");
  if (!updates ||
      failed(imp.checkSameElementType(data, updates, "data", "updates")))
    return {};
  return updates;
}

/// ScatterElements: scatterRows over the flattened data, one element a row.
LogicalResult onnx_import::importScatterElements(NodeImporter &imp) {
  FailureOr<ElementIndexing> ix = readIndexing(imp, "ScatterElements");
  if (failed(ix))
    return failure();
  Value updates = readUpdates(imp, ix->data);
  if (!updates)
    return failure();
  if (getShape(updates) != getShape(ix->indices))
    return imp.emitError("updates (" + formatType(updates.getType()) +
                         ") must have the shape of indices (" +
                         formatType(ix->indices.getType()) + ")");
  std::string reduction = imp.getStringAttr("reduction", "none");
  auto dataType = getTensorType(ix->data);
  const int64_t total = dataType.getNumElements();
  const int64_t count = getTensorType(updates).getNumElements();
  if (failed(checkScatterReduction(imp, reduction, ix->data, count)))
    return failure();
  Value positions = flatPositions(imp, *ix);
  Value rows = positions ? imp.createReshape(positions, {count}) : Value();
  Value result = scatterRows(imp, imp.createReshape(ix->data, {total, 1}), rows,
                             imp.createReshape(updates, {count, 1}), reduction);
  return imp.setResult(result ? imp.createReshape(result, dataType.getShape())
                              : Value());
}

namespace {
/// GatherND's and ScatterND's indices: [..., k] naming rows of data's first
/// batch + k dims, the first `batch` dims of indices running along data's.
struct RowIndexing {
  Value data, indices;
  int64_t batch = 0, k = 0;
  /// Rows (data's first batch + k dims flattened) and each row's elements.
  int64_t rows = 1, rowSize = 1;
  /// indices' shape without its last dim; its element count.
  SmallVector<int64_t> outer;
  int64_t count = 1;
};
} // namespace

static FailureOr<RowIndexing> readRowIndexing(NodeImporter &imp,
                                              int64_t batch) {
  RowIndexing ix;
  if (failed(readDataAndIndices(imp, ix.data, ix.indices)))
    return failure();
  ArrayRef<int64_t> dataShape = getShape(ix.data);
  ArrayRef<int64_t> indexShape = getShape(ix.indices);
  int64_t rank = static_cast<int64_t>(dataShape.size());
  int64_t indexRank = static_cast<int64_t>(indexShape.size());
  ix.batch = batch;
  ix.k = indexShape.empty() ? 0 : indexShape.back();
  bool fits = indexRank >= 1 && batch >= 0 && batch < indexRank && ix.k >= 1 &&
              batch + ix.k <= rank;
  for (int64_t d = 0; fits && d < batch; ++d)
    fits = indexShape[d] == dataShape[d];
  if (!fits)
    return imp.emitError("indices " + formatShape(indexShape) +
                         " do not index data " + formatShape(dataShape) +
                         " with batch_dims " + Twine(batch));
  for (int64_t d = 0; d < batch + ix.k; ++d)
    ix.rows *= dataShape[d];
  for (int64_t d = batch + ix.k; d < rank; ++d)
    ix.rowSize *= dataShape[d];
  ix.outer.assign(indexShape.begin(), indexShape.end() - 1);
  for (int64_t d : ix.outer)
    ix.count *= d;
  return ix;
}

/// The row of data each index tuple names, i64 [count]: the batch dims'
/// offsets (constants), plus each of the k indices (negative ones counted
/// from the end) times its dim's stride; a tuple with an index out of range
/// gets `rows` (past the end: the gather kernels stop the run). Constant
/// indices are checked now and give constant rows.
static Value rowNumbers(NodeImporter &imp, const RowIndexing &ix) {
  Expr e(imp);
  ArrayRef<int64_t> dataShape = getShape(ix.data);
  const int64_t dims = ix.batch + ix.k;
  SmallVector<int64_t> strides(dims, 1);
  for (int64_t d = dims - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * dataShape[d + 1];
  // The batch dims' offset of each tuple.
  SmallVector<int64_t> offsets(ix.count, 0);
  for (int64_t n = 0; n < ix.count; ++n) {
    int64_t rest = n;
    for (int64_t d = static_cast<int64_t>(ix.outer.size()) - 1; d >= 0; --d) {
      if (d < ix.batch)
        offsets[n] += (rest % ix.outer[d]) * strides[d];
      rest /= ix.outer[d];
    }
  }
  Type i64 = imp.getBuilder().getI64Type();
  auto rowsType = RankedTensorType::get({ix.count}, i64);
  if (std::optional<DenseElementsAttr> fixed = imp.matchConstant(ix.indices)) {
    SmallVector<int64_t> values;
    for (const APInt &v : fixed->getValues<APInt>())
      values.push_back(v.getSExtValue());
    SmallVector<int64_t> rows(offsets);
    for (int64_t n = 0; n < ix.count; ++n)
      for (int64_t j = 0; j < ix.k; ++j) {
        int64_t dim = dataShape[ix.batch + j], index = values[n * ix.k + j];
        if (index < -dim || index >= dim) {
          (void)imp.emitError(
              "index " + Twine(index) + " is out of range for dimension " +
              Twine(ix.batch + j) + " of data " + formatShape(dataShape));
          return {};
        }
        rows[n] += (index < 0 ? index + dim : index) * strides[ix.batch + j];
      }
    return imp.createConstant(
        DenseElementsAttr::get(rowsType, ArrayRef<int64_t>(rows)));
  }
  Value tuples =
      imp.createReshape(imp.createCast(ix.indices, i64), {ix.count, ix.k});
  Value row = imp.createConstant(
      DenseElementsAttr::get(rowsType, ArrayRef<int64_t>(offsets)));
  Value valid;
  Value zero = imp.createScalar(i64, 0);
  for (int64_t j = 0; j < ix.k; ++j) {
    const int64_t dim = dataShape[ix.batch + j];
    Value col = imp.createInferred<GatherOp>(
        tuples,
        imp.createConstant(DenseElementsAttr::get(
            RankedTensorType::get({}, i64), ArrayRef<int64_t>{j})),
        imp.getBuilder().getI64IntegerAttr(1));
    col = e.select(e.less(col, zero), e.addScalar(col, dim), col);
    Value inside = e.binary<AndOp>(
        e.unary<NotOp>(e.less(col, zero)),
        e.less(col, imp.createScalar(i64, static_cast<double>(dim))));
    valid = valid ? e.binary<AndOp>(valid, inside) : inside;
    row = e.add(row, e.mulScalar(col, strides[ix.batch + j]));
  }
  return e.select(valid, row,
                  imp.createScalar(i64, static_cast<double>(ix.rows)));
}

/// GatherND: one weft.gather of data seen as [rows, rest...] at each index
/// tuple's row (its gradient: a scatter_add into those rows).
LogicalResult onnx_import::importGatherND(NodeImporter &imp) {
  FailureOr<RowIndexing> ix =
      readRowIndexing(imp, imp.getIntAttr("batch_dims", 0));
  if (failed(ix))
    return failure();
  ArrayRef<int64_t> dataShape = getShape(ix->data);
  SmallVector<int64_t> table = {ix->rows};
  table.append(dataShape.begin() + ix->batch + ix->k, dataShape.end());
  Value rows = rowNumbers(imp, *ix);
  Value data2 = imp.createReshape(ix->data, table);
  if (!rows || !data2)
    return failure();
  Value picked =
      imp.createInferred<GatherOp>(data2, imp.createReshape(rows, ix->outer),
                                   imp.getBuilder().getI64IntegerAttr(0));
  return imp.setResult(picked);
}

/// ScatterND with a computed operand (all-constant ones fold at import,
/// ImportConstants.cpp): scatterRows over data seen as [rows, row size].
LogicalResult onnx_import::importScatterNDComputed(NodeImporter &imp) {
  FailureOr<RowIndexing> ix = readRowIndexing(imp, 0);
  if (failed(ix))
    return failure();
  Value updates = readUpdates(imp, ix->data);
  if (!updates)
    return failure();
  ArrayRef<int64_t> dataShape = getShape(ix->data);
  SmallVector<int64_t> expected(ix->outer);
  expected.append(dataShape.begin() + ix->k, dataShape.end());
  if (getShape(updates) != ArrayRef<int64_t>(expected))
    return imp.emitError("updates " + formatShape(getShape(updates)) +
                         " should have shape " + formatShape(expected));
  std::string reduction = imp.getStringAttr("reduction", "none");
  if (failed(checkScatterReduction(imp, reduction, ix->data, ix->count)))
    return failure();
  Value result = scatterRows(
      imp, imp.createReshape(ix->data, {ix->rows, ix->rowSize}),
      rowNumbers(imp, *ix),
      imp.createReshape(updates, {ix->count, ix->rowSize}), reduction);
  return imp.setResult(result ? imp.createReshape(result, dataShape) : Value());
}

/// NegativeLogLikelihoodLoss: -input[n, target[n, d...], d...] weighted by
/// weight[target] (0 where target is ignore_index), then summed, averaged
/// over the weights (mean) or kept. Over a LogSoftmax along the classes
/// (PyTorch's nll_loss(log_softmax(x))) it is weft.softmax_cross_entropy of
/// the LogSoftmax's input: the same loss and gradients in one kernel.
/// Otherwise the picked elements are a gather of the flattened input.
LogicalResult onnx_import::importNegativeLogLikelihoodLoss(NodeImporter &imp) {
  Expr e(imp);
  Value input = imp.getInput(0, "input");
  Value target = imp.getInput(1, "target");
  Value weight = imp.getOptionalInput(2);
  if (!input || !target)
    return failure();
  ArrayRef<int64_t> shape = getShape(input);
  if (shape.size() < 2 || !isa<FloatType>(getElementType(input)))
    return imp.emitError("input (" + formatType(input.getType()) +
                         ") must be floats with a class dimension (N, C, ...)");
  SmallVector<int64_t> targetShape(shape);
  targetShape.erase(targetShape.begin() + 1);
  Type targetElement = getElementType(target);
  if (getShape(target) != ArrayRef<int64_t>(targetShape) ||
      !(targetElement.isInteger(64) || targetElement.isInteger(32)))
    return imp.emitError("target (" + formatType(target.getType()) +
                         ") must be int32 or int64 of shape " +
                         formatShape(targetShape));
  if (weight && getShape(weight) != ArrayRef<int64_t>{shape[1]})
    return imp.emitError("weight (" + formatType(weight.getType()) +
                         ") must hold one value per class (" + Twine(shape[1]) +
                         ")");
  std::string reduction = imp.getStringAttr("reduction", "mean");
  if (reduction != "mean" && reduction != "sum" && reduction != "none")
    return imp.emitUnsupportedAttr("reduction", "'" + reduction + "'",
                                   "expected mean, sum or none");
  OpBuilder &b = imp.getBuilder();
  IntegerAttr ignoreIndex;
  if (imp.hasAttr("ignore_index"))
    ignoreIndex = b.getI64IntegerAttr(imp.getIntAttr("ignore_index", 0));
  if (auto logSoftmax = input.getDefiningOp<LogSoftmaxOp>();
      logSoftmax && logSoftmax.getAxis() == 1)
    return imp.setResult(imp.createInferred<SoftmaxCrossEntropyOp>(
        logSoftmax.getInput(), target, weight, b.getStringAttr(reduction),
        ignoreIndex, IntegerAttr()));

  Type i64 = b.getI64Type();
  Value classes = imp.createCast(target, i64);
  Value kept;
  if (ignoreIndex) {
    kept = e.unary<NotOp>(e.binary<EqualOp>(
        classes,
        imp.createScalar(i64, static_cast<double>(ignoreIndex.getInt()))));
    classes = e.select(kept, classes, imp.createScalar(i64, 0));
  }
  SmallVector<int64_t> columnShape(shape);
  columnShape[1] = 1;
  ElementIndexing ix;
  ix.data = input;
  ix.indices = imp.createReshape(classes, columnShape);
  ix.axis = 1;
  Value positions = ix.indices ? flatPositions(imp, ix) : Value();
  int64_t total = getTensorType(input).getNumElements();
  Value flatInput = imp.createReshape(input, {total});
  if (!positions || !flatInput)
    return failure();
  Value picked =
      imp.createReshape(imp.createInferred<GatherOp>(flatInput, positions,
                                                     b.getI64IntegerAttr(0)),
                        targetShape);
  Value weights;
  if (weight)
    weights =
        imp.createInferred<GatherOp>(weight, classes, b.getI64IntegerAttr(0));
  if (kept)
    weights = weights ? e.select(kept, weights, e.scalar(weights, 0.0))
                      : imp.createCast(kept, getElementType(input));
  Value loss = e.unary<NegOp>(picked);
  if (weights)
    loss = e.mul(loss, weights);
  if (reduction == "none")
    return imp.setResult(loss);
  SmallVector<int64_t> all;
  for (int64_t d = 0; d < static_cast<int64_t>(targetShape.size()); ++d)
    all.push_back(d);
  auto sumAll = [&](Value v) {
    return v ? imp.createInferred<ReduceSumOp>(v, b.getDenseI64ArrayAttr(all),
                                               b.getBoolAttr(false))
             : Value();
  };
  if (reduction == "sum")
    return imp.setResult(sumAll(loss));
  if (!weights)
    return imp.setResult(imp.createInferred<ReduceMeanOp>(
        loss, b.getDenseI64ArrayAttr(all), b.getBoolAttr(false)));
  return imp.setResult(e.div(sumAll(loss), sumAll(weights)));
}

/// ReverseSequence: along time_axis, the first sequence_lens[b] elements of
/// each batch row b in reverse order, the rest as they are; a weft.gather of
/// the flattened input at flat positions whose time coordinate is
/// t < len ? len - 1 - t : t (folded to constants when the lengths are).
LogicalResult onnx_import::importReverseSequence(NodeImporter &imp) {
  Expr e(imp);
  Value input = imp.getInput(0, "input");
  Value lengths = imp.getInput(1, "sequence_lens");
  if (!input || !lengths)
    return failure();
  int64_t rank = getRank(input);
  if (rank < 2)
    return imp.emitError("input (" + formatType(input.getType()) +
                         ") needs a batch and a time dimension");
  int64_t batchAxis = imp.getIntAttr("batch_axis", 1);
  int64_t timeAxis = imp.getIntAttr("time_axis", 0);
  if (imp.hasError())
    return failure();
  if (!((batchAxis == 0 && timeAxis == 1) || (batchAxis == 1 && timeAxis == 0)))
    return imp.emitError("batch_axis and time_axis must be 0 and 1 (in "
                         "either order), not " +
                         Twine(batchAxis) + " and " + Twine(timeAxis));
  ArrayRef<int64_t> shape = getShape(input);
  if (getShape(lengths) != ArrayRef<int64_t>{shape[batchAxis]} ||
      !isa<IntegerType>(getElementType(lengths)))
    return imp.emitError("input 'sequence_lens' (" +
                         formatType(lengths.getType()) + ") should hold " +
                         Twine(shape[batchAxis]) + " integer lengths");
  OpBuilder &b = imp.getBuilder();
  Type i64 = b.getI64Type();
  // A dim's coordinates, shaped to broadcast along `axis`.
  auto coordinates = [&](int64_t axis, int64_t scale) {
    SmallVector<int64_t> values, dims(rank, 1);
    for (int64_t i = 0; i < shape[axis]; ++i)
      values.push_back(i * scale);
    dims[axis] = shape[axis];
    return imp.createConstant(DenseElementsAttr::get(
        RankedTensorType::get(dims, i64), ArrayRef<int64_t>(values)));
  };
  SmallVector<int64_t> strides(rank, 1);
  for (int64_t d = rank - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  SmallVector<int64_t> lengthDims(rank, 1);
  lengthDims[batchAxis] = shape[batchAxis];
  Value len = imp.createReshape(imp.createCast(lengths, i64), lengthDims);
  Value t = coordinates(timeAxis, 1);
  Value reversed = e.sub(e.sub(len, e.scalar(len, 1.0)), t);
  Value source = e.select(e.less(t, len), reversed, t);
  Value positions = e.mul(source, e.scalar(source, strides[timeAxis]));
  for (int64_t d = 0; d < rank; ++d)
    if (d != timeAxis)
      positions = e.add(positions, coordinates(d, strides[d]));
  int64_t total = 1;
  for (int64_t d : shape)
    total *= d;
  Value flat = imp.createReshape(input, {total});
  if (!positions || !flat)
    return failure();
  return imp.setResult(
      imp.createInferred<GatherOp>(flat, positions, b.getI64IntegerAttr(0)));
}

/// Compress with a condition known at import: a weft.gather of the kept
/// positions along `axis` (of the flattened input without one). A condition
/// shorter than the axis leaves the rest out, as ONNX says.
LogicalResult onnx_import::importCompress(NodeImporter &imp) {
  Value input = imp.getInput(0, "input");
  if (!input)
    return failure();
  std::optional<SmallVector<int64_t>> condition = imp.getConstantInts(
      1, "condition",
      "weft compiles static shapes, so Compress needs its condition at "
      "compile time");
  if (!condition)
    return failure();
  std::optional<int64_t> axis;
  if (imp.hasAttr("axis")) {
    axis = imp.getAxisAttr(input, 0);
    if (!axis)
      return failure();
  } else {
    int64_t total = getTensorType(input).getNumElements();
    input = imp.createReshape(input, {total});
    axis = 0;
  }
  int64_t extent = getShape(input)[*axis];
  if (static_cast<int64_t>(condition->size()) > extent)
    return imp.emitError("input 'condition' holds " + Twine(condition->size()) +
                         " values for " + Twine(extent) + " positions");
  SmallVector<int64_t> kept;
  for (auto [i, c] : llvm::enumerate(*condition))
    if (c)
      kept.push_back(static_cast<int64_t>(i));
  if (kept.empty())
    return imp.emitError("the condition keeps nothing (an empty result is "
                         "not supported)");
  return imp.setResult(Expr(imp).gatherAt(input, *axis, kept));
}

/// MaxUnpool: zeros of the unpooled shape (output_shape, or (in - 1) *
/// stride + kernel - pads per spatial dim) with X's values at the flat
/// positions I gives (MaxPool's Indices: positions in the whole tensor);
/// scatterRows of the flattened tensors.
LogicalResult onnx_import::importMaxUnpool(NodeImporter &imp) {
  Value x = imp.getInput(0, "X");
  Value indices = imp.getInput(1, "I");
  if (!x || !indices)
    return failure();
  if (!isa<FloatType>(getElementType(x)) || getRank(x) < 3)
    return imp.emitError("input X (" + formatType(x.getType()) +
                         ") should be a float N, C, D... tensor");
  if (getShape(indices) != getShape(x) ||
      !isa<IntegerType>(getElementType(indices)))
    return imp.emitError("input I (" + formatType(indices.getType()) +
                         ") should hold integer positions of X's shape");
  const int64_t spatial = getRank(x) - 2;
  if (!imp.hasAttr("kernel_shape"))
    return imp.emitError("missing required attribute 'kernel_shape'");
  SmallVector<int64_t> kernel = imp.getIntsAttr("kernel_shape");
  SmallVector<int64_t> strides =
      imp.getIntsAttr("strides", SmallVector<int64_t>(spatial, 1));
  SmallVector<int64_t> pads =
      imp.getIntsAttr("pads", SmallVector<int64_t>(2 * spatial, 0));
  if (imp.hasError())
    return failure();
  if (static_cast<int64_t>(kernel.size()) != spatial ||
      static_cast<int64_t>(strides.size()) != spatial ||
      static_cast<int64_t>(pads.size()) != 2 * spatial)
    return imp.emitError("kernel_shape, strides and pads should hold " +
                         Twine(spatial) + ", " + Twine(spatial) + " and " +
                         Twine(2 * spatial) + " values");
  SmallVector<int64_t> shape(getShape(x).take_front(2));
  for (int64_t d = 0; d < spatial; ++d)
    shape.push_back((getShape(x)[2 + d] - 1) * strides[d] + kernel[d] -
                    pads[d] - pads[spatial + d]);
  const SmallVector<int64_t> defaultShape = shape;
  if (imp.hasInput(2)) {
    std::optional<SmallVector<int64_t>> given = imp.getConstantInts(
        2, "output_shape", NodeImporter::kNeedsStaticShapes);
    if (!given)
      return failure();
    if (given->size() != shape.size())
      return imp.emitError("input 'output_shape' = " + formatShape(*given) +
                           " should hold " + Twine(shape.size()) + " dims");
    shape = *given;
  }
  if (llvm::any_of(shape, [](int64_t d) { return d < 1; }))
    return imp.emitError("the unpooled shape " + formatShape(shape) +
                         " has an empty dim");
  int64_t total = 1;
  for (int64_t d : shape)
    total *= d;
  const int64_t count = getTensorType(x).getNumElements();
  if (failed(checkScatterReduction(imp, "none", x, count)))
    return failure();
  auto zerosType = RankedTensorType::get({total, 1}, getElementType(x));
  Value zeros = imp.createConstant(DenseElementsAttr::get(
      zerosType, imp.getBuilder().getFloatAttr(getElementType(x), 0.0)));
  Expr e(imp);
  Value index = imp.createCast(indices, imp.getBuilder().getI64Type());
  if (shape != defaultShape) {
    // The positions count in the default shape; an output_shape keeps each
    // element's coordinates (the rest is zeros).
    Value recomposed = e.scalar(index, 0.0);
    int64_t stride = 1;
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      Value coord = e.binary<RemOp>(index, e.scalar(index, defaultShape[d]));
      index = e.div(index, e.scalar(index, defaultShape[d]));
      recomposed = e.add(recomposed, e.mulScalar(coord, stride));
      stride *= shape[d];
    }
    index = recomposed;
  }
  Value rows = imp.createReshape(index, {count});
  Value result =
      scatterRows(imp, zeros, rows, imp.createReshape(x, {count, 1}), "none");
  return imp.setResult(result ? imp.createReshape(result, shape) : Value());
}
