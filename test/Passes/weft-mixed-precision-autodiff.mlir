// RUN: weft-opt %s -weft-mixed-precision -weft-autodiff | FileCheck %s

// The backward products are bf16 too: each takes the incoming gradient cast
// to bf16. The weight's two gradients are widened to f32 before they are
// added, so nothing accumulates in bf16, and the parameter gets an f32
// gradient.
// CHECK-LABEL: func.func @main
// CHECK: %[[W:.*]] = weft.param "w"
// CHECK: %[[T:.*]] = weft.tanh
// CHECK: %[[WB2:.*]] = weft.cast %[[W]] : tensor<8x8xf32> to tensor<8x8xbf16>
// CHECK: %[[TB:.*]] = weft.cast %[[T]] : tensor<4x8xf32> to tensor<4x8xbf16>
// CHECK: weft.reduce_mean
// CHECK: %[[G:.*]] = weft.cast %{{.*}} : tensor<4x8xf32> to tensor<4x8xbf16>
// CHECK: %[[DT:.*]] = weft.matmul %[[G]], %[[WB2]] {transpose_b = true} : (tensor<4x8xbf16>, tensor<8x8xbf16>) -> tensor<4x8xbf16>
// CHECK: %[[DW2:.*]] = weft.matmul %[[TB]], %[[G]] {transpose_a = true} : (tensor<4x8xbf16>, tensor<4x8xbf16>) -> tensor<8x8xbf16>
// CHECK: %[[DW2F:.*]] = weft.cast %[[DW2]] : tensor<8x8xbf16> to tensor<8x8xf32>
// CHECK: %[[DW1:.*]] = weft.matmul {{.*}} -> tensor<8x8xbf16>
// CHECK: %[[DW1F:.*]] = weft.cast %[[DW1]] : tensor<8x8xbf16> to tensor<8x8xf32>
// CHECK: %[[DW:.*]] = weft.add %[[DW2F]], %[[DW1F]] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
// CHECK: return %{{.*}}, %[[DW]] : tensor<f32>, tensor<8x8xf32>
func.func @main(%x: tensor<4x8xf32>) -> (tensor<f32> {weft.name = "loss"}) {
  %w = weft.param "w" : tensor<8x8xf32>
  %0 = weft.matmul %x, %w {transpose_b = true} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %1 = weft.tanh %0 : tensor<4x8xf32>
  %2 = weft.matmul %1, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %3 = weft.reduce_mean %2 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x8xf32>) -> tensor<f32>
  return %3 : tensor<f32>
}
