//===- ImportSequence.cpp - ONNX sequences, resolved at import
//-------------===//
//
// A sequence of tensors (what torch.onnx.export writes for a scripted
// module's Python list: SequenceEmpty, then SequenceInsert in a Loop, then
// ConcatFromSequence for torch.stack / torch.cat) has a length known at
// import once loops are unrolled, so it never reaches weft's IR: the
// importer keeps each sequence as its list of tensors (GraphState::
// sequences) and the ops that read one pick, count or join them. Positions
// must be known at import; a graph output cannot be a sequence.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/ImportExpr.h"
#include "frontends/onnx/OpImporters.h"

#include "dialects/weft/ShapeRules.h"
#include "dialects/weft/WeftOps.h"

using namespace mlir;
using namespace weft;
using namespace weft::onnx_import;

/// The position input `i` (a constant scalar), normalized against a
/// sequence of `length` elements; `end` allows `length` itself (an insert
/// at the back). Absent: `fallback`.
static std::optional<int64_t> positionInput(NodeImporter &imp, unsigned i,
                                            int64_t length, bool end,
                                            int64_t fallback) {
  if (!imp.hasInput(i))
    return fallback;
  std::optional<SmallVector<int64_t>> given =
      imp.getConstantInts(i, "position", NodeImporter::kNeedsImportTimeValue);
  if (!given)
    return std::nullopt;
  if (given->size() != 1) {
    (void)imp.emitError("input 'position' must hold one index");
    return std::nullopt;
  }
  int64_t position = given->front();
  int64_t limit = end ? length + 1 : length;
  if (position < 0)
    position += length;
  if (position < 0 || position >= limit) {
    (void)imp.emitError("position " + Twine(given->front()) +
                        " is out of range for a sequence of " + Twine(length) +
                        " tensors");
    return std::nullopt;
  }
  return position;
}

/// Checks that `tensor` may join `sequence` (one element type).
static LogicalResult checkJoins(NodeImporter &imp, ArrayRef<Value> sequence,
                                Value tensor) {
  if (sequence.empty() ||
      getElementType(sequence.front()) == getElementType(tensor))
    return success();
  return imp.emitError("a tensor of " + formatType(tensor.getType()) +
                       " cannot join a sequence of " +
                       formatType(getElementType(sequence.front())));
}

LogicalResult onnx_import::importSequenceEmpty(NodeImporter &imp) {
  imp.setSequenceOutput(0, {});
  return success();
}

LogicalResult onnx_import::importSequenceConstruct(NodeImporter &imp) {
  SmallVector<Value> tensors;
  for (unsigned i = 0; i < imp.getNumInputs(); ++i) {
    Value t = imp.getInput(i, "inputs");
    if (!t || failed(checkJoins(imp, tensors, t)))
      return failure();
    tensors.push_back(t);
  }
  imp.setSequenceOutput(0, tensors);
  return success();
}

LogicalResult onnx_import::importSequenceInsert(NodeImporter &imp) {
  std::optional<SmallVector<Value>> seq =
      imp.getSequenceInput(0, "input_sequence");
  Value tensor = imp.getInput(1, "tensor");
  if (!seq || !tensor || failed(checkJoins(imp, *seq, tensor)))
    return failure();
  int64_t length = static_cast<int64_t>(seq->size());
  std::optional<int64_t> at = positionInput(imp, 2, length, true, length);
  if (!at)
    return failure();
  seq->insert(seq->begin() + *at, tensor);
  imp.setSequenceOutput(0, *seq);
  return success();
}

LogicalResult onnx_import::importSequenceErase(NodeImporter &imp) {
  std::optional<SmallVector<Value>> seq =
      imp.getSequenceInput(0, "input_sequence");
  if (!seq)
    return failure();
  int64_t length = static_cast<int64_t>(seq->size());
  if (length == 0)
    return imp.emitError("erasing from an empty sequence");
  std::optional<int64_t> at = positionInput(imp, 1, length, false, length - 1);
  if (!at)
    return failure();
  seq->erase(seq->begin() + *at);
  imp.setSequenceOutput(0, *seq);
  return success();
}

LogicalResult onnx_import::importSequenceAt(NodeImporter &imp) {
  std::optional<SmallVector<Value>> seq =
      imp.getSequenceInput(0, "input_sequence");
  if (!seq)
    return failure();
  if (!imp.hasInput(1))
    return imp.emitError("missing required input 'position'");
  std::optional<int64_t> at =
      positionInput(imp, 1, static_cast<int64_t>(seq->size()), false, 0);
  if (!at)
    return failure();
  return imp.setResult((*seq)[*at]);
}

LogicalResult onnx_import::importSequenceLength(NodeImporter &imp) {
  std::optional<SmallVector<Value>> seq =
      imp.getSequenceInput(0, "input_sequence");
  if (!seq)
    return failure();
  auto type = RankedTensorType::get({}, imp.getBuilder().getI64Type());
  return imp.setResult(imp.createConstant(DenseElementsAttr::get(
      type, imp.getBuilder().getI64IntegerAttr(seq->size()))));
}

/// ConcatFromSequence: the tensors joined along `axis`, or stacked along a
/// new one (new_axis = 1: torch.stack).
LogicalResult onnx_import::importConcatFromSequence(NodeImporter &imp) {
  std::optional<SmallVector<Value>> seq =
      imp.getSequenceInput(0, "input_sequence");
  if (!seq)
    return failure();
  if (!imp.hasAttr("axis"))
    return imp.emitError("missing required attribute 'axis'");
  int64_t axis = imp.getIntAttr("axis", 0);
  bool newAxis = imp.getIntAttr("new_axis", 0) != 0;
  if (imp.hasError())
    return failure();
  if (seq->empty())
    return imp.emitError("joining an empty sequence (its result has no "
                         "shape)");
  int64_t rank = getRank(seq->front()) + (newAxis ? 1 : 0);
  std::optional<int64_t> normalized = normalizeAxis(axis, rank);
  if (!normalized)
    return imp.emitError("attribute 'axis' = " + Twine(axis) +
                         " is out of range for rank " + Twine(rank));
  SmallVector<Value> parts;
  for (Value t : *seq) {
    if (!newAxis) {
      parts.push_back(t);
      continue;
    }
    SmallVector<int64_t> shape(getShape(t));
    shape.insert(shape.begin() + *normalized, 1);
    parts.push_back(imp.createReshape(t, shape));
  }
  if (parts.size() == 1)
    return imp.setResult(parts.front());
  return imp.setResult(imp.createInferred<ConcatOp>(
      parts, imp.getBuilder().getI64IntegerAttr(*normalized)));
}

/// SplitToSequence: pieces of `split` (one size for all but a smaller last
/// one, or a list of sizes) along `axis`; without `split`, pieces of 1,
/// kept as dims of 1 (keepdims = 1, the default) or squeezed.
LogicalResult onnx_import::importSplitToSequence(NodeImporter &imp) {
  Value input = imp.getInput(0, "input");
  if (!input)
    return failure();
  std::optional<int64_t> axis = imp.getAxisAttr(input, 0);
  bool keepdims = imp.getIntAttr("keepdims", 1) != 0;
  if (!axis || imp.hasError())
    return failure();
  int64_t extent = getShape(input)[*axis];
  SmallVector<int64_t> sizes;
  bool squeeze = false;
  if (!imp.hasInput(1)) {
    sizes.assign(extent, 1);
    squeeze = !keepdims;
  } else {
    std::optional<DenseElementsAttr> split =
        imp.getConstantInput(1, "split", NodeImporter::kNeedsImportTimeValue);
    std::optional<SmallVector<int64_t>> values =
        imp.getConstantInts(1, "split", NodeImporter::kNeedsImportTimeValue);
    if (!split || !values)
      return failure();
    if (split->getType().getRank() == 0) {
      int64_t chunk = values->front();
      if (chunk <= 0)
        return imp.emitError("input 'split' must be positive");
      for (int64_t done = 0; done < extent; done += chunk)
        sizes.push_back(std::min(chunk, extent - done));
    } else {
      sizes = *values;
      int64_t sum = 0;
      for (int64_t s : sizes)
        sum += s;
      if (sum != extent || llvm::any_of(sizes, [](int64_t s) { return s < 0; }))
        return imp.emitError("input 'split' = " + formatShape(sizes) +
                             " does not add up to dim " + Twine(*axis) + " (" +
                             Twine(extent) + ")");
    }
  }
  SmallVector<Value> pieces;
  if (!sizes.empty()) {
    SmallVector<Type> types;
    for (int64_t size : sizes) {
      SmallVector<int64_t> shape(getShape(input));
      shape[*axis] = size;
      types.push_back(getTensorType(input).clone(shape));
    }
    pieces = sizes.size() == 1
                 ? SmallVector<Value>{input}
                 : imp.createMulti<SplitOp>(
                       types, input, imp.getBuilder().getI64IntegerAttr(*axis));
    if (pieces.size() != sizes.size())
      return failure();
  }
  if (squeeze)
    for (Value &piece : pieces) {
      SmallVector<int64_t> shape(getShape(piece));
      shape.erase(shape.begin() + *axis);
      piece = imp.createReshape(piece, shape);
    }
  imp.setSequenceOutput(0, pieces);
  return success();
}

//===----------------------------------------------------------------------===//
// Optionals
//===----------------------------------------------------------------------===//
// An optional holding a value is that value (tensor or sequence); an empty
// one is a name in GraphState::emptyOptionals. Both are known at import, so
// OptionalHasElement is a constant (a scripted model's `if mask is None`
// becomes an If on it, which then imports the branch it takes).

LogicalResult onnx_import::importOptional(NodeImporter &imp) {
  if (!imp.hasInput(0)) {
    imp.setEmptyOptionalOutput(0);
    return success();
  }
  imp.setGraphValueOutput(0, imp.getGraphValueInput(0));
  return success();
}

LogicalResult onnx_import::importOptionalHasElement(NodeImporter &imp) {
  auto type = RankedTensorType::get({}, imp.getBuilder().getI1Type());
  return imp.setResult(imp.createConstant(
      DenseElementsAttr::get(type, !imp.isEmptyOptionalInput(0))));
}

LogicalResult onnx_import::importOptionalGetElement(NodeImporter &imp) {
  if (imp.isEmptyOptionalInput(0))
    return imp.emitError("input 'input' is an empty optional: it holds no "
                         "element to get");
  imp.setGraphValueOutput(0, imp.getGraphValueInput(0));
  return success();
}
