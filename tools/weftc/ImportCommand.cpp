//===- ImportCommand.cpp - weftc import -----------------------------------===//
//
//   weftc import MODEL.onnx [-o OUT.mlir] [--input-shape NAME=D0xD1x...]...
//                [--structure-only]
//
// Prints the imported module (weights appear as weft.param ops; their data
// stays in the model). --structure-only never opens the files of initializers
// stored as ONNX external data (they need not exist) and prints the same
// module: the import weftc plan does for models too large to load.
//
//===----------------------------------------------------------------------===//
#include "tools/weftc/Commands.h"

#include "frontends/onnx/OnnxImporter.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

using namespace weft;

static void printImportUsage(llvm::raw_ostream &os) {
  os << "usage: weftc import MODEL.onnx [-o OUT.mlir] "
        "[--input-shape NAME=D0xD1x...]... [--structure-only]\n"
        "Imports an ONNX model (opsets 13 to 21) into the weft dialect and "
        "prints it.\n"
        "  -o FILE                      write the module to FILE instead of "
        "stdout\n"
        "  --input-shape NAME=D0xD1...  static shape of graph input NAME "
        "(repeatable;\n"
        "                               NAME= for a scalar)\n"
        "  --structure-only             do not read initializers stored as "
        "ONNX external\n"
        "                               data (their files need not exist); "
        "the module is\n"
        "                               the same, as long as no value of "
        "one is needed\n";
}

static int usageError(const llvm::Twine &message) {
  llvm::errs() << "weftc: error: " << message << "\n";
  printImportUsage(llvm::errs());
  return kExitBadInput;
}

/// Parses "NAME=D0xD1x..." into `opts`. Returns an error message, or "".
static std::string parseInputShape(llvm::StringRef spec,
                                   OnnxImportOptions &opts) {
  size_t eq = spec.rfind('=');
  if (eq == llvm::StringRef::npos || eq == 0)
    return "--input-shape expects NAME=D0xD1x..., got '" + spec.str() + "'";
  std::string name = spec.take_front(eq).str();
  llvm::StringRef dims = spec.drop_front(eq + 1);
  std::vector<int64_t> shape;
  if (!dims.empty()) {
    llvm::SmallVector<llvm::StringRef> parts;
    dims.split(parts, 'x');
    for (llvm::StringRef part : parts) {
      int64_t dim;
      if (part.getAsInteger(10, dim) || dim < 0)
        return "--input-shape " + spec.str() + ": '" + part.str() +
               "' is not a dimension (a non-negative integer)";
      shape.push_back(dim);
    }
  }
  if (!opts.inputShapes.emplace(name, std::move(shape)).second)
    return "--input-shape given twice for '" + name + "'";
  return "";
}

int weft::runImportCommand(int argc, char **argv) {
  std::string modelPath, outputPath = "-";
  OnnxImportOptions opts;
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      printImportUsage(llvm::outs());
      return kExitOk;
    }
    if (arg == "--structure-only") {
      opts.loadExternalData = false;
      continue;
    }
    if (arg == "-o" || arg == "--input-shape") {
      if (i + 1 >= argc)
        return usageError(arg + " needs a value");
      llvm::StringRef value = argv[++i];
      if (arg == "-o") {
        outputPath = value.str();
        continue;
      }
      std::string problem = parseInputShape(value, opts);
      if (!problem.empty())
        return usageError(problem);
      continue;
    }
    if (arg.consume_front("--input-shape=")) {
      std::string problem = parseInputShape(arg, opts);
      if (!problem.empty())
        return usageError(problem);
      continue;
    }
    if (arg.starts_with("-") && arg != "-")
      return usageError("unknown option '" + arg + "'");
    if (!modelPath.empty())
      return usageError(llvm::Twine("more than one model given ('") +
                        modelPath + "' and '" + arg + "')");
    modelPath = arg.str();
  }
  if (modelPath.empty())
    return usageError("no model given");

  mlir::MLIRContext ctx(mlir::MLIRContext::Threading::DISABLED);
  std::string error;
  std::optional<OnnxImportResult> result =
      importOnnxFile(ctx, modelPath, opts, error);
  if (!result) {
    llvm::errs() << "weftc: error: " << error << "\n";
    return kExitBadInput;
  }

  std::string openError;
  std::unique_ptr<llvm::ToolOutputFile> output =
      mlir::openOutputFile(outputPath, &openError);
  if (!output) {
    llvm::errs() << "weftc: error: " << openError << "\n";
    return kExitFailure;
  }
  result->module->print(output->os());
  output->os() << "\n";
  output->keep();
  return kExitOk;
}
