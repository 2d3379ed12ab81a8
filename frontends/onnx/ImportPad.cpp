//===- ImportPad.cpp - ONNX Pad as slices, concats and gathers ------------===//
//
// Pad (opsets 13-21: pads as an input, opset 18's axes, opset 19's wrap mode)
// works one axis at a time. Negative pads crop (weft.slice). Constant padding
// joins broadcast fills on both sides (weft.concat of weft.broadcast_to of
// the pad value); reflect, edge and wrap padding gather along the axis with
// indices fixed at import time (weft.gather), so gradients come from those
// ops' rules (slices of the concat; a scatter-add of the gather).
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
enum class PadMode { Constant, Reflect, Edge, Wrap };

/// Input index `i` (in [-before, n + after)) of a reflect, edge or wrap pad
/// of a dimension of size n, mapped into [0, n).
int64_t sourceIndex(PadMode mode, int64_t i, int64_t n) {
  switch (mode) {
  case PadMode::Reflect:
    // Valid while before, after < n (checked by the caller).
    if (i < 0)
      return -i;
    return i >= n ? 2 * (n - 1) - i : i;
  case PadMode::Edge:
    return std::clamp<int64_t>(i, 0, n - 1);
  case PadMode::Wrap:
    return ((i % n) + n) % n;
  case PadMode::Constant:
    break;
  }
  return i;
}
} // namespace

Value onnx_import::cropAxis(NodeImporter &imp, Value data, int64_t axis,
                            int64_t before, int64_t after) {
  if (before == 0 && after == 0)
    return data;
  SmallVector<int64_t> shape(getShape(data));
  SmallVector<int64_t> starts(shape.size(), 0), steps(shape.size(), 1);
  starts[axis] = before;
  shape[axis] -= before + after;
  OpBuilder &b = imp.getBuilder();
  return imp.create<SliceOp>(getTensorType(data).clone(shape), data,
                             b.getDenseI64ArrayAttr(starts),
                             b.getDenseI64ArrayAttr(steps));
}

Value onnx_import::padAxisConstant(NodeImporter &imp, Value data, int64_t axis,
                                   int64_t before, int64_t after, Value value) {
  SmallVector<Value> parts;
  auto fill = [&](int64_t count) {
    SmallVector<int64_t> shape(getShape(data));
    shape[axis] = count;
    parts.push_back(
        imp.create<BroadcastToOp>(getTensorType(data).clone(shape), value));
  };
  if (before > 0)
    fill(before);
  parts.push_back(data);
  if (after > 0)
    fill(after);
  if (llvm::any_of(parts, [](Value v) { return !v; }))
    return {};
  return imp.createInferred<ConcatOp>(parts,
                                      imp.getBuilder().getI64IntegerAttr(axis));
}

/// `data` padded along `axis` by gathering the indices `mode` maps to.
static Value padGather(NodeImporter &imp, Value data, int64_t axis,
                       int64_t before, int64_t after, PadMode mode) {
  int64_t n = getShape(data)[axis];
  SmallVector<int64_t> indices;
  for (int64_t i = -before; i < n + after; ++i)
    indices.push_back(sourceIndex(mode, i, n));
  return Expr(imp).gatherAt(data, axis, indices);
}

LogicalResult onnx_import::importPad(NodeImporter &imp) {
  Value data = imp.getInput(0, "data");
  if (!data)
    return failure();
  std::optional<SmallVector<int64_t>> pads = imp.getConstantInts(1, "pads");
  if (!pads)
    return failure();
  int64_t rank = getRank(data);

  std::string modeName = imp.getStringAttr("mode", "constant");
  PadMode mode;
  if (modeName == "constant")
    mode = PadMode::Constant;
  else if (modeName == "reflect")
    mode = PadMode::Reflect;
  else if (modeName == "edge")
    mode = PadMode::Edge;
  else if (modeName == "wrap" && imp.getOpset() >= 19)
    mode = PadMode::Wrap;
  else
    return imp.emitUnsupportedAttr(
        "mode", "'" + modeName + "'",
        imp.getOpset() >= 19 ? "ONNX defines constant, reflect, edge and wrap"
                             : "ONNX defines constant, reflect and edge "
                               "(wrap from opset 19)");

  // Opset 18's axes: which dimensions `pads` covers (default: all).
  SmallVector<int64_t> axes;
  if (imp.getOpset() >= 18 && imp.hasInput(3)) {
    std::optional<SmallVector<int64_t>> given = imp.getConstantInts(3, "axes");
    if (!given)
      return failure();
    for (int64_t a : *given) {
      if (a < -rank || a >= rank)
        return imp.emitError("axis " + Twine(a) + " is out of range for " +
                             formatType(data.getType()));
      int64_t axis = a < 0 ? a + rank : a;
      if (llvm::is_contained(axes, axis))
        return imp.emitError("axis " + Twine(a) + " is given twice");
      axes.push_back(axis);
    }
  } else {
    for (int64_t a = 0; a < rank; ++a)
      axes.push_back(a);
  }
  int64_t count = axes.size();
  if (static_cast<int64_t>(pads->size()) != 2 * count)
    return imp.emitError("input 'pads' has " + Twine(pads->size()) +
                         " values; " + formatType(data.getType()) +
                         " padded along " + Twine(count) + " axes needs " +
                         Twine(2 * count));

  // The value constant padding writes: rank 0 of the data's type.
  Value value;
  if (mode == PadMode::Constant) {
    if (Value given = imp.getOptionalInput(2)) {
      if (failed(
              imp.checkSameElementType(given, data, "constant_value", "data")))
        return failure();
      if (getTensorType(given).getNumElements() != 1)
        return imp.emitError("input 'constant_value' must hold one value, "
                             "not " +
                             formatType(given.getType()));
      value = imp.createReshape(given, {});
    } else {
      value = imp.createScalar(getElementType(data), 0.0);
    }
    if (!value)
      return failure();
  }

  Value result = data;
  for (int64_t i = 0; i < count && result; ++i) {
    int64_t axis = axes[i], before = (*pads)[i], after = (*pads)[i + count];
    int64_t n = getShape(result)[axis];
    int64_t cropBefore = std::max<int64_t>(-before, 0);
    int64_t cropAfter = std::max<int64_t>(-after, 0);
    if (cropBefore + cropAfter > n)
      return imp.emitError("pads " + Twine(before) + " and " + Twine(after) +
                           " remove more than the " + Twine(n) +
                           " elements of axis " + Twine(axis));
    result = cropAxis(imp, result, axis, cropBefore, cropAfter);
    before = std::max<int64_t>(before, 0);
    after = std::max<int64_t>(after, 0);
    if (!result || (before == 0 && after == 0))
      continue;
    n = getShape(result)[axis];
    if (mode != PadMode::Constant && n == 0)
      return imp.emitError(modeName + " padding of axis " + Twine(axis) +
                           ", which is empty");
    if (mode == PadMode::Reflect && (before >= n || after >= n))
      return imp.emitError("reflect pads " + Twine(before) + " and " +
                           Twine(after) + " must be smaller than axis " +
                           Twine(axis) + "'s size " + Twine(n));
    result = mode == PadMode::Constant
                 ? padAxisConstant(imp, result, axis, before, after, value)
                 : padGather(imp, result, axis, before, after, mode);
  }
  if (!result)
    return failure();
  imp.setOutput(0, result);
  return success();
}
