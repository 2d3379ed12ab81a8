// RUN: weft-opt %s -split-input-file -weft-append-loss -verify-diagnostics
// RUN: not weft-opt %s -split-input-file -weft-append-loss="loss=total" 2>&1 | FileCheck %s --check-prefix=NAMED
// RUN: not weft-opt %s -split-input-file -weft-append-loss="loss=mse" 2>&1 | FileCheck %s --check-prefix=TARGET
// NAMED: the model has no output named 'total'
// TARGET: the built-in loss 'mse' needs a target input (--loss-target INPUT)

// The model's own output must be a scalar to be the loss.
// expected-error @+1 {{the loss must be a scalar, got 'tensor<2x4xf32>'}}
func.func @main(%x: tensor<2x4xf32>) -> (tensor<2x4xf32> {weft.name = "y"}) {
  return %x : tensor<2x4xf32>
}

// -----

// expected-error @+1 {{the model has several outputs; name the loss with --loss OUTPUT}}
func.func @main(%x: tensor<f32>) -> (tensor<f32>, tensor<f32>) {
  return %x, %x : tensor<f32>, tensor<f32>
}
