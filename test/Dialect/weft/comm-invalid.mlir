// RUN: weft-opt %s -split-input-file -verify-diagnostics

func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{waits for a value no weft.all_reduce_start, weft.all_gather_start, weft.reduce_scatter_start, weft.send_start or weft.recv_start produced}}
  %0 = weft.comm_wait %x slot = 0 : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

shard.grid @mesh(shape = 2)
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %p = weft.all_reduce_start %x on @mesh grid_axes = [0] slot = 1 : tensor<4xf32> -> tensor<4xf32>
  // expected-error @+1 {{waits on slot 2 for a collective started on slot 1}}
  %0 = weft.comm_wait %p slot = 2 : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

shard.grid @mesh(shape = 2)
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{reduction must be 0 (sum), 1 (max), 2 (min) or 3 (avg), got 5}}
  %p = weft.all_reduce_start %x on @mesh grid_axes = [0] slot = 1 {reduction = 5 : i64} : tensor<4xf32> -> tensor<4xf32>
  return %p : tensor<4xf32>
}

// -----

shard.grid @mesh(shape = 2x2)
func.func @main() -> tensor<i64> {
  // expected-error @+1 {{block must be positive, got 0}}
  %0 = weft.mesh_offset on @mesh grid_axes = [1] block = 0 : tensor<i64>
  return %0 : tensor<i64>
}

// -----

shard.grid @mesh(shape = 2x2)
func.func @main() -> tensor<i64> {
  // expected-error @+1 {{grid axis 2 is not an axis of @mesh (rank 2)}}
  %0 = weft.mesh_offset on @mesh grid_axes = [2] block = 4 : tensor<i64>
  return %0 : tensor<i64>
}

// -----

func.func @main() -> tensor<i64> {
  // expected-error @+1 {{names @nowhere, which is not a shard.grid}}
  %0 = weft.mesh_offset on @nowhere grid_axes = [0] block = 4 : tensor<i64>
  return %0 : tensor<i64>
}

// -----

shard.grid @mesh(shape = 2)
func.func @main() -> tensor<i64> {
  // expected-error @+1 {{needs at least one grid axis}}
  %0 = weft.mesh_offset on @mesh grid_axes = [] block = 4 : tensor<i64>
  return %0 : tensor<i64>
}

// -----

shard.grid @mesh(shape = 2x2)
func.func @main(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{result type 'tensor<4x3xf32>' is not 4 blocks of 'tensor<4x3xf32>' joined along dim 0}}
  %p = weft.all_gather_start %x on @mesh grid_axes = [0, 1] gather_axis = 0 slot = 0 : tensor<4x3xf32> -> tensor<4x3xf32>
  return %p : tensor<4x3xf32>
}

// -----

shard.grid @mesh(shape = 2x2)
func.func @main(%x: tensor<4x3xf32>) -> tensor<4x6xf32> {
  // expected-error @+1 {{gather_axis 2 is not a dim of 'tensor<4x3xf32>'}}
  %p = weft.all_gather_start %x on @mesh grid_axes = [1] gather_axis = 2 slot = 0 : tensor<4x3xf32> -> tensor<4x6xf32>
  return %p : tensor<4x6xf32>
}

// -----

shard.grid @mesh(shape = 2x2)
func.func @main(%x: tensor<4x3xf32>) -> tensor<8x3xf32> {
  %p = weft.all_gather_start %x on @mesh grid_axes = [1] gather_axis = 0 slot = 4 : tensor<4x3xf32> -> tensor<8x3xf32>
  // expected-error @+1 {{waits on slot 5 for a collective started on slot 4}}
  %0 = weft.comm_wait %p slot = 5 : tensor<8x3xf32>
  return %0 : tensor<8x3xf32>
}

// -----

shard.grid @mesh(shape = 1x1x2)
func.func @main(%x: tensor<4xf32>) {
  // expected-error @+1 {{peer 2 is not a group index (the group has 2 members)}}
  weft.send %x to 2 on @mesh grid_axes = [2] tag = 0 : tensor<4xf32>
  return
}

// -----

shard.grid @mesh(shape = 1x1x2)
func.func @main() -> tensor<4xf32> {
  // expected-error @+1 {{tag must be non-negative, got -1}}
  %0 = weft.recv from 1 on @mesh grid_axes = [2] tag = -1 : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

shard.grid @mesh(shape = 1x1x2)
func.func @main() -> tensor<4xf32> {
  // expected-error @+1 {{needs at least one grid axis}}
  %0 = weft.recv_start from 0 on @mesh grid_axes = [] tag = 1 slot = 0 : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

shard.grid @mesh(shape = 1x1x2)
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %p = weft.send_start %x to 1 on @mesh grid_axes = [2] tag = 0 slot = 3 : tensor<4xf32>
  // expected-error @+1 {{waits on slot 2 for a collective started on slot 3}}
  %0 = weft.comm_wait %p slot = 2 : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

shard.grid @mesh(shape = 2x2)
func.func @main(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{result type 'tensor<4x3xf32>' is not one of 2 blocks of 'tensor<4x3xf32>' along dim 0}}
  %p = weft.reduce_scatter_start %x on @mesh grid_axes = [0] scatter_axis = 0 slot = 0 : tensor<4x3xf32> -> tensor<4x3xf32>
  return %p : tensor<4x3xf32>
}

// -----

shard.grid @mesh(shape = 2x2)
func.func @main(%x: tensor<4x3xf32>) -> tensor<4x1xf32> {
  // expected-error @+1 {{dim 1 of 'tensor<4x3xf32>' does not split into 4 blocks}}
  %p = weft.reduce_scatter_start %x on @mesh grid_axes = [0, 1] scatter_axis = 1 slot = 0 : tensor<4x3xf32> -> tensor<4x1xf32>
  return %p : tensor<4x1xf32>
}

// -----

shard.grid @mesh(shape = 2x2)
func.func @main(%x: tensor<4x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{reduction must be 0 (sum), 1 (max), 2 (min) or 3 (avg), got 7}}
  %p = weft.reduce_scatter_start %x on @mesh grid_axes = [0] scatter_axis = 0 slot = 0 {reduction = 7 : i64} : tensor<4x3xf32> -> tensor<2x3xf32>
  return %p : tensor<2x3xf32>
}

// -----

shard.grid @mesh(shape = 2x2)
func.func @main(%x: tensor<4x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{grid axis 2 is not an axis of @mesh (rank 2)}}
  %p = weft.reduce_scatter_start %x on @mesh grid_axes = [2] scatter_axis = 0 slot = 0 : tensor<4x3xf32> -> tensor<2x3xf32>
  return %p : tensor<2x3xf32>
}

// -----

shard.grid @mesh(shape = 2x2)
func.func @main(%x: tensor<4x3xf32>) -> tensor<2x3xf32> {
  %p = weft.reduce_scatter_start %x on @mesh grid_axes = [0] scatter_axis = 0 slot = 2 : tensor<4x3xf32> -> tensor<2x3xf32>
  // expected-error @+1 {{waits on slot 3 for a collective started on slot 2}}
  %0 = weft.comm_wait %p slot = 3 : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
