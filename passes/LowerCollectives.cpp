//===- LowerCollectives.cpp - Collectives and splits for the runtime ------===//
#include "passes/LowerCollectives.h"

#include "weft/runtime/KernelABI.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace weft;
using namespace weft::lowering;

/// The runtime kernel of a `shard` collective or weft.all_reduce_start
/// (KernelABI.h), with its attributes; failure (diagnosed) for a reduction
/// the runtime lacks; none for any other op.
std::optional<LogicalResult>
weft::lowering::collectiveKernel(Operation *op, StringRef &kernel,
                                 SmallVectorImpl<int64_t> &attrs) {
  bool unsupported = false;
  auto appendAxes = [&](ArrayRef<int16_t> axes) {
    attrs.push_back(axes.size());
    attrs.append(axes.begin(), axes.end());
  };
  auto reductionCode = [&](shard::ReductionKind kind) -> int64_t {
    std::optional<int64_t> code = runtimeReductionCode(kind);
    if (!code) {
      op->emitError("reduction ")
          << shard::stringifyReductionKind(kind)
          << " has no runtime collective (sum, max, min and avg do)";
      unsupported = true;
    }
    return code.value_or(0);
  };
  if (auto allReduce = dyn_cast<shard::AllReduceOp>(op)) {
    kernel = "all_reduce";
    attrs.push_back(reductionCode(allReduce.getReduction()));
    appendAxes(allReduce.getGridAxes());
    return failure(unsupported);
  }
  if (auto allGather = dyn_cast<shard::AllGatherOp>(op)) {
    kernel = "all_gather";
    attrs.push_back(allGather.getGatherAxis().getSExtValue());
    appendAxes(allGather.getGridAxes());
    return failure(unsupported);
  }
  if (auto toAll = dyn_cast<shard::AllToAllOp>(op)) {
    kernel = "all_to_all";
    attrs.push_back(toAll.getSplitAxis().getSExtValue());
    attrs.push_back(toAll.getConcatAxis().getSExtValue());
    appendAxes(toAll.getGridAxes());
    return failure(unsupported);
  }
  if (auto scatter = dyn_cast<shard::ReduceScatterOp>(op)) {
    kernel = "reduce_scatter";
    attrs.push_back(reductionCode(scatter.getReduction()));
    attrs.push_back(scatter.getScatterAxis().getSExtValue());
    appendAxes(scatter.getGridAxes());
    return failure(unsupported);
  }
  if (auto start = dyn_cast<AllReduceStartOp>(op)) {
    kernel = "all_reduce_start";
    attrs.push_back(start.getSlot());
    attrs.push_back(start.getReduction());
    appendAxes(start.getGridAxes());
    return failure(unsupported);
  }
  if (auto start = dyn_cast<AllGatherStartOp>(op)) {
    kernel = "all_gather_start";
    attrs.push_back(start.getSlot());
    attrs.push_back(start.getGatherAxis());
    appendAxes(start.getGridAxes());
    return success();
  }
  if (auto start = dyn_cast<ReduceScatterStartOp>(op)) {
    kernel = "reduce_scatter_start";
    attrs.push_back(start.getSlot());
    attrs.push_back(start.getReduction());
    attrs.push_back(start.getScatterAxis());
    appendAxes(start.getGridAxes());
    return success();
  }
  if (auto send = dyn_cast<SendOp>(op)) {
    kernel = "send";
    attrs.append({send.getPeerAttr().getInt(), send.getTagAttr().getInt()});
    appendAxes(send.getGridAxes());
    return success();
  }
  if (auto recv = dyn_cast<RecvOp>(op)) {
    kernel = "recv";
    attrs.append({recv.getPeerAttr().getInt(), recv.getTagAttr().getInt()});
    appendAxes(recv.getGridAxes());
    return success();
  }
  if (auto recv = dyn_cast<RecvStartOp>(op)) {
    kernel = "recv_start";
    attrs.append({recv.getSlotAttr().getInt(), recv.getPeerAttr().getInt(),
                  recv.getTagAttr().getInt()});
    appendAxes(recv.getGridAxes());
    return success();
  }
  if (auto offset = dyn_cast<MeshOffsetOp>(op)) {
    kernel = "mesh_offset";
    attrs.push_back(offset.getBlock());
    appendAxes(offset.getGridAxes());
    return success();
  }
  if (auto slice = dyn_cast<shard::AllSliceOp>(op)) {
    kernel = "all_slice";
    attrs.push_back(slice.getSliceAxis().getSExtValue());
    appendAxes(slice.getGridAxes());
    return failure(unsupported);
  }
  return std::nullopt;
}

/// A `weft.shard` annotation as the runtime reads it: {dim, mesh_axes} of
/// the one split dimension; none for a partial or multiply split tensor.
std::optional<NamedAttribute>
weft::lowering::runtimeShard(Builder &b, Attribute attr, int64_t rank) {
  FailureOr<TensorSharding> s = shardingFromAttr(attr, rank);
  if (failed(s) || !s->partial.empty())
    return std::nullopt;
  std::optional<NamedAttribute> slot;
  for (auto [d, dim] : llvm::enumerate(s->dims)) {
    if (dim.empty())
      continue;
    if (slot || !dim.outerAxes.empty())
      return std::nullopt;
    SmallVector<int64_t> axes64(dim.axes.begin(), dim.axes.end());
    SmallVector<NamedAttribute> fields = {
        b.getNamedAttr("dim", b.getI64IntegerAttr(d)),
        b.getNamedAttr("mesh_axes", b.getI64ArrayAttr(axes64))};
    if (dim.outer != 1)
      fields.push_back(b.getNamedAttr("outer", b.getI64IntegerAttr(dim.outer)));
    slot = b.getNamedAttr("shard", b.getDictionaryAttr(fields));
  }
  return slot;
}

/// An input's splits as the runtime feeds them (ModelABI.h): "shard" along
/// one dim (no "outer" chunks) or, with data and sequence parallelism,
/// "shard" along its rows (dim 0) and "sequence_shard" along its sequence
/// (dim 1); none for any other split.
std::optional<SmallVector<NamedAttribute, 2>>
weft::lowering::inputShards(Builder &b, Attribute attr, int64_t rank) {
  FailureOr<TensorSharding> s = shardingFromAttr(attr, rank);
  if (failed(s))
    return std::nullopt;
  SmallVector<std::pair<StringRef, TensorSharding>, 2> parts;
  if (rank >= 2 && !s->dims[0].empty() && !s->dims[1].empty()) {
    TensorSharding sequence = TensorSharding::replicated(rank);
    sequence.dims[1] = s->dims[1];
    s->dims[1] = DimSharding();
    parts = {{"shard", *s}, {"sequence_shard", sequence}};
  } else {
    parts = {{"shard", *s}};
  }
  SmallVector<NamedAttribute, 2> out;
  for (auto &[key, part] : parts) {
    std::optional<NamedAttribute> slot =
        runtimeShard(b, shardingToAttr(b, part), rank);
    if (!slot || cast<DictionaryAttr>(slot->getValue()).get("outer"))
      return std::nullopt;
    out.push_back(b.getNamedAttr(key, slot->getValue()));
  }
  return out;
}

void PieceBuckets::find(Block &block) {
  auto rank2 = [](Value v) {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    return t && t.hasStaticShape() && t.getRank() == 2;
  };
  // The one block of each piece is one row of the whole: [1, K].
  auto oneRow = [&](Value v) {
    return rank2(v) && cast<RankedTensorType>(v.getType()).getDimSize(0) == 1;
  };
  for (Operation &op : block) {
    std::optional<int64_t> scatterAxis, gatherAxis;
    if (auto rs = dyn_cast<shard::ReduceScatterOp>(op))
      scatterAxis = rs.getScatterAxis().getSExtValue();
    else if (auto rs = dyn_cast<ReduceScatterStartOp>(op))
      scatterAxis = rs.getScatterAxis();
    else if (auto ag = dyn_cast<shard::AllGatherOp>(op))
      gatherAxis = ag.getGatherAxis().getSExtValue();
    else if (auto ag = dyn_cast<AllGatherStartOp>(op))
      gatherAxis = ag.getGatherAxis();
    if (scatterAxis == 0) {
      Value in = op.getOperand(0);
      auto concat = in.getDefiningOp<ConcatOp>();
      if (concat && concat.getAxis() == 1 && in.hasOneUse() && rank2(in) &&
          oneRow(op.getResult(0)) && concat->getBlock() == &block &&
          llvm::all_of(concat.getInputs(), rank2)) {
        packedBy[&op] = concat;
        folded.insert(concat);
      }
    }
    if (gatherAxis == 0 && oneRow(op.getOperand(0)) && rank2(op.getResult(0))) {
      Value out = op.getResult(0);
      if (isa<AllGatherStartOp>(op)) {
        auto wait = out.hasOneUse()
                        ? dyn_cast<CommWaitOp>(*out.getUsers().begin())
                        : CommWaitOp();
        out = wait ? wait.getResult() : Value();
      }
      auto split = out && out.hasOneUse()
                       ? dyn_cast<SplitOp>(*out.getUsers().begin())
                       : SplitOp();
      if (split && split.getAxis() == 1 && split->getBlock() == &block) {
        unpackedBy[&op] = split;
        folded.insert(split);
      }
    }
  }
}
