//===- Registration.cpp - Everything weft's tools register ----------------===//
#include "tools/Registration.h"

#include "dialects/weft/WeftOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Transforms/Passes.h"

void weft::registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<weft::WeftDialect, mlir::func::FuncDialect>();
}

void weft::registerAllPasses() {
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
}
