// RUN: weft-opt %s -weft-lower-to-runtime -split-input-file -verify-diagnostics

// The CPU backend has no f64 matrix product.
func.func @main(%a: tensor<2x2xf64>, %b: tensor<2x2xf64>) -> tensor<2x2xf64> {
  // expected-error @+1 {{element type 'f64' is not supported by the cpu backend}}
  %c = weft.matmul %a, %b : (tensor<2x2xf64>, tensor<2x2xf64>) -> tensor<2x2xf64>
  return %c : tensor<2x2xf64>
}

// -----

// expected-error @+1 {{no function 'main' to lower}}
module {
  func.func @other() {
    return
  }
}

// -----

// Every tensor needs a static shape by the time it is lowered.
// expected-error @+1 {{input 0 is not a static-shape tensor}}
func.func @main(%a: tensor<?xf32>) -> tensor<?xf32> {
  return %a : tensor<?xf32>
}

// -----

// The runtime feeds an input split along its rows and, with sequence
// parallelism, its sequence (dim 1); not along another dim as well.
shard.grid @mesh(shape = 2x2) {weft.mesh_axes = ["dp", "tp"]}
// expected-error @+1 {{input 0 is split over dimensions other than its rows (dim 0) and its sequence (dim 1), or partial; the runtime feeds inputs split along those}}
func.func @main(%x: tensor<2x3x4xf32> {weft.name = "x", weft.shard = {dims = [array<i16: 0>, array<i16>, array<i16: 1>], partial = array<i16>}}) -> (tensor<2x3x4xf32> {weft.name = "y"}) {
  return %x : tensor<2x3x4xf32>
}
