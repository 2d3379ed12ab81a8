// RUN: weft-opt %s -split-input-file -weft-microbatch | FileCheck %s

// Two microbatches of a dp=2 rank: the input is the rank's 4 rows again and
// each microbatch reads its 2 (a slice). The forward and backward run once
// per microbatch, one microbatch after the other; the gradient's all_reduce
// over [dp, mb] becomes the sum of the two, then the all_reduce over dp; a
// maximum over mb becomes weft.max. The parameter update comes last, and the
// grid drops the microbatch axis.
// CHECK: shard.grid @mesh(shape = 2x1) {weft.mesh_axes = ["dp", "tp"]}
// CHECK-LABEL: func.func @main
// CHECK-SAME: %[[X:.*]]: tensor<4x4xf32> {weft.name = "x", weft.shard = {dims = [array<i16: 0>, array<i16>], partial = array<i16>}}
// CHECK: %[[W:.*]] = weft.param "w"
// CHECK: %[[X0:.*]] = weft.slice %[[X]] {starts = array<i64: 0, 0>, steps = array<i64: 1, 1>, weft.microbatch = 0 : i64} : (tensor<4x4xf32>) -> tensor<2x4xf32>
// CHECK: %[[H0:.*]] = weft.matmul %[[X0]], %[[W]] {weft.microbatch = 0 : i64}
// CHECK: %[[T0:.*]] = weft.tanh %[[H0]] {weft.microbatch = 0 : i64}
// CHECK: %[[S0:.*]] = weft.reduce_sum %[[T0]] {{.*}}weft.microbatch = 0 : i64
// CHECK: %[[G0:.*]] = weft.matmul %[[X0]], %[[T0]] {transpose_a = true, weft.microbatch = 0 : i64}
// CHECK: %[[X1:.*]] = weft.slice %[[X]] {starts = array<i64: 2, 0>, steps = array<i64: 1, 1>, weft.microbatch = 1 : i64}
// CHECK: %[[S1:.*]] = weft.reduce_sum {{.*}}weft.microbatch = 1 : i64
// CHECK: %[[G1:.*]] = weft.matmul %[[X1]], %{{.*}} {transpose_a = true, weft.microbatch = 1 : i64}
// CHECK: %[[G:.*]] = weft.add %[[G0]], %[[G1]] {weft.combines_microbatches}
// CHECK: %[[GR:.*]] = shard.all_reduce %[[G]] on @mesh grid_axes = [0] : tensor<4x4xf32>
// CHECK: %[[NEW:.*]] = weft.sub %[[W]], %[[GR]]
// CHECK: %[[M:.*]] = weft.max %[[S0]], %[[S1]] {weft.combines_microbatches}
// CHECK: %[[L:.*]] = shard.all_reduce %[[M]] on @mesh grid_axes = [0] : tensor<f32>
// CHECK: weft.param_update "w", %[[NEW]]
// CHECK-NEXT: return %[[L]]
shard.grid @mesh(shape = 2x1x2) {weft.mesh_axes = ["dp", "tp", "mb"]}
func.func @main(%x: tensor<2x4xf32> {weft.name = "x", weft.shard = {dims = [array<i16: 0, 2>, array<i16>], partial = array<i16>}}) -> (tensor<f32> {weft.name = "loss"}) {
  %w = weft.param "w" : tensor<4x4xf32>
  %0 = weft.matmul %x, %w : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %1 = weft.tanh %0 : tensor<2x4xf32>
  %2 = weft.reduce_sum %1 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x4xf32>) -> tensor<f32>
  %g = weft.matmul %x, %1 {transpose_a = true} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<4x4xf32>
  %gs = shard.all_reduce %g on @mesh grid_axes = [0, 2] : tensor<4x4xf32> -> tensor<4x4xf32>
  %3 = weft.sub %w, %gs : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  weft.param_update "w", %3 : tensor<4x4xf32>
  %m = shard.all_reduce %2 on @mesh grid_axes = [2] reduction = max : tensor<f32> -> tensor<f32>
  %l = shard.all_reduce %m on @mesh grid_axes = [0] : tensor<f32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A gather over the microbatches joins the clones in microbatch order.
// CHECK-LABEL: func.func @main
// CHECK-SAME: %[[X:.*]]: tensor<6x3xf32>
// CHECK: %[[A:.*]] = weft.exp %{{.*}} {weft.microbatch = 0 : i64} : tensor<2x3xf32>
// CHECK: %[[B:.*]] = weft.exp %{{.*}} {weft.microbatch = 1 : i64} : tensor<2x3xf32>
// CHECK: %[[C:.*]] = weft.exp %{{.*}} {weft.microbatch = 2 : i64} : tensor<2x3xf32>
// CHECK: %[[J:.*]] = weft.concat %[[A]], %[[B]], %[[C]] {axis = 0 : i64}
// CHECK: return %[[J]] : tensor<6x3xf32>
shard.grid @mesh(shape = 1x1x3) {weft.mesh_axes = ["dp", "tp", "mb"]}
func.func @main(%x: tensor<2x3xf32> {weft.name = "x", weft.shard = {dims = [array<i16: 2>, array<i16>], partial = array<i16>}}) -> (tensor<6x3xf32> {weft.name = "y"}) {
  %0 = weft.exp %x : tensor<2x3xf32>
  %1 = shard.all_gather %0 on @mesh grid_axes = [2] gather_axis = 0 : tensor<2x3xf32> -> tensor<6x3xf32>
  return %1 : tensor<6x3xf32>
}

// -----

// A value every microbatch shares, sliced over [dp, mb] for the batch (a
// recurrent op's initial state, whole on every rank): the slice over dp
// gives the rank's block, and microbatch m reads block m of it.
// CHECK-LABEL: func.func @main
// CHECK-SAME: %[[X:.*]]: tensor<4x3xf32>
// CHECK: %[[H:.*]] = weft.param "h0" : tensor<8x3xf32>
// CHECK: %[[B:.*]] = shard.all_slice %[[H]] on @mesh grid_axes = [0] slice_axis = 0 : tensor<8x3xf32> -> tensor<4x3xf32>
// CHECK: %[[H0:.*]] = weft.slice %[[B]] {starts = array<i64: 0, 0>, steps = array<i64: 1, 1>, weft.microbatch = 0 : i64} : (tensor<4x3xf32>) -> tensor<2x3xf32>
// CHECK: weft.add %{{.*}}, %[[H0]] {weft.microbatch = 0 : i64}
// CHECK: %[[H1:.*]] = weft.slice %[[B]] {starts = array<i64: 2, 0>, steps = array<i64: 1, 1>, weft.microbatch = 1 : i64} : (tensor<4x3xf32>) -> tensor<2x3xf32>
// CHECK: weft.add %{{.*}}, %[[H1]] {weft.microbatch = 1 : i64}
// CHECK-NOT: shard.all_slice
shard.grid @mesh(shape = 2x1x2) {weft.mesh_axes = ["dp", "tp", "mb"]}
func.func @main(%x: tensor<2x3xf32> {weft.name = "x", weft.shard = {dims = [array<i16: 0, 2>, array<i16>], partial = array<i16>}}) -> (tensor<f32> {weft.name = "loss"}) {
  %h = weft.param "h0" : tensor<8x3xf32>
  %s = shard.all_slice %h on @mesh grid_axes = [0, 2] slice_axis = 0 : tensor<8x3xf32> -> tensor<2x3xf32>
  %0 = weft.add %x, %s : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = weft.reduce_sum %0 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf32>) -> tensor<f32>
  %2 = shard.all_reduce %1 on @mesh grid_axes = [0, 2] : tensor<f32> -> tensor<f32>
  return %2 : tensor<f32>
}

// -----

// A mesh_offset over [dp, mb] that is a position only (weft.position: a
// dropout's block start; the block of a gather's data is refused, see
// weft-microbatch-invalid.mlir): microbatch m's
// block starts m blocks past the rank's, whose start over dp now counts
// blocks of all its microbatches (2 microbatches of 2 rows: 4).
// CHECK-LABEL: func.func @main
// CHECK: %[[RANK:.*]] = weft.mesh_offset on @mesh grid_axes = [0] block = 4 {weft.position} : tensor<i64>
// CHECK: %[[M0:.*]] = weft.constant dense<0> : tensor<i64>
// CHECK: %[[M1:.*]] = weft.constant dense<2> : tensor<i64>
// CHECK: %[[S0:.*]] = weft.add %[[RANK]], %[[M0]] {weft.microbatch = 0 : i64}
// CHECK: %[[R0:.*]] = weft.mul %{{.*}}, %[[S0]] {weft.microbatch = 0 : i64}
// CHECK: %[[O0:.*]] = weft.add %{{.*}}, %[[R0]] {weft.microbatch = 0 : i64}
// CHECK: weft.dropout %{{.*}}, %{{.*}}, %[[O0]] {{.*}}weft.microbatch = 0 : i64
// CHECK: %[[S1:.*]] = weft.add %[[RANK]], %[[M1]] {weft.microbatch = 1 : i64}
// CHECK: %[[R1:.*]] = weft.mul %{{.*}}, %[[S1]] {weft.microbatch = 1 : i64}
// CHECK: %[[O1:.*]] = weft.add %{{.*}}, %[[R1]] {weft.microbatch = 1 : i64}
// CHECK: weft.dropout %{{.*}}, %{{.*}}, %[[O1]] {{.*}}weft.microbatch = 1 : i64
shard.grid @mesh(shape = 2x1x2) {weft.mesh_axes = ["dp", "tp", "mb"]}
func.func @main(%x: tensor<2x4xf32> {weft.name = "x", weft.shard = {dims = [array<i16: 0, 2>, array<i16>], partial = array<i16>}}) -> (tensor<f32> {weft.name = "loss"}) {
  %step = weft.param "weft.step" {weft.role = "step"} : tensor<i64>
  %zero = weft.constant dense<0> : tensor<2xi64>
  %start = weft.mesh_offset on @mesh grid_axes = [0, 2] block = 2 {weft.position} : tensor<i64>
  %e0 = weft.constant dense<[1, 0]> : tensor<2xi64>
  %r = weft.mul %e0, %start : (tensor<2xi64>, tensor<i64>) -> tensor<2xi64>
  %off = weft.add %zero, %r : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
  %y, %m = weft.dropout %x, %step, %off {global_shape = array<i64: 8, 4>, ratio = 5.000000e-01 : f64, seed = 0 : i64, stream = 0 : i64} : tensor<2x4xf32>, tensor<i64>, tensor<2xi64> -> tensor<2x4xf32>, tensor<2x4xi1>
  %s = weft.reduce_sum %y {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x4xf32>) -> tensor<f32>
  %l = shard.all_reduce %s on @mesh grid_axes = [0, 2] : tensor<f32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// An all_reduce over [mb, tp] (the loss of a tensor-parallel step whose
// last product is column-split): the order of a sum's axes does not
// matter, so the microbatches' partial sums are added, then all-reduced
// over tp.
// CHECK-LABEL: func.func @main
// CHECK: %[[S0:.*]] = weft.reduce_sum {{.*}}weft.microbatch = 0 : i64
// CHECK: %[[S1:.*]] = weft.reduce_sum {{.*}}weft.microbatch = 1 : i64
// CHECK: %[[S:.*]] = weft.add %[[S0]], %[[S1]] {weft.combines_microbatches}
// CHECK: %[[L:.*]] = shard.all_reduce %[[S]] on @mesh grid_axes = [1] : tensor<f32>
// CHECK: return %[[L]]
shard.grid @mesh(shape = 1x2x2) {weft.mesh_axes = ["dp", "tp", "mb"]}
func.func @main(%x: tensor<2x4xf32> {weft.name = "x", weft.shard = {dims = [array<i16: 2>, array<i16>], partial = array<i16>}}) -> (tensor<f32> {weft.name = "loss"}) {
  %s = weft.reduce_sum %x {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x4xf32>) -> tensor<f32>
  %l = shard.all_reduce %s on @mesh grid_axes = [2, 1] : tensor<f32> -> tensor<f32>
  return %l : tensor<f32>
}
