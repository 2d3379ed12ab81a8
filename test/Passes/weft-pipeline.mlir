// RUN: weft-opt %s -weft-pipeline-stages="stages=2 boundaries=l3" -weft-autodiff -weft-annotate-sharding="pp=2 microbatches=2" -weft-partition -weft-microbatch -weft-pipeline="schedule=gpipe" | FileCheck %s --check-prefixes=CHECK,GPIPE
// RUN: weft-opt %s -weft-pipeline-stages="stages=2 boundaries=l3" -weft-autodiff -weft-annotate-sharding="pp=2 microbatches=2" -weft-partition -weft-microbatch -weft-pipeline="schedule=1f1b" | FileCheck %s --check-prefixes=CHECK,F1B

// Two stages (l1, l2 | l3 and the loss), two microbatches. Each activation
// stage 0 makes is sent (send_start, tag per value) and received by stage 1:
// a recv_start posted a unit of its schedule early (weft.early) and a
// comm_wait right before the first reader; each gradient stage 1 makes for
// stage 0 goes back the same way; the loss and l3's gradient, which the step
// returns, go to stage 0 (a blocking recv after the microbatches). Sends
// are waited for at the end of the step.
// CHECK: shard.grid @mesh(shape = 1x2x1) {weft.mesh_axes = ["dp", "pp", "tp"]}
// CHECK-LABEL: func.func @main
// CHECK-SAME: weft.pipeline_axis = 1 : i64
// CHECK: %[[W1:.*]] = weft.param "l1.weight" {weft.stage = 0 : i64}
// CHECK: %[[W3:.*]] = weft.param "l3.weight" {weft.stage = 1 : i64}
// CHECK: %[[R0:.*]] = weft.recv_start from 0 on @mesh grid_axes = [1] tag = 0 slot = 1000001 {weft.early, weft.microbatch = 0 : i64, weft.stage = 1 : i64}
// CHECK: %[[S0:.*]] = weft.send_start %{{.*}} to 1 on @mesh grid_axes = [1] tag = 0 slot = 1000000 {weft.microbatch = 0 : i64, weft.stage = 0 : i64}
// CHECK-NEXT: %[[A0:.*]] = weft.comm_wait %[[R0]] slot = 1000001 {weft.microbatch = 0 : i64, weft.stage = 1 : i64}
// CHECK-NEXT: weft.matmul %[[A0]], %[[W3]] {weft.microbatch = 0 : i64, weft.stage = 1 : i64}
// GPipe: stage 1 runs both forwards (waiting for microbatch 1's activation,
// slot 1000005) before its first backward sends microbatch 0's gradient
// (tag 1), which stage 0 waits for (slot 1000003).
// GPIPE: weft.comm_wait %{{.*}} slot = 1000005 {weft.microbatch = 1 : i64, weft.stage = 1 : i64}
// GPIPE: weft.send_start {{.*}} to 0 {{.*}} tag = 1 {{.*}}{weft.backward, weft.microbatch = 0 : i64, weft.stage = 1 : i64}
// GPIPE: weft.comm_wait %{{.*}} slot = 1000003 {weft.backward, weft.microbatch = 0 : i64, weft.stage = 0 : i64}
// 1F1B: the last stage runs microbatch 0's backward (sending its gradient,
// tag 1) before it waits for microbatch 1's activation; stage 0 runs its
// second forward (sending tag 2) before its first backward.
// F1B: weft.send_start {{.*}} to 0 {{.*}} tag = 1 {{.*}}{weft.backward, weft.microbatch = 0 : i64, weft.stage = 1 : i64}
// F1B: weft.send_start {{.*}} to 1 {{.*}} tag = 2
// F1B: weft.comm_wait %{{.*}} slot = 1000003 {weft.backward, weft.microbatch = 0 : i64, weft.stage = 0 : i64}
// F1B: weft.comm_wait %{{.*}} slot = 1000005 {weft.microbatch = 1 : i64, weft.stage = 1 : i64}
// CHECK: weft.comm_wait %[[S0]] slot = 1000000 {weft.after_microbatches, weft.stage = 0 : i64}
// CHECK: %[[LOSS:.*]] = weft.recv from 1 on @mesh grid_axes = [1] tag = 4 {weft.after_microbatches, weft.stage = 0 : i64} : tensor<f32>
// CHECK: %[[G3:.*]] = weft.recv from 1 on @mesh grid_axes = [1] tag = 5 {weft.after_microbatches, weft.stage = 0 : i64} : tensor<8x8xf32>
// CHECK-NEXT: return %[[LOSS]], %{{.*}}, %{{.*}}, %[[G3]]
func.func @main(%x: tensor<4x8xf32> {weft.name = "x"}, %y: tensor<4x8xf32> {weft.name = "y"}) -> (tensor<f32> {weft.name = "loss"}) {
  %w1 = weft.param "l1.weight" : tensor<8x8xf32>
  %w2 = weft.param "l2.weight" : tensor<8x8xf32>
  %w3 = weft.param "l3.weight" : tensor<8x8xf32>
  %half = weft.constant dense<5.000000e-01> : tensor<f32>
  %0 = weft.matmul %x, %w1 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("l1/MatMul")
  %1 = weft.mul %0, %half : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32> loc("l1/Mul")
  %2 = weft.tanh %1 : tensor<4x8xf32> loc("act1")
  %3 = weft.matmul %2, %w2 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("l2/MatMul")
  %4 = weft.tanh %3 : tensor<4x8xf32> loc("act2")
  %5 = weft.matmul %4, %w3 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("l3/MatMul")
  %6 = weft.mul %5, %half : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32> loc("l3/Mul")
  %7 = weft.sub %6, %y : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("loss/Sub")
  %8 = weft.mul %7, %7 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("loss/Mul")
  %9 = weft.reduce_mean %8 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x8xf32>) -> tensor<f32> loc("loss/Mean")
  return %9 : tensor<f32>
}
