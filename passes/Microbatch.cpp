//===- Microbatch.cpp - Run each rank's step as microbatches --------------===//
//
// weft-microbatch (Passes.td). The partitioner treats the microbatches as
// one more mesh axis, "mb" (the grid's last): inputs are split over it in
// rank order after dp, means and label counts are rescaled to the whole
// batch, and whatever sums over the batch (a weight's gradient, the loss)
// is a partial sum over "mb" that a shard collective completes. Here the
// axis becomes time instead of ranks:
//   - every input split over "mb" is this rank's whole block again, and
//     microbatch m reads rows [m * b, (m + 1) * b) of it (a weft.slice);
//   - every op that reads a per-microbatch value is cloned once per
//     microbatch (marked weft.microbatch = m), the others are kept once;
//   - a collective over "mb" becomes the sum (max, min) of the clones in
//     microbatch order, or their concatenation for a gather, followed by the
//     same collective over the rest of its axes;
//   - the grid loses the axis.
// Then the ops are ordered microbatch by microbatch: each op gets the
// microbatch it works for (clones: theirs; an op combining clones: the
// last; an op everything later depends on, such as a label count the loss
// divides by: the earliest that needs it), and a list schedule takes the
// ready op of the smallest one first, so one microbatch's activations die
// before the next one's forward pass.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/weft/GradientRules.h"
#include "dialects/weft/Sharding.h"
#include "passes/ScheduleByKey.h"

#include "mlir/IR/IRMapping.h"

namespace weft {
#define GEN_PASS_DEF_MICROBATCH
#include "passes/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

class Unroller {
public:
  Unroller(ModuleOp module, func::FuncOp func, shard::GridOp grid, int64_t axis,
           int64_t count)
      : module(module), func(func), grid(grid), mbAxis(axis), count(count),
        b(module.getContext()) {}

  LogicalResult run();

private:
  LogicalResult unrollArgs();
  LogicalResult unrollOp(Operation *op);
  FailureOr<Value> combine(Operation *op, ArrayRef<Value> clones);
  LogicalResult sliceShared(shard::AllSliceOp op, ArrayRef<int16_t> rest,
                            bool perMicrobatch);
  LogicalResult offsetPerMicrobatch(MeshOffsetOp op, ArrayRef<int16_t> rest);
  /// `axes` without the microbatch axis; whether it was there (last).
  bool dropAxis(ArrayRef<int16_t> axes, SmallVectorImpl<int16_t> &rest,
                Operation *op, bool &bad);
  void schedule();

  ModuleOp module;
  func::FuncOp func;
  shard::GridOp grid;
  int16_t mbAxis;
  int64_t count;
  OpBuilder b;
  /// Per-microbatch values: one clone each.
  DenseMap<Value, SmallVector<Value, 4>> clones;
  /// The ops replaced by their clones, erased at the end.
  SmallVector<Operation *> originals;
};

bool Unroller::dropAxis(ArrayRef<int16_t> axes, SmallVectorImpl<int16_t> &rest,
                        Operation *op, bool &bad) {
  bool found = false;
  for (auto [i, a] : llvm::enumerate(axes)) {
    if (a != mbAxis) {
      rest.push_back(a);
      continue;
    }
    found = true;
    // The microbatches are the minor blocks: "mb" must come last, but for
    // an all_reduce, whose sum (max, min) over a group does not depend on
    // the order of its axes.
    if (i + 1 != axes.size() && !isa<shard::AllReduceOp>(op)) {
      op->emitError("collective over the microbatch axis before other axes "
                    "(")
          << axes.size() << " axes); microbatches split a rank's rows last";
      bad = true;
    }
  }
  return found;
}

LogicalResult Unroller::unrollArgs() {
  Block &body = func.getBody().front();
  b.setInsertionPointToStart(&body);
  SmallVector<Type> argTypes;
  for (BlockArgument arg : func.getArguments()) {
    auto type = cast<RankedTensorType>(arg.getType());
    argTypes.push_back(type);
    Attribute attr = func.getArgAttr(arg.getArgNumber(), "weft.shard");
    if (!attr)
      continue;
    FailureOr<TensorSharding> s = shardingFromAttr(attr, type.getRank());
    if (failed(s))
      return func.emitError("input ")
             << arg.getArgNumber() << " has a malformed weft.shard";
    for (auto [d, dim] : llvm::enumerate(s->dims)) {
      if (!llvm::is_contained(dim.allAxes(), mbAxis))
        continue;
      if (d != 0 || dim.axes.empty() || dim.axes.back() != mbAxis ||
          !dim.outerAxes.empty() || dim.outer != 1)
        return func.emitError("input ")
               << arg.getArgNumber()
               << " is split over the microbatch axis other than as the "
                  "last split of its batch dim";
      dim.axes.pop_back();
      // The rank's block; microbatch m is rows [m * rows, (m + 1) * rows).
      int64_t rows = type.getDimSize(0);
      SmallVector<int64_t> shape(type.getShape());
      shape[0] = rows * count;
      auto whole = type.clone(shape);
      arg.setType(whole);
      argTypes.back() = whole;
      SmallVector<Value, 4> parts;
      for (int64_t m = 0; m < count; ++m) {
        SmallVector<int64_t> starts(type.getRank(), 0),
            steps(type.getRank(), 1);
        starts[0] = m * rows;
        auto slice = SliceOp::create(b, arg.getLoc(), type, arg,
                                     b.getDenseI64ArrayAttr(starts),
                                     b.getDenseI64ArrayAttr(steps));
        slice->setAttr("weft.microbatch", b.getI64IntegerAttr(m));
        parts.push_back(slice);
      }
      // Every use of the argument reads its microbatch's rows.
      clones[arg] = parts;
    }
    if (s->isReplicated())
      func.removeArgAttr(arg.getArgNumber(), "weft.shard");
    else
      func.setArgAttr(arg.getArgNumber(), "weft.shard", shardingToAttr(b, *s));
  }
  func.setFunctionType(FunctionType::get(func.getContext(), argTypes,
                                         func.getFunctionType().getResults()));
  return success();
}

/// The clones of a collective's operand brought together over the
/// microbatches, in microbatch order.
FailureOr<Value> Unroller::combine(Operation *op, ArrayRef<Value> parts) {
  Location loc = op->getLoc();
  if (auto reduce = dyn_cast<shard::AllReduceOp>(op)) {
    Value acc = parts[0];
    for (Value v : parts.drop_front()) {
      switch (reduce.getReduction()) {
      case shard::ReductionKind::Sum:
        acc = gradient::add(b, loc, acc, v);
        break;
      case shard::ReductionKind::Max:
        acc = MaxOp::create(b, loc, acc.getType(), acc, v);
        break;
      case shard::ReductionKind::Min:
        acc = MinOp::create(b, loc, acc.getType(), acc, v);
        break;
      default:
        return op->emitError("reduction ")
               << shard::stringifyReductionKind(reduce.getReduction())
               << " over microbatches is not supported";
      }
      acc.getDefiningOp()->setAttr("weft.combines_microbatches",
                                   b.getUnitAttr());
    }
    return acc;
  }
  if (auto gather = dyn_cast<shard::AllGatherOp>(op)) {
    int64_t axis = gather.getGatherAxis().getSExtValue();
    auto t = cast<RankedTensorType>(parts[0].getType());
    SmallVector<int64_t> shape(t.getShape());
    shape[axis] *= count;
    return Value(ConcatOp::create(b, loc, t.clone(shape), parts,
                                  b.getI64IntegerAttr(axis)));
  }
  return op->emitError("has no form over microbatches");
}

/// An all_slice over "mb" of a value every microbatch shares (a state
/// whole on every rank, sliced for a batch split): its slice over the other
/// axes (the rank's block), of which microbatch m reads block m (the minor
/// blocks are the microbatches').
LogicalResult Unroller::sliceShared(shard::AllSliceOp op,
                                    ArrayRef<int16_t> rest,
                                    bool perMicrobatch) {
  if (perMicrobatch)
    return op->emitError("slices a value of each microbatch over the "
                         "microbatch axis");
  Location loc = op.getLoc();
  int64_t axis = op.getSliceAxis().getSExtValue();
  auto type = cast<RankedTensorType>(op.getType());
  Value block = op.getOperand();
  if (!rest.empty()) {
    SmallVector<int64_t> shape(type.getShape());
    shape[axis] *= count;
    block = shard::AllSliceOp::create(b, loc, type.clone(shape), block,
                                      op.getGrid(), rest, axis);
  }
  SmallVector<Value, 4> parts;
  for (int64_t m = 0; m < count; ++m) {
    SmallVector<int64_t> starts(type.getRank(), 0), steps(type.getRank(), 1);
    starts[axis] = m * type.getDimSize(axis);
    auto part =
        SliceOp::create(b, loc, type, block, b.getDenseI64ArrayAttr(starts),
                        b.getDenseI64ArrayAttr(steps));
    part->setAttr("weft.microbatch", b.getI64IntegerAttr(m));
    parts.push_back(part);
  }
  clones[op.getResult()] = parts;
  originals.push_back(op);
  return success();
}

/// Where a block split over the microbatch axis (the minor one) starts, for
/// a user that needs the position only (weft.position: a dropout's draws):
/// microbatch m's block is m blocks past the rank's (its start over the
/// other axes, counted in blocks of all microbatches). The block of a
/// gather's data is another matter: every microbatch would read all of them.
LogicalResult Unroller::offsetPerMicrobatch(MeshOffsetOp op,
                                            ArrayRef<int16_t> rest) {
  Location loc = op.getLoc();
  int64_t block = static_cast<int64_t>(op.getBlock());
  auto type = op.getType();
  Value base;
  if (!rest.empty()) {
    auto start = MeshOffsetOp::create(b, loc, type, op.getGridAttr(),
                                      b.getDenseI16ArrayAttr(rest),
                                      b.getI64IntegerAttr(block * count));
    start->setAttr("weft.position", b.getUnitAttr());
    base = start;
  }
  SmallVector<Value, 4> parts;
  for (int64_t m = 0; m < count; ++m) {
    Value part = ConstantOp::create(
        b, loc, DenseElementsAttr::get(type, b.getI64IntegerAttr(block * m)));
    if (base)
      part = AddOp::create(b, loc, type, base, part);
    part.getDefiningOp()->setAttr("weft.microbatch", b.getI64IntegerAttr(m));
    parts.push_back(part);
  }
  clones[op.getResult()] = parts;
  originals.push_back(op);
  return success();
}

LogicalResult Unroller::unrollOp(Operation *op) {
  b.setInsertionPoint(op);
  bool perMicrobatch = llvm::any_of(
      op->getOperands(), [&](Value v) { return clones.count(v) > 0; });
  // Collectives over the microbatch axis.
  auto axesOf = [](Operation *o) -> std::optional<ArrayRef<int16_t>> {
    if (auto r = dyn_cast<shard::AllReduceOp>(o))
      return r.getGridAxes();
    if (auto g = dyn_cast<shard::AllGatherOp>(o))
      return g.getGridAxes();
    if (auto s = dyn_cast<shard::ReduceScatterOp>(o))
      return s.getGridAxes();
    if (auto s = dyn_cast<shard::AllSliceOp>(o))
      return s.getGridAxes();
    if (auto m = dyn_cast<MeshOffsetOp>(o))
      return m.getGridAxes();
    return std::nullopt;
  };
  if (std::optional<ArrayRef<int16_t>> axes = axesOf(op)) {
    SmallVector<int16_t> rest;
    bool bad = false;
    bool overMb = dropAxis(*axes, rest, op, bad);
    if (bad)
      return failure();
    if (overMb) {
      if (auto slice = dyn_cast<shard::AllSliceOp>(op))
        return sliceShared(slice, rest, perMicrobatch);
      if (auto offset = dyn_cast<MeshOffsetOp>(op);
          offset && offset->hasAttr("weft.position"))
        return offsetPerMicrobatch(offset, rest);
      if (!isa<shard::AllReduceOp, shard::AllGatherOp>(op))
        return op->emitError(
            "over the microbatch axis is not supported: the op needs the "
            "whole batch at once (rows of one microbatch come from others, "
            "as when the batch is sorted); compile with --microbatches 1");
      if (!perMicrobatch)
        return op->emitError("combines microbatches of a value every "
                             "microbatch shares");
      FailureOr<Value> joined = combine(op, clones[op->getOperand(0)]);
      if (failed(joined))
        return failure();
      Value result = *joined;
      if (!rest.empty()) {
        IRMapping map;
        map.map(op->getOperand(0), result);
        Operation *rebuilt = b.clone(*op, map);
        rebuilt->setAttr("grid_axes", b.getDenseI16ArrayAttr(rest));
        if (isa<shard::AllGatherOp>(op)) {
          auto t = cast<RankedTensorType>(result.getType());
          auto g = cast<shard::AllGatherOp>(op);
          SmallVector<int64_t> shape(t.getShape());
          int64_t n = 1;
          for (int16_t a : rest)
            n *= grid.getShape()[a];
          shape[g.getGatherAxis().getSExtValue()] *= n;
          rebuilt->getResult(0).setType(t.clone(shape));
        }
        result = rebuilt->getResult(0);
      }
      op->getResult(0).replaceAllUsesWith(result);
      op->erase();
      return success();
    }
  }
  if (!perMicrobatch)
    return success();
  if (op->getNumRegions() != 0 || isa<ParamUpdateOp>(op))
    return op->emitError("reads a per-microbatch value but cannot be "
                         "repeated per microbatch");
  originals.push_back(op);
  for (Value v : op->getResults())
    clones[v].clear();
  for (int64_t m = 0; m < count; ++m) {
    IRMapping map;
    for (Value v : op->getOperands())
      if (auto it = clones.find(v); it != clones.end())
        map.map(v, it->second[m]);
    Operation *copy = b.clone(*op, map);
    copy->setAttr("weft.microbatch", b.getI64IntegerAttr(m));
    for (auto [r, c] : llvm::zip(op->getResults(), copy->getResults()))
      clones[r].push_back(c);
  }
  return success();
}

/// Orders the ops microbatch by microbatch (see the file comment).
void Unroller::schedule() {
  scheduleByKey(
      func.getBody().front(), [](Operation *op) -> std::optional<int64_t> {
        // A parameter's update overwrites it in place: last.
        if (isa<ParamUpdateOp>(op))
          return kScheduleLatest;
        if (auto m = op->getAttrOfType<IntegerAttr>("weft.microbatch"))
          return m.getInt();
        return std::nullopt;
      });
}

LogicalResult Unroller::run() {
  if (failed(unrollArgs()))
    return failure();
  Block &body = func.getBody().front();
  SmallVector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    if (!op.hasAttr("weft.microbatch") || !isa<SliceOp>(op))
      ops.push_back(&op);
  for (Operation *op : ops)
    if (failed(unrollOp(op)))
      return failure();
  for (Value v : body.getTerminator()->getOperands())
    if (clones.count(v))
      return body.getTerminator()->emitError(
          "returns a value of each microbatch; results must be complete "
          "over the batch");
  // The originals' users were originals too (or collectives now gone).
  for (Operation *op : llvm::reverse(originals)) {
    if (!op->use_empty())
      return op->emitError("internal error: still used after its "
                           "microbatch clones replaced it");
    op->erase();
  }
  schedule();
  // The grid loses the microbatch axis (its last).
  SmallVector<int64_t> shape(grid.getShape());
  shape.pop_back();
  grid.setShape(shape);
  if (auto names = grid->getAttrOfType<ArrayAttr>("weft.mesh_axes")) {
    SmallVector<Attribute> kept(names.begin(), names.end());
    kept.pop_back();
    grid->setAttr("weft.mesh_axes", b.getArrayAttr(kept));
  }
  return success();
}

struct MicrobatchPass : public weft::impl::MicrobatchBase<MicrobatchPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto grids = module.getOps<shard::GridOp>();
    if (grids.empty())
      return;
    shard::GridOp grid = *grids.begin();
    auto names = grid->getAttrOfType<ArrayAttr>("weft.mesh_axes");
    if (!names || names.empty() ||
        cast<StringAttr>(names[names.size() - 1]).getValue() != "mb")
      return; // no microbatches
    auto func = module.lookupSymbol<func::FuncOp>("main");
    if (!func || !llvm::hasSingleElement(func.getBody())) {
      module.emitError("no single-block function 'main' to split into "
                       "microbatches");
      return signalPassFailure();
    }
    int64_t axis = grid.getRank() - 1;
    Unroller unroller(module, func, grid, axis, grid.getShape()[axis]);
    if (failed(unroller.run()))
      signalPassFailure();
  }
};

} // namespace
