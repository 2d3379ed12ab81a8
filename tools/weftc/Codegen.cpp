//===- Codegen.cpp - LLVM dialect -> object file -> linked executable -----===//
//
// The model becomes native code ahead of time: MLIR's LLVM dialect is
// translated to LLVM IR, compiled by LLVM's target machine for the host into
// an object file, and linked by the system C++ driver with the runtime of the
// bundle's target (tools/BundleLink.h). Nothing is interpreted at run time.
//
//===----------------------------------------------------------------------===//
#include "tools/weftc/Codegen.h"

#include "tools/BundleLink.h"

#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"

#include <cstdlib>
#include <memory>

using namespace llvm;

bool weft::emitObjectFile(mlir::ModuleOp module, const std::string &objectPath,
                          std::string &error) {
  InitializeNativeTarget();
  InitializeNativeTargetAsmPrinter();
  mlir::registerBuiltinDialectTranslation(*module.getContext());
  mlir::registerLLVMDialectTranslation(*module.getContext());

  LLVMContext llvmContext;
  std::unique_ptr<Module> llvmModule =
      mlir::translateModuleToLLVMIR(module, llvmContext, "weft_model");
  if (!llvmModule) {
    error = "translation to LLVM IR failed";
    return false;
  }
  Triple triple(sys::getDefaultTargetTriple());
  const Target *target = TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return false;
  // The generated code only calls kernels: a generic CPU keeps bundles
  // portable across x86-64 hosts at no cost, and LLVM's optimizing code
  // generator buys nothing but time. Its register allocator is superlinear in
  // a function's size: a recurrent model unrolled over 256 steps (one
  // function of about 30k kernel calls) took 24 s to compile that way and
  // 0.3 s at CodeGenOptLevel::None, with the same step time (a 2-layer LSTM
  // LM, 35 x 20 tokens: 7.65 and 7.66 ms fastest of 300 runs). The price is
  // a stack slot per value: weft_model_run's frame was 150 KB for the 30k
  // calls, on the main thread's stack (the executor runs it there).
  TargetOptions options;
  std::unique_ptr<TargetMachine> machine(
      target->createTargetMachine(triple, "generic", "", options, Reloc::PIC_,
                                  std::nullopt, CodeGenOptLevel::None));
  if (!machine) {
    error = "no target machine for " + triple.str();
    return false;
  }
  llvmModule->setTargetTriple(triple);
  llvmModule->setDataLayout(machine->createDataLayout());

  std::error_code ec;
  raw_fd_ostream out(objectPath, ec, sys::fs::OF_None);
  if (ec) {
    error = "cannot write " + objectPath + ": " + ec.message();
    return false;
  }
  legacy::PassManager passes;
  if (machine->addPassesToEmitFile(passes, out, nullptr,
                                   CodeGenFileType::ObjectFile)) {
    error = "the target cannot emit object files";
    return false;
  }
  passes.run(*llvmModule);
  out.flush();
  return true;
}

bool weft::linkExecutable(const std::string &objectPath,
                          const std::string &exePath, const std::string &target,
                          std::string &error) {
  if (!bundleTargetAvailable(target, error))
    return false;
  // The runtime's archives: $WEFT_RUNTIME_LIB_DIR, else next to weftc (../lib
  // of its bin/ directory), else the build tree it was built in.
  std::string exe = sys::fs::getMainExecutable(nullptr, nullptr);
  std::string toolDir =
      exe.empty() ? std::string() : sys::path::parent_path(exe).str();
  std::vector<std::string> args = bundleLinkCommand(
      target, bundleRuntimeLibDir(target, toolDir), objectPath, exePath);
  const std::string &driver = args.front();
  std::vector<StringRef> argRefs(args.begin(), args.end());
  std::string message;
  SmallString<128> logPath;
  sys::fs::createTemporaryFile("weft-link", "log", logPath);
  std::optional<StringRef> redirects[] = {std::nullopt, StringRef(logPath),
                                          StringRef(logPath)};
  int rc = sys::ExecuteAndWait(driver, argRefs, std::nullopt, redirects, 0, 0,
                               &message);
  if (rc != 0) {
    auto log = MemoryBuffer::getFile(logPath);
    error = "linking " + exePath + " with " + driver + " failed";
    if (!message.empty())
      error += ": " + message;
    if (log)
      error += "\n" + (*log)->getBuffer().str();
  }
  sys::fs::remove(logPath);
  return rc == 0;
}
