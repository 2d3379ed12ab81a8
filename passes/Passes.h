//===- Passes.h - weft's passes and pipelines ----------------------*- C++
//-*-===//
#ifndef WEFT_PASSES_PASSES_H
#define WEFT_PASSES_PASSES_H

#include "dialects/weft/ElementTypes.h"
#include "dialects/weft/WeftOps.h"
#include "dialects/weftrt/WeftRtOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

#include <optional>
#include <string>

namespace weft {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

/// Whether `a` and `b` run at the same place in the step: the discardable
/// attributes that place an op (pipeline stage, microbatch, virtual-stage
/// chunk, after the microbatch loop) agree, weft.stage aside under
/// `ignoreStage` (the planner's profile, whose weft.stage marks layers).
inline bool samePlace(mlir::Operation *a, mlir::Operation *b,
                      bool ignoreStage) {
  for (llvm::StringRef key : {"weft.stage", "weft.microbatch", "weft.chunk",
                              "weft.after_microbatches"}) {
    if (ignoreStage && key == "weft.stage")
      continue;
    if (a->getDiscardableAttr(key) != b->getDiscardableAttr(key))
      return false;
  }
  return true;
}

/// What weft-pipeline ran instead of the schedule asked for (its
/// gpipe-if-coupled fallback, recorded on the module), and why.
struct PipelineFallback {
  std::string schedule, reason;
};
void setPipelineFallback(mlir::ModuleOp module, const PipelineFallback &ran);
/// The fallback recorded on `module`, or nullopt where the schedule asked
/// for ran.
std::optional<PipelineFallback> getPipelineFallback(mlir::ModuleOp module);

/// Everything from an imported weft module to LLVM dialect for one rank on
/// the CPU: cleanup, lowering to runtime calls, buffer assignment, LLVM.
void buildCpuInferencePipeline(mlir::OpPassManager &pm);
/// Registers the pipelines with names for weft-opt (`weft-cpu-pipeline`).
void registerPipelines();

} // namespace weft

#endif // WEFT_PASSES_PASSES_H
