// RUN: weft-opt %s -weft-lower-to-runtime -split-input-file | FileCheck %s

// A matmul + bias: the parameters and inputs become signature slots, the
// intermediate gets an alloc, and the returned value is written in place into
// output slot 0.
// CHECK-LABEL: func.func @weft_model_run()
// CHECK-SAME: weftrt.inputs = [{name = "x", type = tensor<2x3xf32>}]
// CHECK-SAME: weftrt.mode = "inference"
// CHECK-SAME: weftrt.outputs = [{name = "y", type = tensor<2x4xf32>}]
// CHECK-SAME: weftrt.params = [{name = "w", role = "param", type = tensor<3x4xf32>}, {name = "b", role = "param", type = tensor<4xf32>}]
// CHECK: %[[X:.*]] = weftrt.input 0
// CHECK: %[[W:.*]] = weftrt.param 0
// CHECK: %[[B:.*]] = weftrt.param 1
// CHECK: %[[H:.*]] = weftrt.alloc {bytes = 32 : i64}
// CHECK: weftrt.launch "matmul"(%[[X]], %[[W]], %[[H]]) {desc = array<i64: 3, 0, 2, 2, 3, 0, 2, 3, 4, 0, 2, 2, 4, 2, 0, 0>}
// CHECK: %[[Y:.*]] = weftrt.output 0
// CHECK: weftrt.launch "binary"(%[[H]], %[[B]], %[[Y]]) {desc = array<i64: 3, 0, 2, 2, 4, 0, 1, 4, 0, 2, 2, 4, 1, 0>}
// CHECK: return
// CHECK-NOT: func.func @main
func.func @main(%x: tensor<2x3xf32> {weft.name = "x"}) -> (tensor<2x4xf32> {weft.name = "y"}) {
  %w = weft.param "w" : tensor<3x4xf32>
  %b = weft.param "b" : tensor<4xf32>
  %h = weft.matmul %x, %w : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %y = weft.add %h, %b : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// -----

// Reshape is a view: no launch, the reshaped value shares the buffer. An
// input returned as is, and a value returned twice, are copied.
// CHECK-LABEL: func.func @weft_model_run()
// CHECK: %[[X:.*]] = weftrt.input 0
// CHECK: %[[O0:.*]] = weftrt.output 0
// CHECK: weftrt.launch "unary"(%[[X]], %[[O0]]) {desc = array<i64: 2, 0, 2, 2, 2, 0, 2, 2, 2, 1, 4>}
// CHECK-NOT: weftrt.launch
// CHECK: %[[O1:.*]] = weftrt.output 1
// CHECK: weftrt.copy %[[O0]] to %[[O1]] {bytes = 16 : i64}
// CHECK: %[[O2:.*]] = weftrt.output 2
// CHECK: weftrt.copy %[[X]] to %[[O2]] {bytes = 16 : i64}
func.func @main(%x: tensor<2x2xf32>) -> (tensor<4xf32>, tensor<2x2xf32>, tensor<2x2xf32>) {
  %t = weft.tanh %x : tensor<2x2xf32>
  %r = weft.reshape %t : tensor<2x2xf32> to tensor<4xf32>
  return %r, %t, %x : tensor<4xf32>, tensor<2x2xf32>, tensor<2x2xf32>
}

// -----

// Constants become read-only data; a parameter used twice is one slot.
// CHECK-LABEL: func.func @weft_model_run()
// CHECK-SAME: weftrt.params = [{name = "p", role = "param", type = tensor<3xf32>}]
// CHECK: %[[C:.*]] = weftrt.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00]> : tensor<3xf32>
// CHECK: %[[P:.*]] = weftrt.param 0
// CHECK-NOT: weftrt.param
// CHECK: weftrt.launch "binary"(%[[C]], %[[P]], %{{.*}})
// CHECK: weftrt.launch "binary"(%{{.*}}, %[[P]], %{{.*}})
func.func @main() -> tensor<3xf32> {
  %c = weft.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %p = weft.param "p" : tensor<3xf32>
  %p2 = weft.param "p" : tensor<3xf32>
  %a = weft.mul %c, %p : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %b = weft.add %a, %p2 : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %b : tensor<3xf32>
}

// -----

// Split has several results, each its own buffer; conv's attributes follow
// KernelABI.h (has_bias, group, strides[2], pads[4], dilations[2]).
// CHECK-LABEL: func.func @weft_model_run()
// CHECK: weftrt.launch "conv"({{.*}}) {desc = array<i64: 3, 0, 4, 1, 1, 4, 4, 0, 4, 2, 1, 3, 3, 0, 4, 1, 2, 4, 4, 10, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1>}
// CHECK: weftrt.launch "split"({{.*}}) {desc = array<i64: 3, 0, 4, 1, 2, 4, 4, 0, 4, 1, 1, 4, 4, 0, 4, 1, 1, 4, 4, 1, 1>, weftrt.piece_offsets = array<i64: 0, 64>}
func.func @main(%x: tensor<1x1x4x4xf32>) -> (tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>) {
  %w = weft.param "w" : tensor<2x1x3x3xf32>
  %y = weft.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x1x4x4xf32>, tensor<2x1x3x3xf32>) -> tensor<1x2x4x4xf32>
  %a, %b = weft.split %y {axis = 1 : i64} : (tensor<1x2x4x4xf32>) -> (tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>)
  return %a, %b : tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>
}

// -----

// A sum of a bf16 tensor with an f32 result (a widening weft-fold-casts
// folded in, weft-fold-casts-kernel.mlir): the reduce kernel reads the bf16
// tensor (dtype 2 in its descriptor) and writes f32 (dtype 0).
// CHECK-LABEL: func.func @weft_model_run()
// CHECK: %[[X:.*]] = weftrt.input 0
// CHECK-NOT: weftrt.launch "cast"
// CHECK: weftrt.launch "reduce"(%[[X]], %{{.*}}) {desc = array<i64: 2, 2, 2, 6, 4, 0, 2, 1, 4,
func.func @main(%x: tensor<6x4xbf16> {weft.name = "x"}) -> (tensor<1x4xf32> {weft.name = "db"}) {
  %db = weft.reduce_sum %x {axes = array<i64: 0>} : (tensor<6x4xbf16>) -> tensor<1x4xf32>
  return %db : tensor<1x4xf32>
}
