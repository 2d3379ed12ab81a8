//===- ImportShapeOps.cpp - Data movement ops -----------------------------===//
//
// Reshape, Flatten, Squeeze and Unsqueeze all become weft.reshape with a
// static result shape, so their shape / axes inputs must be constants.
// Slice's starts/ends/axes/steps are normalized into weft.slice's per-dim
// starts and steps plus the result shape; Expand becomes weft.broadcast_to.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/OpImporters.h"

#include "dialects/weft/ShapeRules.h"
#include "dialects/weft/WeftOps.h"

#include <numeric>

using namespace mlir;
using namespace weft;
using namespace weft::onnx_import;

//===----------------------------------------------------------------------===//
// Reshape family
//===----------------------------------------------------------------------===//

/// ONNX Reshape's target shape: 0 copies the input dim (unless allowzero),
/// one -1 takes what is left.
static std::optional<SmallVector<int64_t>>
resolveReshape(NodeImporter &imp, ArrayRef<int64_t> inputShape,
               ArrayRef<int64_t> requested, bool allowZero) {
  auto fail = [&](const Twine &why) {
    (void)imp.emitError("cannot reshape " + formatShape(inputShape) + " to " +
                        formatShape(requested) + ": " + why);
    return std::nullopt;
  };
  SmallVector<int64_t> shape;
  int64_t inferred = -1, known = 1;
  for (auto [i, requestedDim] : llvm::enumerate(requested)) {
    int64_t dim = requestedDim;
    if (dim == -1) {
      if (inferred >= 0)
        return fail("more than one -1");
      inferred = i;
      shape.push_back(1);
      continue;
    }
    if (dim < -1)
      return fail("negative dimension " + Twine(dim));
    if (dim == 0 && !allowZero) {
      if (i >= inputShape.size())
        return fail("0 copies dimension " + Twine(i) +
                    ", which the input does not have");
      dim = inputShape[i];
    }
    shape.push_back(dim);
    known *= dim;
  }
  int64_t total = numElements(inputShape);
  if (inferred >= 0) {
    if (allowZero && llvm::is_contained(requested, 0))
      return fail("-1 together with 0 under allowzero");
    if (known == 0 || total % known != 0)
      return fail("the element count " + Twine(total) +
                  " is not a multiple of " + Twine(known));
    shape[inferred] = total / known;
  } else if (known != total) {
    return fail("the element counts differ (" + Twine(total) + " and " +
                Twine(known) + ")");
  }
  return shape;
}

LogicalResult onnx_import::importReshape(NodeImporter &imp) {
  Value data = imp.getInput(0, "data");
  if (!data)
    return failure();
  std::optional<SmallVector<int64_t>> requested =
      imp.getConstantInts(1, "shape");
  if (!requested)
    return failure();
  bool allowZero = imp.getIntAttr("allowzero", 0) != 0;
  std::optional<SmallVector<int64_t>> shape =
      resolveReshape(imp, getShape(data), *requested, allowZero);
  if (!shape)
    return failure();
  return imp.setResult(imp.createReshape(data, *shape));
}

LogicalResult onnx_import::importFlatten(NodeImporter &imp) {
  Value input = imp.getInput(0, "input");
  if (!input)
    return failure();
  ArrayRef<int64_t> shape = getShape(input);
  int64_t rank = shape.size();
  int64_t axis = imp.getIntAttr("axis", 1);
  if (axis < -rank || axis > rank)
    return imp.emitError("attribute 'axis' = " + Twine(axis) +
                         " is out of range for input (" +
                         formatType(input.getType()) + ")");
  if (axis < 0)
    axis += rank;
  return imp.setResult(
      imp.createReshape(input, {numElements(shape.take_front(axis)),
                                numElements(shape.drop_front(axis))}));
}

/// Squeeze and Unsqueeze take axes as an input from opset 13 (older models
/// had an attribute; both are read).
static std::optional<SmallVector<int64_t>> readAxes(NodeImporter &imp,
                                                    unsigned input) {
  if (imp.hasInput(input))
    return imp.getConstantInts(input, "axes");
  return imp.getIntsAttr("axes");
}

LogicalResult onnx_import::importSqueeze(NodeImporter &imp) {
  Value data = imp.getInput(0, "data");
  if (!data)
    return failure();
  std::optional<SmallVector<int64_t>> axes = readAxes(imp, 1);
  if (!axes)
    return failure();
  ArrayRef<int64_t> shape = getShape(data);
  SmallVector<int64_t> result;
  if (axes->empty()) {
    // No axes: every dimension of size 1 goes.
    for (int64_t dim : shape)
      if (dim != 1)
        result.push_back(dim);
    return imp.setResult(imp.createReshape(data, result));
  }
  std::optional<SmallVector<int64_t>> normalized =
      normalizeAxes(imp, *axes, shape.size(), "axes");
  if (!normalized)
    return failure();
  for (auto [i, dim] : llvm::enumerate(shape)) {
    if (!llvm::is_contained(*normalized, static_cast<int64_t>(i))) {
      result.push_back(dim);
    } else if (dim != 1) {
      return imp.emitError("cannot squeeze dimension " + Twine(i) + " of " +
                           formatType(data.getType()) + ": it is not 1");
    }
  }
  return imp.setResult(imp.createReshape(data, result));
}

LogicalResult onnx_import::importUnsqueeze(NodeImporter &imp) {
  Value data = imp.getInput(0, "data");
  if (!data)
    return failure();
  std::optional<SmallVector<int64_t>> axes = readAxes(imp, 1);
  if (!axes)
    return failure();
  if (axes->empty())
    return imp.emitError("missing required input 'axes'");
  ArrayRef<int64_t> shape = getShape(data);
  int64_t outRank = shape.size() + axes->size();
  std::optional<SmallVector<int64_t>> normalized =
      normalizeAxes(imp, *axes, outRank, "axes");
  if (!normalized)
    return failure();
  SmallVector<int64_t> result;
  const int64_t *next = shape.begin();
  for (int64_t i = 0; i < outRank; ++i)
    result.push_back(llvm::is_contained(*normalized, i) ? 1 : *next++);
  return imp.setResult(imp.createReshape(data, result));
}

//===----------------------------------------------------------------------===//
// Transpose, Concat, Split
//===----------------------------------------------------------------------===//

LogicalResult onnx_import::importTranspose(NodeImporter &imp) {
  Value data = imp.getInput(0, "data");
  if (!data)
    return failure();
  int64_t rank = getRank(data);
  SmallVector<int64_t> perm;
  for (int64_t i = rank - 1; i >= 0; --i)
    perm.push_back(i);
  perm = imp.getIntsAttr("perm", perm);
  if (!isPermutation(perm, rank))
    return imp.emitError("attribute 'perm' = " + formatShape(perm) +
                         " is not a permutation of " + Twine(rank) + " axes");
  if (llvm::equal(perm, llvm::seq<int64_t>(0, rank)))
    return imp.setResult(data);
  return imp.setResult(imp.createInferred<TransposeOp>(
      data, imp.getBuilder().getDenseI64ArrayAttr(perm)));
}

LogicalResult onnx_import::importConcat(NodeImporter &imp) {
  SmallVector<Value> inputs;
  for (unsigned i = 0, e = imp.getNumInputs(); i < e; ++i) {
    Value input = imp.getInput(i, "inputs");
    if (!input)
      return failure();
    inputs.push_back(input);
  }
  if (inputs.empty())
    return imp.emitError("needs at least one input");
  if (!imp.hasAttr("axis"))
    return imp.emitError("missing required attribute 'axis'");
  int64_t axisAttr = imp.getIntAttr("axis", 0);
  std::optional<int64_t> axis = normalizeAxis(axisAttr, getRank(inputs[0]));
  if (!axis)
    return imp.emitError("attribute 'axis' = " + Twine(axisAttr) +
                         " is out of range for " +
                         formatType(inputs[0].getType()));
  if (inputs.size() == 1)
    return imp.setResult(inputs[0]);
  return imp.setResult(imp.createInferred<ConcatOp>(
      inputs, imp.getBuilder().getI64IntegerAttr(*axis)));
}

LogicalResult onnx_import::importSplit(NodeImporter &imp) {
  Value input = imp.getInput(0, "input");
  if (!input)
    return failure();
  ArrayRef<int64_t> shape = getShape(input);
  int64_t axisAttr = imp.getIntAttr("axis", 0);
  std::optional<int64_t> axis = normalizeAxis(axisAttr, shape.size());
  if (!axis)
    return imp.emitError("attribute 'axis' = " + Twine(axisAttr) +
                         " is out of range for " + formatType(input.getType()));
  int64_t dim = shape[*axis];
  int64_t numOutputs = imp.getNumOutputs();
  SmallVector<int64_t> sizes;
  if (imp.hasInput(1)) {
    std::optional<SmallVector<int64_t>> split = imp.getConstantInts(1, "split");
    if (!split)
      return failure();
    sizes = *split;
  } else if (imp.hasAttr("split")) {
    sizes = imp.getIntsAttr("split");
  } else {
    // Equal pieces; with num_outputs (opset 18) the last one may be smaller.
    int64_t pieces = imp.getIntAttr("num_outputs", numOutputs);
    if (pieces != numOutputs || pieces < 1)
      return imp.emitError("attribute 'num_outputs' = " + Twine(pieces) +
                           " but the node has " + Twine(numOutputs) +
                           " outputs");
    bool unevenAllowed = imp.hasAttr("num_outputs");
    if (!unevenAllowed && dim % pieces != 0)
      return imp.emitError("cannot split dimension " + Twine(*axis) + " of " +
                           formatType(input.getType()) + " into " +
                           Twine(pieces) + " equal pieces");
    int64_t piece = (dim + pieces - 1) / pieces;
    for (int64_t i = 0; i < pieces; ++i)
      sizes.push_back(std::max<int64_t>(0, std::min(piece, dim - i * piece)));
  }
  if (static_cast<int64_t>(sizes.size()) != numOutputs ||
      llvm::any_of(sizes, [](int64_t s) { return s < 0; }) ||
      std::accumulate(sizes.begin(), sizes.end(), int64_t(0)) != dim)
    return imp.emitError("split sizes " + formatShape(sizes) +
                         " do not cut dimension " + Twine(*axis) + " of " +
                         formatType(input.getType()) + " into " +
                         Twine(numOutputs) + " outputs");
  if (numOutputs == 1)
    return imp.setResult(input);
  SmallVector<Type> types;
  for (int64_t size : sizes) {
    SmallVector<int64_t> pieceShape(shape);
    pieceShape[*axis] = size;
    types.push_back(getTensorType(input).clone(pieceShape));
  }
  SmallVector<Value> results = imp.createMulti<SplitOp>(
      types, input, imp.getBuilder().getI64IntegerAttr(*axis));
  if (results.empty())
    return failure();
  for (auto [i, result] : llvm::enumerate(results))
    imp.setOutput(i, result);
  return success();
}

//===----------------------------------------------------------------------===//
// Slice, Gather, Expand, Trilu
//===----------------------------------------------------------------------===//

LogicalResult onnx_import::importSlice(NodeImporter &imp) {
  Value data = imp.getInput(0, "data");
  if (!data)
    return failure();
  std::optional<SmallVector<int64_t>> starts = imp.getConstantInts(1, "starts");
  if (!starts)
    return failure();
  std::optional<SmallVector<int64_t>> ends = imp.getConstantInts(2, "ends");
  if (!ends)
    return failure();
  ArrayRef<int64_t> shape = getShape(data);
  int64_t rank = shape.size();
  SmallVector<int64_t> axes, steps;
  if (imp.hasInput(3)) {
    std::optional<SmallVector<int64_t>> values = imp.getConstantInts(3, "axes");
    if (!values)
      return failure();
    axes = *values;
  } else {
    axes = llvm::to_vector(llvm::seq<int64_t>(0, starts->size()));
  }
  if (imp.hasInput(4)) {
    std::optional<SmallVector<int64_t>> values =
        imp.getConstantInts(4, "steps");
    if (!values)
      return failure();
    steps = *values;
  } else {
    steps.assign(starts->size(), 1);
  }
  if (ends->size() != starts->size() || axes.size() != starts->size() ||
      steps.size() != starts->size())
    return imp.emitError("starts, ends, axes and steps have different lengths");

  SmallVector<int64_t> sliceStarts(rank, 0), sliceSteps(rank, 1);
  SmallVector<int64_t> resultShape(shape);
  SmallVector<bool> seen(rank, false);
  for (size_t i = 0; i < axes.size(); ++i) {
    std::optional<int64_t> axis = normalizeAxis(axes[i], rank);
    if (!axis || seen[*axis])
      return imp.emitError("axes " + formatShape(axes) +
                           " are out of range or repeated for " +
                           formatType(data.getType()));
    seen[*axis] = true;
    if (steps[i] == 0)
      return imp.emitError("steps must not be 0");
    SliceBounds bounds =
        normalizeSlice((*starts)[i], (*ends)[i], steps[i], shape[*axis]);
    sliceStarts[*axis] = bounds.start;
    sliceSteps[*axis] = steps[i];
    resultShape[*axis] = bounds.size;
  }
  if (resultShape == shape &&
      llvm::all_of(sliceSteps, [](int64_t s) { return s == 1; }))
    return imp.setResult(data);
  OpBuilder &builder = imp.getBuilder();
  return imp.setResult(
      imp.create<SliceOp>(getTensorType(data).clone(resultShape), data,
                          builder.getDenseI64ArrayAttr(sliceStarts),
                          builder.getDenseI64ArrayAttr(sliceSteps)));
}

LogicalResult onnx_import::importGather(NodeImporter &imp) {
  Value data = imp.getInput(0, "data");
  Value indices = imp.getInput(1, "indices");
  if (!data || !indices)
    return failure();
  int64_t axisAttr = imp.getIntAttr("axis", 0);
  std::optional<int64_t> axis = normalizeAxis(axisAttr, getRank(data));
  if (!axis)
    return imp.emitError("attribute 'axis' = " + Twine(axisAttr) +
                         " is out of range for " + formatType(data.getType()));
  // Constant indices are checked now rather than at run time.
  if (std::optional<DenseElementsAttr> values = imp.matchConstant(indices)) {
    int64_t dim = getShape(data)[*axis];
    for (const APInt &v : values->getValues<APInt>()) {
      int64_t index = v.getSExtValue();
      if (index < -dim || index >= dim)
        return imp.emitError("index " + Twine(index) +
                             " is out of range for axis " + Twine(*axis) +
                             " of " + formatType(data.getType()));
    }
  }
  return imp.setResult(imp.createInferred<GatherOp>(
      data, indices, imp.getBuilder().getI64IntegerAttr(*axis)));
}

/// Expand broadcasts both ways: the result is the broadcast of the input's
/// shape with the requested one.
LogicalResult onnx_import::importExpand(NodeImporter &imp) {
  Value input = imp.getInput(0, "input");
  if (!input)
    return failure();
  std::optional<SmallVector<int64_t>> requested =
      imp.getConstantInts(1, "shape");
  if (!requested)
    return failure();
  FailureOr<SmallVector<int64_t>> shape =
      broadcastShapes(getShape(input), *requested);
  if (failed(shape))
    return imp.emitError("cannot expand " + formatType(input.getType()) +
                         " to " + formatShape(*requested));
  if (ArrayRef<int64_t>(*shape) == getShape(input))
    return imp.setResult(input);
  return imp.setResult(
      imp.create<BroadcastToOp>(getTensorType(input).clone(*shape), input));
}

LogicalResult onnx_import::importTrilu(NodeImporter &imp) {
  Value input = imp.getInput(0, "input");
  if (!input)
    return failure();
  if (getRank(input) < 2)
    return imp.emitError("input (" + formatType(input.getType()) +
                         ") needs at least 2 dimensions");
  int64_t k = 0;
  if (imp.hasInput(1)) {
    std::optional<SmallVector<int64_t>> values =
        imp.getConstantInts(1, "k", NodeImporter::kNeedsImportTimeValue);
    if (!values)
      return failure();
    if (values->size() != 1)
      return imp.emitError("input 'k' must hold one value");
    k = values->front();
  }
  bool upper = imp.getIntAttr("upper", 1) != 0;
  OpBuilder &builder = imp.getBuilder();
  return imp.setResult(imp.create<TriluOp>(input.getType(), input,
                                           builder.getBoolAttr(upper),
                                           builder.getI64IntegerAttr(k)));
}

/// Tile: each dim d of size n repeated r times is the broadcast of
/// [.., 1, n, ..] to [.., r, n, ..] reshaped to [.., r * n, ..].
LogicalResult onnx_import::importTile(NodeImporter &imp) {
  Value input = imp.getInput(0, "input");
  if (!input)
    return failure();
  std::optional<SmallVector<int64_t>> repeats =
      imp.getConstantInts(1, "repeats");
  if (!repeats)
    return failure();
  ArrayRef<int64_t> shape = getShape(input);
  if (repeats->size() != shape.size() ||
      llvm::any_of(*repeats, [](int64_t r) { return r < 0; }))
    return imp.emitError("input 'repeats' = " + formatShape(*repeats) +
                         " should hold " + Twine(shape.size()) +
                         " non-negative counts for " +
                         formatType(input.getType()));
  if (llvm::all_of(*repeats, [](int64_t r) { return r == 1; }))
    return imp.setResult(input);
  SmallVector<int64_t> split, wide, result;
  for (auto [n, r] : llvm::zip(shape, *repeats)) {
    split.append({1, n});
    wide.append({r, n});
    result.push_back(r * n);
  }
  Value value = imp.createReshape(input, split);
  if (!value)
    return failure();
  value = imp.create<BroadcastToOp>(getTensorType(value).clone(wide), value);
  return imp.setResult(imp.createReshape(value, result));
}
