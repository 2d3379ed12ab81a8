// RUN: weft-opt %s -weft-pipeline="schedule=1f1b" | FileCheck %s

// An op of a microbatch that reads another stage's backward work is
// backward work too, though nothing marked it (a rewrite made it anew: the
// canonicalizer's matmul of a gradient and a weight): it is marked before
// the transfers, so its receive is backward work as well, and stage 0 runs
// 1F1B's order (F0 F1 B0 B1), not the forward slot of its microbatch.
// CHECK-LABEL: func.func @main
// CHECK: weft.neg %{{.*}} {weft.microbatch = 0 : i64, weft.stage = 0 : i64}
// CHECK: weft.recv_start from 1 {{.*}}{weft.backward, weft.early, weft.microbatch = 0 : i64, weft.stage = 0 : i64}
// CHECK: weft.neg %{{.*}} {weft.microbatch = 1 : i64, weft.stage = 0 : i64}
// CHECK: %[[G0:.*]] = weft.comm_wait %{{.*}} {weft.backward, weft.microbatch = 0 : i64, weft.stage = 0 : i64}
// CHECK-NEXT: weft.tanh %[[G0]] {weft.backward, weft.microbatch = 0 : i64, weft.stage = 0 : i64}
// CHECK: %[[G1:.*]] = weft.comm_wait %{{.*}} {weft.backward, weft.microbatch = 1 : i64, weft.stage = 0 : i64}
// CHECK-NEXT: weft.tanh %[[G1]] {weft.backward, weft.microbatch = 1 : i64, weft.stage = 0 : i64}
shard.grid @mesh(shape = 1x1x2) {weft.mesh_axes = ["dp", "tp", "pp"]}
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> attributes {weft.pipeline_stages = 2 : i64} {
  %a0 = weft.neg %x {weft.microbatch = 0 : i64, weft.stage = 0 : i64} : tensor<4xf32>
  %a1 = weft.neg %x {weft.microbatch = 1 : i64, weft.stage = 0 : i64} : tensor<4xf32>
  %b0 = weft.exp %a0 {weft.microbatch = 0 : i64, weft.stage = 1 : i64} : tensor<4xf32>
  %b1 = weft.exp %a1 {weft.microbatch = 1 : i64, weft.stage = 1 : i64} : tensor<4xf32>
  %g0 = weft.mul %b0, %b0 {weft.backward, weft.microbatch = 0 : i64, weft.stage = 1 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %g1 = weft.mul %b1, %b1 {weft.backward, weft.microbatch = 1 : i64, weft.stage = 1 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %h0 = weft.tanh %g0 {weft.microbatch = 0 : i64, weft.stage = 0 : i64} : tensor<4xf32>
  %h1 = weft.tanh %g1 {weft.microbatch = 1 : i64, weft.stage = 0 : i64} : tensor<4xf32>
  %s = weft.add %h0, %h1 {weft.combines_microbatches, weft.stage = 0 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %s : tensor<4xf32>
}
