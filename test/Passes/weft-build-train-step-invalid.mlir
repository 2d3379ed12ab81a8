// RUN: weft-opt %s -split-input-file -weft-build-train-step -verify-diagnostics
// RUN: not weft-opt %s -split-input-file -weft-build-train-step="optimizer=adam" 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not weft-opt %s -split-input-file -weft-build-train-step="optimizer=sgd lr=0.1 nesterov=true" 2>&1 | FileCheck %s --check-prefix=NESTEROV
// UNKNOWN: unknown optimizer 'adam' (adamw or sgd)
// NESTEROV: nesterov momentum needs momentum > 0 and zero dampening

// expected-error @+1 {{has no 'weft.trainable' list: run weft-autodiff first}}
func.func @main(%loss: tensor<f32>) -> tensor<f32> {
  return %loss : tensor<f32>
}

// -----

// expected-error @+1 {{returns 1 values; weft-autodiff leaves the loss and 1 gradients}}
func.func @main(%loss: tensor<f32>) -> tensor<f32> attributes {weft.trainable = ["w"]} {
  return %loss : tensor<f32>
}
