// RUN: weft-opt %s -weftrt-assign-buffers -split-input-file -verify-diagnostics

func.func @weft_model_run() {
  // expected-error @+1 {{allocates 0 bytes}}
  %a = weftrt.alloc {bytes = 0 : i64} : !weftrt.buffer
  return
}

// -----

// expected-error @+1 {{weftrt-assign-buffers expects a single block}}
func.func @weft_model_run() {
  cf.br ^bb1
^bb1:
  return
}
