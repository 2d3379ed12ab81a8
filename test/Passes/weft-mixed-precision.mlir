// RUN: weft-opt %s -split-input-file -weft-mixed-precision | FileCheck %s

// A product's operands are cast to bf16 and its result back to f32; the rest
// of the graph stays f32. A weight read by two products is cast once per use.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK: %[[W:.*]] = weft.param "w" : tensor<8x8xf32>
// CHECK: %[[WB1:.*]] = weft.cast %[[W]] : tensor<8x8xf32> to tensor<8x8xbf16>
// CHECK: %[[XB:.*]] = weft.cast %[[X]] : tensor<4x8xf32> to tensor<4x8xbf16>
// CHECK: %[[P1:.*]] = weft.matmul %[[XB]], %[[WB1]] {transpose_b = true} : (tensor<4x8xbf16>, tensor<8x8xbf16>) -> tensor<4x8xbf16>
// CHECK: %[[Y1:.*]] = weft.cast %[[P1]] : tensor<4x8xbf16> to tensor<4x8xf32>
// CHECK: %[[T:.*]] = weft.tanh %[[Y1]] : tensor<4x8xf32>
// CHECK: %[[WB2:.*]] = weft.cast %[[W]] : tensor<8x8xf32> to tensor<8x8xbf16>
// CHECK: %[[TB:.*]] = weft.cast %[[T]] : tensor<4x8xf32> to tensor<4x8xbf16>
// CHECK: %[[P2:.*]] = weft.matmul %[[TB]], %[[WB2]] : (tensor<4x8xbf16>, tensor<8x8xbf16>) -> tensor<4x8xbf16>
// CHECK: %[[Y2:.*]] = weft.cast %[[P2]] : tensor<4x8xbf16> to tensor<4x8xf32>
// CHECK: %[[S:.*]] = weft.reduce_mean %[[Y2]]
// CHECK-SAME: (tensor<4x8xf32>) -> tensor<f32>
// CHECK: return %[[S]]

func.func @main(%x: tensor<4x8xf32>) -> (tensor<f32> {weft.name = "loss"}) {
  %w = weft.param "w" : tensor<8x8xf32>
  %0 = weft.matmul %x, %w {transpose_b = true} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %1 = weft.tanh %0 : tensor<4x8xf32>
  %2 = weft.matmul %1, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %3 = weft.reduce_mean %2 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x8xf32>) -> tensor<f32>
  return %3 : tensor<f32>
}

// -----

// A conv runs in bf16 without its bias, which is added after the cast back,
// in f32, reshaped to broadcast over the channels.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x6x6xf32>)
// CHECK: %[[W:.*]] = weft.param "w"
// CHECK: %[[B:.*]] = weft.param "b" : tensor<4xf32>
// CHECK: %[[WB:.*]] = weft.cast %[[W]] : tensor<4x3x3x3xf32> to tensor<4x3x3x3xbf16>
// CHECK: %[[XB:.*]] = weft.cast %[[X]] : tensor<2x3x6x6xf32> to tensor<2x3x6x6xbf16>
// CHECK: %[[C:.*]] = weft.conv %[[XB]], %[[WB]] {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x3x6x6xbf16>, tensor<4x3x3x3xbf16>) -> tensor<2x4x6x6xbf16>
// CHECK: %[[CF:.*]] = weft.cast %[[C]] : tensor<2x4x6x6xbf16> to tensor<2x4x6x6xf32>
// CHECK: %[[BR:.*]] = weft.reshape %[[B]] : tensor<4xf32> to tensor<1x4x1x1xf32>
// CHECK: %[[Y:.*]] = weft.add %[[CF]], %[[BR]] : (tensor<2x4x6x6xf32>, tensor<1x4x1x1xf32>) -> tensor<2x4x6x6xf32>
// CHECK: return %[[Y]]
func.func @main(%x: tensor<2x3x6x6xf32>) -> tensor<2x4x6x6xf32> {
  %w = weft.param "w" : tensor<4x3x3x3xf32>
  %b = weft.param "b" : tensor<4xf32>
  %0 = weft.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<2x3x6x6xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<2x4x6x6xf32>
  return %0 : tensor<2x4x6x6xf32>
}

// -----

// Products that are not f32 (here f64) are left as they are.
// CHECK-LABEL: func.func @main
// CHECK-NOT: weft.cast
// CHECK: weft.matmul %{{.*}}, %{{.*}} : (tensor<2x2xf64>, tensor<2x2xf64>) -> tensor<2x2xf64>
// CHECK: weft.matmul {{.*}} -> tensor<2x2xbf16>
func.func @main(%a: tensor<2x2xf64>, %b: tensor<2x2xf32>) -> (tensor<2x2xf64>, tensor<2x2xf32>) {
  %0 = weft.matmul %a, %a : (tensor<2x2xf64>, tensor<2x2xf64>) -> tensor<2x2xf64>
  %1 = weft.matmul %b, %b : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  return %0, %1 : tensor<2x2xf64>, tensor<2x2xf32>
}
