//===- Verifiers.cpp - Invariants of weft ops -----------------------------===//
//
// verify() of the ops marked hasVerifier. Ops with inferred result types
// also get their shape checks from inference (ShapeRules.cpp), which runs
// after these verifiers; the checks here are the ones inference does not
// need to compute a shape.
//
//===----------------------------------------------------------------------===//
#include "dialects/weft/ShapeRules.h"
#include "dialects/weft/WeftOps.h"

#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace weft;

/// weft has no dynamic dims; types without a static shape cannot lower.
static LogicalResult verifyStatic(Operation *op, Type type, StringRef name) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return op->emitOpError()
           << name << " must have a static shape, got " << type;
  return success();
}

/// The range of a non-negative axis attribute, for messages.
static LogicalResult verifyAxis(Operation *op, int64_t axis, int64_t rank) {
  if (axis < 0 || axis >= rank)
    return op->emitOpError()
           << "axis " << axis << " is out of range [0, " << rank << ")";
  return success();
}

//===----------------------------------------------------------------------===//
// Values from outside the graph
//===----------------------------------------------------------------------===//

LogicalResult ConstantOp::verify() {
  return verifyStatic(*this, getType(), "value");
}

LogicalResult ParamOp::verify() {
  if (getName().empty())
    return emitOpError("name must not be empty");
  return verifyStatic(*this, getType(), "result");
}

//===----------------------------------------------------------------------===//
// Elementwise and data movement without inference
//===----------------------------------------------------------------------===//

LogicalResult CastOp::verify() {
  if (failed(verifyStatic(*this, getInput().getType(), "input")) ||
      failed(verifyStatic(*this, getType(), "result")))
    return failure();
  if (getInput().getType().getShape() != getType().getShape())
    return emitOpError() << "input and result must have the same shape, got "
                         << getInput().getType() << " and " << getType();
  return success();
}

LogicalResult ReshapeOp::verify() {
  RankedTensorType input = getInput().getType(), result = getType();
  if (failed(verifyStatic(*this, input, "input")) ||
      failed(verifyStatic(*this, result, "result")))
    return failure();
  if (input.getElementType() != result.getElementType())
    return emitOpError() << "input and result must have the same element "
                            "type, got "
                         << input.getElementType() << " and "
                         << result.getElementType();
  if (input.getNumElements() != result.getNumElements())
    return emitOpError() << "input and result must have the same number of "
                            "elements, got "
                         << input.getNumElements() << " (" << input << ") and "
                         << result.getNumElements() << " (" << result << ")";
  return success();
}

LogicalResult SplitOp::verify() {
  RankedTensorType input = getInput().getType();
  if (failed(verifyStatic(*this, input, "input")))
    return failure();
  int64_t axis = getAxisAttr().getInt();
  if (failed(verifyAxis(*this, axis, input.getRank())))
    return failure();
  if (getResults().empty())
    return emitOpError("must have at least one result");
  int64_t total = 0;
  for (auto [i, value] : llvm::enumerate(getResults())) {
    auto piece = cast<RankedTensorType>(value.getType());
    std::string name = "result #" + std::to_string(i);
    if (failed(verifyStatic(*this, piece, name)))
      return failure();
    if (piece.getElementType() != input.getElementType())
      return emitOpError() << name << " has element type "
                           << piece.getElementType() << " but input has "
                           << input.getElementType();
    if (piece.getRank() != input.getRank())
      return emitOpError() << name << " has rank " << piece.getRank()
                           << " but input has rank " << input.getRank();
    for (int64_t d = 0; d < input.getRank(); ++d)
      if (d != axis && piece.getDimSize(d) != input.getDimSize(d))
        return emitOpError()
               << name << " has size " << piece.getDimSize(d) << " in dim " << d
               << " but input has " << input.getDimSize(d) << " (only the axis "
               << axis << " may differ)";
    total += piece.getDimSize(axis);
  }
  if (total != input.getDimSize(axis))
    return emitOpError() << "pieces must add up to input dim " << axis
                         << " of size " << input.getDimSize(axis)
                         << ", got a total of " << total;
  return success();
}

LogicalResult SliceOp::verify() {
  RankedTensorType input = getInput().getType(), result = getType();
  if (failed(verifyStatic(*this, input, "input")) ||
      failed(verifyStatic(*this, result, "result")))
    return failure();
  if (input.getElementType() != result.getElementType())
    return emitOpError() << "input and result must have the same element "
                            "type, got "
                         << input.getElementType() << " and "
                         << result.getElementType();
  int64_t rank = input.getRank();
  if (result.getRank() != rank)
    return emitOpError() << "result must have the input's rank " << rank
                         << ", got " << result;
  ArrayRef<int64_t> starts = getStarts(), steps = getSteps();
  if (static_cast<int64_t>(starts.size()) != rank ||
      static_cast<int64_t>(steps.size()) != rank)
    return emitOpError() << "needs one start and one step per dim (" << rank
                         << "), got " << starts.size() << " starts and "
                         << steps.size() << " steps";
  for (int64_t d = 0; d < rank; ++d) {
    int64_t dim = input.getDimSize(d), size = result.getDimSize(d);
    int64_t start = starts[d], step = steps[d];
    if (step == 0)
      return emitOpError() << "step of dim " << d << " must not be zero";
    if (dim == 0) {
      if (start != 0 || size != 0)
        return emitOpError()
               << "dim " << d << " of the input is empty: start "
               << "and result size must be 0, got " << start << " and " << size;
      continue;
    }
    if (start < 0 || start >= dim)
      return emitOpError() << "start " << start << " of dim " << d
                           << " must be in [0, " << dim << ")";
    if (size == 0)
      continue;
    int64_t offset, last;
    if (llvm::MulOverflow(size - 1, step, offset) ||
        llvm::AddOverflow(start, offset, last) || last < 0 || last >= dim)
      return emitOpError() << "dim " << d << " takes " << size
                           << " elements from " << start << " by step " << step
                           << ", which leaves the input's [0, " << dim << ")";
  }
  return success();
}

LogicalResult BroadcastToOp::verify() {
  RankedTensorType input = getInput().getType(), result = getType();
  if (failed(verifyStatic(*this, input, "input")) ||
      failed(verifyStatic(*this, result, "result")))
    return failure();
  if (input.getElementType() != result.getElementType())
    return emitOpError() << "input and result must have the same element "
                            "type, got "
                         << input.getElementType() << " and "
                         << result.getElementType();
  if (!isBroadcastableTo(input.getShape(), result.getShape()))
    return emitOpError() << "input " << input
                         << " does not broadcast to result " << result;
  return success();
}

//===----------------------------------------------------------------------===//
// Ops with inferred results: the invariants inference does not check
//===----------------------------------------------------------------------===//

LogicalResult ConvOp::verify() {
  auto input = cast<RankedTensorType>(getInput().getType());
  auto weight = cast<RankedTensorType>(getWeight().getType());
  Type element = input.getElementType();
  if (weight.getElementType() != element)
    return emitOpError() << "weight must have the input's element type "
                         << element << ", got " << weight.getElementType();
  int64_t group = getGroupAttr().getInt();
  if (group < 1)
    return emitOpError() << "group must be >= 1, got " << group;
  // Rank and static-shape errors are reported by inference.
  if (!input.hasStaticShape() || !weight.hasStaticShape() ||
      input.getRank() < 3 || weight.getRank() != input.getRank())
    return success();
  int64_t channels = input.getDimSize(1);
  int64_t outChannels = weight.getDimSize(0);
  if (channels % group != 0)
    return emitOpError() << "group " << group
                         << " must divide the input channels " << channels;
  if (weight.getDimSize(1) * group != channels)
    return emitOpError() << "weight has " << weight.getDimSize(1)
                         << " input channels per group; with group " << group
                         << " the input needs " << weight.getDimSize(1) * group
                         << " channels, got " << channels;
  if (outChannels % group != 0)
    return emitOpError() << "group " << group
                         << " must divide the output channels (weight dim 0) "
                         << outChannels;
  if (Value bias = getBias()) {
    auto type = cast<RankedTensorType>(bias.getType());
    if (type.getRank() != 1 || type.getDimSize(0) != outChannels)
      return emitOpError() << "bias must have shape [M] = [" << outChannels
                           << "], got " << type;
    if (type.getElementType() != element)
      return emitOpError() << "bias must have the input's element type "
                           << element << ", got " << type.getElementType();
  }
  return success();
}

LogicalResult LayerNormOp::verify() {
  auto input = cast<RankedTensorType>(getInput().getType());
  if (failed(verifyStatic(*this, input, "input")))
    return failure();
  int64_t axis = getAxisAttr().getInt();
  if (failed(verifyAxis(*this, axis, input.getRank())))
    return failure();
  int64_t normalized = numElements(input.getShape().drop_front(axis));
  auto check = [&](Value value, StringRef name) -> LogicalResult {
    if (!value)
      return success();
    auto type = cast<RankedTensorType>(value.getType());
    if (failed(verifyStatic(*this, type, name)))
      return failure();
    if (type.getElementType() != input.getElementType())
      return emitOpError() << name << " must have the input's element type "
                           << input.getElementType() << ", got "
                           << type.getElementType();
    if (type.getNumElements() != normalized)
      return emitOpError() << name << " must hold the normalized shape (input "
                           << "dims from axis " << axis << ", " << normalized
                           << " elements), got " << type;
    return success();
  };
  return failure(failed(check(getScale(), "scale")) ||
                 failed(check(getBias(), "bias")));
}

LogicalResult SoftmaxOp::verify() {
  return verifyAxis(*this, getAxisAttr().getInt(), getType().getRank());
}

LogicalResult LogSoftmaxOp::verify() {
  return verifyAxis(*this, getAxisAttr().getInt(), getType().getRank());
}

LogicalResult TriluOp::verify() {
  if (getType().getRank() < 2)
    return emitOpError() << "input must have rank >= 2 (the last two dims "
                            "are the matrices), got "
                         << getType();
  return success();
}
