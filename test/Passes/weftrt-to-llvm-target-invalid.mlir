// RUN: not weft-opt %s -weftrt-to-llvm=target=tpu 2>&1 | FileCheck %s

// The target option names the device the buffers live on: cpu or cuda.
// CHECK: error: unknown target 'tpu' for weftrt-to-llvm (expected cpu or cuda)
module {
  func.func @weft_model_run() attributes {weftrt.inputs = [], weftrt.params = [], weftrt.outputs = []} {
    return
  }
}
