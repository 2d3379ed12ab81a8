// RUN: weft-opt %s -split-input-file -weft-partition | FileCheck %s

// Sequence parallelism's collectives: the sums a tensor-parallel block
// leaves are cut along the sequence as they are summed (reduce_scatter),
// not summed whole on every rank and cut afterwards.

// A vocabulary-parallel embedding (the table split by rows over tp) of
// tokens split along the sequence over tp: the tokens are gathered for the
// lookup and its partial sums are reduce-scattered back along the sequence
// (Megatron's sequence-parallel embedding), not all-reduced.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[T:.*]]: tensor<2x2xi64>
// CHECK: %[[TT:.*]] = shard.all_gather %[[T]] on @mesh grid_axes = [1] gather_axis = 1 : tensor<2x2xi64> -> tensor<2x4xi64>
// CHECK: weft.mesh_offset on @mesh grid_axes = [1] block = 4
// CHECK: %[[L:.*]] = weft.gather %{{.*}}, %{{.*}} {axis = 0 : i64} : (tensor<4x6xf32>, tensor<2x4xi64>) -> tensor<2x4x6xf32>
// CHECK-NOT: shard.all_reduce
// CHECK: %[[S:.*]] = shard.reduce_scatter %{{.*}} on @mesh grid_axes = [1] scatter_axis = 1 : tensor<2x4x6xf32> -> tensor<2x2x6xf32>
// CHECK: weft.layer_norm %[[S]], %{{.*}}, %{{.*}} {axis = 2 : i64} : (tensor<2x2x6xf32>, tensor<6xf32>, tensor<6xf32>) -> tensor<2x2x6xf32>
shard.grid @mesh(shape = 1x2) {weft.mesh_axes = ["dp", "tp"]}
func.func @main(%tok: tensor<2x4xi64> {weft.shard = {dims = [array<i16>, array<i16: 1>], partial = array<i16>}}) -> tensor<2x4x6xf32> {
  %e = weft.param "e" {weft.shard = {dims = [array<i16: 1>, array<i16>], partial = array<i16>}} : tensor<8x6xf32>
  %s = weft.param "s" : tensor<6xf32>
  %b = weft.param "b" : tensor<6xf32>
  %0 = weft.gather %e, %tok {axis = 0 : i64} : (tensor<8x6xf32>, tensor<2x4xi64>) -> tensor<2x4x6xf32>
  %1 = weft.layer_norm %0, %s, %b {axis = 2 : i64} : (tensor<2x4x6xf32>, tensor<6xf32>, tensor<6xf32>) -> tensor<2x4x6xf32>
  return %1 : tensor<2x4x6xf32>
}

// -----

// A row-parallel product (rows = [sequence, batch], its features split over
// tp) whose output, with a bias added and reshaped to [batch, sequence,
// features], meets a residual split along the sequence: the partial sums
// are reduce-scattered along the rows' sequence part and the bias, the
// reshape and the transpose work on this rank's rows.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[H:.*]]: tensor<8x8xf32> {{.*}}, %[[R:.*]]: tensor<2x2x4xf32>
// CHECK: %[[W:.*]] = weft.param "w" {{.*}} : tensor<4x8xf32>
// CHECK: %[[B:.*]] = weft.param "bias" : tensor<4xf32>
// CHECK: %[[P:.*]] = weft.matmul %[[H]], %[[W]] {transpose_b = true} : (tensor<8x8xf32>, tensor<4x8xf32>) -> tensor<8x4xf32>
// CHECK-NOT: shard.all_reduce
// CHECK: %[[S:.*]] = shard.reduce_scatter %[[P]] on @mesh grid_axes = [1] scatter_axis = 0 : tensor<8x4xf32> -> tensor<4x4xf32>
// CHECK: %[[A:.*]] = weft.add %[[S]], %[[B]] : (tensor<4x4xf32>, tensor<4xf32>) -> tensor<4x4xf32>
// CHECK: %[[V:.*]] = weft.reshape %[[A]] : tensor<4x4xf32> to tensor<2x2x4xf32>
// CHECK: %[[T:.*]] = weft.transpose %[[V]] {permutation = array<i64: 1, 0, 2>} : (tensor<2x2x4xf32>) -> tensor<2x2x4xf32>
// CHECK-NOT: shard.all_slice
// CHECK: weft.add %[[R]], %[[T]] : (tensor<2x2x4xf32>, tensor<2x2x4xf32>) -> tensor<2x2x4xf32>
shard.grid @mesh(shape = 1x2) {weft.mesh_axes = ["dp", "tp"]}
func.func @main(%h: tensor<8x16xf32> {weft.shard = {dims = [array<i16>, array<i16: 1>], partial = array<i16>}},
                %r: tensor<2x4x4xf32> {weft.shard = {dims = [array<i16>, array<i16: 1>, array<i16>], partial = array<i16>}}) -> tensor<2x4x4xf32> {
  %w = weft.param "w" {weft.shard = {dims = [array<i16>, array<i16: 1>], partial = array<i16>}} : tensor<4x16xf32>
  %bias = weft.param "bias" : tensor<4xf32>
  %0 = weft.matmul %h, %w {transpose_b = true} : (tensor<8x16xf32>, tensor<4x16xf32>) -> tensor<8x4xf32>
  %1 = weft.add %0, %bias : (tensor<8x4xf32>, tensor<4xf32>) -> tensor<8x4xf32>
  %2 = weft.reshape %1 : tensor<8x4xf32> to tensor<4x2x4xf32>
  %3 = weft.transpose %2 {permutation = array<i64: 1, 0, 2>} : (tensor<4x2x4xf32>) -> tensor<2x4x4xf32>
  %4 = weft.add %r, %3 : (tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  return %4 : tensor<2x4x4xf32>
}

// -----

// The same, but the sum with its bias is also returned whole: it is summed
// whole (all_reduce) and the residual's block cut from it (all_slice).
// CHECK-LABEL: func.func @main
// CHECK: %[[P:.*]] = weft.matmul
// CHECK: %[[S:.*]] = shard.all_reduce %[[P]] on @mesh grid_axes = [1] : tensor<8x4xf32> -> tensor<8x4xf32>
// CHECK: shard.all_slice %{{.*}} on @mesh grid_axes = [1] slice_axis = 1 : tensor<2x4x4xf32> -> tensor<2x2x4xf32>
// CHECK-NOT: shard.reduce_scatter
shard.grid @mesh(shape = 1x2) {weft.mesh_axes = ["dp", "tp"]}
func.func @main(%h: tensor<8x16xf32> {weft.shard = {dims = [array<i16>, array<i16: 1>], partial = array<i16>}},
                %r: tensor<2x4x4xf32> {weft.shard = {dims = [array<i16>, array<i16: 1>, array<i16>], partial = array<i16>}}) -> (tensor<2x4x4xf32>, tensor<8x4xf32>) {
  %w = weft.param "w" {weft.shard = {dims = [array<i16>, array<i16: 1>], partial = array<i16>}} : tensor<4x16xf32>
  %bias = weft.param "bias" : tensor<4xf32>
  %0 = weft.matmul %h, %w {transpose_b = true} : (tensor<8x16xf32>, tensor<4x16xf32>) -> tensor<8x4xf32>
  %1 = weft.add %0, %bias : (tensor<8x4xf32>, tensor<4xf32>) -> tensor<8x4xf32>
  %2 = weft.reshape %1 : tensor<8x4xf32> to tensor<4x2x4xf32>
  %3 = weft.transpose %2 {permutation = array<i64: 1, 0, 2>} : (tensor<4x2x4xf32>) -> tensor<2x4x4xf32>
  %4 = weft.add %r, %3 : (tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  return %4, %1 : tensor<2x4x4xf32>, tensor<8x4xf32>
}

// -----

// A partial sum used as it is and through a reshape, both wanted whole
// (the gradient of a vocabulary-parallel head: the next product's input and
// a weight gradient's rows): one all_reduce, the reshape applied again to
// the sum.
// CHECK-LABEL: func.func @main
// CHECK: %[[P:.*]] = weft.matmul %{{.*}}, %{{.*}} : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>
// CHECK: %[[S:.*]] = shard.all_reduce %[[P]] on @mesh grid_axes = [1] : tensor<2x3x5xf32> -> tensor<2x3x5xf32>
// CHECK: weft.exp %[[S]] : tensor<2x3x5xf32>
// CHECK-NOT: shard.all_reduce
// CHECK: %[[V:.*]] = weft.reshape %[[S]] : tensor<2x3x5xf32> to tensor<6x5xf32>
// CHECK: weft.tanh %[[V]] : tensor<6x5xf32>
shard.grid @mesh(shape = 1x2) {weft.mesh_axes = ["dp", "tp"]}
func.func @main(%g: tensor<2x3x8xf32> {weft.shard = {dims = [array<i16>, array<i16>, array<i16: 1>], partial = array<i16>}}) -> (tensor<2x3x5xf32>, tensor<6x5xf32>) {
  %w = weft.param "w" {weft.shard = {dims = [array<i16: 1>, array<i16>], partial = array<i16>}} : tensor<8x5xf32>
  %0 = weft.matmul %g, %w : (tensor<2x3x8xf32>, tensor<8x5xf32>) -> tensor<2x3x5xf32>
  %1 = weft.reshape %0 : tensor<2x3x5xf32> to tensor<6x5xf32>
  %2 = weft.exp %0 : tensor<2x3x5xf32>
  %3 = weft.tanh %1 : tensor<6x5xf32>
  return %2, %3 : tensor<2x3x5xf32>, tensor<6x5xf32>
}

// -----

// A whole parameter whose gradient comes split along the sequence (a
// position embedding's, from sequence-split tokens): the gradient is
// gathered once and the update runs on the whole parameter and state, not
// on the gradient's block with the new parameter and each moment gathered
// afterwards.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[G:.*]]: tensor<1x2x6xf32>
// CHECK: %[[GG:.*]] = shard.all_gather %[[G]] on @mesh grid_axes = [1] gather_axis = 1 : tensor<1x2x6xf32> -> tensor<1x4x6xf32>
// CHECK: weft.adamw_update %{{.*}}, %[[GG]], %{{.*}}, %{{.*}}, %{{.*}} {{.*}} : tensor<1x4x6xf32>, tensor<i64>
// CHECK-NOT: shard.all_gather
// CHECK: return
shard.grid @mesh(shape = 1x2) {weft.mesh_axes = ["dp", "tp"]}
func.func @main(%g: tensor<1x4x6xf32> {weft.shard = {dims = [array<i16>, array<i16: 1>, array<i16>], partial = array<i16>}}, %t: tensor<i64>) {
  %p = weft.param "pos" : tensor<1x4x6xf32>
  %m = weft.param "adamw.m.pos" : tensor<1x4x6xf32>
  %v = weft.param "adamw.v.pos" : tensor<1x4x6xf32>
  %np, %nm, %nv = weft.adamw_update %p, %g, %m, %v, %t {beta1 = 9.000000e-01 : f64, beta2 = 9.990000e-01 : f64, eps = 1.000000e-08 : f64, lr = 1.000000e-03 : f64, weight_decay = 0.000000e+00 : f64} : tensor<1x4x6xf32>, tensor<i64>
  weft.param_update "pos", %np : tensor<1x4x6xf32>
  weft.param_update "adamw.m.pos", %nm : tensor<1x4x6xf32>
  weft.param_update "adamw.v.pos", %nv : tensor<1x4x6xf32>
  return
}

// -----

// A value gathered for a forward product and again by the backward (ops
// marked weft.backward, as a pipeline's are): the backward gathers it
// again rather than keep the forward's gathered copy alive until then.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[X:.*]]: tensor<2x4xf32>
// CHECK: %[[G1:.*]] = shard.all_gather %[[X]] on @mesh grid_axes = [1] gather_axis = 0 : tensor<2x4xf32> -> tensor<4x4xf32>
// CHECK: weft.matmul %[[G1]], %{{.*}} : (tensor<4x4xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
// CHECK: %[[G2:.*]] = shard.all_gather %[[X]] on @mesh grid_axes = [1] gather_axis = 0 : tensor<2x4xf32> -> tensor<4x4xf32>
// CHECK: weft.matmul %[[G2]], %{{.*}} {transpose_a = true, weft.backward}
shard.grid @mesh(shape = 1x2) {weft.mesh_axes = ["dp", "tp"]}
func.func @main(%x: tensor<4x4xf32> {weft.shard = {dims = [array<i16: 1>, array<i16>], partial = array<i16>}}, %dy: tensor<4x6xf32>) -> (tensor<4x6xf32>, tensor<4x6xf32>) {
  %w = weft.param "w" {weft.shard = {dims = [array<i16>, array<i16: 1>], partial = array<i16>}} : tensor<4x6xf32>
  %0 = weft.matmul %x, %w : (tensor<4x4xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  %1 = weft.tanh %0 : tensor<4x6xf32>
  %2 = weft.matmul %x, %dy {transpose_a = true, weft.backward} : (tensor<4x4xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  return %1, %2 : tensor<4x6xf32>, tensor<4x6xf32>
}
