//===- weftc.cpp - The weft compiler driver -------------------------------===//
//
//   weftc import  MODEL.onnx [-o OUT.mlir] [--input-shape NAME=D0xD1...]
//   weftc compile MODEL.onnx -o BUNDLE [--target cpu|cuda] ...
//   weftc plan    MODEL.onnx --devices N ...
//
//===----------------------------------------------------------------------===//
#include "tools/weftc/Commands.h"

#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>

static void printUsage(llvm::raw_ostream &os) {
  os << "usage: weftc <command> [options]\n"
        "commands:\n"
        "  import MODEL.onnx [-o OUT.mlir] [--input-shape NAME=D0xD1...]\n"
        "      import an ONNX model into the weft dialect and print it\n"
        "  compile MODEL.onnx -o BUNDLE [--target cpu|cuda] [--devices N] ...\n"
        "      compile a model into a bundle that `weft run` executes\n"
        "  plan MODEL.onnx --devices N [--cluster C] [--train] [--explain] "
        "[--json]\n"
        "      rank parallelization plans by the cost model's step time\n"
        "Run `weftc <command> --help` for the options of a command.\n";
}

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  if (argc < 2) {
    printUsage(llvm::errs());
    return weft::kExitBadInput;
  }
  const char *command = argv[1];
  if (!std::strcmp(command, "--help") || !std::strcmp(command, "-h")) {
    printUsage(llvm::outs());
    return weft::kExitOk;
  }
  if (!std::strcmp(command, "--version")) {
    llvm::outs() << "weftc 0.1.0\n";
    return weft::kExitOk;
  }
  // The subcommand sees "weftc <command>" as its program name.
  std::string progName = std::string("weftc ") + command;
  argv[1] = progName.data();
  if (!std::strcmp(command, "import"))
    return weft::runImportCommand(argc - 1, argv + 1);
  if (!std::strcmp(command, "compile"))
    return weft::runCompileCommand(argc - 1, argv + 1);
  if (!std::strcmp(command, "plan"))
    return weft::runPlanCommand(argc - 1, argv + 1);
  llvm::errs() << "weftc: error: unknown command '" << command << "'\n";
  printUsage(llvm::errs());
  return weft::kExitBadInput;
}
