// RUN: weft-opt %s -weftrt-to-llvm -split-input-file -verify-diagnostics

// expected-error @+1 {{no weft_model_run function}}
module {
}

// -----

module {
  func.func @weft_model_run() attributes {weftrt.inputs = [], weftrt.params = [], weftrt.outputs = []} {
    // expected-error @+1 {{is not placed: run weftrt-assign-buffers first}}
    %a = weftrt.alloc {bytes = 4 : i64} : !weftrt.buffer
    return
  }
}

// -----

module {
  // expected-error @+1 {{lacks the signature weft-lower-to-runtime records}}
  func.func @weft_model_run() {
    return
  }
}
