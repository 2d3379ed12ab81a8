//===- AnnotateSharding.cpp - The mesh and the inputs' and params' splits -===//
#include "passes/Passes.h"

#include "dialects/weft/Sharding.h"
#include "passes/TensorParallelPlan.h"

#include "llvm/ADT/StringSet.h"

#include <cmath>

namespace weft {
#define GEN_PASS_DEF_ANNOTATESHARDING
#include "passes/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

/// How an error names input `arg` of `func`: its ONNX name, quoted, else
/// its position.
std::string inputLabel(func::FuncOp func, BlockArgument arg) {
  auto name =
      func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "weft.name");
  return name ? "'" + name.str() + "'" : std::to_string(arg.getArgNumber());
}

/// The data-parallel axis: the grid's first (its groups' ranks furthest
/// apart). The tensor-parallel axis comes last but the microbatches, so a
/// tp group is adjacent ranks (inside a node, on its fastest links, as
/// Megatron-LM lays them out), pipeline neighbours tp ranks apart.
constexpr MeshAxis kDataAxis = 0;

/// The first dimension `dp` divides, if any: where ZeRO cuts a tensor.
std::optional<int64_t> zeroDim(RankedTensorType type, int64_t dp) {
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (type.getDimSize(d) % dp == 0)
      return d;
  return std::nullopt;
}

struct AnnotateShardingPass
    : public weft::impl::AnnotateShardingBase<AnnotateShardingPass> {
  using AnnotateShardingBase::AnnotateShardingBase;

  /// The tensor-parallel axis of the grid built (see kDataAxis).
  MeshAxis tensorAxis = 1;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (dp < 1 || tp < 1) {
      module.emitError("parallel degrees must be at least 1, got dp=")
          << static_cast<int64_t>(dp) << " tp=" << static_cast<int64_t>(tp);
      return signalPassFailure();
    }
    if (!module.getOps<shard::GridOp>().empty()) {
      module.emitError("the module already has a device mesh");
      return signalPassFailure();
    }
    auto func = module.lookupSymbol<func::FuncOp>("main");
    if (!func) {
      module.emitError("no function 'main' to partition");
      return signalPassFailure();
    }
    if (microbatches < 1) {
      module.emitError("the number of microbatches must be at least 1, got ")
          << static_cast<int64_t>(microbatches);
      return signalPassFailure();
    }
    OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
    if (pp < 1) {
      module.emitError("the number of pipeline stages must be at least 1, "
                       "got ")
          << static_cast<int64_t>(pp);
      return signalPassFailure();
    }
    if (tpFlopSeconds < 0 || tpByteSeconds < 0 || tpLatency < 0 ||
        tpMemory < 0 ||
        !std::isfinite(tpFlopSeconds + tpByteSeconds + tpLatency + tpMemory)) {
      module.emitError("the tensor-parallel costs (tp-flop-seconds, "
                       "tp-byte-seconds, tp-latency, tp-memory) must be "
                       "finite and not negative");
      return signalPassFailure();
    }
    // dp, the pipeline's stages, tp, then the microbatches, which
    // weft-microbatch turns into time (their axis must be the last).
    SmallVector<int64_t> shape = {dp};
    SmallVector<StringRef> axisNames = {"dp"};
    if (pp > 1) {
      shape.push_back(pp);
      axisNames.push_back("pp");
    }
    tensorAxis = static_cast<MeshAxis>(shape.size());
    shape.push_back(tp);
    axisNames.push_back("tp");
    const MeshAxis kMicrobatchAxis = static_cast<MeshAxis>(shape.size());
    if (microbatches > 1) {
      shape.push_back(microbatches);
      axisNames.push_back("mb");
    }
    auto grid =
        shard::GridOp::create(b, module.getLoc(), b.getStringAttr("mesh"),
                              b.getDenseI64ArrayAttr(shape));
    grid->setAttr("weft.mesh_axes", b.getStrArrayAttr(axisNames));
    if (dp == 1 && zero > 0) {
      module.emitError("--zero needs data parallelism (dp > 1)");
      return signalPassFailure();
    }
    // Rows split over dp, then each rank's rows over the microbatches.
    MeshAxes rowAxes;
    if (dp > 1)
      rowAxes.push_back(kDataAxis);
    if (microbatches > 1)
      rowAxes.push_back(kMicrobatchAxis);
    int64_t rowParts = dp * microbatches;
    for (BlockArgument arg :
         rowParts > 1 ? func.getArguments() : ArrayRef<BlockArgument>()) {
      auto type = cast<RankedTensorType>(arg.getType());
      std::string label = inputLabel(func, arg);
      if (type.getRank() == 0) {
        func.emitError("input ")
            << label << " is a scalar: "
            << (dp > 1 ? "data parallelism" : "microbatching")
            << " splits every input along its batch dimension";
        return signalPassFailure();
      }
      if (type.getDimSize(0) % rowParts != 0) {
        func.emitError("the batch of input ")
            << label << " (" << type.getDimSize(0)
            << " rows) does not split into "
            << (dp > 1 ? "dp=" + std::to_string(dp) : std::string())
            << (dp > 1 && microbatches > 1 ? " x " : "")
            << (microbatches > 1
                    ? "microbatches=" + std::to_string(microbatches)
                    : std::string())
            << " equal parts";
        return signalPassFailure();
      }
      TensorSharding s = TensorSharding::replicated(type.getRank());
      s.dims[0] = DimSharding(rowAxes);
      func.setArgAttr(arg.getArgNumber(), "weft.shard", shardingToAttr(b, s));
    }
    if (sequenceParallel && failed(splitSequences(func, b)))
      return signalPassFailure();
    if (tp > 1)
      annotateTensorParallel(module, func, b);
    if (zero > 0)
      annotateState(func, b);
  }

  /// Sequence parallelism: dim 1 of every input of rank 2 or 3 ([batch,
  /// sequence] tokens, [batch, sequence, features]) over "tp". An input of
  /// higher rank (an image: its dim 1 is channels) is no sequence and stays
  /// whole along it; a model with no sequence at all is refused.
  LogicalResult splitSequences(func::FuncOp func, OpBuilder &b) {
    if (tp == 1)
      return func.emitError("sequence parallelism needs tp > 1");
    auto isSequence = [](RankedTensorType type) {
      return type.getRank() == 2 || type.getRank() == 3;
    };
    if (llvm::none_of(func.getArgumentTypes(), [&](Type t) {
          return isSequence(cast<RankedTensorType>(t));
        })) {
      InFlightDiagnostic diag = func.emitError(
          "sequence parallelism splits the sequence (dim 1) of [batch, "
          "sequence] and [batch, sequence, features] inputs, and no input "
          "is one:");
      for (BlockArgument arg : func.getArguments())
        diag << " input " << inputLabel(func, arg) << " is " << arg.getType()
             << ";";
      diag << " tensor parallelism alone splits this model";
      return diag;
    }
    for (BlockArgument arg : func.getArguments()) {
      auto type = cast<RankedTensorType>(arg.getType());
      if (!isSequence(type))
        continue;
      if (type.getDimSize(1) % tp != 0)
        return func.emitError("the sequence of input ")
               << inputLabel(func, arg) << " (" << type.getDimSize(1)
               << ") does not split into tp=" << static_cast<int64_t>(tp)
               << " equal parts";
      TensorSharding s = TensorSharding::replicated(type.getRank());
      if (Attribute attr = func.getArgAttr(arg.getArgNumber(), "weft.shard"))
        s = *shardingFromAttr(attr, type.getRank());
      s.dims[1] = DimSharding(MeshAxes{tensorAxis});
      func.setArgAttr(arg.getArgNumber(), "weft.shard", shardingToAttr(b, s));
    }
    return success();
  }

  /// Megatron's splits over "tp", found by TensorParallelPlan.
  void annotateTensorParallel(ModuleOp module, func::FuncOp func,
                              OpBuilder &b) {
    std::string error;
    FailureOr<Mesh> mesh = getModuleMesh(module, error);
    if (failed(mesh))
      return;
    // Sequence parallelism keeps Megatron's layout: the integer program
    // prices replicated weights on sequence-split rows as free (their
    // gradients' all_reduce over tp and their optimizer state are not in
    // its objective) and splits fewer weights than Megatron would.
    TensorParallelCosts costs;
    if (!sequenceParallel) {
      costs.flopSeconds = tpFlopSeconds;
      costs.byteSeconds = tpByteSeconds;
      costs.latency = tpLatency;
      costs.memoryBytes = tpMemory;
    }
    std::string summary;
    llvm::StringMap<TensorSharding> plan =
        planTensorParallel(func, *mesh, tensorAxis, costs, &summary);
    if (costs.enabled())
      func->setAttr("weft.tp_plan", b.getStringAttr(summary));
    func.walk([&](ParamOp param) {
      auto it = plan.find(param.getName());
      if (it != plan.end())
        param->setAttr("weft.shard", shardingToAttr(b, it->second));
    });
  }

  /// A ZeRO-3 parameter is split over dp for storage only: every op but
  /// its optimizer update computes with it gathered over those axes.
  static void markStorageOnly(ParamOp param, OpBuilder &b) {
    param->setAttr("weft.zero_axes", b.getDenseI16ArrayAttr({kDataAxis}));
  }

  /// ZeRO: with stage >= 1 the optimizer state, with stage 3 also the
  /// trained parameters, is cut over "dp" along its first dimension dp
  /// divides (a tensor with none stays whole).
  void annotateState(func::FuncOp func, OpBuilder &b) {
    llvm::StringSet<> trainable;
    if (auto names = func->getAttrOfType<ArrayAttr>("weft.trainable"))
      for (Attribute n : names)
        trainable.insert(cast<StringAttr>(n).getValue());
    func.walk([&](ParamOp param) {
      auto role = param->getAttrOfType<StringAttr>("weft.role");
      bool state = role && role.getValue() == "optimizer_state";
      bool trained = !role && trainable.contains(param.getName());
      if (!(zero >= 1 && state) && !(zero >= 3 && trained))
        return;
      auto type = param.getType();
      TensorSharding s = TensorSharding::replicated(type.getRank());
      if (Attribute attr = param->getAttr("weft.shard"))
        if (FailureOr<TensorSharding> tp =
                shardingFromAttr(attr, type.getRank());
            succeeded(tp))
          s = *tp;
      // A tensor-parallel split dim takes dp as well (the runtime stores
      // one split dim per tensor); else the first dim dp divides.
      for (DimSharding &dim : s.dims)
        if (!dim.empty()) {
          int64_t n = type.getDimSize(&dim - s.dims.data());
          if (dim.outer == 1 && n % (dp * tp) == 0) {
            dim.axes.push_back(kDataAxis);
            param->setAttr("weft.shard", shardingToAttr(b, s));
            if (trained)
              markStorageOnly(param, b);
          }
          return;
        }
      std::optional<int64_t> d = zeroDim(type, dp);
      if (!d)
        return;
      s.dims[*d] = DimSharding(MeshAxes{kDataAxis});
      param->setAttr("weft.shard", shardingToAttr(b, s));
      if (trained)
        markStorageOnly(param, b);
    });
  }
};

} // namespace
