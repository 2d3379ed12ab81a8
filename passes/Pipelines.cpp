//===- Pipelines.cpp - weft's pass pipelines, assembled in one place ------===//
#include "passes/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void weft::buildCpuInferencePipeline(OpPassManager &pm) {
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createLowerToRuntime());
  pm.addNestedPass<func::FuncOp>(createAssignBuffers());
  pm.addPass(createRuntimeToLLVM());
}

void weft::registerPipelines() {
  PassPipelineRegistration<>(
      "weft-cpu-pipeline",
      "Lower an imported weft module to LLVM dialect for the CPU runtime",
      [](OpPassManager &pm) { buildCpuInferencePipeline(pm); });
}
