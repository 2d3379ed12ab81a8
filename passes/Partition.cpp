//===- Partition.cpp - One rank's program from the global one -------------===//
//
// Walks @main once, in order. Every value of the global program gets a
// local value (this rank's block) and the sharding it has; each op asks its
// sharding rule (dialects/weft/ShardingRules.h) what its operands must be,
// has them resharded, and is cloned with local result types. The new body
// is built in a fresh function that replaces @main at the end, so the rules
// always read global shapes from the untouched original.
//
//===----------------------------------------------------------------------===//
#include "passes/Partitioner.h"
#include "passes/Passes.h"

#include "dialects/weft/GradientRules.h"
#include "dialects/weft/Sharding.h"
#include "dialects/weft/ShardingRules.h"
#include "passes/DropoutPositions.h"
#include "passes/ReduceScatters.h"
#include "passes/Reshard.h"

#include "mlir/IR/IRMapping.h"

namespace weft {
#define GEN_PASS_DEF_PARTITION
#include "passes/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;
using namespace weft::partition;

FailureOr<RankedTensorType>
Partitioner::local(Value value, const TensorSharding &s, Operation *where) {
  std::string error;
  FailureOr<RankedTensorType> t =
      localType(cast<RankedTensorType>(value.getType()), s, mesh, error);
  if (failed(t))
    return where->emitError("cannot split ")
           << value.getType() << ": " << error;
  return t;
}

/// Whether each rank can broadcast its block of `bcast`'s input, sharded as
/// `in` (partial sums aside), to its block of the result sharded as `to`:
/// `to` splits only dims the broadcast expands from 1, or that the input
/// has split the same way.
static bool broadcastsLocally(BroadcastToOp bcast, const TensorSharding &in,
                              const TensorSharding &to) {
  auto inType = bcast.getInput().getType();
  int64_t offset = bcast.getType().getRank() - inType.getRank();
  for (auto [d, axes] : llvm::enumerate(to.dims)) {
    int64_t id = static_cast<int64_t>(d) - offset;
    if (!axes.empty() && id >= 0 && inType.getDimSize(id) != 1)
      return false;
    if (id >= 0 && !in.dims[id].empty() && in.dims[id] != axes)
      return false;
  }
  return true;
}

/// The dims (from, to) when `want` moves one plain split of `have` to a
/// dim `have` leaves whole, every other dim alike.
static std::optional<std::pair<int64_t, int64_t>>
movedSplit(ArrayRef<DimSharding> have, ArrayRef<DimSharding> want) {
  std::optional<int64_t> from, to;
  for (size_t d = 0; d < have.size(); ++d) {
    if (have[d] == want[d])
      continue;
    const bool plain = have[d].outer == 1 && want[d].outer == 1 &&
                       have[d].outerAxes.empty() && want[d].outerAxes.empty();
    if (plain && !have[d].empty() && want[d].empty() && !from)
      from = d;
    else if (plain && have[d].empty() && !want[d].empty() && !to)
      to = d;
    else
      return std::nullopt;
  }
  if (!from || !to || have[*from].axes != want[*to].axes)
    return std::nullopt;
  return std::make_pair(*from, *to);
}

/// Rebuilds, at the local shape, a value that is whole on every rank but
/// only needed split: a broadcast of something whole along the split dims,
/// or a splat constant. Anything else would need a slice by mesh
/// coordinate, which this partitioner does not emit.
FailureOr<Value> Partitioner::rebuildSplit(Value value, Value whole,
                                           const TensorSharding &to,
                                           Operation *user) {
  FailureOr<RankedTensorType> type = local(value, to, user);
  if (failed(type))
    return failure();
  Operation *def = value.getDefiningOp();
  if (auto splat = dyn_cast_or_null<ConstantOp>(def)) {
    auto dense = dyn_cast<SplatElementsAttr>(splat.getValue());
    if (dense)
      return Value(ConstantOp::create(
          b, splat.getLoc(), *type,
          SplatElementsAttr::get(*type, dense.getSplatValue<Attribute>())));
  }
  if (auto bcast = dyn_cast_or_null<BroadcastToOp>(def)) {
    const LocalValue &in = values[bcast.getInput()];
    if (in.sharding.partial.empty() &&
        broadcastsLocally(bcast, in.sharding, to))
      return Value(BroadcastToOp::create(b, bcast.getLoc(), *type, in.value));
  }
  // Otherwise each rank cuts its block out of `whole` (no communication).
  Value v = whole;
  for (auto [d, dim] : llvm::enumerate(to.dims))
    if (!dim.empty())
      v = allSlice(v, d, dim, value.getLoc());
  return v;
}

Value Partitioner::allSlice(Value whole, int64_t dim, const DimSharding &split,
                            Location loc) {
  return sliceDim(b, mesh, whole, dim, split, loc);
}

Value Partitioner::allGather(Value local, int64_t dim, const DimSharding &split,
                             Location loc) {
  ++gathers;
  return gatherDim(b, mesh, local, dim, split, loc);
}

Value Partitioner::gatherPart(Value local, int64_t dim, int64_t localOuter,
                              bool outerPart, const MeshAxes &axes,
                              Location loc) {
  ++gathers;
  return gatherDimPart(b, mesh, local, dim, localOuter, outerPart, axes, loc);
}

/// A reshape or transpose of a partial sum, wanted complete (its dims as
/// they are): its input is completed instead, once for all its users (the
/// gradient of a vocabulary-parallel head feeds a product as [B, S, H] and
/// a weight gradient as [B * S, H]: one all_reduce, not two), and the
/// local op is applied again to the sum. Sets `value`'s local value;
/// nullopt where this does not apply, a null value on failure.
std::optional<Value> Partitioner::completeSource(Value value,
                                                 const TensorSharding &to,
                                                 Operation *user) {
  Operation *def = value.getDefiningOp();
  LocalValue cur = values[value];
  if (!isa_and_nonnull<ReshapeOp, TransposeOp>(def) ||
      cur.sharding.partial.empty() || !to.partial.empty() ||
      to.dims != cur.sharding.dims)
    return std::nullopt;
  Operation *local = cur.value.getDefiningOp();
  if (!isa_and_nonnull<ReshapeOp, TransposeOp>(local))
    return std::nullopt;
  Value partial = local->getOperand(0);
  Value input = def->getOperand(0);
  Value sum = completed.lookup(partial);
  if (!sum) {
    LocalValue in = values[input];
    if (in.value != partial || in.sharding.partial != cur.sharding.partial)
      return std::nullopt;
    TensorSharding whole = in.sharding;
    whole.partial.clear();
    FailureOr<Value> done = reshard(input, whole, user);
    if (failed(done))
      return Value();
    sum = *done;
  }
  IRMapping mapping;
  mapping.map(partial, sum);
  Value moved = b.clone(*local, mapping)->getResult(0);
  TensorSharding complete = cur.sharding;
  complete.partial.clear();
  values[value] = {moved, complete};
  return moved;
}

FailureOr<Value> Partitioner::reshard(Value value, const TensorSharding &to,
                                      Operation *user) {
  LocalValue &cur = values[value];
  if (!cur.value)
    return user->emitError("uses a value the partitioner has not seen");
  if (cur.sharding == to)
    return cur.value;
  auto key = std::make_pair(value.getAsOpaquePointer(), to.str());
  if (Value cached = reshards[key])
    return cached;
  // A gathered copy serves the users of its pass only: the backward gathers
  // again rather than keep the forward's copy alive until then (Megatron's
  // sequence parallelism gathers the norm's output again for the weight
  // gradient; keeping it would cost more memory than no split at all).
  const bool backward = user->hasAttr("weft.backward");
  auto passKey = std::make_pair(
      key.first, key.second + (backward ? " in backward" : " in forward"));
  if (Value cached = reshards[passKey])
    return cached;
  const int64_t gathersBefore = gathers;
  if (std::optional<Value> moved = completeSource(value, to, user)) {
    if (!*moved)
      return failure();
    return reshard(value, to, user);
  }
  // A broadcast of a partial sum, wanted complete: its (small) input is
  // summed, then each rank broadcasts its own block, rather than summing
  // the broadcast (the gradient of a mean over a split batch: an all-reduce
  // of [1, C] instead of a reduce-scatter of [N, C]).
  if (auto bcast = value.getDefiningOp<BroadcastToOp>()) {
    TensorSharding in = values[bcast.getInput()].sharding;
    if (!in.partial.empty() && in.partial == cur.sharding.partial &&
        to.partial.empty() && broadcastsLocally(bcast, in, to)) {
      in.partial.clear();
      if (failed(reshard(bcast.getInput(), in, user)))
        return failure();
      FailureOr<Value> rebuilt = rebuildSplit(value, Value(), to, user);
      if (failed(rebuilt))
        return failure();
      reshards[key] = *rebuilt;
      return *rebuilt;
    }
  }
  Value v = cur.value;
  TensorSharding s = cur.sharding;
  if (std::optional<LocalValue> split = splitScatter(value, cur, to)) {
    v = split->value;
    s = split->sharding;
  }
  Location loc = value.getLoc();
  for (MeshAxis axis : to.partial)
    if (!llvm::is_contained(s.partial, axis))
      return user->emitError("cannot make a partial sum over mesh axis ")
             << mesh.axisName(axis) << " of a complete value";
  // Partial sums over the axes a whole dim is wanted split over: one
  // reduce_scatter adds them up and leaves each rank its block. Partial
  // axes the split does not take are summed first (a ZeRO-split gradient
  // of a weight replicated over tp: all_reduce over tp, then
  // reduce_scatter over dp).
  if (!s.partial.empty() && to.partial.empty()) {
    // The block a dim already has may split further (the partial axes
    // minor to its own).
    int scatterDim = -1;
    MeshAxes scatterAxes;
    for (auto [d, want] : llvm::enumerate(to.dims)) {
      const DimSharding &have = s.dims[d];
      if (want.outer != 1 || have.outer != 1 ||
          want.axes.size() <= have.axes.size() ||
          ArrayRef<MeshAxis>(want.axes).take_front(have.axes.size()) !=
              ArrayRef<MeshAxis>(have.axes))
        continue;
      MeshAxes extra(want.axes.begin() + have.axes.size(), want.axes.end());
      if (llvm::all_of(extra, [&](MeshAxis a) {
            return llvm::is_contained(s.partial, a);
          })) {
        scatterDim = d;
        scatterAxes = extra;
      }
    }
    bool othersMatch = true;
    for (auto [d, want] : llvm::enumerate(to.dims))
      if (static_cast<int>(d) != scatterDim && want != s.dims[d])
        othersMatch = false;
    if (scatterDim >= 0 && othersMatch) {
      FailureOr<RankedTensorType> t = local(value, to, user);
      if (failed(t))
        return failure();
      MeshAxes first;
      for (MeshAxis a : s.partial)
        if (!llvm::is_contained(scatterAxes, a))
          first.push_back(a);
      if (!first.empty())
        v = shard::AllReduceOp::create(b, loc, v.getType(), mesh.symbol, first,
                                       v, shard::ReductionKind::Sum);
      auto axes = b.getDenseI16ArrayAttr(scatterAxes);
      v = shard::ReduceScatterOp::create(
          b, loc, *t, FlatSymbolRefAttr::get(b.getContext(), mesh.symbol), axes,
          v,
          shard::ReductionKindAttr::get(b.getContext(),
                                        shard::ReductionKind::Sum),
          b.getIndexAttr(scatterDim));
      reshards[key] = v;
      return v;
    }
  }
  // Add up the partial sums the user does not take.
  MeshAxes sum;
  for (MeshAxis axis : s.partial)
    if (!llvm::is_contained(to.partial, axis))
      sum.push_back(axis);
  if (!sum.empty()) {
    v = shard::AllReduceOp::create(b, loc, v.getType(), mesh.symbol, sum, v,
                                   shard::ReductionKind::Sum);
    s.partial = to.partial;
  }
  // A split that moves from one dim to another over the same axes, the
  // rest alike (a cross-attention's scores gradient made with the keys
  // split, wanted split by queries): one all_to_all sends each rank's
  // blocks where they belong, 1/g of what gathering the one dim and
  // cutting the other moves, without a whole copy.
  if (std::optional<std::pair<int64_t, int64_t>> move =
          movedSplit(s.dims, to.dims)) {
    FailureOr<RankedTensorType> t = local(value, to, user);
    if (failed(t))
      return failure();
    const DimSharding &from = s.dims[move->first];
    v = shard::AllToAllOp::create(
        b, loc, *t, FlatSymbolRefAttr::get(b.getContext(), mesh.symbol),
        b.getDenseI16ArrayAttr(from.axes), v, b.getIndexAttr(move->second),
        b.getIndexAttr(move->first));
    s.dims[move->second] = from;
    s.dims[move->first].clear();
  }
  // Join split dims the user needs whole, or split over fewer axes (the
  // leading ones: a ZeRO-3 parameter split over [tp, dp] gathered over dp
  // for a tensor-parallel product), before cutting any: a split that moves
  // from one dim to another over the same axes (keys split, wanted split
  // by queries) must gather first; cut first, the ranks' blocks of the
  // gathered dim would belong to different blocks of the cut one.
  const bool splitElsewhere = !s.isReplicated();
  for (auto [d, dim] : llvm::enumerate(s.dims)) {
    const DimSharding &want = to.dims[d];
    if (dim == want)
      continue;
    if (!want.empty() && dim.outer == 1 && want.outer == 1 &&
        want.axes.size() < dim.axes.size() &&
        ArrayRef<MeshAxis>(dim.axes).take_front(want.axes.size()) ==
            ArrayRef<MeshAxis>(want.axes)) {
      DimSharding minor(
          MeshAxes(dim.axes.begin() + want.axes.size(), dim.axes.end()));
      v = allGather(v, d, minor, loc);
      dim = want;
      continue;
    }
    // A dim split twice (its outer factor and its rest) wanted split by
    // one part only: the other is gathered (rows of [sequence, batch]
    // split over [tp, dp], wanted over dp alone for a tensor-parallel
    // product, gather the sequence over tp).
    if (dim.outer != 1 && !dim.outerAxes.empty()) {
      int64_t localOuter = dim.outer / mesh.groupSize(dim.outerAxes);
      if (!want.empty() && want.outer == dim.outer && want.axes == dim.axes &&
          want.outerAxes.empty()) {
        v = gatherPart(v, d, localOuter, /*outerPart=*/true, dim.outerAxes,
                       loc);
        dim = want;
        continue;
      }
      if (want.outer == 1 && want.axes == dim.outerAxes) {
        v = gatherPart(v, d, localOuter, /*outerPart=*/false, dim.axes, loc);
        dim = want;
        continue;
      }
    }
    // Split over more axes: cut below (no communication).
    if (dim.outer == 1 && want.outer == 1 && !dim.empty() &&
        want.axes.size() > dim.axes.size() &&
        ArrayRef<MeshAxis>(want.axes).take_front(dim.axes.size()) ==
            ArrayRef<MeshAxis>(dim.axes))
      continue;
    if (!dim.empty()) {
      v = allGather(v, d, dim, loc);
      dim.clear();
    }
  }
  // Then cut the dims wanted split (finer) out of the blocks each rank has.
  bool needsSplit = false;
  for (auto [d, dim] : llvm::enumerate(s.dims)) {
    const DimSharding &want = to.dims[d];
    if (dim == want)
      continue;
    // Split over more axes (the trailing ones: a tensor-parallel parameter
    // whose ZeRO optimizer state is split over [tp, dp]): each rank cuts
    // its block out of the one it has, without communication.
    if (dim.outer == 1 && want.outer == 1 && !dim.empty() &&
        want.axes.size() > dim.axes.size() &&
        ArrayRef<MeshAxis>(want.axes).take_front(dim.axes.size()) ==
            ArrayRef<MeshAxis>(dim.axes)) {
      MeshAxes minor(want.axes.begin() + dim.axes.size(), want.axes.end());
      auto t = cast<RankedTensorType>(v.getType());
      SmallVector<int64_t> shape(t.getShape());
      shape[d] /= mesh.groupSize(minor);
      v = shard::AllSliceOp::create(b, loc, t.clone(shape), v, mesh.symbol,
                                    minor, d);
      dim = want;
      continue;
    }
    // A whole dim of a value split elsewhere (a dp-split target wanted
    // split over tp as well): each rank cuts its block, no communication.
    if (splitElsewhere) {
      v = allSlice(v, d, want, loc);
      dim = want;
      continue;
    }
    needsSplit = true;
  }
  if (needsSplit) {
    if (!s.isReplicated())
      return user->emitError("needs ")
             << value.getType() << " resharded from " << cur.sharding.str()
             << " to " << to.str() << ", which is not supported yet";
    FailureOr<Value> rebuilt = rebuildSplit(value, v, to, user);
    if (failed(rebuilt))
      return failure();
    v = *rebuilt;
  }
  // A parameter split for memory (ZeRO-3) is gathered again at each use,
  // so the whole copy lives only as long as that use.
  bool gatheredParam =
      isa_and_nonnull<ParamOp>(value.getDefiningOp()) &&
      llvm::any_of(cur.sharding.dims,
                   [](const DimSharding &d) { return !d.empty(); });
  if (!gatheredParam)
    reshards[gathers != gathersBefore ? passKey : key] = v;
  // A partial sum made complete stays complete for the users after this
  // one: a linear op on it (a reshape, a scale) would otherwise carry the
  // partial sum on, and its users pay for the same all-reduce again (a batch
  // norm's batch mean feeds the centering, the norm and the running mean).
  if (!cur.sharding.partial.empty() && to.partial.empty() &&
      to.dims == cur.sharding.dims) {
    completed[cur.value] = v;
    values[value] = {v, to};
  }
  return v;
}

LogicalResult Partitioner::partitionOp(Operation *op) {
  Location loc = op->getLoc();
  if (auto param = dyn_cast<ParamOp>(op)) {
    auto type = param.getType();
    TensorSharding s = TensorSharding::replicated(type.getRank());
    if (Attribute attr = param->getAttr("weft.shard")) {
      FailureOr<TensorSharding> parsed = shardingFromAttr(attr, type.getRank());
      if (failed(parsed))
        return param.emitError("has a malformed weft.shard attribute");
      s = *parsed;
    }
    FailureOr<RankedTensorType> t = local(param, s, op);
    if (failed(t))
      return failure();
    Operation *clone = b.clone(*op);
    clone->getResult(0).setType(*t);
    values[param] = {clone->getResult(0), s};
    paramShardings[param.getName()] = s;
    return success();
  }
  if (isa<ConstantOp>(op)) {
    Operation *clone = b.clone(*op);
    values[op->getResult(0)] = {
        clone->getResult(0),
        TensorSharding::replicated(
            cast<RankedTensorType>(op->getResult(0).getType()).getRank())};
    return success();
  }
  if (auto update = dyn_cast<ParamUpdateOp>(op)) {
    auto it = paramShardings.find(update.getName());
    TensorSharding s =
        it != paramShardings.end()
            ? it->second
            : TensorSharding::replicated(update.getValue().getType().getRank());
    FailureOr<Value> v = reshard(update.getValue(), s, op);
    if (failed(v))
      return failure();
    ParamUpdateOp::create(b, loc, update.getName(), *v);
    return success();
  }

  SmallVector<TensorSharding, 2> in;
  for (Value operand : op->getOperands())
    in.push_back(values[operand].sharding);
  // A parameter split over ZeRO's axes for storage computes gathered over
  // them; only its optimizer update works on the stored shard.
  if (!isa<AdamWUpdateOp, SgdUpdateOp>(op))
    for (auto [i, operand] : llvm::enumerate(op->getOperands()))
      if (auto param = operand.getDefiningOp<ParamOp>())
        if (auto zero =
                param->getAttrOfType<DenseI16ArrayAttr>("weft.zero_axes"))
          for (DimSharding &dim : in[i].dims)
            llvm::erase_if(dim.axes, [&](MeshAxis a) {
              return llvm::is_contained(zero.asArrayRef(), a);
            });
  std::string error;
  FailureOr<ShardingPlan> plan = planSharding(op, in, mesh, error);
  if (failed(plan))
    return op->emitError(error);
  IRMapping mapping;
  for (auto [operand, target] : llvm::zip(op->getOperands(), plan->operands)) {
    FailureOr<Value> v = reshard(operand, target, op);
    if (failed(v))
      return failure();
    mapping.map(operand, *v);
  }
  if (plan->fixup == ShardingPlan::Fixup::BlockGather ||
      plan->fixup == ShardingPlan::Fixup::ClassBlocks) {
    FailureOr<SmallVector<Value>> results = expandLookup(op, *plan, mapping);
    if (failed(results))
      return failure();
    for (auto [i, r] : llvm::enumerate(*results))
      values[op->getResult(i)] = {r, plan->results[i]};
    if (auto gather = dyn_cast<GatherOp>(op))
      return scatterLookup(gather, in[1], *plan);
    return success();
  }
  if (isa<ScatterAddOp>(op))
    scatterOperands[op] = {mapping.lookup(op->getOperand(0)),
                           mapping.lookup(op->getOperand(1))};
  Operation *clone = b.clone(*op, mapping);
  for (auto [result, s] : llvm::zip(clone->getResults(), plan->results)) {
    FailureOr<RankedTensorType> t =
        local(op->getResult(result.getResultNumber()), s, op);
    if (failed(t))
      return failure();
    result.setType(*t);
  }
  SmallVector<Value> results(clone->getResults());
  if (isa<DropoutOp, RandomOp>(clone)) {
    FailureOr<SmallVector<Value>> local =
        localizeDraws(b, mesh, clone, plan->operands[0]);
    if (failed(local))
      return failure();
    results = *local;
  }
  switch (plan->fixup) {
  case ShardingPlan::Fixup::None:
    break;
  case ShardingPlan::Fixup::Scale:
    for (Value &r : results)
      if (gradient::isFloatTensor(r.getType()))
        r = gradient::mul(b, loc, r,
                          gradient::scalarLike(b, loc, r, plan->scale));
    break;
  case ShardingPlan::Fixup::LocalStarts: {
    // The full-size side of the window: slice's input, slice_grad's result.
    bool isSlice = isa<SliceOp>(op);
    Value full = isSlice ? op->getOperand(0) : op->getResult(0);
    const TensorSharding &split =
        isSlice ? plan->operands[0] : plan->results[0];
    auto shape = cast<RankedTensorType>(full.getType()).getShape();
    auto starts = op->getAttrOfType<DenseI64ArrayAttr>("starts");
    SmallVector<int64_t> local(starts.asArrayRef());
    for (auto [d, dim] : llvm::enumerate(split.dims)) {
      if (dim.empty())
        continue;
      int64_t block = shape[d] / dim.outer;
      int64_t localBlock = block / mesh.groupSize(dim.axes);
      local[d] = (starts[d] / block) * localBlock + starts[d] % block;
    }
    clone->setAttr("starts", b.getDenseI64ArrayAttr(local));
    break;
  }
  case ShardingPlan::Fixup::BlockGather:
  case ShardingPlan::Fixup::ClassBlocks:
    break; // expanded above
  case ShardingPlan::Fixup::CrossEntropyMean: {
    clone->setAttr("reduction", b.getStringAttr("sum"));
    Value count =
        countedLabels(op, mapping.lookup(op->getOperand(1)), plan->countAxes);
    results[0] = gradient::div(b, loc, results[0], count);
    break;
  }
  }
  for (auto [i, r] : llvm::enumerate(results))
    values[op->getResult(i)] = {r, plan->results[i]};
  return success();
}

LogicalResult Partitioner::run() {
  // The new function: local argument types, the same attributes.
  SmallVector<Type> argTypes;
  SmallVector<TensorSharding, 2> argShardings;
  for (BlockArgument arg : global.getArguments()) {
    auto type = cast<RankedTensorType>(arg.getType());
    TensorSharding s = TensorSharding::replicated(type.getRank());
    if (Attribute attr = global.getArgAttr(arg.getArgNumber(), "weft.shard")) {
      FailureOr<TensorSharding> parsed = shardingFromAttr(attr, type.getRank());
      if (failed(parsed))
        return global.emitError("input ")
               << arg.getArgNumber() << " has a malformed weft.shard";
      s = *parsed;
    }
    std::string error;
    FailureOr<RankedTensorType> t = localType(type, s, mesh, error);
    if (failed(t))
      return global.emitError("input ") << arg.getArgNumber() << ": " << error;
    argTypes.push_back(*t);
    argShardings.push_back(s);
  }
  b.setInsertionPoint(global);
  partitioned = func::FuncOp::create(
      b, global.getLoc(), "main.partitioned",
      FunctionType::get(b.getContext(), argTypes,
                        global.getFunctionType().getResults()));
  FunctionType localType = partitioned.getFunctionType();
  partitioned->setAttrs(global->getAttrs());
  partitioned.setSymName("main.partitioned");
  partitioned.setFunctionType(localType);
  Block *body = partitioned.addEntryBlock();
  for (auto [arg, s] : llvm::zip(global.getArguments(), argShardings))
    values[arg] = {body->getArgument(arg.getArgNumber()), s};
  b.setInsertionPointToStart(body);

  Block &old = global.getBody().front();
  for (Operation &op : old.without_terminator())
    if (failed(partitionOp(&op)))
      return failure();
  auto ret = cast<func::ReturnOp>(old.getTerminator());
  SmallVector<Value> results;
  for (Value v : ret.getOperands()) {
    FailureOr<Value> whole =
        reshard(v,
                TensorSharding::replicated(
                    cast<RankedTensorType>(v.getType()).getRank()),
                ret);
    if (failed(whole))
      return failure();
    results.push_back(*whole);
  }
  func::ReturnOp::create(b, ret.getLoc(), results);
  formReduceScatters(partitioned);
  global.erase();
  partitioned.setSymName("main");
  return success();
}

namespace {

struct PartitionPass : public weft::impl::PartitionBase<PartitionPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::string error;
    FailureOr<Mesh> mesh = getModuleMesh(module, error);
    if (failed(mesh)) {
      module.emitError(error + " (run weft-annotate-sharding first)");
      return signalPassFailure();
    }
    auto func = module.lookupSymbol<func::FuncOp>("main");
    if (!func || func.getBody().getBlocks().size() != 1) {
      module.emitError("no single-block function 'main' to partition");
      return signalPassFailure();
    }
    Partitioner partitioner(module, func, *mesh);
    if (failed(partitioner.run()))
      return signalPassFailure();
  }
};

} // namespace
