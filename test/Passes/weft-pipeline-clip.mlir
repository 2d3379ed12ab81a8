// RUN: weft-opt %s -weft-pipeline-stages="stages=2 boundaries=l2" -weft-autodiff -weft-build-train-step="optimizer=sgd lr=0.1 clip-grad-norm=1.0" -weft-annotate-sharding="pp=2 microbatches=2" -weft-partition -weft-microbatch -weft-pipeline="schedule=1f1b" | FileCheck %s

// Gradient clipping by the global norm on two stages: stage 0 squares and
// sums its gradient after the microbatches and sends the scalar to stage 1,
// which adds its own, takes the coefficient and sends it back; each stage
// scales and updates its own parameter (the scalars travel, never the
// gradients), and the scalars are received after the microbatches (a
// blocking receive placed earlier would wait for work that needs this
// stage's microbatches).
// CHECK-LABEL: func.func @main
// CHECK: weft.param "l1.weight" {weft.stage = 0 : i64}
// CHECK: %[[SQ0:.*]] = weft.reduce_sum %{{.*}} {axes = array<i64: 0, 1>, keepdims = false, weft.stage = 0 : i64} : (tensor<8x8xf32>) -> tensor<f32>
// CHECK-NEXT: weft.send_start %[[SQ0]] to 1 on @mesh grid_axes = [1] tag = [[T0:[0-9]+]] {{.*}}{weft.stage = 0 : i64} : tensor<f32>
// CHECK: %[[IN:.*]] = weft.recv from 0 on @mesh grid_axes = [1] tag = [[T0]] {weft.after_microbatches, weft.stage = 1 : i64} : tensor<f32>
// CHECK: %[[SUM:.*]] = weft.add %[[IN]], %{{.*}} {weft.stage = 1 : i64} : (tensor<f32>, tensor<f32>) -> tensor<f32>
// CHECK: %[[NORM:.*]] = weft.sqrt %[[SUM]] {weft.stage = 1 : i64}
// CHECK: %[[COEF:.*]] = weft.min %{{.*}} {weft.stage = 1 : i64}
// CHECK: weft.send_start %[[COEF]] to 0 on @mesh grid_axes = [1] tag = [[T1:[0-9]+]] {{.*}}{weft.stage = 1 : i64} : tensor<f32>
// CHECK: %[[BACK:.*]] = weft.recv from 1 on @mesh grid_axes = [1] tag = [[T1]] {weft.after_microbatches, weft.stage = 0 : i64} : tensor<f32>
// CHECK: %[[G1:.*]] = weft.mul %{{.*}}, %[[BACK]] {weft.stage = 0 : i64} : (tensor<8x8xf32>, tensor<f32>) -> tensor<8x8xf32>
// CHECK: %[[G2:.*]] = weft.mul %{{.*}}, %[[COEF]] {weft.stage = 1 : i64} : (tensor<8x8xf32>, tensor<f32>) -> tensor<8x8xf32>
// CHECK: weft.sgd_update %{{.*}}, %[[G1]], {{.*}}weft.stage = 0 : i64
// CHECK: weft.sgd_update %{{.*}}, %[[G2]], {{.*}}weft.stage = 1 : i64
// CHECK: weft.param_update "l1.weight", {{.*}}weft.stage = 0 : i64
// CHECK: weft.param_update "l2.weight", {{.*}}weft.stage = 1 : i64
// CHECK-NOT: weft.send_start {{.*}} : tensor<8x8xf32>
func.func @main(%x: tensor<4x8xf32> {weft.name = "x"}, %y: tensor<4x8xf32> {weft.name = "y"}) -> (tensor<f32> {weft.name = "loss"}) {
  %w1 = weft.param "l1.weight" : tensor<8x8xf32>
  %w2 = weft.param "l2.weight" : tensor<8x8xf32>
  %0 = weft.matmul %x, %w1 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("l1/MatMul")
  %1 = weft.tanh %0 : tensor<4x8xf32> loc("act1")
  %2 = weft.matmul %1, %w2 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("l2/MatMul")
  %3 = weft.sub %2, %y : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("loss/Sub")
  %4 = weft.mul %3, %3 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("loss/Mul")
  %5 = weft.reduce_mean %4 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x8xf32>) -> tensor<f32> loc("loss/Mean")
  return %5 : tensor<f32>
}
