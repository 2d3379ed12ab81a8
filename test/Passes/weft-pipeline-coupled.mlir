// A forward that combines the microbatches on stage 1 (a batch statistic
// each microbatch is normalized with), whose gradient runs back to stage 0.
// With three microbatches only gpipe can run it: under 1F1B stage 0 sends
// P - s + 1 = 2 forwards, then waits for a backward that stage 1 cannot
// start without the third. gpipe-if-coupled runs gpipe instead of 1f1b and
// says why on the module; stage 1 receives all three before the first
// normalization, and stage 0 sends the third before its first backward.
// (weft-pipeline-invalid.mlir: the error without the option.)
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
// CHECK: weft.send_start {{.*}} to 1 {{.*}} tag = 2
// CHECK: weft.comm_wait {{.*}} {weft.backward, weft.microbatch = 0 : i64, weft.stage = 0 : i64}
// With two microbatches stage 0 sends both before its first backward under
// 1F1B: the schedule stays.
// RUN: weft-opt %t/two.mlir -weft-pipeline | FileCheck %s --check-prefix=TWO
// TWO-NOT: weft.pipeline_schedule
// TWO: func.func @main
// A stage after the combining one receives each microbatch as the
// combining stage's schedule sends it: only stage 1 counts. Over three
// stages, 1F1B runs three microbatches (stage 0 sends P - 1 + 1 = 3 ahead);
// four need gpipe, and the reason names stage 1, not stage 2.
// RUN: weft-opt %t/later3.mlir -weft-pipeline | FileCheck %s --check-prefix=LATER3
// LATER3-NOT: weft.pipeline_schedule
// LATER3: func.func @main
// RUN: weft-opt %t/later4.mlir -weft-pipeline="gpipe-if-coupled=true" | FileCheck %s --check-prefix=LATER4
// LATER4: weft.pipeline_schedule = "gpipe", weft.pipeline_schedule_reason = "stage 1's forward combines
// A backward that combines the microbatches' gradients on stage 0 (a batch
// statistic's gradient, read by each microbatch's input gradient): stage 0's
// first backward waits for every microbatch's gradient from stage 1, so for
// all of its own forwards, of which 1F1B runs P - s = 2 first. Two
// microbatches keep 1F1B; three give way to gpipe, naming the backward.
// RUN: weft-opt %t/back2.mlir -weft-pipeline | FileCheck %s --check-prefix=BACK2
// BACK2-NOT: weft.pipeline_schedule
// BACK2: func.func @main
// RUN: weft-opt %t/back3.mlir -weft-pipeline="gpipe-if-coupled=true" | FileCheck %s --check-prefix=BACK3
// BACK3: weft.pipeline_schedule = "gpipe", weft.pipeline_schedule_reason = "stage 0's backward combines the microbatches

//--- three.mlir
shard.grid @mesh(shape = 1x1x2) {weft.mesh_axes = ["dp", "tp", "pp"]}
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> attributes {weft.pipeline_stages = 2 : i64} {
  %a0 = weft.neg %x {weft.microbatch = 0 : i64, weft.stage = 0 : i64} : tensor<4xf32>
  %a1 = weft.neg %x {weft.microbatch = 1 : i64, weft.stage = 0 : i64} : tensor<4xf32>
  %a2 = weft.neg %x {weft.microbatch = 2 : i64, weft.stage = 0 : i64} : tensor<4xf32>
  %s_1 = weft.add %a0, %a1 {weft.stage = 1 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %s = weft.add %s_1, %a2 {weft.stage = 1 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %n0 = weft.sub %a0, %s {weft.microbatch = 0 : i64, weft.stage = 1 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %n1 = weft.sub %a1, %s {weft.microbatch = 1 : i64, weft.stage = 1 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %n2 = weft.sub %a2, %s {weft.microbatch = 2 : i64, weft.stage = 1 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %g1_0 = weft.neg %n0 {weft.backward, weft.microbatch = 0 : i64, weft.stage = 1 : i64} : tensor<4xf32>
  %g1_1 = weft.neg %n1 {weft.backward, weft.microbatch = 1 : i64, weft.stage = 1 : i64} : tensor<4xf32>
  %g1_2 = weft.neg %n2 {weft.backward, weft.microbatch = 2 : i64, weft.stage = 1 : i64} : tensor<4xf32>
  %h0 = weft.mul %g1_0, %a0 {weft.backward, weft.microbatch = 0 : i64, weft.stage = 0 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %h1 = weft.mul %g1_1, %a1 {weft.backward, weft.microbatch = 1 : i64, weft.stage = 0 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %h2 = weft.mul %g1_2, %a2 {weft.backward, weft.microbatch = 2 : i64, weft.stage = 0 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %t_1 = weft.add %h0, %h1 {weft.stage = 0 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %t = weft.add %t_1, %h2 {weft.stage = 0 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %t : tensor<4xf32>
}

//--- two.mlir
shard.grid @mesh(shape = 1x1x2) {weft.mesh_axes = ["dp", "tp", "pp"]}
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> attributes {weft.pipeline_stages = 2 : i64} {
  %a0 = weft.neg %x {weft.microbatch = 0 : i64, weft.stage = 0 : i64} : tensor<4xf32>
  %a1 = weft.neg %x {weft.microbatch = 1 : i64, weft.stage = 0 : i64} : tensor<4xf32>
  %s = weft.add %a0, %a1 {weft.stage = 1 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %n0 = weft.sub %a0, %s {weft.microbatch = 0 : i64, weft.stage = 1 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %n1 = weft.sub %a1, %s {weft.microbatch = 1 : i64, weft.stage = 1 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %g1_0 = weft.neg %n0 {weft.backward, weft.microbatch = 0 : i64, weft.stage = 1 : i64} : tensor<4xf32>
  %g1_1 = weft.neg %n1 {weft.backward, weft.microbatch = 1 : i64, weft.stage = 1 : i64} : tensor<4xf32>
  %h0 = weft.mul %g1_0, %a0 {weft.backward, weft.microbatch = 0 : i64, weft.stage = 0 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %h1 = weft.mul %g1_1, %a1 {weft.backward, weft.microbatch = 1 : i64, weft.stage = 0 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %t = weft.add %h0, %h1 {weft.stage = 0 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %t : tensor<4xf32>
}

//--- later3.mlir
shard.grid @mesh(shape = 1x1x3) {weft.mesh_axes = ["dp", "tp", "pp"]}
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> attributes {weft.pipeline_stages = 3 : i64} {
  %a0 = weft.neg %x {weft.microbatch = 0 : i64, weft.stage = 0 : i64} : tensor<4xf32>
  %a1 = weft.neg %x {weft.microbatch = 1 : i64, weft.stage = 0 : i64} : tensor<4xf32>
  %a2 = weft.neg %x {weft.microbatch = 2 : i64, weft.stage = 0 : i64} : tensor<4xf32>
  %s_1 = weft.add %a0, %a1 {weft.stage = 1 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %s = weft.add %s_1, %a2 {weft.stage = 1 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %n0 = weft.sub %a0, %s {weft.microbatch = 0 : i64, weft.stage = 1 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %n1 = weft.sub %a1, %s {weft.microbatch = 1 : i64, weft.stage = 1 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %n2 = weft.sub %a2, %s {weft.microbatch = 2 : i64, weft.stage = 1 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %f2_0 = weft.neg %n0 {weft.microbatch = 0 : i64, weft.stage = 2 : i64} : tensor<4xf32>
  %f2_1 = weft.neg %n1 {weft.microbatch = 1 : i64, weft.stage = 2 : i64} : tensor<4xf32>
  %f2_2 = weft.neg %n2 {weft.microbatch = 2 : i64, weft.stage = 2 : i64} : tensor<4xf32>
  %g2_0 = weft.neg %f2_0 {weft.backward, weft.microbatch = 0 : i64, weft.stage = 2 : i64} : tensor<4xf32>
  %g2_1 = weft.neg %f2_1 {weft.backward, weft.microbatch = 1 : i64, weft.stage = 2 : i64} : tensor<4xf32>
  %g2_2 = weft.neg %f2_2 {weft.backward, weft.microbatch = 2 : i64, weft.stage = 2 : i64} : tensor<4xf32>
  %g1_0 = weft.neg %g2_0 {weft.backward, weft.microbatch = 0 : i64, weft.stage = 1 : i64} : tensor<4xf32>
  %g1_1 = weft.neg %g2_1 {weft.backward, weft.microbatch = 1 : i64, weft.stage = 1 : i64} : tensor<4xf32>
  %g1_2 = weft.neg %g2_2 {weft.backward, weft.microbatch = 2 : i64, weft.stage = 1 : i64} : tensor<4xf32>
  %h0 = weft.mul %g1_0, %a0 {weft.backward, weft.microbatch = 0 : i64, weft.stage = 0 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %h1 = weft.mul %g1_1, %a1 {weft.backward, weft.microbatch = 1 : i64, weft.stage = 0 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %h2 = weft.mul %g1_2, %a2 {weft.backward, weft.microbatch = 2 : i64, weft.stage = 0 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %t_1 = weft.add %h0, %h1 {weft.stage = 0 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %t = weft.add %t_1, %h2 {weft.stage = 0 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %t : tensor<4xf32>
}

//--- later4.mlir
shard.grid @mesh(shape = 1x1x3) {weft.mesh_axes = ["dp", "tp", "pp"]}
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> attributes {weft.pipeline_stages = 3 : i64} {
  %a0 = weft.neg %x {weft.microbatch = 0 : i64, weft.stage = 0 : i64} : tensor<4xf32>
  %a1 = weft.neg %x {weft.microbatch = 1 : i64, weft.stage = 0 : i64} : tensor<4xf32>
  %a2 = weft.neg %x {weft.microbatch = 2 : i64, weft.stage = 0 : i64} : tensor<4xf32>
  %a3 = weft.neg %x {weft.microbatch = 3 : i64, weft.stage = 0 : i64} : tensor<4xf32>
  %s_1 = weft.add %a0, %a1 {weft.stage = 1 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %s_2 = weft.add %s_1, %a2 {weft.stage = 1 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %s = weft.add %s_2, %a3 {weft.stage = 1 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %n0 = weft.sub %a0, %s {weft.microbatch = 0 : i64, weft.stage = 1 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %n1 = weft.sub %a1, %s {weft.microbatch = 1 : i64, weft.stage = 1 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %n2 = weft.sub %a2, %s {weft.microbatch = 2 : i64, weft.stage = 1 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %n3 = weft.sub %a3, %s {weft.microbatch = 3 : i64, weft.stage = 1 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %f2_0 = weft.neg %n0 {weft.microbatch = 0 : i64, weft.stage = 2 : i64} : tensor<4xf32>
  %f2_1 = weft.neg %n1 {weft.microbatch = 1 : i64, weft.stage = 2 : i64} : tensor<4xf32>
  %f2_2 = weft.neg %n2 {weft.microbatch = 2 : i64, weft.stage = 2 : i64} : tensor<4xf32>
  %f2_3 = weft.neg %n3 {weft.microbatch = 3 : i64, weft.stage = 2 : i64} : tensor<4xf32>
  %g2_0 = weft.neg %f2_0 {weft.backward, weft.microbatch = 0 : i64, weft.stage = 2 : i64} : tensor<4xf32>
  %g2_1 = weft.neg %f2_1 {weft.backward, weft.microbatch = 1 : i64, weft.stage = 2 : i64} : tensor<4xf32>
  %g2_2 = weft.neg %f2_2 {weft.backward, weft.microbatch = 2 : i64, weft.stage = 2 : i64} : tensor<4xf32>
  %g2_3 = weft.neg %f2_3 {weft.backward, weft.microbatch = 3 : i64, weft.stage = 2 : i64} : tensor<4xf32>
  %g1_0 = weft.neg %g2_0 {weft.backward, weft.microbatch = 0 : i64, weft.stage = 1 : i64} : tensor<4xf32>
  %g1_1 = weft.neg %g2_1 {weft.backward, weft.microbatch = 1 : i64, weft.stage = 1 : i64} : tensor<4xf32>
  %g1_2 = weft.neg %g2_2 {weft.backward, weft.microbatch = 2 : i64, weft.stage = 1 : i64} : tensor<4xf32>
  %g1_3 = weft.neg %g2_3 {weft.backward, weft.microbatch = 3 : i64, weft.stage = 1 : i64} : tensor<4xf32>
  %h0 = weft.mul %g1_0, %a0 {weft.backward, weft.microbatch = 0 : i64, weft.stage = 0 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %h1 = weft.mul %g1_1, %a1 {weft.backward, weft.microbatch = 1 : i64, weft.stage = 0 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %h2 = weft.mul %g1_2, %a2 {weft.backward, weft.microbatch = 2 : i64, weft.stage = 0 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %h3 = weft.mul %g1_3, %a3 {weft.backward, weft.microbatch = 3 : i64, weft.stage = 0 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %t_1 = weft.add %h0, %h1 {weft.stage = 0 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %t_2 = weft.add %t_1, %h2 {weft.stage = 0 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %t = weft.add %t_2, %h3 {weft.stage = 0 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %t : tensor<4xf32>
}

//--- back2.mlir
shard.grid @mesh(shape = 1x1x2) {weft.mesh_axes = ["dp", "tp", "pp"]}
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> attributes {weft.pipeline_stages = 2 : i64} {
  %a0 = weft.neg %x {weft.microbatch = 0 : i64, weft.stage = 0 : i64} : tensor<4xf32>
  %a1 = weft.neg %x {weft.microbatch = 1 : i64, weft.stage = 0 : i64} : tensor<4xf32>
  %g0 = weft.neg %a0 {weft.backward, weft.microbatch = 0 : i64, weft.stage = 1 : i64} : tensor<4xf32>
  %g1 = weft.neg %a1 {weft.backward, weft.microbatch = 1 : i64, weft.stage = 1 : i64} : tensor<4xf32>
  %s = weft.add %g0, %g1 {weft.backward, weft.stage = 0 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %h0 = weft.mul %a0, %s {weft.backward, weft.microbatch = 0 : i64, weft.stage = 0 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %h1 = weft.mul %a1, %s {weft.backward, weft.microbatch = 1 : i64, weft.stage = 0 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %t = weft.add %h0, %h1 {weft.stage = 0 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %t : tensor<4xf32>
}

//--- back3.mlir
shard.grid @mesh(shape = 1x1x2) {weft.mesh_axes = ["dp", "tp", "pp"]}
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> attributes {weft.pipeline_stages = 2 : i64} {
  %a0 = weft.neg %x {weft.microbatch = 0 : i64, weft.stage = 0 : i64} : tensor<4xf32>
  %a1 = weft.neg %x {weft.microbatch = 1 : i64, weft.stage = 0 : i64} : tensor<4xf32>
  %a2 = weft.neg %x {weft.microbatch = 2 : i64, weft.stage = 0 : i64} : tensor<4xf32>
  %g0 = weft.neg %a0 {weft.backward, weft.microbatch = 0 : i64, weft.stage = 1 : i64} : tensor<4xf32>
  %g1 = weft.neg %a1 {weft.backward, weft.microbatch = 1 : i64, weft.stage = 1 : i64} : tensor<4xf32>
  %g2 = weft.neg %a2 {weft.backward, weft.microbatch = 2 : i64, weft.stage = 1 : i64} : tensor<4xf32>
  %s_1 = weft.add %g0, %g1 {weft.backward, weft.stage = 0 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %s = weft.add %s_1, %g2 {weft.backward, weft.stage = 0 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %h0 = weft.mul %a0, %s {weft.backward, weft.microbatch = 0 : i64, weft.stage = 0 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %h1 = weft.mul %a1, %s {weft.backward, weft.microbatch = 1 : i64, weft.stage = 0 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %h2 = weft.mul %a2, %s {weft.backward, weft.microbatch = 2 : i64, weft.stage = 0 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %t_1 = weft.add %h0, %h1 {weft.stage = 0 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %t = weft.add %t_1, %h2 {weft.stage = 0 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %t : tensor<4xf32>
}
