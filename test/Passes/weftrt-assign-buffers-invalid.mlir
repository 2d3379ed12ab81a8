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

// -----

// A launch of stage 2 in a function whose pipeline has 2 stages.
func.func @weft_model_run() attributes {weftrt.mesh_shape = array<i64: 2>, weftrt.pipeline_axis = 0 : i64} {
  %0 = weftrt.input 0 : !weftrt.buffer
  // expected-error @+1 {{is used by pipeline stage 2 of a function with 2 pipeline stages}}
  %1 = weftrt.alloc {bytes = 64 : i64} : !weftrt.buffer
  weftrt.launch "unary"(%0, %1) {desc = array<i64: 2, 0, 1, 16, 0, 1, 16, 1, 4>, weftrt.stage = 2 : i64}
  return
}
