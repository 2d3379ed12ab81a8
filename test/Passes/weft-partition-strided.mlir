// RUN: weft-opt %s -split-input-file -weft-partition | FileCheck %s

// Splits whose blocks interleave (a dim [outer, rest] split on its rest,
// and maybe on its outer factor too): what a reshape of [sequence, batch]
// into rows gives under data and sequence parallelism.

// A parameter whole on every rank, added to rows whose split is strided
// (outer 6): each rank cuts its interleaved block without communication,
// between two reshapes.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[X:.*]]: tensor<6x2x8xf32>
// CHECK: %[[P:.*]] = weft.param "p" : tensor<24x8xf32>
// CHECK-NOT: shard.all_gather
// CHECK: %[[R:.*]] = weft.reshape %[[X]] : tensor<6x2x8xf32> to tensor<12x8xf32>
// CHECK: %[[V:.*]] = weft.reshape %[[P]] : tensor<24x8xf32> to tensor<6x4x8xf32>
// CHECK: %[[S:.*]] = shard.all_slice %[[V]] on @mesh grid_axes = [0] slice_axis = 1 : tensor<6x4x8xf32> -> tensor<6x2x8xf32>
// CHECK: %[[B:.*]] = weft.reshape %[[S]] : tensor<6x2x8xf32> to tensor<12x8xf32>
// CHECK: weft.add %[[R]], %[[B]] : (tensor<12x8xf32>, tensor<12x8xf32>) -> tensor<12x8xf32>
shard.grid @mesh(shape = 2x1) {weft.mesh_axes = ["dp", "tp"]}
func.func @main(%x: tensor<6x4x8xf32> {weft.shard = {dims = [array<i16>, array<i16: 0>, array<i16>], partial = array<i16>}}) -> tensor<24x8xf32> {
  %p = weft.param "p" : tensor<24x8xf32>
  %0 = weft.reshape %x : tensor<6x4x8xf32> to tensor<24x8xf32>
  %1 = weft.add %0, %p : (tensor<24x8xf32>, tensor<24x8xf32>) -> tensor<24x8xf32>
  return %1 : tensor<24x8xf32>
}

// -----

// Rows split twice: the sequence (outer factor 4) over tp, the batch (the
// rest) over dp. A whole parameter added to them is cut along both parts.
// CHECK-LABEL: func.func @main
// CHECK: %[[P:.*]] = weft.param "p" : tensor<16x8xf32>
// CHECK: %[[V:.*]] = weft.reshape %[[P]] : tensor<16x8xf32> to tensor<4x4x8xf32>
// CHECK: %[[S0:.*]] = shard.all_slice %[[V]] on @mesh grid_axes = [0] slice_axis = 1 : tensor<4x4x8xf32> -> tensor<4x2x8xf32>
// CHECK: %[[S1:.*]] = shard.all_slice %[[S0]] on @mesh grid_axes = [1] slice_axis = 0 : tensor<4x2x8xf32> -> tensor<2x2x8xf32>
// CHECK: %[[B:.*]] = weft.reshape %[[S1]] : tensor<2x2x8xf32> to tensor<4x8xf32>
// CHECK: weft.add %{{.*}}, %[[B]] : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
shard.grid @mesh(shape = 2x2) {weft.mesh_axes = ["dp", "tp"]}
func.func @main(%x: tensor<4x4x8xf32> {weft.shard = {dims = [array<i16: 1>, array<i16: 0>, array<i16>], partial = array<i16>}}) -> tensor<16x8xf32> {
  %p = weft.param "p" : tensor<16x8xf32>
  %0 = weft.reshape %x : tensor<4x4x8xf32> to tensor<16x8xf32>
  %1 = weft.add %0, %p : (tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<16x8xf32>
  return %1 : tensor<16x8xf32>
}

// -----

// Sequence parallelism with data parallelism around a row-parallel weight
// (split by features over tp): its input gradient needs the rows whole over
// tp but keeps them split over dp. The rows are gathered over tp only (the
// outer part of their split), not over dp, and the weight's gradient
// contracts the same gathered rows: a partial sum over dp alone.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[DY:.*]]: tensor<2x2x8xf32> {{.*}}, %[[X:.*]]: tensor<8x3xf32>
// CHECK: %[[W:.*]] = weft.param "w" {{.*}} : tensor<8x3xf32>
// CHECK: %[[R:.*]] = weft.reshape %[[DY]] : tensor<2x2x8xf32> to tensor<4x8xf32>
// CHECK: %[[V:.*]] = weft.reshape %[[R]] : tensor<4x8xf32> to tensor<2x2x8xf32>
// CHECK: %[[G:.*]] = shard.all_gather %[[V]] on @mesh grid_axes = [1] gather_axis = 0 : tensor<2x2x8xf32> -> tensor<4x2x8xf32>
// CHECK-NOT: shard.all_gather
// CHECK: %[[ROWS:.*]] = weft.reshape %[[G]] : tensor<4x2x8xf32> to tensor<8x8xf32>
// CHECK-NOT: shard.all_gather
// CHECK: %[[DX:.*]] = weft.matmul %[[ROWS]], %[[W]] : (tensor<8x8xf32>, tensor<8x3xf32>) -> tensor<8x3xf32>
// CHECK: %[[DW:.*]] = weft.matmul %[[ROWS]], %[[X]] {transpose_a = true} : (tensor<8x8xf32>, tensor<8x3xf32>) -> tensor<8x3xf32>
// CHECK: shard.all_reduce %[[DW]] on @mesh grid_axes = [0] : tensor<8x3xf32> -> tensor<8x3xf32>
shard.grid @mesh(shape = 2x2) {weft.mesh_axes = ["dp", "tp"]}
func.func @main(%dy: tensor<4x4x8xf32> {weft.shard = {dims = [array<i16: 1>, array<i16: 0>, array<i16>], partial = array<i16>}},
                %x: tensor<16x6xf32> {weft.shard = {dims = [array<i16: 0>, array<i16: 1>], outer = array<i64: 4, 1>, partial = array<i16>}}) -> (tensor<16x6xf32>, tensor<8x6xf32>) {
  %w = weft.param "w" {weft.shard = {dims = [array<i16>, array<i16: 1>], partial = array<i16>}} : tensor<8x6xf32>
  %0 = weft.reshape %dy : tensor<4x4x8xf32> to tensor<16x8xf32>
  %1 = weft.matmul %0, %w : (tensor<16x8xf32>, tensor<8x6xf32>) -> tensor<16x6xf32>
  %2 = weft.matmul %0, %x {transpose_a = true} : (tensor<16x8xf32>, tensor<16x6xf32>) -> tensor<8x6xf32>
  return %1, %2 : tensor<16x6xf32>, tensor<8x6xf32>
}

// -----

// Rows split twice the other way round: the outer factor over dp, the rest
// over tp, the axis the weight's features take. The outer part's split
// stays (contiguous blocks); the rest is gathered over tp.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[A:.*]]: tensor<2x2x8xf32>
// CHECK: %[[R:.*]] = weft.reshape %[[A]] : tensor<2x2x8xf32> to tensor<4x8xf32>
// CHECK: %[[V:.*]] = weft.reshape %[[R]] : tensor<4x8xf32> to tensor<2x2x8xf32>
// CHECK: %[[G:.*]] = shard.all_gather %[[V]] on @mesh grid_axes = [1] gather_axis = 1 : tensor<2x2x8xf32> -> tensor<2x4x8xf32>
// CHECK: %[[ROWS:.*]] = weft.reshape %[[G]] : tensor<2x4x8xf32> to tensor<8x8xf32>
// CHECK: weft.matmul %[[ROWS]], %{{.*}} : (tensor<8x8xf32>, tensor<8x3xf32>) -> tensor<8x3xf32>
shard.grid @mesh(shape = 2x2) {weft.mesh_axes = ["dp", "tp"]}
func.func @main(%a: tensor<4x4x8xf32> {weft.shard = {dims = [array<i16: 0>, array<i16: 1>, array<i16>], partial = array<i16>}}) -> tensor<16x6xf32> {
  %w = weft.param "w" {weft.shard = {dims = [array<i16>, array<i16: 1>], partial = array<i16>}} : tensor<8x6xf32>
  %0 = weft.reshape %a : tensor<4x4x8xf32> to tensor<16x8xf32>
  %1 = weft.matmul %0, %w : (tensor<16x8xf32>, tensor<8x6xf32>) -> tensor<16x6xf32>
  return %1 : tensor<16x6xf32>
}

// -----

// A sum over rows split twice (a bias gradient under dp x sequence
// parallelism) is partial over both axes: one all_reduce over both.
// CHECK-LABEL: func.func @main
// CHECK: %[[R:.*]] = weft.reshape %{{.*}} : tensor<2x2x8xf32> to tensor<4x8xf32>
// CHECK: %[[S:.*]] = weft.reduce_sum %[[R]] {axes = array<i64: 0>} : (tensor<4x8xf32>) -> tensor<1x8xf32>
// CHECK: %[[T:.*]] = shard.all_reduce %[[S]] on @mesh grid_axes = [1, 0] : tensor<1x8xf32> -> tensor<1x8xf32>
// CHECK: return %[[T]]
shard.grid @mesh(shape = 2x2) {weft.mesh_axes = ["dp", "tp"]}
func.func @main(%dy: tensor<4x4x8xf32> {weft.shard = {dims = [array<i16: 1>, array<i16: 0>, array<i16>], partial = array<i16>}}) -> tensor<1x8xf32> {
  %0 = weft.reshape %dy : tensor<4x4x8xf32> to tensor<16x8xf32>
  %1 = weft.reduce_sum %0 {axes = array<i64: 0>} : (tensor<16x8xf32>) -> tensor<1x8xf32>
  return %1 : tensor<1x8xf32>
}

// -----

// A window of two of the three blocks of a packed projection split by
// heads (a cross-attention's k and v, rows 32-96 of PyTorch's
// in_proj_weight): the window keeps the split, in two blocks, and each
// rank takes its rows of both from its own block; the gradient goes back
// into the same blocks. No gather.
// CHECK-LABEL: func.func @main
// CHECK: %[[P:.*]] = weft.param "w" {{.*}} : tensor<48x8xf32>
// CHECK-NOT: shard.all_gather
// CHECK: %[[KV:.*]] = weft.slice %[[P]] {starts = array<i64: 16, 0>, steps = array<i64: 1, 1>} : (tensor<48x8xf32>) -> tensor<32x8xf32>
// CHECK: %[[S:.*]] = weft.add %[[KV]], %{{.*}} : (tensor<32x8xf32>, tensor<32x8xf32>) -> tensor<32x8xf32>
// CHECK: weft.slice_grad %[[S]] {starts = array<i64: 16, 0>, steps = array<i64: 1, 1>} : (tensor<32x8xf32>) -> tensor<48x8xf32>
// CHECK-NOT: shard.all_gather
// CHECK: return
shard.grid @mesh(shape = 2) {weft.mesh_axes = ["tp"]}
func.func @main(%g: tensor<64x8xf32> {weft.name = "g", weft.shard = {dims = [array<i16: 0>, array<i16>], outer = array<i64: 2, 1>, partial = array<i16>}}) -> (tensor<f32> {weft.name = "loss"}) {
  %p = weft.param "w" {weft.shard = {dims = [array<i16: 0>, array<i16>], outer = array<i64: 3, 1>, partial = array<i16>}} : tensor<96x8xf32>
  %kv = weft.slice %p {starts = array<i64: 32, 0>, steps = array<i64: 1, 1>} : (tensor<96x8xf32>) -> tensor<64x8xf32>
  %s = weft.add %kv, %g : (tensor<64x8xf32>, tensor<64x8xf32>) -> tensor<64x8xf32>
  %back = weft.slice_grad %s {starts = array<i64: 32, 0>, steps = array<i64: 1, 1>} : (tensor<64x8xf32>) -> tensor<96x8xf32>
  %l = weft.reduce_sum %back {axes = array<i64: 0, 1>, keepdims = false} : (tensor<96x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A strided split (2 blocks) wanted as a plain split of another dim: no
// all_to_all serves it; the strided dim is gathered first, then each rank
// cuts its rows (cut first, the gather would join other ranks' rows).
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[Q:.*]]: tensor<4x8xf32> {{.*}}, %[[K:.*]]: tensor<8x4xf32>
// CHECK: %[[V:.*]] = weft.reshape %[[K]] : tensor<8x4xf32> to tensor<8x2x2xf32>
// CHECK: %[[G:.*]] = shard.all_gather %[[V]] on @mesh grid_axes = [0] gather_axis = 2 : tensor<8x2x2xf32> -> tensor<8x2x4xf32>
// CHECK: %[[W:.*]] = weft.reshape %[[G]] : tensor<8x2x4xf32> to tensor<8x8xf32>
// CHECK: %[[S:.*]] = shard.all_slice %[[W]] on @mesh grid_axes = [0] slice_axis = 0 : tensor<8x8xf32> -> tensor<4x8xf32>
// CHECK: weft.add %[[Q]], %[[S]]
shard.grid @mesh(shape = 2) {weft.mesh_axes = ["tp"]}
func.func @main(%q: tensor<8x8xf32> {weft.name = "q", weft.shard = {dims = [array<i16: 0>, array<i16>], partial = array<i16>}}, %k: tensor<8x8xf32> {weft.name = "k", weft.shard = {dims = [array<i16>, array<i16: 0>], outer = array<i64: 1, 2>, partial = array<i16>}}) -> (tensor<f32> {weft.name = "loss"}) {
  %0 = weft.add %q, %k : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %l = weft.reduce_sum %0 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<8x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
