// RUN: weft-opt %s -weft-pipeline-stages="stages=2 boundaries=l2" | FileCheck %s --check-prefix=STAGES
// RUN: weft-opt %s -weft-pipeline-stages="stages=2 boundaries=l2" -weft-autodiff -weft-build-train-step="optimizer=sgd lr=0.1" -weft-annotate-sharding="pp=2 microbatches=2" -weft-partition -weft-microbatch -weft-pipeline="schedule=1f1b" | FileCheck %s

// A weight the first and the last stage read (tied embeddings) lives on the
// first stage, marked weft.tied, and is not copied.
// STAGES: weft.param "tied" {weft.stage = 0 : i64, weft.tied} : tensor<8x8xf32>
// STAGES-NOT: weft.param "tied"

// weft-pipeline sends its value to stage 1 at the start of the step. Each
// stage sums its own part of the gradient over the microbatches, and stage
// 1's total travels back once per step (not once per microbatch), to be
// added to stage 0's; the update runs on stage 0 only.
// CHECK: %[[W:.*]] = weft.param "tied" {weft.stage = 0 : i64, weft.tied}
// CHECK: weft.send_start %[[W]] to 1 on @mesh grid_axes = [1] tag = [[TW:[0-9]+]] {{.*}}{weft.stage = 0 : i64} : tensor<8x8xf32>
// CHECK: weft.recv_start from 0 on @mesh grid_axes = [1] tag = [[TW]] {{.*}}weft.stage = 1 : i64
// CHECK-NOT: weft.send_start {{.*}} to 0 {{.*}} : tensor<8x8xf32>
// CHECK: %[[OWN:.*]] = weft.add %{{.*}}, %{{.*}} {weft.combines_microbatches, weft.stage = 0 : i64} : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
// CHECK: %[[PART:.*]] = weft.add %{{.*}}, %{{.*}} {weft.combines_microbatches, weft.stage = 1 : i64} : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
// CHECK-NEXT: weft.send_start %[[PART]] to 0 on @mesh grid_axes = [1] tag = [[TP:[0-9]+]] {{.*}}{weft.stage = 1 : i64} : tensor<8x8xf32>
// CHECK: %[[IN:.*]] = weft.recv from 1 on @mesh grid_axes = [1] tag = [[TP]] {weft.after_microbatches, weft.stage = 0 : i64} : tensor<8x8xf32>
// CHECK-NEXT: %[[SUM:.*]] = weft.add %[[OWN]], %[[IN]] {weft.stage = 0 : i64}
// CHECK: weft.sgd_update %{{.*}}, %[[SUM]], {{.*}}weft.stage = 0 : i64
// CHECK: weft.param_update "tied", {{.*}}weft.stage = 0 : i64
// CHECK-NOT: weft.param_update "tied"
// CHECK-NOT: weft.send_start {{.*}} to 0 {{.*}} : tensor<8x8xf32>

func.func @main(%x: tensor<4x8xf32> {weft.name = "x"}, %y: tensor<4x8xf32> {weft.name = "y"}) -> (tensor<f32> {weft.name = "loss"}) {
  %w = weft.param "tied" : tensor<8x8xf32>
  %w2 = weft.param "l2.weight" : tensor<8x8xf32>
  %0 = weft.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("l1/MatMul")
  %1 = weft.tanh %0 : tensor<4x8xf32> loc("act1")
  %2 = weft.matmul %1, %w2 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("l2/MatMul")
  %3 = weft.tanh %2 : tensor<4x8xf32> loc("act2")
  %4 = weft.matmul %3, %w {transpose_b = true} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("l2/Head")
  %5 = weft.sub %4, %y : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("loss/Sub")
  %6 = weft.mul %5, %5 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("loss/Mul")
  %7 = weft.reduce_mean %6 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x8xf32>) -> tensor<f32> loc("loss/Mean")
  return %7 : tensor<f32>
}
