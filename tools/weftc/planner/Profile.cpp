//===- Profile.cpp - What a model's training step costs, op by op ---------===//
#include "tools/weftc/planner/Profile.h"

#include "tools/weftc/CompileOptions.h"

#include "dialects/weft/ElementTypes.h"
#include "dialects/weft/WeftOps.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/DenseSet.h"

#include <chrono>

using namespace mlir;
using namespace weft;
using namespace weft::planner;

namespace {

double bytesOf(Type type) {
  auto t = dyn_cast<RankedTensorType>(type);
  if (!t || !t.hasStaticShape())
    return 0;
  return static_cast<double>(getTensorBytes(t));
}

bool isProduct(Operation *op) {
  return isa<MatMulOp, ConvOp, ConvGradInputOp, ConvGradWeightOp>(op);
}

bool isOptimizerUpdate(Operation *op) {
  return isa<AdamWUpdateOp, SgdUpdateOp>(op);
}

std::string collectiveKind(Operation *op) {
  if (isa<shard::AllReduceOp>(op))
    return "all_reduce";
  if (isa<shard::AllGatherOp>(op))
    return "all_gather";
  if (isa<shard::ReduceScatterOp>(op))
    return "reduce_scatter";
  if (isa<shard::AllToAllOp>(op))
    return "all_to_all";
  return "";
}

std::vector<int64_t> intsOf(func::FuncOp func, StringRef name) {
  if (auto a = func->getAttrOfType<DenseI64ArrayAttr>(name))
    return std::vector<int64_t>(a.asArrayRef().begin(), a.asArrayRef().end());
  return {};
}

/// The M, N, K of a product and which of them the batch rows split: the
/// rows of the operand that depends on the batch (M for the left, N for
/// the right), K when both do and the batch is contracted (a weight
/// gradient), none when it sits in leading batch dims (attention).
void setGemmDims(MatMulOp mm, const DenseSet<Value> &batch, OpRecord &r) {
  auto lhs = cast<RankedTensorType>(mm.getLhs().getType());
  auto rhs = cast<RankedTensorType>(mm.getRhs().getType());
  auto result = cast<RankedTensorType>(mm.getType());
  if (!lhs.hasStaticShape() || !rhs.hasStaticShape() || lhs.getRank() < 2 ||
      rhs.getRank() < 2)
    return;
  int64_t lr = lhs.getRank(), rr = rhs.getRank();
  double m = lhs.getDimSize(mm.getTransposeA() ? lr - 1 : lr - 2);
  double k = lhs.getDimSize(mm.getTransposeA() ? lr - 2 : lr - 1);
  double n = rhs.getDimSize(mm.getTransposeB() ? rr - 2 : rr - 1);
  bool lb = batch.contains(mm.getLhs()), rb = batch.contains(mm.getRhs());
  // Leading dims of a left operand without its own batch fold into M.
  if (rhs.getRank() == 2)
    for (int64_t d = 0; d + 2 < lr; ++d)
      m *= lhs.getDimSize(d);
  bool leadingBatch = result.getRank() > 2 && rhs.getRank() > 2;
  double dims[3] = {m, n, k};
  bool scales[3] = {lb && !rb && !leadingBatch, rb && !lb && !leadingBatch,
                    lb && rb && !leadingBatch};
  int best = 0;
  for (int i = 1; i < 3; ++i)
    if (dims[i] < dims[best])
      best = i;
  // A dimension the batch shrinks may become the smallest.
  for (int i = 0; i < 3; ++i)
    if (scales[i] && dims[i] < 4 * dims[best]) {
      best = i;
      break;
    }
  r.minDim = dims[best];
  r.minDimScales = scales[best];
}

/// Reads the records of one (partitioned) training step.
void analyze(func::FuncOp main, int64_t units, TpProfile &out,
             std::vector<std::string> &kernels) {
  Block &block = main.getBody().front();
  DenseMap<Operation *, int32_t> unitOf;
  DenseMap<Operation *, Phase> phaseOf;
  DenseSet<Value> batch(main.getArguments().begin(), main.getArguments().end());
  DenseSet<StringRef> trainable;
  if (auto names = main->getAttrOfType<ArrayAttr>("weft.trainable"))
    for (Attribute a : names)
      trainable.insert(cast<StringAttr>(a).getValue());
  auto clampUnit = [&](int64_t u) {
    return static_cast<int32_t>(std::max<int64_t>(
        0, std::min<int64_t>(u, std::max<int64_t>(units - 1, 0))));
  };
  // Parameters join the earliest unit that reads them.
  for (Operation &op : block.without_terminator()) {
    auto param = dyn_cast<ParamOp>(op);
    if (!param)
      continue;
    int64_t best = INT64_MAX;
    for (Operation *user : param->getUsers())
      if (auto s = user->getAttrOfType<IntegerAttr>("weft.stage"))
        best = std::min(best, s.getInt());
    if (best != INT64_MAX)
      unitOf[&op] = clampUnit(best);
  }
  out.units.assign(std::max<int64_t>(units, 1), UnitBytes());
  for (Operation &op : block.without_terminator()) {
    if (isa<ParamOp>(op))
      continue;
    int32_t unit = 0;
    Phase phase = Phase::Forward;
    if (auto s = op.getAttrOfType<IntegerAttr>("weft.stage")) {
      unit = clampUnit(s.getInt());
      phase = op.hasAttr("weft.weight_grad") ? Phase::WeightGrad
              : op.hasAttr("weft.backward")  ? Phase::Backward
                                             : Phase::Forward;
    } else if (isOptimizerUpdate(&op)) {
      phase = Phase::Optimizer;
      int32_t best = INT32_MAX;
      for (Value v : op.getOperands())
        if (Operation *def = v.getDefiningOp())
          if (isa<ParamOp>(def) && unitOf.count(def))
            best = std::min(best, unitOf[def]);
      unit = best == INT32_MAX ? 0 : best;
      // The optimizer state it updates joins the same unit.
      for (Value v : op.getOperands())
        if (Operation *def = v.getDefiningOp())
          if (isa<ParamOp>(def) && !unitOf.count(def))
            unitOf[def] = unit;
    } else {
      // Inserted by a later pass (collectives, rescaling): the latest unit
      // among its operands, with that operand's phase.
      int32_t best = -1;
      for (Value v : op.getOperands())
        if (Operation *def = v.getDefiningOp())
          if (!isa<ParamOp>(def) && unitOf.count(def) && unitOf[def] >= best) {
            best = unitOf[def];
            phase = phaseOf[def];
          }
      unit = std::max(best, 0);
    }
    unitOf[&op] = unit;
    phaseOf[&op] = phase;
    bool batched = llvm::any_of(op.getOperands(),
                                [&](Value v) { return batch.contains(v); });
    if (batched)
      for (Value r : op.getResults())
        batch.insert(r);
    std::string kind = collectiveKind(&op);
    if (!kind.empty()) {
      CollectiveRecord c;
      c.unit = unit;
      c.phase = phase;
      c.kind = kind;
      c.bytes = kind == "all_gather" ? bytesOf(op.getResult(0).getType())
                                     : bytesOf(op.getOperand(0).getType());
      c.batch = batched;
      out.collectives.push_back(c);
      continue;
    }
    auto cost = dyn_cast<CostOpInterface>(op);
    if (!cost)
      continue;
    OpRecord r;
    r.unit = unit;
    r.phase = phase;
    r.product = isProduct(&op);
    r.bf16 = op.getNumOperands() > 0 &&
             getElementTypeOrSelf(op.getOperand(0).getType()).isBF16();
    r.batch = batched;
    r.flops = static_cast<double>(cost.getFlops());
    r.bytes = static_cast<double>(cost.getBytesAccessed());
    if (auto mm = dyn_cast<MatMulOp>(op))
      setGemmDims(mm, batch, r);
    if (auto k = dyn_cast<KernelOpInterface>(op)) {
      StringRef name = k.getKernelName();
      auto it = llvm::find(kernels, name);
      r.kernel = static_cast<uint16_t>(it - kernels.begin());
      if (it == kernels.end())
        kernels.push_back(name.str());
    }
    for (Type t : op.getResultTypes())
      r.resultBytes += bytesOf(t);
    out.ops.push_back(r);
    if (batched)
      out.largestOpBytes = std::max(out.largestOpBytes, r.bytes);
  }
  // Persistent state per unit, per rank.
  for (Operation &op : block.without_terminator()) {
    auto param = dyn_cast<ParamOp>(op);
    if (!param)
      continue;
    UnitBytes &u = out.units[unitOf.lookup(&op)];
    double bytes = bytesOf(param.getType());
    auto role = param->getAttrOfType<StringAttr>("weft.role");
    if (role && role.getValue() == "optimizer_state") {
      u.optimizer += bytes;
    } else if (!role) {
      u.params += bytes;
      out.largestParamBytes = std::max(out.largestParamBytes, bytes);
      if (trainable.contains(param.getName()))
        u.gradients += bytes;
    }
  }
  // Forward activations a backward op reads: kept from the forward to the
  // backward of each microbatch.
  for (Operation &op : block.without_terminator()) {
    if (isa<ParamOp>(op) || phaseOf.lookup(&op) != Phase::Forward)
      continue;
    for (Value r : op.getResults()) {
      if (!batch.contains(r))
        continue;
      bool kept = llvm::any_of(r.getUsers(), [&](Operation *user) {
        Phase p = phaseOf.lookup(user);
        return phaseOf.count(user) &&
               (p == Phase::Backward || p == Phase::WeightGrad);
      });
      if (!kept)
        continue;
      UnitBytes &u = out.units[unitOf.lookup(&op)];
      u.saved += bytesOf(r.getType());
      if (isProduct(&op))
        u.savedProducts += bytesOf(r.getType());
    }
  }
}

} // namespace

bool weft::planner::buildProfile(const CompileOptions &opts,
                                 const std::vector<int64_t> &tpDegrees,
                                 ModelProfile &profile, std::string &error) {
  auto start = std::chrono::steady_clock::now();
  LoweringInput input;
  if (!importForLowering(opts, input, error, /*structureOnly=*/true))
    return false;
  MLIRContext &context = *input.context;
  ModuleOp module = input.imported->module.get();
  std::string diagnostics;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    if (diag.getSeverity() == DiagnosticSeverity::Error)
      diagnostics += (diagnostics.empty() ? "" : "; ") + diag.str();
    return success();
  });
  PassManager pm(&context);
  addLoweringPasses(pm, opts, LowerUntil::ProfileStep);
  if (failed(pm.run(module))) {
    error =
        "cannot build the training step of " + opts.model + ": " + diagnostics;
    return false;
  }
  auto main = module.lookupSymbol<func::FuncOp>("main");
  if (!main) {
    error = opts.model + ": no function 'main'";
    return false;
  }
  profile.model = opts.model;
  profile.train = opts.train;
  profile.dtype = opts.dtype;
  profile.cost = intsOf(main, "weft.unit_cost");
  profile.crossingBytes = intsOf(main, "weft.unit_crossing_bytes");
  profile.layerBoundaries = intsOf(main, "weft.layer_boundaries");
  profile.units =
      profile.cost.empty() ? 0 : static_cast<int64_t>(profile.cost.size()) - 1;
  profile.batch = 0;
  for (BlockArgument arg : main.getArguments()) {
    auto type = cast<RankedTensorType>(arg.getType());
    profile.ioBytes += bytesOf(type);
    if (type.getRank() > 0 && profile.batch == 0)
      profile.batch = type.getDimSize(0);
  }
  for (Type t : main.getResultTypes())
    profile.ioBytes += bytesOf(t);
  if (profile.batch == 0)
    profile.batch = 1;
  main.walk([&](ParamOp param) {
    if (!param->hasAttr("weft.role"))
      profile.paramCount +=
          static_cast<double>(param.getType().getNumElements());
  });

  for (int64_t tp : tpDegrees) {
    TpProfile &tpProfile = profile.byTp[tp];
    tpProfile.tp = tp;
    if (tp == 1) {
      analyze(main, profile.units, tpProfile, profile.kernels);
      continue;
    }
    OwningOpRef<ModuleOp> copy(module.clone());
    PassManager tpPm(&context);
    AnnotateShardingOptions mesh;
    mesh.tp = tp;
    tpPm.addPass(createAnnotateSharding(mesh));
    tpPm.addPass(createPartition());
    diagnostics.clear();
    if (failed(tpPm.run(*copy))) {
      profile.byTp.erase(tp);
      profile.tpRefused[tp] =
          diagnostics.empty() ? "the partition failed" : diagnostics;
      continue;
    }
    analyze(copy->lookupSymbol<func::FuncOp>("main"), profile.units, tpProfile,
            profile.kernels);
  }
  profile.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return true;
}
