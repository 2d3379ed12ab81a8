// RUN: split-file %s %t
// RUN: weft-opt %t/grad.mlir -weft-autodiff | FileCheck %s
// RUN: weft-opt %t/lse.mlir -weft-autodiff -verify-diagnostics

// weft.attention differentiates into one weft.attention_grad that reads the
// forward's result and lse; the query, key and value gradients flow on to
// the parameters that made them.
// CHECK-LABEL: func.func @main
// CHECK: %[[Q:.*]] = weft.mul %{{.*}}, %[[WQ:.*]] :
// CHECK: %[[K:.*]] = weft.mul %{{.*}}, %[[WK:.*]] :
// CHECK: %[[O:.*]], %[[LSE:.*]] = weft.attention %[[Q]], %[[K]], %[[V:.*]] {causal = true, scale = 2.500000e-01 : f64}
// CHECK: %[[L:.*]] = weft.reduce_sum %[[O]]
// CHECK: %[[DQ:.*]], %[[DK:.*]], %[[DV:.*]] = weft.attention_grad %[[Q]], %[[K]], %[[V]], %[[O]], %[[LSE]], %{{.*}} {causal = true, scale = 2.500000e-01 : f64} : (tensor<2x4x3xf32>, tensor<2x4x3xf32>, tensor<2x4x3xf32>, tensor<2x4x3xf32>, tensor<2x4xf32>, tensor<2x4x3xf32>) -> (tensor<2x4x3xf32>, tensor<2x4x3xf32>, tensor<2x4x3xf32>)
// CHECK-DAG: weft.mul %[[DQ]], %{{.*}}
// CHECK-DAG: weft.mul %[[DK]], %{{.*}}
// CHECK: return %[[L]]

//--- grad.mlir
func.func @main(%x: tensor<2x4x3xf32>, %v: tensor<2x4x3xf32>) -> tensor<f32> {
  %wq = weft.param "wq" : tensor<3xf32>
  %wk = weft.param "wk" : tensor<3xf32>
  %q = weft.mul %x, %wq : (tensor<2x4x3xf32>, tensor<3xf32>) -> tensor<2x4x3xf32>
  %k = weft.mul %x, %wk : (tensor<2x4x3xf32>, tensor<3xf32>) -> tensor<2x4x3xf32>
  %o, %lse = weft.attention %q, %k, %v {scale = 0.25 : f64, causal = true} : (tensor<2x4x3xf32>, tensor<2x4x3xf32>, tensor<2x4x3xf32>) -> (tensor<2x4x3xf32>, tensor<2x4xf32>)
  %l = weft.reduce_sum %o {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<2x4x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

//--- lse.mlir
// The lse is the gradient's input, not a value the loss may depend on.
func.func @main(%x: tensor<2x4x3xf32>) -> tensor<f32> {
  %w = weft.param "w" : tensor<3xf32>
  %q = weft.mul %x, %w : (tensor<2x4x3xf32>, tensor<3xf32>) -> tensor<2x4x3xf32>
  // expected-error @+1 {{'weft.attention' op cannot differentiate a use of its lse result}}
  %o, %lse = weft.attention %q, %q, %q {scale = 1.0 : f64} : (tensor<2x4x3xf32>, tensor<2x4x3xf32>, tensor<2x4x3xf32>) -> (tensor<2x4x3xf32>, tensor<2x4xf32>)
  %l = weft.reduce_sum %lse {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
