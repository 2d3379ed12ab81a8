//===- CompileCommand.cpp - weftc compile ---------------------------------===//
//
// ONNX -> weft dialect -> runtime calls with an assigned arena -> LLVM ->
// object file -> executable linked with the runtime of --target
// (libweft_runtime or libweft_runtime_cuda), written as a bundle with its
// parameters, manifest.json, plan.txt and a copy of the source model
// (source.onnx, with its external data files); cuda bundles keep model.o.
//
//===----------------------------------------------------------------------===//
#include "tools/BundleLink.h"
#include "tools/weftc/AutoPlan.h"
#include "tools/weftc/BundleWriter.h"
#include "tools/weftc/Codegen.h"
#include "tools/weftc/Commands.h"
#include "tools/weftc/CompileOptions.h"

#include "frontends/onnx/OnnxImporter.h"
#include "passes/Passes.h"
#include "tools/Registration.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/raw_ostream.h"

#include <map>

using namespace weft;

static int fail(int code, const std::string &message) {
  llvm::errs() << "weftc: error: " << message << "\n";
  return code;
}

bool weft::applyMlirFlags(const std::vector<std::string> &flags) {
  registerAllPasses(); // so --mlir-print-ir-after=<pass> knows the names
  mlir::registerMLIRContextCLOptions();
  mlir::registerPassManagerCLOptions();
  mlir::registerAsmPrinterCLOptions();
  std::vector<const char *> argv = {"weftc"};
  for (const std::string &f : flags)
    argv.push_back(f.c_str());
  return llvm::cl::ParseCommandLineOptions(argv.size(), argv.data(), "",
                                           &llvm::errs());
}

/// Reads the signature and memory plan of the lowered program.
static ProgramSummary summarize(mlir::ModuleOp module) {
  ProgramSummary summary;
  auto func = module.lookupSymbol<mlir::func::FuncOp>("weft_model_run");
  summary.inputs = func->getAttrOfType<mlir::ArrayAttr>("weftrt.inputs");
  summary.params = func->getAttrOfType<mlir::ArrayAttr>("weftrt.params");
  summary.outputs = func->getAttrOfType<mlir::ArrayAttr>("weftrt.outputs");
  if (auto arena = func->getAttrOfType<mlir::IntegerAttr>("weftrt.arena_bytes"))
    summary.arenaBytes = arena.getInt();
  if (auto stages = func->getAttrOfType<mlir::DenseI64ArrayAttr>(
          "weftrt.stage_arena_bytes"))
    summary.stageArenaBytes.assign(stages.asArrayRef().begin(),
                                   stages.asArrayRef().end());
  auto bytesOf = [](mlir::ArrayAttr slots) {
    int64_t total = 0;
    for (mlir::Attribute a : slots) {
      auto type = mlir::cast<mlir::RankedTensorType>(
          mlir::cast<mlir::TypeAttr>(
              mlir::cast<mlir::DictionaryAttr>(a).get("type"))
              .getValue());
      total += getTensorBytes(type);
    }
    return total;
  };
  // A pipeline stage's ranks hold its parameters (and their optimizer
  // state and gradients) only: per rank, the largest stage's share.
  std::map<int64_t, int64_t> paramsPerStage, optimizerPerStage,
      gradientsPerStage;
  auto largestStage = [](const std::map<int64_t, int64_t> &perStage) {
    int64_t common = perStage.count(-1) ? perStage.at(-1) : 0, most = 0;
    for (auto [stage, bytes] : perStage)
      if (stage >= 0)
        most = std::max(most, bytes);
    return common + most;
  };
  for (mlir::Attribute a : summary.params) {
    auto dict = mlir::cast<mlir::DictionaryAttr>(a);
    auto stage = dict.getAs<mlir::IntegerAttr>("stage");
    int64_t bytes = getTensorBytes(mlir::cast<mlir::RankedTensorType>(
        mlir::cast<mlir::TypeAttr>(dict.get("type")).getValue()));
    paramsPerStage[stage ? stage.getInt() : -1] += bytes;
    auto role = dict.getAs<mlir::StringAttr>("role");
    if (role && role.getValue() != "param")
      optimizerPerStage[stage ? stage.getInt() : -1] += bytes;
  }
  summary.paramBytes = largestStage(paramsPerStage);
  summary.optimizerBytes = largestStage(optimizerPerStage);
  if (auto mesh =
          func->getAttrOfType<mlir::DenseI64ArrayAttr>("weftrt.mesh_shape")) {
    summary.meshShape.assign(mesh.asArrayRef().begin(),
                             mesh.asArrayRef().end());
    if (auto names = func->getAttrOfType<mlir::ArrayAttr>("weftrt.mesh_axes"))
      for (mlir::Attribute n : names)
        summary.meshAxes.push_back(mlir::cast<mlir::StringAttr>(n).str());
  }
  if (auto mode = func->getAttrOfType<mlir::StringAttr>("weftrt.mode"))
    summary.mode = mode.str();
  summary.ioBytes = bytesOf(summary.inputs) + bytesOf(summary.outputs);
  func.walk([&](rt::LaunchOp launch) {
    ++summary.kernelCounts[launch.getKernel().str()];
    // Gradients: operand 1 of every optimizer update (KernelABI.h), as this
    // rank holds it when the update reads it.
    llvm::StringRef kernel = launch.getKernel();
    if (kernel != "adamw" && kernel != "sgd")
      return;
    llvm::ArrayRef<int64_t> desc = launch.getDesc();
    size_t pos = 1;
    for (int t = 0; t < 2 && pos + 1 < desc.size(); ++t) {
      int64_t dtype = desc[pos], rank = desc[pos + 1];
      int64_t bytes = weftDTypeSize(dtype);
      for (int64_t d = 0; d < rank; ++d)
        bytes *= desc[pos + 2 + d];
      if (t == 1) {
        auto stage = launch->getAttrOfType<mlir::IntegerAttr>("weftrt.stage");
        gradientsPerStage[stage ? stage.getInt() : -1] += bytes;
      }
      pos += 2 + rank;
    }
  });
  summary.gradientBytes = largestStage(gradientsPerStage);
  return summary;
}

/// Optimizer state and the step counter start at zero; the bundle's
/// parameter file holds them beside the weights.
/// weft-build-train-step's options from the flags (torch.optim's defaults
/// where a flag gave none): the pass and plan.txt / manifest.json read them.
static BuildTrainStepOptions trainStepOptions(const CompileOptions &opts) {
  BuildTrainStepOptions step;
  step.optimizer = opts.optimizer.empty() ? "adamw" : opts.optimizer;
  step.lr = opts.lr.value_or(1e-3);
  step.beta1 = opts.beta1.value_or(0.9);
  step.beta2 = opts.beta2.value_or(0.999);
  step.eps = opts.eps.value_or(1e-8);
  step.weightDecay = opts.weightDecay.value_or(-1.0);
  step.momentum = opts.momentum.value_or(0.0);
  step.clipGradNorm = opts.clipGradNorm.value_or(0.0);
  step.lrSchedule = opts.lrSchedule.empty() ? "constant" : opts.lrSchedule;
  step.warmupSteps = opts.warmupSteps.value_or(0);
  step.decaySteps = opts.decaySteps.value_or(0);
  step.minLr = opts.minLr.value_or(0.0);
  return step;
}

/// The training step's optimizer as plan.txt states it.
static std::string describeOptimizer(const BuildTrainStepOptions &step) {
  auto number = [](double v) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", v);
    return std::string(text);
  };
  const bool sgd = step.optimizer == "sgd";
  std::string text = step.optimizer + ", lr " + number(step.lr);
  if (step.warmupSteps > 0 || step.lrSchedule != "constant")
    text += " (" +
            (step.warmupSteps > 0
                 ? "warmup over " + std::to_string(step.warmupSteps) +
                       " updates, then "
                 : std::string()) +
            (step.lrSchedule == "constant"
                 ? std::string("constant")
                 : step.lrSchedule + " decay to " + number(step.minLr) +
                       " at update " + std::to_string(step.decaySteps)) +
            ")";
  if (sgd && step.momentum != 0.0)
    text += ", momentum " + number(step.momentum);
  if (!sgd)
    text += ", betas " + number(step.beta1) + "/" + number(step.beta2) +
            ", eps " + number(step.eps);
  // A negative weight decay is the optimizer's default (the pass's rule).
  text +=
      ", weight decay " +
      number(step.weightDecay >= 0.0 ? step.weightDecay : (sgd ? 0.0 : 1e-2));
  if (step.clipGradNorm > 0.0)
    text += ", gradients clipped to norm " + number(step.clipGradNorm);
  return text;
}

static void addInitialState(const ProgramSummary &summary, ParamTable &params) {
  for (mlir::Attribute slot : summary.params) {
    auto dict = mlir::cast<mlir::DictionaryAttr>(slot);
    llvm::StringRef name =
        mlir::cast<mlir::StringAttr>(dict.get("name")).getValue();
    if (params.contains(name))
      continue;
    auto type = mlir::cast<mlir::RankedTensorType>(
        mlir::cast<mlir::TypeAttr>(dict.get("type")).getValue());
    ParamEntry entry;
    entry.name = name.str();
    entry.dtype = *getDTypeOf(type.getElementType());
    entry.shape.assign(type.getShape().begin(), type.getShape().end());
    entry.data.assign(getTensorBytes(type), 0);
    params.add(std::move(entry));
  }
}

mlir::LogicalResult weft::printDiagnostic(mlir::Diagnostic &diag) {
  llvm::errs() << diag.getLocation() << ": "
               << (diag.getSeverity() == mlir::DiagnosticSeverity::Error
                       ? "error: "
                       : "note: ")
               << diag << "\n";
  return mlir::success();
}

bool weft::importForLowering(const CompileOptions &opts, LoweringInput &input,
                             std::string &error, bool structureOnly) {
  if (!applyMlirFlags(opts.mlirFlags)) {
    error = "invalid --mlir-* option";
    return false;
  }
  mlir::DialectRegistry registry;
  registerAllDialects(registry);
  input.context = std::make_unique<mlir::MLIRContext>(registry);
  input.context->loadAllAvailableDialects();
  OnnxImportOptions importOptions;
  importOptions.inputShapes = opts.inputShapes;
  importOptions.loadExternalData = !structureOnly;
  importOptions.trainingStep = opts.train;
  input.imported =
      importOnnxFile(*input.context, opts.model, importOptions, error);
  if (!input.imported)
    return false;
  // What the model is, whatever the plan: the signature records it, so a
  // checkpoint moves only between plans of the same model (Reshard.h).
  auto file = llvm::MemoryBuffer::getFile(opts.model);
  if (file) {
    auto bytes = llvm::arrayRefFromStringRef((*file)->getBuffer());
    input.imported->module->getOperation()->setAttr(
        "weft.model_sha256",
        mlir::StringAttr::get(input.context.get(),
                              llvm::toHex(llvm::SHA256::hash(bytes),
                                          /*LowerCase=*/true)));
  }
  return true;
}

bool weft::alignsProducts(const CompileOptions &opts) {
  const bool align = opts.alignProducts == "on" ||
                     (opts.alignProducts.empty() && opts.target == "cuda");
  return align && opts.tp.value_or(1) == 1 && !opts.sequenceParallel;
}

/// An on|off flag whose GPU kernels have not run on a GPU yet: on when
/// asked, and by default for every target but cuda.
static bool onUntilCheckedOnGpu(const std::string &flag,
                                const CompileOptions &opts) {
  return flag == "on" || (flag.empty() && opts.target != "cuda");
}

void weft::addRankStepPasses(mlir::PassManager &pm, const CompileOptions &opts,
                             bool profile) {
  pm.addPass(createMergeSliceGrads());
  // A recurrence's per-step weight-gradient products as one product.
  if (opts.mergeProducts != "off") {
    MergeProductsOptions merge;
    merge.ignoreStage = profile;
    pm.addPass(createMergeProducts(merge));
  }
  // Chains of elementwise ops run as one kernel each: one pass over memory
  // where a GPU would otherwise make one per op.
  if (opts.fuse == "elementwise" ||
      (opts.fuse.empty() && opts.target == "cuda")) {
    FuseElementwiseOptions fuse;
    fuse.ignoreStage = profile;
    pm.addPass(createFuseElementwise(fuse));
    // A gradient group recomputes what a forward group kept for it when
    // that moves fewer bytes (GELU's f32 intermediates, say).
    if (opts.fuseRecompute != "off") {
      RecomputeElementwiseOptions recompute;
      recompute.ignoreStage = profile;
      pm.addPass(createRecomputeElementwise(recompute));
    }
  }
  // Casts a layer norm or a sum beside them does themselves (after fusion:
  // the narrowing casts have moved next to the layer norms by then).
  FoldCastsOptions fold;
  fold.ignoreStage = profile;
  fold.foldNormCasts = onUntilCheckedOnGpu(opts.foldNormCasts, opts);
  pm.addPass(createFoldCasts(fold));
}

void weft::addLoweringPasses(mlir::PassManager &pm, const CompileOptions &opts,
                             LowerUntil until) {
  // The planner runs the forward passes and the rest separately (it
  // shortens repeated layers in between).
  const bool forward = until != LowerUntil::ProfileStep;
  if (forward && opts.train) {
    AppendLossOptions loss;
    loss.loss = opts.loss;
    loss.target = opts.lossTarget;
    pm.addPass(createAppendLoss(loss));
  }
  // Mixed precision rewrites the forward graph, so autodiff differentiates
  // the casts; canonicalizing first folds transposes into the products.
  if (forward && opts.dtype == "bf16") {
    pm.addPass(mlir::createCanonicalizerPass());
    MixedPrecisionOptions precision;
    precision.dtype = opts.dtype;
    pm.addPass(createMixedPrecision(precision));
  }
  // Written-out attention as one op, whose kernels keep no score matrix
  // (the planner prices the fused op too, so it runs in every profile).
  if (forward && (opts.fuseAttention == "on" ||
                  (opts.fuseAttention.empty() && opts.target == "cuda"))) {
    pm.addPass(mlir::createCanonicalizerPass());
    FuseAttentionOptions attention;
    attention.seqMajor = onUntilCheckedOnGpu(opts.attentionSeqMajor, opts);
    pm.addPass(createFuseAttention(attention));
  }
  // GPU GEMMs want 16-byte aligned rows: an odd vocabulary is padded (not
  // under tensor parallelism, whose vocabulary split expects the real one,
  // nor in the planner's profile, which prices every tp from one forward).
  if (forward && until != LowerUntil::ProfileForward && alignsProducts(opts))
    pm.addPass(createAlignProducts());
  if (until == LowerUntil::ProfileForward)
    return;
  // Pipeline stages are cut in the forward model; autodiff puts each
  // gradient op in the stage of the op it differentiates.
  const int64_t pp = opts.pp.value_or(1);
  if (until == LowerUntil::ProfileStep) {
    PipelineStagesOptions stagesOpts;
    stagesOpts.unitStages = true;
    pm.addPass(createPipelineStages(stagesOpts));
  } else if (pp > 1) {
    PipelineStagesOptions stagesOpts;
    stagesOpts.stages = pp;
    stagesOpts.virtualStages = pipelineVirtualStages(opts);
    stagesOpts.boundaries.assign(opts.stageBoundaries.begin(),
                                 opts.stageBoundaries.end());
    pm.addPass(createPipelineStages(stagesOpts));
  }
  if (opts.emitGradients || opts.train) {
    AutodiffOptions autodiff;
    autodiff.freeze.assign(opts.freeze.begin(), opts.freeze.end());
    pm.addPass(createAutodiff(autodiff));
  }
  if (opts.train) {
    pm.addPass(createBuildTrainStep(trainStepOptions(opts)));
  }
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(mlir::createCSEPass());
  if (until == LowerUntil::ProfileStep)
    return;
  // One program per rank: the mesh and the inputs' splits, then the
  // partitioned step with its collectives.
  // A pipeline runs at least one microbatch per stage by default.
  const int64_t microbatches = opts.microbatches.value_or(pp);
  const bool sharded = opts.devices > 1 || microbatches > 1;
  if (sharded) {
    AnnotateShardingOptions mesh;
    mesh.dp = opts.dp.value_or(1);
    mesh.tp = opts.tp.value_or(1);
    mesh.zero = opts.zero.value_or(0);
    mesh.sequenceParallel = opts.sequenceParallel;
    mesh.microbatches = microbatches;
    mesh.pp = pp;
    if (auto price = opts.tpPrices.find(mesh.tp);
        price != opts.tpPrices.end()) {
      mesh.tpFlopSeconds = price->second.flopSeconds;
      mesh.tpByteSeconds = price->second.byteSeconds;
      mesh.tpLatency = price->second.latency;
      mesh.tpMemory = price->second.memoryBytes;
    }
    pm.addPass(createAnnotateSharding(mesh));
    pm.addPass(createPartition());
    // Microbatches are a mesh axis to the partitioner; here they become
    // repetition, one microbatch after the other.
    pm.addPass(createMicrobatch());
    if (opts.recompute != "none") {
      RecomputeOptions recompute;
      recompute.mode = opts.recompute;
      pm.addPass(createRecompute(recompute));
    }
    if (pp > 1) {
      PipelineOptions pipeline;
      pipeline.schedule = pipelineSchedule(opts);
      // A schedule the user chose is kept (or refused); the default gives
      // way to gpipe where only gpipe can run the model.
      pipeline.gpipeIfCoupled = !opts.scheduleGiven;
      pm.addPass(createPipeline(pipeline));
    }
    if (until == LowerUntil::Pipeline)
      return;
    // ZeRO-1 reduce-scatters gradients where the update reads them; the
    // other plans reduce each gradient as soon as it is complete.
    if (mesh.zero != 1)
      pm.addPass(createScheduleCollectives());
    BucketCollectivesOptions buckets;
    buckets.bucketMb = opts.bucketMb;
    pm.addPass(createBucketCollectives(buckets));
    // Each (bucketed) reduction starts where its operand is complete and is
    // waited for where first needed, so the work between overlaps it.
    pm.addPass(createAsyncCollectives());
    pm.addPass(mlir::createCanonicalizerPass());
    pm.addPass(mlir::createCSEPass());
  }
  if (!sharded && opts.recompute != "none") {
    RecomputeOptions recompute;
    recompute.mode = opts.recompute;
    pm.addPass(createRecompute(recompute));
  }
  if (until == LowerUntil::Pipeline)
    return;
  addRankStepPasses(pm, opts);
  // CPU bundles move ZeRO's buckets where their pieces lie and make each
  // gradient in its all-reduce bucket; the CUDA runtime has no bucket
  // kernels, and its kernels and cuBLAS are yet to be checked with pieces
  // at any element offset.
  LowerToRuntimeOptions lowering;
  lowering.unpackedBuckets = opts.target != "cuda";
  pm.addPass(createLowerToRuntime(lowering));
  AssignBuffersOptions arena;
  arena.placePieces = opts.target != "cuda";
  pm.addNestedPass<mlir::func::FuncOp>(createAssignBuffers(arena));
}

int weft::runCompileCommand(int argc, char **argv) {
  CompileOptions opts;
  std::string error;
  if (!parseCompileOptions(argc, argv, opts, error)) {
    llvm::errs() << kCompileUsage;
    return fail(kExitBadInput, error);
  }
  if (opts.help) {
    llvm::outs() << kCompileUsage;
    return kExitOk;
  }
  if (!checkImplemented(opts, error))
    return fail(kExitBadInput, error);
  // A target this weft has no runtime for (--target cuda without CUDA).
  if (!bundleTargetAvailable(opts.target, error))
    return fail(kExitBadInput, error);
  // The plan: searched by the cost model when the flags leave it open,
  // else the flags' (and the cost model predicts it for the manifest).
  Planning planning;
  const bool searched = wantsSearch(opts);
  const CompileOptions flags = opts; // before the search fills anything in
  if (searched && !searchPlan(opts, planning, error))
    return fail(kExitBadInput, error);

  // Lowered up to buffer assignment first: the bundle's manifest needs the
  // program's signature and memory plan; then to LLVM. A searched plan that
  // weft fails to build (a limit the cost model does not know) gives way to
  // the next best, up to kPlanTries of them.
  constexpr size_t kPlanTries = 3;
  LoweringInput input;
  std::optional<mlir::ScopedDiagnosticHandler> handler;
  mlir::ModuleOp module;
  for (size_t attempt = 0;; ++attempt) {
    if (searched) {
      opts = flags;
      planning.chosen = planning.search.ranked[attempt];
      applyPlan(planning.chosen->plan, opts);
      priceTensorParallel(opts, planning.cluster, {*opts.tp});
      llvm::errs() << "weftc: --auto chose " << planning.chosen->plan.describe()
                   << " on " << planner::describeCluster(planning.cluster)
                   << " (predicted step "
                   << llvm::format("%.3g", planning.chosen->stepTime)
                   << " s; `weftc plan --explain` shows the alternatives)\n";
      if (!checkImplemented(opts, error))
        return fail(kExitFailure, "the plan search chose a plan weft cannot "
                                  "build: " +
                                      error);
    }
    if (!resolveDevices(opts, error))
      return fail(kExitBadInput, error);
    if (!searched && attempt == 0) {
      std::string why;
      if (!predictPinnedPlan(opts, planning, why))
        planning.chosen.reset();
      else if (!planning.chosen->fits())
        llvm::errs() << "weftc: warning: the cost model predicts "
                     << llvm::format("%.3g", planning.chosen->memory.total())
                     << " bytes per rank for this plan, more than the "
                     << llvm::format("%.3g", planning.chosen->capacity)
                     << " of " << planning.cluster.name
                     << " (`weftc plan --explain` finds plans that fit)\n";
    }
    // The last attempt's module before its context.
    handler.reset();
    input.imported.reset();
    input.context.reset();
    if (!importForLowering(opts, input, error))
      return fail(kExitBadInput, error);
    module = input.imported->module.get();
    // Diagnostics from the passes name the op; they go to stderr as they
    // come.
    handler.emplace(input.context.get(), printDiagnostic);
    mlir::PassManager lowerPm(input.context.get());
    if (mlir::failed(mlir::applyPassManagerCLOptions(lowerPm)))
      return fail(kExitBadInput, "invalid pass manager options");
    addLoweringPasses(lowerPm, opts, LowerUntil::Buffers);
    if (mlir::succeeded(lowerPm.run(module)))
      break;
    const bool retry = searched && attempt + 1 < kPlanTries &&
                       attempt + 1 < planning.search.ranked.size();
    if (!retry)
      return fail(kExitBadInput, "cannot compile " + opts.model + " for the " +
                                     opts.target + " target");
    llvm::errs() << "weftc: warning: weft cannot build "
                 << planning.chosen->plan.describe()
                 << " (above); trying the next best plan\n";
  }
  mlir::MLIRContext &context = *input.context;
  std::optional<OnnxImportResult> &imported = input.imported;
  const int64_t pp = opts.pp.value_or(1);
  const int64_t microbatches = opts.microbatches.value_or(pp);
  ProgramSummary summary = summarize(module);
  summary.computeDType = opts.dtype;
  summary.dp = opts.dp.value_or(1);
  summary.tp = opts.tp.value_or(1);
  summary.zero = opts.zero.value_or(0);
  summary.microbatches = microbatches;
  summary.pp = pp;
  summary.schedule = pipelineSchedule(opts);
  if (std::optional<PipelineFallback> ran = getPipelineFallback(module)) {
    summary.scheduleNote =
        ran->schedule + " instead of " + summary.schedule + ": " + ran->reason;
    summary.schedule = ran->schedule;
  }
  summary.virtualStages = pipelineVirtualStages(opts);
  summary.recompute = opts.recompute;
  summary.sequenceParallel = opts.sequenceParallel && summary.tp > 1;
  if (opts.train) {
    const BuildTrainStepOptions step = trainStepOptions(opts);
    summary.optimizer = describeOptimizer(step);
    summary.lr = step.lr;
    summary.lrSchedule = step.lrSchedule;
    summary.warmupSteps = step.warmupSteps;
    summary.decaySteps = step.decaySteps;
    summary.minLr = step.minLr;
  }
  if (searched)
    if (auto it = planning.profile.byTp.find(
            planner::tpProfileKey(summary.tp, opts.sequenceParallel));
        it != planning.profile.byTp.end())
      summary.tpSplits = it->second.splits;
  if (planning.chosen) {
    const planner::PlanEstimate &e = *planning.chosen;
    summary.prediction.emplace();
    summary.prediction->cluster = planning.cluster.name;
    summary.prediction->chosenBySearch = searched;
    summary.prediction->plansSearched = planning.search.evaluated;
    summary.prediction->stepTime = e.stepTime;
    summary.prediction->compute = e.compute + e.optimizer;
    summary.prediction->exposedComm = e.exposedComm;
    summary.prediction->bubble = e.bubble;
    summary.prediction->memoryBytes = e.memory.total();
    summary.prediction->capacityBytes = e.capacity;
  }
  if (opts.train)
    addInitialState(summary, imported->params);

  mlir::PassManager llvmPm(&context);
  if (mlir::failed(mlir::applyPassManagerCLOptions(llvmPm)))
    return fail(kExitBadInput, "invalid pass manager options");
  RuntimeToLLVMOptions lowering;
  lowering.target = opts.target;
  llvmPm.addPass(createRuntimeToLLVM(lowering));
  if (mlir::failed(llvmPm.run(module)))
    return fail(kExitFailure, "lowering to LLVM failed");

  BundleWriter bundle;
  if (!bundle.begin(opts.output, error))
    return fail(kExitBadInput, error);
  std::string objectPath = bundle.path("model.o");
  bool ok =
      emitObjectFile(module, objectPath, error) &&
      linkExecutable(objectPath, bundle.path("model"), opts.target, error);
  // A cuda bundle keeps its object file: a GPU machine links it again with
  // the runtime built there (weft relink).
  if (opts.target != "cuda")
    llvm::sys::fs::remove(objectPath);
  // The bundle keeps a copy of its source model: it says what the bundle was
  // compiled from, and `weft export` writes trained weights into it.
  ok = ok && bundle.writeParams(summary, imported->params, error) &&
       bundle.writeSourceModel(opts.model, error) &&
       bundle.writeManifest(opts.model, opts.target, summary, error) &&
       bundle.writePlanText(opts.model, opts.target, summary, error) &&
       bundle.commit(error);
  if (!ok) {
    bundle.abandon();
    return fail(kExitFailure, error);
  }
  return kExitOk;
}
