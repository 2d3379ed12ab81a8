// RUN: weft-opt %s -split-input-file -weft-schedule-collectives | FileCheck %s

// Each reduction moves up to right after the op that completes its operand;
// gathers stay where they are (just before their use).
// CHECK-LABEL: func.func @main
// CHECK: %[[G1:.*]] = weft.matmul
// CHECK-NEXT: %[[R1:.*]] = shard.all_reduce %[[G1]]
// CHECK: %[[G2:.*]] = weft.tanh
// CHECK-NEXT: %[[R2:.*]] = shard.reduce_scatter %[[G2]]
// CHECK: weft.exp
// CHECK: shard.all_gather
// CHECK: weft.add %[[R1]], %{{.*}}
shard.grid @mesh(shape = 2x1) {weft.mesh_axes = ["dp", "tp"]}
func.func @main(%a: tensor<4x4xf32>, %w: tensor<2x4xf32>) -> (tensor<4x4xf32>, tensor<2x4xf32>) {
  %0 = weft.matmul %a, %a : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %1 = weft.tanh %a : tensor<4x4xf32>
  %2 = weft.exp %a : tensor<4x4xf32>
  %3 = shard.all_gather %w on @mesh grid_axes = [0] gather_axis = 0 : tensor<2x4xf32> -> tensor<4x4xf32>
  %4 = shard.all_reduce %0 on @mesh grid_axes = [0] : tensor<4x4xf32> -> tensor<4x4xf32>
  %5 = shard.reduce_scatter %1 on @mesh grid_axes = [0] scatter_axis = 0 : tensor<4x4xf32> -> tensor<2x4xf32>
  %6 = weft.add %4, %3 : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %7 = weft.add %6, %2 : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  return %7, %5 : tensor<4x4xf32>, tensor<2x4xf32>
}

// -----

// A scalar reduced only for the outputs (the loss over the data-parallel
// ranks) stays at the end; a scalar that the step reads moves up.
// CHECK-LABEL: func.func @loss
// CHECK: %[[L:.*]] = weft.reshape
// CHECK-NEXT: %[[N:.*]] = shard.all_reduce %[[L]]
// CHECK: weft.tanh
// CHECK-NEXT: weft.exp
// CHECK-NEXT: weft.mul
// CHECK-NEXT: %[[R:.*]] = shard.all_reduce %[[L]]
// CHECK-NEXT: return %[[R]], %{{.*}}
shard.grid @mesh(shape = 2x1) {weft.mesh_axes = ["dp", "tp"]}
func.func @loss(%a: tensor<4x4xf32>) -> (tensor<f32>, tensor<4x4xf32>) {
  %s = weft.reduce_sum %a {axes = array<i64: 0, 1>} : (tensor<4x4xf32>) -> tensor<1x1xf32>
  %l = weft.reshape %s : tensor<1x1xf32> to tensor<f32>
  %1 = weft.tanh %a : tensor<4x4xf32>
  %2 = weft.exp %1 : tensor<4x4xf32>
  %n = shard.all_reduce %l on @mesh grid_axes = [0] : tensor<f32> -> tensor<f32>
  %3 = weft.mul %2, %n : (tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
  %r = shard.all_reduce %l on @mesh grid_axes = [0] : tensor<f32> -> tensor<f32>
  return %r, %3 : tensor<f32>, tensor<4x4xf32>
}
