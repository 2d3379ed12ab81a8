//===- PipelineStages.cpp - Cut the forward model into pipeline stages ----===//
//
// weft-pipeline-stages (Passes.td). The compute ops of @main, in program
// order, are cut into contiguous stages. What crosses a cut is every value
// defined before it and used after it (returned values are used at the
// end); a layer boundary is a cut where exactly one such value crosses.
// The automatic cut minimizes the costliest stage over the layer boundaries
// by dynamic programming (stage cost: CostOpInterface flops of the forward
// op and of its backward, one more forward's worth per operand that needs a
// gradient; at least 1 per op), then the bytes crossing the cuts.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "passes/StageCuts.h"

#include <limits>

namespace weft {
#define GEN_PASS_DEF_PIPELINESTAGES
#include "passes/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

/// The ONNX node name an op was imported from, if any.
StringRef nodeName(Operation *op) {
  if (auto name = dyn_cast<NameLoc>(op->getLoc()))
    return name.getName().getValue();
  if (auto fused = dyn_cast<FusedLoc>(op->getLoc()))
    for (Location l : fused.getLocations())
      if (auto name = dyn_cast<NameLoc>(l))
        return name.getName().getValue();
  return "";
}

/// The node name, else the op's name, for messages.
std::string describe(Operation *op) {
  StringRef name = nodeName(op);
  return (name.empty() ? op->getName().getStringRef() : name).str();
}

struct PipelineStagesPass
    : public weft::impl::PipelineStagesBase<PipelineStagesPass> {
  using PipelineStagesBase::PipelineStagesBase;

  void runOnOperation() override {
    auto func = getOperation().lookupSymbol<func::FuncOp>("main");
    if (!func || !llvm::hasSingleElement(func.getBody())) {
      getOperation().emitError("no single-block function 'main' to cut into "
                               "pipeline stages");
      return signalPassFailure();
    }
    if (stages < 1) {
      func.emitError("the number of pipeline stages must be at least 1, got ")
          << static_cast<int64_t>(stages);
      return signalPassFailure();
    }
    if (virtualStages < 1) {
      func.emitError("the number of virtual stages must be at least 1, got ")
          << static_cast<int64_t>(virtualStages);
      return signalPassFailure();
    }
    if (unitStages) {
      OpBuilder b(func.getContext());
      ForwardOps fwd = analyzeForwardOps(func);
      for (auto [i, op] : llvm::enumerate(fwd.ops))
        op->setAttr("weft.stage", b.getI64IntegerAttr(i));
      // What the planner cuts by (the same as a real cut would use).
      func->setAttr("weft.unit_cost", b.getDenseI64ArrayAttr(fwd.cost));
      func->setAttr("weft.unit_crossing_bytes",
                    b.getDenseI64ArrayAttr(fwd.crossingBytes));
      func->setAttr("weft.layer_boundaries",
                    b.getDenseI64ArrayAttr(fwd.layerBoundaries));
      return;
    }
    if (failed(run(func)))
      signalPassFailure();
  }

  LogicalResult run(func::FuncOp func) {
    Block &block = func.getBody().front();
    ForwardOps fwd = analyzeForwardOps(func);
    SmallVector<Operation *> &ops = fwd.ops;
    DenseMap<Operation *, int64_t> &position = fwd.position;
    const int64_t n = ops.size();
    // Interleaving cuts the model into V chunks per stage (chunk c runs on
    // stage c mod P); ops carry their chunk until weft-pipeline.
    const int64_t p = stages * virtualStages;
    SmallVector<int64_t> &crossingBytes = fwd.crossingBytes;
    SmallVector<int64_t> &cost = fwd.cost;

    SmallVector<int64_t> cuts; // stage k + 1 starts after op cuts[k]
    if (!boundaries.empty()) {
      if (failed(namedCuts(func, ops, cuts)))
        return failure();
    } else if (p > 1) {
      SmallVector<int64_t> &layers = fwd.layerBoundaries;
      if (static_cast<int64_t>(layers.size()) < p - 1)
        return func.emitError("cannot cut @main into ")
               << p
               << (virtualStages > 1 ? " model chunks (pipeline stages x "
                                       "virtual stages)"
                                     : " pipeline stages")
               << ": it has " << layers.size()
               << " layer boundaries (places where exactly one activation "
                  "crosses), so at most "
               << layers.size() + 1
               << " stages; name the stage boundaries to cut elsewhere";
      cuts = balancedStageCuts(layers, cost, crossingBytes, p);
    }

    // Stages of the compute ops, then of what holds their operands.
    SmallVector<int64_t> stageOf(n, 0);
    for (int64_t i = 0, k = 0; i < n; ++i) {
      stageOf[i] = k;
      if (k < static_cast<int64_t>(cuts.size()) && i == cuts[k])
        ++k;
    }
    OpBuilder b(func.getContext());
    auto stageAttr = [&](int64_t k) { return b.getI64IntegerAttr(k); };
    for (int64_t i = 0; i < n; ++i)
      ops[i]->setAttr("weft.stage", stageAttr(stageOf[i]));
    SmallVector<int64_t> flops(p, 0);
    for (int64_t i = 0; i < n; ++i)
      flops[stageOf[i]] += cost[i + 1] - cost[i];
    for (Operation &op : llvm::make_early_inc_range(block.without_terminator()))
      if (isStageHolder(&op) && failed(placeHolder(&op, position, stageOf)))
        return failure();
    func->setAttr("weft.pipeline_stages", b.getI64IntegerAttr(stages));
    if (virtualStages > 1)
      func->setAttr("weft.virtual_stages", b.getI64IntegerAttr(virtualStages));
    func->setAttr("weft.stage_flops", b.getDenseI64ArrayAttr(flops));
    SmallVector<int64_t> cutBytes;
    for (int64_t c : cuts)
      cutBytes.push_back(crossingBytes[c]);
    func->setAttr("weft.stage_cut_bytes", b.getDenseI64ArrayAttr(cutBytes));
    return success();
  }

  /// The cuts the `boundaries` option names.
  LogicalResult namedCuts(func::FuncOp func, ArrayRef<Operation *> ops,
                          SmallVectorImpl<int64_t> &cuts) {
    const int64_t p = stages * virtualStages;
    if (static_cast<int64_t>(boundaries.size()) != p - 1)
      return func.emitError()
             << boundaries.size() << " stage boundaries for " << p
             << (virtualStages > 1 ? " model chunks (pipeline stages x "
                                     "virtual stages)"
                                   : " stages")
             << ": give one per stage after the first (" << p - 1 << ")";
    auto matches = [](Operation *op, StringRef prefix) {
      if (nodeName(op).starts_with(prefix))
        return true;
      for (Value v : op->getOperands())
        if (auto param = v.getDefiningOp<ParamOp>())
          if (param.getName().starts_with(prefix))
            return true;
      return false;
    };
    // A boundary is the first op it matches, which must come after the
    // first op of the stage before it.
    int64_t previous = 0;
    for (auto [k, boundary] : llvm::enumerate(boundaries)) {
      int64_t found = -1;
      for (int64_t i = 0; i < static_cast<int64_t>(ops.size()) && found < 0;
           ++i)
        if (matches(ops[i], boundary))
          found = i;
      if (found < 0)
        return func.emitError("stage boundary '")
               << boundary << "' names no op and no parameter of @main";
      if (found <= previous)
        return func.emitError("stage boundary '")
               << boundary << "' (op '" << describe(ops[found])
               << "') does not come after the start of stage " << k << " (op '"
               << describe(ops[previous])
               << "'); boundaries go in program order, one per stage";
      cuts.push_back(found - 1);
      previous = found;
    }
    return success();
  }

  /// A weft.param or weft.constant joins the stage of its users; a
  /// constant read by several stages is copied into each, a parameter may
  /// not be.
  LogicalResult placeHolder(Operation *op,
                            const DenseMap<Operation *, int64_t> &position,
                            ArrayRef<int64_t> stageOf) {
    Block *block = op->getBlock();
    std::map<int64_t, SmallVector<OpOperand *>> uses;
    for (OpOperand &use : op->getResult(0).getUses()) {
      Operation *at = block->findAncestorOpInBlock(*use.getOwner());
      int64_t stage = stages * virtualStages - 1; // returned: the last's
      if (at && !isa<func::ReturnOp>(at))
        stage = stageOf[position.lookup(at)];
      uses[stage].push_back(&use);
    }
    OpBuilder b(op);
    if (uses.empty()) {
      op->setAttr("weft.stage", b.getI64IntegerAttr(0));
      return success();
    }
    // The step counter (dropout's draws read it) lives with the optimizer's
    // on the first stage; the others get it sent, like an activation.
    auto role = op->getAttrOfType<StringAttr>("weft.role");
    if (role && role.getValue() == "step") {
      op->setAttr("weft.stage", b.getI64IntegerAttr(0));
      return success();
    }
    // A parameter several stages read (tied embeddings) lives on the first:
    // weft-pipeline sends its value to the others like an activation, and
    // their parts of its gradient come back to be summed where it is
    // updated.
    if (uses.size() > 1 && isa<ParamOp>(op)) {
      op->setAttr("weft.stage", b.getI64IntegerAttr(uses.begin()->first));
      op->setAttr("weft.tied", b.getUnitAttr());
      return success();
    }
    auto it = uses.begin();
    op->setAttr("weft.stage", b.getI64IntegerAttr(it->first));
    for (++it; it != uses.end(); ++it) {
      Operation *copy = b.clone(*op);
      copy->setAttr("weft.stage", b.getI64IntegerAttr(it->first));
      for (OpOperand *use : it->second)
        use->set(copy->getResult(0));
    }
    return success();
  }
};

} // namespace
