// RUN: weft-opt %s -split-input-file -weft-microbatch -verify-diagnostics

shard.grid @mesh(shape = 2x1x2) {weft.mesh_axes = ["dp", "tp", "mb"]}
func.func @main(%x: tensor<2x4xf32> {weft.shard = {dims = [array<i16: 0, 2>, array<i16>], partial = array<i16>}}) -> tensor<4x4xf32> {
  %0 = weft.exp %x : tensor<2x4xf32>
  // expected-error @+1 {{over the microbatch axis is not supported: the op needs the whole batch at once (rows of one microbatch come from others, as when the batch is sorted); compile with --microbatches 1}}
  %1 = shard.reduce_scatter %0 on @mesh grid_axes = [2] scatter_axis = 1 : tensor<2x4xf32> -> tensor<2x2xf32>
  %2 = shard.all_gather %1 on @mesh grid_axes = [0, 2] gather_axis = 0 : tensor<2x2xf32> -> tensor<8x2xf32>
  %3 = weft.slice %2 {starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : (tensor<8x2xf32>) -> tensor<4x2xf32>
  %4 = weft.concat %3, %3 {axis = 1 : i64} : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x4xf32>
  return %4 : tensor<4x4xf32>
}

// -----

// A gather's blocks follow its axes' order: the microbatches' must be the
// minor ones. (An all_reduce's sum does not depend on the order:
// weft-microbatch.mlir.)
shard.grid @mesh(shape = 2x1x2) {weft.mesh_axes = ["dp", "tp", "mb"]}
func.func @main(%x: tensor<2x4xf32> {weft.shard = {dims = [array<i16: 0, 2>, array<i16>], partial = array<i16>}}) -> tensor<8x4xf32> {
  // expected-error @+1 {{collective over the microbatch axis before other axes (2 axes); microbatches split a rank's rows last}}
  %1 = shard.all_gather %x on @mesh grid_axes = [2, 0] gather_axis = 0 : tensor<2x4xf32> -> tensor<8x4xf32>
  return %1 : tensor<8x4xf32>
}

// -----

shard.grid @mesh(shape = 1x1x2) {weft.mesh_axes = ["dp", "tp", "mb"]}
func.func @main(%x: tensor<2x4xf32> {weft.shard = {dims = [array<i16: 2>, array<i16>], partial = array<i16>}}) -> tensor<f32> {
  %w = weft.param "w" : tensor<f32>
  // expected-error @+1 {{combines microbatches of a value every microbatch shares}}
  %0 = shard.all_reduce %w on @mesh grid_axes = [2] : tensor<f32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

shard.grid @mesh(shape = 1x1x2) {weft.mesh_axes = ["dp", "tp", "mb"]}
// expected-error @+1 {{input 0 is split over the microbatch axis other than as the last split of its batch dim}}
func.func @main(%x: tensor<4x2xf32> {weft.shard = {dims = [array<i16>, array<i16: 2>], partial = array<i16>}}) -> tensor<4x2xf32> {
  return %x : tensor<4x2xf32>
}

// -----

shard.grid @mesh(shape = 1x1x2) {weft.mesh_axes = ["dp", "tp", "mb"]}
func.func @main(%x: tensor<2x4xf32> {weft.shard = {dims = [array<i16: 2>, array<i16>], partial = array<i16>}}) -> tensor<2x4xf32> {
  %0 = weft.exp %x : tensor<2x4xf32>
  // expected-error @+1 {{returns a value of each microbatch; results must be complete over the batch}}
  return %0 : tensor<2x4xf32>
}

// -----

shard.grid @mesh(shape = 1x1x2) {weft.mesh_axes = ["dp", "tp", "mb"]}
func.func @main(%x: tensor<2x4xf32> {weft.shard = {dims = [array<i16: 2>, array<i16>], partial = array<i16>}}) -> tensor<f32> {
  %0 = weft.exp %x : tensor<2x4xf32>
  // expected-error @+1 {{slices a value of each microbatch over the microbatch axis}}
  %1 = shard.all_slice %0 on @mesh grid_axes = [2] slice_axis = 1 : tensor<2x4xf32> -> tensor<2x2xf32>
  %2 = weft.reduce_sum %1 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x2xf32>) -> tensor<f32>
  %3 = shard.all_reduce %2 on @mesh grid_axes = [2] : tensor<f32> -> tensor<f32>
  return %3 : tensor<f32>
}

// -----

// The block a gather's data starts at (a mesh_offset without weft.position)
// over the microbatch axis: every microbatch would read the others' rows.
shard.grid @mesh(shape = 2x1x2) {weft.mesh_axes = ["dp", "tp", "mb"]}
func.func @main(%x: tensor<2x4xf32> {weft.shard = {dims = [array<i16: 0, 2>, array<i16>], partial = array<i16>}}) -> tensor<i64> {
  // expected-error @+1 {{over the microbatch axis is not supported: the op needs the whole batch at once}}
  %start = weft.mesh_offset on @mesh grid_axes = [0, 2] block = 2 : tensor<i64>
  return %start : tensor<i64>
}
