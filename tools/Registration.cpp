//===- Registration.cpp - Everything weft's tools register ----------------===//
#include "tools/Registration.h"

#include "dialects/weft/WeftOps.h"
#include "dialects/weftrt/WeftRtOps.h"
#include "passes/Passes.h"

#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Transforms/Passes.h"

void weft::registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<weft::WeftDialect, weft::rt::WeftRtDialect,
                  mlir::func::FuncDialect, mlir::cf::ControlFlowDialect,
                  mlir::LLVM::LLVMDialect, mlir::shard::ShardDialect>();
}

void weft::registerAllPasses() {
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  weft::registerWeftPasses();
  weft::registerPipelines();
}
