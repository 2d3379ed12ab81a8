//===- PlanCommand.cpp - weftc plan ---------------------------------------===//
//
// The cost model and plan search arrive with their own issue; until then the
// command exists, documents itself and says so.
//
//===----------------------------------------------------------------------===//
#include "tools/weftc/Commands.h"

#include "llvm/Support/raw_ostream.h"

#include <cstring>

int weft::runPlanCommand(int argc, char **argv) {
  for (int i = 1; i < argc; ++i)
    if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
      llvm::outs() << "usage: weftc plan MODEL.onnx --devices N [--cluster "
                      "PRESET|FILE.json] [--train ...] [--explain] [--json]\n";
      return kExitOk;
    }
  llvm::errs() << "weftc: error: 'weftc plan' is not implemented yet\n";
  return kExitBadInput;
}
