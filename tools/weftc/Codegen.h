//===- Codegen.h - LLVM dialect -> object file -> linked executable -*- C++
//-*-===//
#ifndef WEFT_TOOLS_WEFTC_CODEGEN_H
#define WEFT_TOOLS_WEFTC_CODEGEN_H

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace weft {

/// Translates a module in the LLVM dialect to LLVM IR and writes a
/// position-independent object file for the host. On failure returns false
/// and describes the problem in `error`.
bool emitObjectFile(mlir::ModuleOp module, const std::string &objectPath,
                    std::string &error);

/// Links the model object with the runtime of `target` ("cpu":
/// libweft_runtime, "cuda": libweft_runtime_cuda) into an executable
/// (tools/BundleLink.h).
bool linkExecutable(const std::string &objectPath, const std::string &exePath,
                    const std::string &target, std::string &error);

} // namespace weft

#endif // WEFT_TOOLS_WEFTC_CODEGEN_H
