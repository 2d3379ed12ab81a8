//===- weft-opt.cpp - Pass driver for weft's dialects and passes ----------===//
//
// Like mlir-opt, with weft's dialects and passes registered: lit tests run
// each pass through it and FileCheck the result.
//
//===----------------------------------------------------------------------===//
#include "tools/Registration.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  weft::registerAllDialects(registry);
  weft::registerAllPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "weft optimizer driver\n", registry));
}
