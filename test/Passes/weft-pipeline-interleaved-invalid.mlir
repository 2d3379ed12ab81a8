// RUN: weft-opt %s -split-input-file -weft-pipeline="schedule=interleaved" -verify-diagnostics

shard.grid @mesh(shape = 1x1x2) {weft.mesh_axes = ["dp", "tp", "pp"]}
// expected-error @+1 {{the interleaved schedule runs a model cut into virtual stages (weft-pipeline-stages virtual-stages > 1), and only it does; got schedule 'interleaved' with 1 virtual stages}}
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> attributes {weft.pipeline_stages = 2 : i64} {
  return %x : tensor<4xf32>
}

// -----

// Microbatches go through the chunks in groups of the stage count.
shard.grid @mesh(shape = 1x1x2) {weft.mesh_axes = ["dp", "tp", "pp"]}
// expected-error @+1 {{the interleaved schedule runs microbatches in groups of the stage count: 3 microbatches are not a multiple of 2 stages}}
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> attributes {weft.pipeline_stages = 2 : i64, weft.virtual_stages = 2 : i64} {
  %0 = weft.tanh %x {weft.stage = 0 : i64, weft.microbatch = 2 : i64} : tensor<4xf32>
  return %0 : tensor<4xf32>
}
