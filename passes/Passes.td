//===- Passes.td - weft's passes --------------------------------*- tablegen -*-===//
#ifndef WEFT_PASSES_TD
#define WEFT_PASSES_TD

include "mlir/Pass/PassBase.td"

def LowerToRuntime : Pass<"weft-lower-to-runtime", "mlir::ModuleOp"> {
  let summary = "Turn the weft graph into runtime kernel launches on buffers";
  let description = [{
    Rewrites the entry function into `weft_model_run`: graph inputs, parameters
    and outputs become signature slots, constants become read-only data,
    reshapes become views, and every compute op becomes one `weftrt.launch`
    with its kernel descriptor. Each other result gets a `weftrt.alloc`;
    a result that is a graph output is written in place into the output slot.
    Ops the CPU backend has no kernel for (by element type) are errors.
  }];
  let dependentDialects = ["weft::rt::WeftRtDialect", "mlir::func::FuncDialect"];
  let options = [
    Option<"entry", "entry", "std::string", "\"main\"", "Name of the function to lower">,
  ];
}

def AssignBuffers : Pass<"weftrt-assign-buffers", "mlir::func::FuncOp"> {
  let summary = "Place every weftrt.alloc in one arena by liveness";
  let description = [{
    Static, liveness-based memory plan: a buffer lives from its allocation to
    its last use; buffers whose lifetimes overlap never share bytes. Largest
    first, each at the lowest 64-byte-aligned offset that fits (greedy by
    size). Allocs become `weftrt.arena_slice`; the arena's size, the planned
    peak, is recorded on the function as `weftrt.arena_bytes`.
  }];
}

def RuntimeToLLVM : Pass<"weftrt-to-llvm", "mlir::ModuleOp"> {
  let summary = "Lower weftrt to LLVM dialect calls of libweft_runtime";
  let description = [{
    The function becomes `weft_model_run(arena, params, inputs, outputs)`;
    launches become calls of `weft_k_<kernel>(buffers, descriptor)` with
    descriptors and constants as private globals, and the signature recorded
    by weft-lower-to-runtime becomes the JSON string `weft_model_signature`.
  }];
  let dependentDialects = ["mlir::LLVM::LLVMDialect"];
}

#endif // WEFT_PASSES_TD
