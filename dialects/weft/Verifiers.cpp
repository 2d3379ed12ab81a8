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
#include "mlir/Dialect/Shard/IR/ShardOps.h"

#include "llvm/Support/MathExtras.h"

#include <cmath>

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

/// weft.slice's window: `result` takes, per dim, its size in elements of
/// `input` from starts[d] by steps[d]. Shared with weft.slice_grad, whose
/// result is the slice's input.
static LogicalResult verifySliceWindow(Operation *op, RankedTensorType input,
                                       RankedTensorType result,
                                       ArrayRef<int64_t> starts,
                                       ArrayRef<int64_t> steps) {
  if (failed(verifyStatic(op, input, "input")) ||
      failed(verifyStatic(op, result, "result")))
    return failure();
  if (input.getElementType() != result.getElementType())
    return op->emitOpError()
           << "input and result must have the same element "
              "type, got "
           << input.getElementType() << " and " << result.getElementType();
  int64_t rank = input.getRank();
  if (result.getRank() != rank)
    return op->emitOpError() << "result must have the input's rank " << rank
                             << ", got " << result;
  if (static_cast<int64_t>(starts.size()) != rank ||
      static_cast<int64_t>(steps.size()) != rank)
    return op->emitOpError()
           << "needs one start and one step per dim (" << rank << "), got "
           << starts.size() << " starts and " << steps.size() << " steps";
  for (int64_t d = 0; d < rank; ++d) {
    int64_t dim = input.getDimSize(d), size = result.getDimSize(d);
    int64_t start = starts[d], step = steps[d];
    if (step == 0)
      return op->emitOpError() << "step of dim " << d << " must not be zero";
    if (dim == 0) {
      if (start != 0 || size != 0)
        return op->emitOpError()
               << "dim " << d << " of the input is empty: start "
               << "and result size must be 0, got " << start << " and " << size;
      continue;
    }
    if (start < 0 || start >= dim)
      return op->emitOpError() << "start " << start << " of dim " << d
                               << " must be in [0, " << dim << ")";
    if (size == 0)
      continue;
    int64_t offset, last;
    if (llvm::MulOverflow(size - 1, step, offset) ||
        llvm::AddOverflow(start, offset, last) || last < 0 || last >= dim)
      return op->emitOpError()
             << "dim " << d << " takes " << size << " elements from " << start
             << " by step " << step << ", which leaves the input's [0, " << dim
             << ")";
  }
  return success();
}

LogicalResult SliceOp::verify() {
  return verifySliceWindow(*this, getInput().getType(), getType(), getStarts(),
                           getSteps());
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

/// What weft.dropout and weft.random share: a block of `type` (its first
/// operand's or its result's, named `what`) inside the whole tensor of
/// `global` dims, one offset per dim, a 32-bit stream.
static LogicalResult verifyDrawBlock(Operation *op, RankedTensorType type,
                                     ArrayRef<int64_t> global,
                                     RankedTensorType offsets, uint64_t stream,
                                     StringRef what) {
  if (static_cast<int64_t>(global.size()) != type.getRank() ||
      offsets.getDimSize(0) != type.getRank())
    return op->emitOpError() << "global_shape and offsets need one entry per "
                                "dim of the "
                             << what;
  for (auto [local, whole] : llvm::zip(type.getShape(), global))
    if (local > whole)
      return op->emitOpError()
             << "the " << what << " is larger than global_shape";
  if (stream > 0xffffffffULL)
    return op->emitOpError() << "stream must fit 32 bits";
  return success();
}

LogicalResult DropoutOp::verify() {
  RankedTensorType type = getInput().getType();
  if (getOutput().getType() != type)
    return emitOpError() << "output must have the input's type " << type;
  if (getMask().getType().getShape() != type.getShape())
    return emitOpError() << "mask must have the input's shape";
  double ratio = getRatio().convertToDouble();
  if (!(ratio >= 0.0 && ratio < 1.0))
    return emitOpError() << "ratio must be in [0, 1), got " << ratio;
  return verifyDrawBlock(*this, type, getGlobalShape(), getOffsets().getType(),
                         getStream(), "input");
}

LogicalResult RandomOp::verify() {
  RankedTensorType like = getLike().getType();
  RankedTensorType type = getOutput().getType();
  if (type.getShape() != like.getShape())
    return emitOpError() << "output must have the shape of `like`";
  StringRef distribution = getDistribution();
  if (distribution != "uniform" && distribution != "normal")
    return emitOpError() << "distribution must be \"uniform\" or \"normal\", "
                            "got \""
                         << distribution << "\"";
  double a = getA().convertToDouble(), b = getB().convertToDouble();
  if (!std::isfinite(a) || !std::isfinite(b))
    return emitOpError() << "a and b must be finite";
  if (distribution == "normal" && b < 0)
    return emitOpError() << "a normal distribution's scale (b) must not be "
                            "negative, got "
                         << b;
  return verifyDrawBlock(*this, type, getGlobalShape(), getOffsets().getType(),
                         getStream(), "output");
}

//===----------------------------------------------------------------------===//
// Backward ops (WeftGradOps.td) with explicit result types
//===----------------------------------------------------------------------===//

LogicalResult ScatterAddOp::verify() {
  RankedTensorType indices = getIndices().getType();
  RankedTensorType updates = getUpdates().getType();
  RankedTensorType result = getType();
  if (failed(verifyStatic(*this, indices, "indices")) ||
      failed(verifyStatic(*this, updates, "updates")) ||
      failed(verifyStatic(*this, result, "result")))
    return failure();
  if (updates.getElementType() != result.getElementType())
    return emitOpError() << "updates and result must have the same element "
                            "type, got "
                         << updates.getElementType() << " and "
                         << result.getElementType();
  int64_t axis = getAxisAttr().getInt();
  if (failed(verifyAxis(*this, axis, result.getRank())))
    return failure();
  SmallVector<int64_t> expected =
      gatheredShape(result.getShape(), indices.getShape(), axis);
  if (updates.getShape() != ArrayRef<int64_t>(expected))
    return emitOpError() << "updates must have the shape gathering " << indices
                         << " along axis " << axis << " from " << result
                         << " gives, got " << updates;
  return success();
}

/// The window of a conv or pool gradient: `grad` must have the shape of the
/// forward result computed from `input` (the forward op's input shape):
/// [N, channels, pooledSize per spatial dim].
static LogicalResult
verifyWindowGrad(Operation *op, RankedTensorType input, RankedTensorType grad,
                 int64_t channels, ArrayRef<int64_t> kernel,
                 ArrayRef<int64_t> strides, ArrayRef<int64_t> pads,
                 ArrayRef<int64_t> dilations, bool ceilMode) {
  if (failed(verifyStatic(op, input, "input")) ||
      failed(verifyStatic(op, grad, "grad")))
    return failure();
  if (input.getRank() < 3 || grad.getRank() != input.getRank())
    return op->emitOpError() << "needs NC... tensors of one rank >= 3, got "
                             << input << " and gradient " << grad;
  size_t spatial = input.getRank() - 2;
  if (kernel.size() != spatial || strides.size() != spatial ||
      dilations.size() != spatial || pads.size() != 2 * spatial)
    return op->emitOpError()
           << "needs " << spatial << " kernel dims, strides and dilations and "
           << 2 * spatial << " pads, got " << kernel.size() << ", "
           << strides.size() << ", " << dilations.size() << " and "
           << pads.size();
  SmallVector<int64_t> expected{input.getDimSize(0), channels};
  for (size_t i = 0; i < spatial; ++i) {
    int64_t out =
        pooledSize(input.getDimSize(i + 2), kernel[i], strides[i], pads[i],
                   pads[spatial + i], dilations[i], ceilMode);
    if (out < 1)
      return op->emitOpError()
             << "window does not fit spatial dim " << i << " of " << input;
    expected.push_back(out);
  }
  if (grad.getShape() != ArrayRef<int64_t>(expected))
    return op->emitOpError()
           << "gradient " << grad << " does not have the forward result's "
           << "shape [" << ArrayRef<int64_t>(expected) << "] for input "
           << input;
  return success();
}

/// weft.conv's operand rules for the gradients: input [N, C, ...], weight
/// [M, C/group, K...], grad [N, M, out...].
static LogicalResult
verifyConvGrad(Operation *op, RankedTensorType input, RankedTensorType weight,
               RankedTensorType grad, int64_t group, ArrayRef<int64_t> strides,
               ArrayRef<int64_t> pads, ArrayRef<int64_t> dilations) {
  if (failed(verifyStatic(op, weight, "weight")))
    return failure();
  Type element = input.getElementType();
  if (weight.getElementType() != element || grad.getElementType() != element)
    return op->emitOpError() << "input, weight and gradient must have one "
                                "element type, got "
                             << input << ", " << weight << " and " << grad;
  if (group < 1)
    return op->emitOpError() << "group must be >= 1, got " << group;
  if (weight.getRank() != input.getRank() || input.getRank() < 3)
    return op->emitOpError()
           << "weight " << weight
           << " must have the input's rank (>= 3), input " << input;
  int64_t outChannels = weight.getDimSize(0);
  if (weight.getDimSize(1) * group != input.getDimSize(1) ||
      outChannels % group != 0)
    return op->emitOpError() << "weight " << weight << " does not fit input "
                             << input << " with group " << group;
  return verifyWindowGrad(op, input, grad, outChannels,
                          weight.getShape().drop_front(2), strides, pads,
                          dilations, /*ceilMode=*/false);
}

LogicalResult ConvGradInputOp::verify() {
  return verifyConvGrad(*this, getType(), getWeight().getType(),
                        getGrad().getType(), getGroup(), getStrides(),
                        getPads(), getDilations());
}

LogicalResult ConvGradWeightOp::verify() {
  return verifyConvGrad(*this, getInput().getType(), getType(),
                        getGrad().getType(), getGroup(), getStrides(),
                        getPads(), getDilations());
}

LogicalResult AvgPoolGradOp::verify() {
  RankedTensorType input = getType(), grad = getGrad().getType();
  if (input.getElementType() != grad.getElementType())
    return emitOpError() << "gradient and result must have the same element "
                            "type, got "
                         << grad.getElementType() << " and "
                         << input.getElementType();
  if (input.getRank() < 3)
    return emitOpError() << "result must have rank >= 3, got " << input;
  SmallVector<int64_t> ones(input.getRank() - 2, 1);
  return verifyWindowGrad(*this, input, grad, input.getDimSize(1),
                          getKernelShape(), getStrides(), getPads(), ones,
                          getCeilMode());
}

LogicalResult SliceGradOp::verify() {
  return verifySliceWindow(*this, getType(), getGrad().getType(), getStarts(),
                           getSteps());
}

LogicalResult AllReduceStartOp::verify() {
  if (getInput().getType() != getPending().getType())
    return emitOpError() << "result type " << getPending().getType()
                         << " differs from the operand's "
                         << getInput().getType();
  if (getReduction() > 3)
    return emitOpError() << "reduction must be 0 (sum), 1 (max), 2 (min) or "
                            "3 (avg), got "
                         << getReduction();
  return success();
}

/// The size of the group over `axes` of the grid `op` names, or failure
/// (reported) for a grid that is not one or an axis it does not have.
static FailureOr<int64_t> startGroupSize(Operation *op,
                                         FlatSymbolRefAttr gridName,
                                         ArrayRef<int16_t> axes) {
  auto grid = SymbolTable::lookupNearestSymbolFrom<shard::GridOp>(op, gridName);
  if (!grid)
    return op->emitOpError()
           << "names " << gridName << ", which is not a shard.grid";
  int64_t g = 1;
  ArrayRef<int64_t> shape = grid.getShape();
  for (int16_t a : axes) {
    if (a < 0 || a >= grid.getRank())
      return op->emitOpError()
             << "grid axis " << a << " is not an axis of " << gridName
             << " (rank " << grid.getRank() << ")";
    g *= shape[a];
  }
  return g;
}

LogicalResult AllGatherStartOp::verify() {
  auto in = cast<RankedTensorType>(getInput().getType());
  auto out = cast<RankedTensorType>(getPending().getType());
  int64_t axis = getGatherAxis();
  if (axis < 0 || axis >= in.getRank())
    return emitOpError() << "gather_axis " << axis << " is not a dim of " << in;
  FailureOr<int64_t> g = startGroupSize(*this, getGridAttr(), getGridAxes());
  if (failed(g))
    return failure();
  SmallVector<int64_t> joined(in.getShape());
  joined[axis] *= *g;
  if (out.getElementType() != in.getElementType() ||
      out.getShape() != ArrayRef<int64_t>(joined))
    return emitOpError() << "result type " << out << " is not " << *g
                         << " blocks of " << in << " joined along dim " << axis;
  return success();
}

LogicalResult ReduceScatterStartOp::verify() {
  auto in = cast<RankedTensorType>(getInput().getType());
  auto out = cast<RankedTensorType>(getPending().getType());
  if (getReduction() > 3)
    return emitOpError() << "reduction must be 0 (sum), 1 (max), 2 (min) or "
                            "3 (avg), got "
                         << getReduction();
  int64_t axis = getScatterAxis();
  if (axis < 0 || axis >= in.getRank())
    return emitOpError() << "scatter_axis " << axis << " is not a dim of "
                         << in;
  FailureOr<int64_t> g = startGroupSize(*this, getGridAttr(), getGridAxes());
  if (failed(g))
    return failure();
  SmallVector<int64_t> block(in.getShape());
  if (block[axis] % *g != 0)
    return emitOpError() << "dim " << axis << " of " << in
                         << " does not split into " << *g << " blocks";
  block[axis] /= *g;
  if (out.getElementType() != in.getElementType() ||
      out.getShape() != ArrayRef<int64_t>(block))
    return emitOpError() << "result type " << out << " is not one of " << *g
                         << " blocks of " << in << " along dim " << axis;
  return success();
}

/// A point-to-point op's group: `peer` must be one of its indices.
template <typename OpT> static LogicalResult verifyPeer(OpT op) {
  auto grid =
      SymbolTable::lookupNearestSymbolFrom<shard::GridOp>(op, op.getGridAttr());
  if (!grid)
    return op.emitOpError()
           << "names " << op.getGridAttr() << ", which is not a shard.grid";
  int64_t g = 1;
  ArrayRef<int64_t> shape = grid.getShape();
  for (int16_t a : op.getGridAxes()) {
    if (a < 0 || a >= grid.getRank())
      return op.emitOpError()
             << "grid axis " << a << " is not an axis of " << op.getGridAttr()
             << " (rank " << grid.getRank() << ")";
    g *= shape[a];
  }
  if (op.getGridAxes().empty())
    return op.emitOpError("needs at least one grid axis");
  int64_t peer = op.getPeerAttr().getInt(), tag = op.getTagAttr().getInt();
  if (peer < 0 || peer >= g)
    return op.emitOpError()
           << "peer " << peer << " is not a group index (the group has " << g
           << " members)";
  if (tag < 0)
    return op.emitOpError() << "tag must be non-negative, got " << tag;
  return success();
}

LogicalResult SendOp::verify() { return verifyPeer(*this); }
LogicalResult RecvOp::verify() { return verifyPeer(*this); }
LogicalResult RecvStartOp::verify() { return verifyPeer(*this); }
LogicalResult SendStartOp::verify() { return verifyPeer(*this); }

LogicalResult CommWaitOp::verify() {
  Operation *start = getPending().getDefiningOp();
  std::optional<int64_t> slot;
  if (auto reduce = dyn_cast_or_null<AllReduceStartOp>(start))
    slot = reduce.getSlot();
  else if (auto gather = dyn_cast_or_null<AllGatherStartOp>(start))
    slot = gather.getSlot();
  else if (auto scatter = dyn_cast_or_null<ReduceScatterStartOp>(start))
    slot = scatter.getSlot();
  else if (auto send = dyn_cast_or_null<SendStartOp>(start))
    slot = send.getSlot();
  else if (auto recv = dyn_cast_or_null<RecvStartOp>(start))
    slot = recv.getSlot();
  if (!slot)
    return emitOpError("waits for a value no weft.all_reduce_start, "
                       "weft.all_gather_start, weft.reduce_scatter_start, "
                       "weft.send_start or weft.recv_start produced");
  if (*slot != static_cast<int64_t>(getSlot()))
    return emitOpError() << "waits on slot " << getSlot()
                         << " for a collective started on slot " << *slot;
  return success();
}

LogicalResult MeshOffsetOp::verify() {
  if (getBlock() < 1)
    return emitOpError() << "block must be positive, got " << getBlock();
  if (getGridAxes().empty())
    return emitOpError("needs at least one grid axis");
  auto grid =
      SymbolTable::lookupNearestSymbolFrom<shard::GridOp>(*this, getGridAttr());
  if (!grid)
    return emitOpError() << "names " << getGridAttr()
                         << ", which is not a shard.grid";
  for (int16_t axis : getGridAxes())
    if (axis < 0 || axis >= grid.getRank())
      return emitOpError() << "grid axis " << axis << " is not an axis of "
                           << getGridAttr() << " (rank " << grid.getRank()
                           << ")";
  return success();
}
