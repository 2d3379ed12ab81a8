// RUN: weft-opt %s -split-input-file -weft-pipeline -verify-diagnostics
// RUN: not weft-opt %s -split-input-file -weft-pipeline="schedule=zigzag" 2>&1 | FileCheck %s --check-prefix=SCHEDULE
// SCHEDULE: unknown pipeline schedule 'zigzag' (gpipe, 1f1b, interleaved or zb-h1)

// expected-error @+1 {{the mesh has no "pp" axis of 2 stages for this pipeline}}
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> attributes {weft.pipeline_stages = 2 : i64} {
  return %x : tensor<4xf32>
}
shard.grid @mesh(shape = 2x1) {weft.mesh_axes = ["dp", "tp"]}

// -----

shard.grid @mesh(shape = 1x1x2) {weft.mesh_axes = ["dp", "tp", "pp"]}
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> attributes {weft.pipeline_stages = 2 : i64} {
  // expected-error @+1 {{parameter 'w' is read by stages 0 and 1}}
  %w = weft.param "w" : tensor<4xf32>
  %0 = weft.add %x, %w {weft.stage = 0 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = weft.mul %0, %w {weft.stage = 1 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

shard.grid @mesh(shape = 1x1x2) {weft.mesh_axes = ["dp", "tp", "pp"]}
// expected-error @+1 {{the interleaved schedule runs a model cut into virtual stages (weft-pipeline-stages virtual-stages > 1), and only it does; got schedule '1f1b' with 2 virtual stages}}
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> attributes {weft.pipeline_stages = 2 : i64, weft.virtual_stages = 2 : i64} {
  return %x : tensor<4xf32>
}


// -----

// Stage 1 normalizes each microbatch with a sum over all three (a batch
// statistic): under 1F1B stage 0 sends P - s + 1 = 2 forwards before it
// waits for a backward, which would deadlock; gpipe is needed.
shard.grid @mesh(shape = 1x1x2) {weft.mesh_axes = ["dp", "tp", "pp"]}
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> attributes {weft.pipeline_stages = 2 : i64} {
  %a0 = weft.neg %x {weft.microbatch = 0 : i64, weft.stage = 0 : i64} : tensor<4xf32>
  %a1 = weft.neg %x {weft.microbatch = 1 : i64, weft.stage = 0 : i64} : tensor<4xf32>
  %a2 = weft.neg %x {weft.microbatch = 2 : i64, weft.stage = 0 : i64} : tensor<4xf32>
  %s_1 = weft.add %a0, %a1 {weft.stage = 1 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %s = weft.add %s_1, %a2 {weft.stage = 1 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  // expected-error @+1 {{the 1f1b schedule cannot run this pipeline: stage 1's forward combines the microbatches (a statistic of the whole batch, such as a training-mode BatchNormalization's), so every earlier stage must send all its forwards before waiting for a backward, as only gpipe does; use the gpipe schedule}}
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

// -----

// Stage 0's backward of each microbatch reads a sum of all three
// microbatches' gradients from stage 1 (a batch statistic's gradient):
// under 1F1B stage 0 runs P - s = 2 forwards before its first backward,
// which would wait for the third forever.
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
  // expected-error @+1 {{the 1f1b schedule cannot run this pipeline: stage 0's backward combines the microbatches (the gradient of a statistic of the whole batch, such as a training-mode BatchNormalization's), so it must send all its forwards before its first backward, as only gpipe does; use the gpipe schedule}}
  %h0 = weft.mul %a0, %s {weft.backward, weft.microbatch = 0 : i64, weft.stage = 0 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %h1 = weft.mul %a1, %s {weft.backward, weft.microbatch = 1 : i64, weft.stage = 0 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %h2 = weft.mul %a2, %s {weft.backward, weft.microbatch = 2 : i64, weft.stage = 0 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %t_1 = weft.add %h0, %h1 {weft.stage = 0 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %t = weft.add %t_1, %h2 {weft.stage = 0 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %t : tensor<4xf32>
}
