// RUN: weft-opt %s -split-input-file -weft-autodiff -verify-diagnostics
// RUN: split-file %s %t
// RUN: not weft-opt %t/index.mlir -weft-autodiff=loss-index=2 2>&1 | FileCheck %s --check-prefix=INDEX
// RUN: not weft-opt %t/index.mlir -weft-autodiff="freeze=[b" 2>&1 | FileCheck %s --check-prefix=GLOB

// The loss must be one float element.
func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %w = weft.param "w" : tensor<2x3xf32>
  %y = weft.mul %x, %w : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  // expected-error @+1 {{the loss must be a scalar, got 'tensor<2x3xf32>'}}
  return %y : tensor<2x3xf32>
}

// -----

func.func @main(%x: tensor<i64>) -> tensor<i64> {
  %w = weft.param "w" : tensor<2xf32>
  // expected-error @+1 {{the loss must be a floating-point scalar, got 'tensor<i64>'}}
  return %x : tensor<i64>
}

// -----

// Integer parameters are not trainable: nothing to differentiate.
// expected-error @+1 {{the model has no trainable parameters}}
func.func @main(%x: tensor<f32>) -> tensor<f32> {
  %n = weft.param "steps" : tensor<i64>
  return %x : tensor<f32>
}

// -----

// An op without a gradient rule on the path from a parameter to the loss.
func.func @main(%g: tensor<2x3xf32>) -> tensor<f32> {
  %w = weft.param "w" : tensor<2x3xf32>
  %y = weft.softmax %w {axis = 1 : i64} : tensor<2x3xf32>
  // expected-error @+1 {{'weft.softmax_grad' op has no gradient rule, but the loss depends on a trainable parameter through it}}
  %d = weft.softmax_grad %y, %g {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %l = weft.reduce_sum %d {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Ops without a rule are fine off the path: here only the gradient input %g
// reaches the softmax_grad, no parameter does.
func.func @main(%g: tensor<2x3xf32>) -> tensor<f32> {
  %w = weft.param "w" : tensor<2x3xf32>
  %d = weft.softmax_grad %g, %g {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %y = weft.mul %d, %w : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %l = weft.reduce_sum %y {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// One name, one parameter: tied uses must agree on the type.
func.func @main(%x: tensor<3xf32>) -> tensor<f32> {
  %a = weft.param "w" : tensor<3xf32>
  // expected-error @+1 {{parameter 'w' is used as 'tensor<1x3xf32>' here but as 'tensor<3xf32>' before}}
  %b = weft.param "w" : tensor<1x3xf32>
  %l = weft.reduce_sum %a {axes = array<i64: 0>, keepdims = false} : (tensor<3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// expected-error @+1 {{weft-autodiff: no function @main to differentiate}}
module {
  func.func @forward(%x: tensor<f32>) -> tensor<f32> {
    return %x : tensor<f32>
  }
}

// -----

// INDEX: error: loss-index 2 is out of range: @main has 2 results
// GLOB: error: invalid freeze pattern '[b': invalid glob pattern, unmatched '['
//--- index.mlir
func.func @main(%x: tensor<f32>) -> (tensor<f32>, tensor<f32>) {
  %w = weft.param "w" : tensor<f32>
  %y = weft.mul %x, %w : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %y, %x : tensor<f32>, tensor<f32>
}
