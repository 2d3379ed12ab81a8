// RUN: weft-opt %s -weft-schedule-collectives | FileCheck %s

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
