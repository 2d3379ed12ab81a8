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

