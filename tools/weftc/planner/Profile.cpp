//===- Profile.cpp - What a model's training step costs, op by op ---------===//
#include "tools/weftc/planner/Profile.h"
#include "tools/weftc/planner/RepeatedLayers.h"

#include "tools/weftc/CompileOptions.h"

#include "dialects/weft/ElementTypes.h"
#include "dialects/weft/WeftOps.h"
#include "passes/Passes.h"
#include "passes/StageCuts.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/DenseSet.h"

#include <chrono>
#include <cstdlib>
#include <optional>
#include <set>

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
  return isa<MatMulOp, ConvOp, ConvGradInputOp, ConvGradWeightOp, AttentionOp,
             AttentionGradOp>(op);
}

bool isOptimizerUpdate(Operation *op) {
  return isa<AdamWUpdateOp, SgdUpdateOp>(op);
}

std::string collectiveKind(Operation *op) {
  if (isa<shard::AllReduceOp, AllReduceStartOp>(op))
    return "all_reduce";
  if (isa<shard::AllGatherOp, AllGatherStartOp>(op))
    return "all_gather";
  if (isa<shard::ReduceScatterOp, ReduceScatterStartOp>(op))
    return "reduce_scatter";
  if (isa<shard::AllToAllOp>(op))
    return "all_to_all";
  return "";
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

/// The values that carry parameters' gradients to the optimizer: the
/// optimizer updates' operands that are not parameters (or their state),
/// and back from them every value whose op keeps its size (accumulation,
/// scaling, casts, transposes, collectives) up to the op that contracts
/// the batch away (a weight-gradient product, a bias's reduction). They
/// descend from the batch but do not grow with it: neither do the ops that
/// read only them (the optimizer, gradient clipping).
DenseSet<Value> gradientChain(Block &block) {
  DenseSet<Value> chain;
  SmallVector<Value> work;
  for (Operation &op : block.without_terminator())
    if (isOptimizerUpdate(&op))
      for (Value v : op.getOperands())
        if (!v.getDefiningOp<ParamOp>())
          work.push_back(v);
  auto elements = [](Value v) -> int64_t {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    return t && t.hasStaticShape() ? t.getNumElements() : -1;
  };
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (!chain.insert(v).second)
      continue;
    Operation *def = v.getDefiningOp();
    if (!def || isa<ParamOp>(def) || isProduct(def))
      continue;
    const int64_t n = elements(v);
    bool keepsSize = n > 1 && llvm::all_of(def->getOperands(), [&](Value u) {
                       int64_t m = elements(u);
                       return m == n || m == 1;
                     });
    if (!keepsSize)
      continue;
    for (Value u : def->getOperands())
      if (elements(u) == n)
        work.push_back(u);
  }
  return chain;
}

/// The batch statistics (BatchCoupling) of a step partitioned over the
/// batch alone: its collectives whose result rows of the step read. Rows
/// are the values that descend from the inputs other than through a
/// collective (which makes a value every rank holds whole).
std::vector<BatchCoupling> findBatchCouplings(func::FuncOp main,
                                              int64_t units) {
  Block &block = main.getBody().front();
  DenseSet<Value> rows(main.getArguments().begin(), main.getArguments().end());
  // Per op: the earliest forward unit among the activations (rows that
  // descend from a parameter) it descends from; INT64_MAX for none.
  DenseMap<Operation *, int64_t> source;
  DenseSet<Operation *> weighted; // descends from a parameter
  auto unitOf = [](Operation *op) -> std::optional<int64_t> {
    if (auto s = op->getAttrOfType<IntegerAttr>("weft.stage"))
      return s.getInt();
    return std::nullopt;
  };
  std::vector<BatchCoupling> found;
  for (Operation &op : block.without_terminator()) {
    int64_t earliest = INT64_MAX;
    bool fromParam = isa<ParamOp>(op);
    bool readsRows = false;
    for (Value v : op.getOperands()) {
      readsRows |= rows.contains(v);
      if (Operation *def = v.getDefiningOp()) {
        earliest = std::min(earliest, source.lookup(def));
        fromParam |= weighted.contains(def);
      }
    }
    if (fromParam)
      weighted.insert(&op);
    const bool collective = !collectiveKind(&op).empty();
    if (readsRows && !collective) {
      for (Value r : op.getResults())
        rows.insert(r);
      if (std::optional<int64_t> u = unitOf(&op);
          u && fromParam && !op.hasAttr("weft.backward"))
        earliest = std::min(earliest, *u);
    }
    source[&op] = earliest;
    if (!collective || earliest == INT64_MAX)
      continue;
    // The rows that read it, through ops of whole values.
    // The rows that read it, through ops of whole values (not through
    // another statistic): the earliest forward unit, else backward unit.
    std::optional<int64_t> forward, backward;
    SmallVector<Operation *> work(op.getUsers().begin(), op.getUsers().end());
    DenseSet<Operation *> seen;
    while (!work.empty()) {
      Operation *user = work.pop_back_val();
      if (!seen.insert(user).second ||
          user->hasTrait<OpTrait::IsTerminator>() ||
          !collectiveKind(user).empty())
        continue;
      std::optional<int64_t> u = unitOf(user);
      bool isRow = u && llvm::any_of(user->getOperands(),
                                     [&](Value v) { return rows.contains(v); });
      if (!isRow) {
        work.append(user->user_begin(), user->user_end());
        continue;
      }
      std::optional<int64_t> &first =
          user->hasAttr("weft.backward") ? backward : forward;
      first = std::min(first.value_or(INT64_MAX), *u);
    }
    if (!forward && !backward)
      continue;
    const int64_t consumer = forward ? *forward : *backward;
    const Phase phase = forward ? Phase::Forward : Phase::Backward;
    auto clamp = [&](int64_t u) {
      return static_cast<int32_t>(
          std::max<int64_t>(0, std::min<int64_t>(u, units - 1)));
    };
    BatchCoupling c;
    c.unit = clamp(consumer);
    c.source = clamp(earliest);
    c.phase = phase;
    c.bytes = bytesOf(op.getOperand(0).getType());
    found.push_back(c);
  }
  return found;
}

/// Reads the records of one (partitioned) training step.
void analyze(func::FuncOp main, int64_t units, TpProfile &out,
             std::vector<std::string> &kernels) {
  Block &block = main.getBody().front();
  DenseMap<Operation *, int32_t> unitOf;
  DenseMap<Operation *, Phase> phaseOf;
  DenseSet<Value> batch(main.getArguments().begin(), main.getArguments().end());
  const DenseSet<Value> gradients = gradientChain(block);
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
  // Ops a later pass inserted whose results only the backward reads (a
  // sequence-parallel all_gather of a forward activation, made again for
  // the weight gradient): they run in the backward, and what they read is
  // what stays from the forward.
  DenseSet<Operation *> forBackward;
  for (Operation &op : llvm::reverse(block.without_terminator())) {
    if (isa<ParamOp>(op) || op.hasAttr("weft.stage") ||
        isOptimizerUpdate(&op) || op.use_empty())
      continue;
    if (llvm::all_of(op.getUsers(), [&](Operation *user) {
          return user->hasAttr("weft.stage")
                     ? user->hasAttr("weft.backward") ||
                           user->hasAttr("weft.weight_grad")
                     : forBackward.contains(user);
        }))
      forBackward.insert(&op);
  }
  // The collectives started and not yet waited for.
  DenseMap<Value, size_t> started;
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
      // among its operands, with that operand's phase; of parameters alone
      // (a gather of a split weight), the unit that reads them first.
      int32_t best = -1, param = -1;
      for (Value v : op.getOperands())
        if (Operation *def = v.getDefiningOp()) {
          if (!unitOf.count(def))
            continue;
          if (isa<ParamOp>(def))
            param = std::max(param, unitOf[def]);
          else if (unitOf[def] >= best) {
            best = unitOf[def];
            phase = phaseOf[def];
          }
        }
      unit = std::max({best, param, 0});
      if (phase == Phase::Forward && forBackward.contains(&op))
        phase = Phase::Backward;
    }
    unitOf[&op] = unit;
    phaseOf[&op] = phase;
    bool batched = llvm::any_of(op.getOperands(),
                                [&](Value v) { return batch.contains(v); });
    if (batched)
      for (Value r : op.getResults())
        if (!gradients.contains(r))
          batch.insert(r);
    // A collective weft-async-collectives started: the op records between
    // its start and this wait run while it travels.
    if (auto wait = dyn_cast<CommWaitOp>(op)) {
      if (auto it = started.find(wait.getPending()); it != started.end())
        out.collectives[it->second].wait = static_cast<int32_t>(out.ops.size());
      continue;
    }
    std::string kind = collectiveKind(&op);
    if (!kind.empty()) {
      CollectiveRecord c;
      c.unit = unit;
      c.phase = phase;
      c.kind = kind;
      c.bytes = kind == "all_gather" ? bytesOf(op.getResult(0).getType())
                                     : bytesOf(op.getOperand(0).getType());
      c.batch = batched;
      c.start = c.wait = static_cast<int32_t>(out.ops.size());
      if (isa<AllReduceStartOp, AllGatherStartOp, ReduceScatterStartOp>(op))
        started[op.getResult(0)] = out.collectives.size();
      if (auto gather = dyn_cast<AllGatherStartOp>(op)) {
        Value source = gather.getInput();
        while (auto reshape = source.getDefiningOp<ReshapeOp>())
          source = reshape.getInput();
        c.prefetch = source.getDefiningOp<ParamOp>() != nullptr;
      }
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
    // Attention's products contract the head size (the scores) or run
    // over it (the values): it is the GEMM dimension that stays small.
    if (isa<AttentionOp, AttentionGradOp>(op))
      r.minDim = static_cast<double>(
          cast<RankedTensorType>(op.getOperand(0).getType()).getShape().back());
    bool inPlace = false;
    if (auto k = dyn_cast<KernelOpInterface>(op)) {
      StringRef name = k.getKernelName();
      inPlace = name == "adamw" || name == "sgd";
      auto it = llvm::find(kernels, name);
      r.kernel = static_cast<uint16_t>(it - kernels.begin());
      if (it == kernels.end())
        kernels.push_back(name.str());
    }
    // An optimizer's update (inPlace) writes the parameter and its state where
    // it read them (weft-lower-to-runtime updateInPlace): the lines it writes
    // were just read, so a CPU's write-allocate reads nothing more (AdamW
    // on resnet18's 11.7M parameters: 13-14 ms on 2 EPYC ranks, the
    // calibrated stream rate's 21 ms when its results were counted twice).
    for (Type t : op.getResultTypes())
      r.resultBytes += inPlace ? 0.0 : bytesOf(t);
    if (r.product)
      for (Value v : llvm::concat<Value>(op.getOperands(), op.getResults()))
        if (!batch.contains(v))
          r.stateBytes += bytesOf(v.getType());
    out.ops.push_back(r);
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
      // Its readers' units (through what the partition put between: a
      // slice or gather of it has no unit of its own).
      std::set<int32_t> readers;
      SmallVector<Operation *> users(param->getUsers());
      for (size_t i = 0; i < users.size(); ++i) {
        if (auto s = users[i]->getAttrOfType<IntegerAttr>("weft.stage"))
          readers.insert(clampUnit(s.getInt()));
        else if (i < 64 && !isOptimizerUpdate(users[i]))
          for (Operation *next : users[i]->getUsers())
            users.push_back(next);
      }
      if (readers.size() > 1)
        out.sharedParams.push_back(
            {std::vector<int32_t>(readers.begin(), readers.end()), bytes,
             trainable.contains(param.getName())});
    }
  }
  // Forward activations a backward op reads: kept from the forward to the
  // backward of each microbatch.
  DenseSet<Value> saved;
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
      saved.insert(r);
      UnitBytes &u = out.units[unitOf.lookup(&op)];
      u.saved += bytesOf(r.getType());
      if (isProduct(&op))
        u.savedProducts += bytesOf(r.getType());
    }
  }
  // The workspace: the most batch-sized bytes one op reads and writes
  // that are not kept activations (those are counted above), such as the
  // gradient flowing into a backward op and the one it makes.
  for (Operation &op : block.without_terminator()) {
    if (isa<ParamOp>(op))
      continue;
    DenseSet<Value> touched;
    double bytes = 0;
    for (Value v : llvm::concat<Value>(op.getOperands(), op.getResults()))
      if (batch.contains(v) && !saved.contains(v) && touched.insert(v).second)
        bytes += bytesOf(v.getType());
    out.largestOpBytes = std::max(out.largestOpBytes, bytes);
  }
}

/// WEFT_PLANNER_DUMP: the parameters several units read, and the
/// collectives that run while other work does.
void dumpProfile(const TpProfile &p) {
  if (!std::getenv("WEFT_PLANNER_DUMP"))
    return;
  for (const SharedParam &sp : p.sharedParams) {
    llvm::errs() << "tp=" << p.tp
                 << " shared parameter: " << static_cast<int64_t>(sp.bytes)
                 << " bytes" << (sp.trainable ? ", trained" : "")
                 << ", read by units";
    for (int32_t u : sp.units)
      llvm::errs() << " " << u;
    llvm::errs() << "\n";
  }
  // The collectives that overlap work: where they start and are waited for.
  for (const CollectiveRecord &c : p.collectives)
    if (c.wait > c.start)
      llvm::errs() << "tp=" << p.tp << " " << c.kind << " of "
                   << static_cast<int64_t>(c.bytes) << " bytes, unit " << c.unit
                   << ": started before op " << c.start
                   << ", waited for before op " << c.wait << " of "
                   << p.ops.size() << "\n";
}

} // namespace

bool weft::planner::buildProfile(const CompileOptions &opts,
                                 const std::vector<int64_t> &tpDegrees,
                                 ModelProfile &profile, std::string &error,
                                 SequenceVariants sequence) {
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
  PassManager forwardPm(&context);
  addLoweringPasses(forwardPm, opts, LowerUntil::ProfileForward);
  // A profile of tp = 1 alone pads the products as the bundle will (the
  // LM head's logits stay in bf16); one forward serves every degree
  // otherwise, and tensor parallelism wants the real widths.
  if (alignsProducts(opts) && tpDegrees.size() == 1 && tpDegrees[0] == 1)
    forwardPm.addPass(createAlignProducts());
  if (failed(forwardPm.run(module))) {
    error =
        "cannot build the training step of " + opts.model + ": " + diagnostics;
    return false;
  }
  auto main = module.lookupSymbol<func::FuncOp>("main");
  if (!main || !llvm::hasSingleElement(main.getBody())) {
    error = opts.model + ": no single-block function 'main'";
    return false;
  }
  profile.model = opts.model;
  profile.train = opts.train;
  profile.dtype = opts.dtype;
  // What a pipeline would cut by, on the whole model.
  ForwardOps fwd = analyzeForwardOps(main);
  profile.cost.assign(fwd.cost.begin(), fwd.cost.end());
  profile.crossingBytes.assign(fwd.crossingBytes.begin(),
                               fwd.crossingBytes.end());
  profile.layerBoundaries.assign(fwd.layerBoundaries.begin(),
                                 fwd.layerBoundaries.end());
  profile.units = static_cast<int64_t>(fwd.ops.size());
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
    profile.paramCount += static_cast<double>(param.getType().getNumElements());
  });
  // Identical layers are profiled once: the model is shortened to its
  // first, two middle and its last layer, and the middle layers' records
  // stand for every middle layer in turn (kKeptLayers).
  Repetition rep = findRepetition(fwd);
  // WEFT_PLANNER_FULL_PROFILE=1 profiles every layer (to check that the
  // shortcut predicts the same).
  const bool full = std::getenv("WEFT_PLANNER_FULL_PROFILE") != nullptr;
  bool dropped =
      !full && rep.layers > kKeptLayers + 1 && dropRepeatedLayers(fwd, rep);
  if (dropped) {
    // The dropped layers' parameters and constants (last first: a
    // constant may feed another).
    SmallVector<Operation *> holders;
    for (Operation &op : main.getBody().front().without_terminator())
      if (isStageHolder(&op))
        holders.push_back(&op);
    for (Operation *op : llvm::reverse(holders))
      if (op->use_empty())
        op->erase();
    profile.repeatedLayers = rep.layers;
  }
  PassManager pm(&context);
  addLoweringPasses(pm, opts, LowerUntil::ProfileStep);
  if (failed(pm.run(module))) {
    error =
        "cannot build the training step of " + opts.model + ": " + diagnostics;
    return false;
  }
  const int64_t reducedUnits =
      dropped ? profile.units - (rep.layers - kKeptLayers) * rep.opsPerLayer
              : profile.units;

  // The batch statistics, on a copy split over two microbatches (the
  // partitioner's batch axis, as weft-microbatch sees it).
  if (opts.train && profile.batch % 2 == 0) {
    OwningOpRef<ModuleOp> copy(module.clone());
    PassManager mbPm(&context);
    AnnotateShardingOptions mesh;
    mesh.microbatches = 2;
    mbPm.addPass(createAnnotateSharding(mesh));
    mbPm.addPass(createPartition());
    diagnostics.clear();
    if (succeeded(mbPm.run(*copy)))
      profile.couplings = expandCouplings(
          findBatchCouplings(copy->lookupSymbol<func::FuncOp>("main"),
                             reducedUnits),
          rep, dropped);
    if (std::getenv("WEFT_PLANNER_DUMP"))
      for (const BatchCoupling &c : profile.couplings)
        llvm::errs() << "batch statistic: unit " << c.unit << " from unit "
                     << c.source << ", "
                     << (c.phase == Phase::Forward ? "forward" : "backward")
                     << ", " << c.bytes << " bytes\n";
  }

  // Each degree above 1 partitions its own copy; tp = 1 comes last and
  // takes the step itself. Then each takes the passes a rank's step gets
  // before lowering (merged slice gradients, fusion).
  std::vector<int64_t> order;
  for (int64_t tp : tpDegrees)
    if (tp != 1)
      order.push_back(tp);
  if (llvm::is_contained(tpDegrees, int64_t(1)))
    order.push_back(1);
  // The programs at each degree: (tp, sequence-parallel).
  bool tokens = false;
  for (Type t : module.lookupSymbol<func::FuncOp>("main").getArgumentTypes())
    if (auto ranked = dyn_cast<RankedTensorType>(t))
      tokens |=
          ranked.getRank() == 2 && isa<IntegerType>(ranked.getElementType());
  std::vector<std::pair<int64_t, bool>> programs;
  for (int64_t tp : order) {
    if (tp == 1 || sequence == SequenceVariants::AsOptions) {
      programs.push_back({tp, tp > 1 && opts.sequenceParallel});
      continue;
    }
    programs.push_back({tp, false});
    if (tokens)
      programs.push_back({tp, true});
  }
  for (auto [tp, sequenceParallel] : programs) {
    const int64_t key = tpProfileKey(tp, sequenceParallel);
    TpProfile &tpProfile = profile.byTp[key];
    tpProfile.tp = tp;
    PassManager tpPm(&context);
    if (tp == 1) {
      addRankStepPasses(tpPm, opts, /*profile=*/true);
      diagnostics.clear();
      if (failed(tpPm.run(module))) {
        error = "cannot build the training step of " + opts.model + ": " +
                diagnostics;
        return false;
      }
      analyze(module.lookupSymbol<func::FuncOp>("main"), reducedUnits,
              tpProfile, profile.kernels);
      expandProfile(tpProfile, rep, dropped, profile.units);
      dumpProfile(tpProfile);
      continue;
    }
    OwningOpRef<ModuleOp> copy(module.clone());
    AnnotateShardingOptions mesh;
    mesh.tp = tp;
    // Sequence parallelism changes what a rank keeps for the backward (the
    // norms' and residuals' activations split over tp) and the collectives
    // (all_gather and reduce_scatter instead of all_reduce): the profile
    // is of the program weft builds.
    mesh.sequenceParallel = sequenceParallel;
    if (auto price = opts.tpPrices.find(tp); price != opts.tpPrices.end()) {
      mesh.tpFlopSeconds = price->second.flopSeconds;
      mesh.tpByteSeconds = price->second.byteSeconds;
      mesh.tpLatency = price->second.latency;
      // Without the left-out identical layers the weights are fewer: so is
      // their share of memory.
      mesh.tpMemory = price->second.memoryBytes *
                      (static_cast<double>(reducedUnits) / profile.units);
    }
    tpPm.addPass(createAnnotateSharding(mesh));
    tpPm.addPass(createPartition());
    // Where the collectives start and are waited for, as weftc compile
    // places them: the cost model hides what travels behind the work in
    // between.
    tpPm.addPass(createScheduleCollectives());
    tpPm.addPass(createAsyncCollectives());
    addRankStepPasses(tpPm, opts, /*profile=*/true);
    diagnostics.clear();
    if (failed(tpPm.run(*copy))) {
      profile.byTp.erase(key);
      profile.tpRefused[key] =
          diagnostics.empty() ? "the partition failed" : diagnostics;
      continue;
    }
    auto tpMain = copy->lookupSymbol<func::FuncOp>("main");
    if (auto splits = tpMain->getAttrOfType<StringAttr>("weft.tp_plan"))
      tpProfile.splits = splits.getValue().str();
    if (std::getenv("WEFT_PLANNER_DUMP") && !tpProfile.splits.empty())
      llvm::errs() << "tp=" << tp << (sequenceParallel ? " sp" : "")
                   << " splits: " << tpProfile.splits << "\n";
    analyze(tpMain, reducedUnits, tpProfile, profile.kernels);
    expandProfile(tpProfile, rep, dropped, profile.units);
    dumpProfile(tpProfile);
  }
  profile.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return true;
}
