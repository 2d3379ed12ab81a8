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

namespace weft {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

/// A widening cast from bf16 to f32 whose one reader is a weft.reduce_sum
/// at the same place in the step (stage, microbatch, chunk): the runtime's
/// reduce kernel reads the bf16 tensor itself (widening each element as it
/// reads it, the same bits), so weft-lower-to-runtime launches no cast and
/// the cost model counts none. With `ignoreStage` (the planner's profile,
/// whose weft.stage marks layers) weft.stage is not compared.
bool castFoldsIntoReduce(CastOp cast, bool ignoreStage = false);

/// Everything from an imported weft module to LLVM dialect for one rank on
/// the CPU: cleanup, lowering to runtime calls, buffer assignment, LLVM.
void buildCpuInferencePipeline(mlir::OpPassManager &pm);
/// Registers the pipelines with names for weft-opt (`weft-cpu-pipeline`).
void registerPipelines();

} // namespace weft

#endif // WEFT_PASSES_PASSES_H
