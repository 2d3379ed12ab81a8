// A forward that combines the microbatches on stage 1 (a batch statistic
// each microbatch is normalized with). With three microbatches only gpipe
// can run it: gpipe-if-coupled runs gpipe instead of 1f1b and says why on
// the module; stage 0 sends all three forwards, stage 1 receives them all
// before the first normalization. (weft-pipeline-invalid.mlir: the error
// without the option.)
// RUN: split-file %s %t
// RUN: weft-opt %t/three.mlir -weft-pipeline="gpipe-if-coupled=true" | FileCheck %s
// RUN: weft-opt %t/three.mlir -weft-pipeline="schedule=zb-h1 gpipe-if-coupled=true" | FileCheck %s
// CHECK: module attributes {weft.pipeline_schedule = "gpipe", weft.pipeline_schedule_reason = "stage 1's forward combines the microbatches
// CHECK: %[[R0:.*]] = weft.recv from 0 {{.*}} tag = 0
// CHECK: %[[R1:.*]] = weft.recv from 0 {{.*}} tag = 1
// CHECK: %[[S01:.*]] = weft.add %[[R0]], %[[R1]]
// CHECK: %[[R2:.*]] = weft.recv from 0 {{.*}} tag = 2
// CHECK: %[[S:.*]] = weft.add %[[S01]], %[[R2]]
// CHECK: weft.sub %[[R0]], %[[S]] {weft.microbatch = 0 : i64, weft.stage = 1 : i64}
// With two microbatches stage 0 sends both before its first backward under
// 1F1B (P - s + 1 = 2): the schedule stays.
// RUN: weft-opt %t/two.mlir -weft-pipeline | FileCheck %s --check-prefix=TWO
// TWO-NOT: weft.pipeline_schedule
// TWO: func.func @main

//--- three.mlir
shard.grid @mesh(shape = 1x1x2) {weft.mesh_axes = ["dp", "tp", "pp"]}
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> attributes {weft.pipeline_stages = 2 : i64} {
  %a0 = weft.neg %x {weft.stage = 0 : i64, weft.microbatch = 0 : i64} : tensor<4xf32>
  %a1 = weft.neg %x {weft.stage = 0 : i64, weft.microbatch = 1 : i64} : tensor<4xf32>
  %a2 = weft.neg %x {weft.stage = 0 : i64, weft.microbatch = 2 : i64} : tensor<4xf32>
  %s01 = weft.add %a0, %a1 {weft.stage = 1 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %s = weft.add %s01, %a2 {weft.stage = 1 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %n0 = weft.sub %a0, %s {weft.stage = 1 : i64, weft.microbatch = 0 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %n1 = weft.sub %a1, %s {weft.stage = 1 : i64, weft.microbatch = 1 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %n2 = weft.sub %a2, %s {weft.stage = 1 : i64, weft.microbatch = 2 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %t0 = weft.add %n0, %n1 {weft.stage = 1 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %t = weft.add %t0, %n2 {weft.stage = 1 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %t : tensor<4xf32>
}

//--- two.mlir
shard.grid @mesh(shape = 1x1x2) {weft.mesh_axes = ["dp", "tp", "pp"]}
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> attributes {weft.pipeline_stages = 2 : i64} {
  %a0 = weft.neg %x {weft.stage = 0 : i64, weft.microbatch = 0 : i64} : tensor<4xf32>
  %a1 = weft.neg %x {weft.stage = 0 : i64, weft.microbatch = 1 : i64} : tensor<4xf32>
  %s = weft.add %a0, %a1 {weft.stage = 1 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %n0 = weft.sub %a0, %s {weft.stage = 1 : i64, weft.microbatch = 0 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %n1 = weft.sub %a1, %s {weft.stage = 1 : i64, weft.microbatch = 1 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %t = weft.add %n0, %n1 {weft.stage = 1 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %t : tensor<4xf32>
}
