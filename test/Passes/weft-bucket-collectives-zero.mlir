// RUN: weft-opt %s -split-input-file -weft-bucket-collectives | FileCheck %s

// ZeRO-1's update: for each parameter a reduce_scatter of its gradient just
// before its update, then an all_gather of the updated block. The
// reduce_scatters become one where the first stood (every gradient is
// ready there): each gradient as [2, n / 2] (the ranks' blocks), side by
// side, scattered along dim 0. The all_gathers become one where the last
// stood (nothing reads them before): each block as [1, n], side by side,
// gathered along dim 0. The scatter along dim 1 of a [1, 4, 2] gradient
// joins (its blocks are contiguous); the one along dim 1 of a [2, 4]
// gradient does not.
// CHECK-LABEL: func.func @zero1
// CHECK: %[[A:.*]] = weft.reshape %{{.*}} : tensor<4x2xf32> to tensor<2x4xf32>
// CHECK: %[[B:.*]] = weft.reshape %{{.*}} : tensor<2xf32> to tensor<2x1xf32>
// CHECK: %[[C:.*]] = weft.reshape %{{.*}} : tensor<1x4x2xf32> to tensor<2x4xf32>
// CHECK: %[[J:.*]] = weft.concat %[[A]], %[[B]], %[[C]] {axis = 1 : i64} : (tensor<2x4xf32>, tensor<2x1xf32>, tensor<2x4xf32>) -> tensor<2x9xf32>
// CHECK: %[[RS:.*]] = shard.reduce_scatter %[[J]] on @mesh grid_axes = [0] scatter_axis = 0 : tensor<2x9xf32> -> tensor<1x9xf32>
// CHECK: %[[S:.*]]:3 = weft.split %[[RS]] {axis = 1 : i64} : (tensor<1x9xf32>) -> (tensor<1x4xf32>, tensor<1x1xf32>, tensor<1x4xf32>)
// CHECK: %[[G1:.*]] = weft.reshape %[[S]]#0 : tensor<1x4xf32> to tensor<2x2xf32>
// CHECK: %[[G2:.*]] = weft.reshape %[[S]]#1 : tensor<1x1xf32> to tensor<1xf32>
// CHECK: %[[G3:.*]] = weft.reshape %[[S]]#2 : tensor<1x4xf32> to tensor<1x2x2xf32>
// CHECK: %[[U1:.*]] = weft.mul %[[G1]]
// CHECK: %[[U2:.*]] = weft.mul %[[G2]]
// CHECK: %[[U3:.*]] = weft.mul %[[G3]]
// CHECK: %[[K1:.*]] = weft.reshape %[[U1]] : tensor<2x2xf32> to tensor<1x4xf32>
// CHECK: %[[K2:.*]] = weft.reshape %[[U2]] : tensor<1xf32> to tensor<1x1xf32>
// CHECK: %[[K3:.*]] = weft.reshape %[[U3]] : tensor<1x2x2xf32> to tensor<1x4xf32>
// CHECK: %[[JG:.*]] = weft.concat %[[K1]], %[[K2]], %[[K3]] {axis = 1 : i64} : (tensor<1x4xf32>, tensor<1x1xf32>, tensor<1x4xf32>) -> tensor<1x9xf32>
// CHECK: %[[AG:.*]] = shard.all_gather %[[JG]] on @mesh grid_axes = [0] gather_axis = 0 : tensor<1x9xf32> -> tensor<2x9xf32>
// CHECK: %[[SG:.*]]:3 = weft.split %[[AG]] {axis = 1 : i64} : (tensor<2x9xf32>) -> (tensor<2x4xf32>, tensor<2x1xf32>, tensor<2x4xf32>)
// CHECK: weft.reshape %[[SG]]#0 : tensor<2x4xf32> to tensor<4x2xf32>
// CHECK: weft.reshape %[[SG]]#1 : tensor<2x1xf32> to tensor<2xf32>
// CHECK: weft.reshape %[[SG]]#2 : tensor<2x4xf32> to tensor<1x4x2xf32>
// CHECK: shard.reduce_scatter %{{.*}} on @mesh grid_axes = [0] scatter_axis = 1 : tensor<2x4xf32> -> tensor<2x2xf32>
// CHECK: %[[U4:.*]] = weft.mul
// CHECK: shard.all_gather %[[U4]] on @mesh grid_axes = [0] gather_axis = 1 : tensor<2x2xf32> -> tensor<2x4xf32>
// CHECK-NOT: shard.reduce_scatter
// CHECK-NOT: shard.all_gather
// CHECK: return
shard.grid @mesh(shape = 2) {weft.mesh_axes = ["dp"]}
func.func @zero1(%g1: tensor<4x2xf32>, %g2: tensor<2xf32>, %g3: tensor<1x4x2xf32>, %g4: tensor<2x4xf32>, %s: tensor<f32>) -> (tensor<4x2xf32>, tensor<2xf32>, tensor<1x4x2xf32>, tensor<2x4xf32>) {
  %r1 = shard.reduce_scatter %g1 on @mesh grid_axes = [0] scatter_axis = 0 : tensor<4x2xf32> -> tensor<2x2xf32>
  %u1 = weft.mul %r1, %s : (tensor<2x2xf32>, tensor<f32>) -> tensor<2x2xf32>
  %a1 = shard.all_gather %u1 on @mesh grid_axes = [0] gather_axis = 0 : tensor<2x2xf32> -> tensor<4x2xf32>
  %r2 = shard.reduce_scatter %g2 on @mesh grid_axes = [0] scatter_axis = 0 : tensor<2xf32> -> tensor<1xf32>
  %u2 = weft.mul %r2, %s : (tensor<1xf32>, tensor<f32>) -> tensor<1xf32>
  %a2 = shard.all_gather %u2 on @mesh grid_axes = [0] gather_axis = 0 : tensor<1xf32> -> tensor<2xf32>
  %r3 = shard.reduce_scatter %g3 on @mesh grid_axes = [0] scatter_axis = 1 : tensor<1x4x2xf32> -> tensor<1x2x2xf32>
  %u3 = weft.mul %r3, %s : (tensor<1x2x2xf32>, tensor<f32>) -> tensor<1x2x2xf32>
  %a3 = shard.all_gather %u3 on @mesh grid_axes = [0] gather_axis = 1 : tensor<1x2x2xf32> -> tensor<1x4x2xf32>
  %r4 = shard.reduce_scatter %g4 on @mesh grid_axes = [0] scatter_axis = 1 : tensor<2x4xf32> -> tensor<2x2xf32>
  %u4 = weft.mul %r4, %s : (tensor<2x2xf32>, tensor<f32>) -> tensor<2x2xf32>
  %a4 = shard.all_gather %u4 on @mesh grid_axes = [0] gather_axis = 1 : tensor<2x2xf32> -> tensor<2x4xf32>
  return %a1, %a2, %a3, %a4 : tensor<4x2xf32>, tensor<2xf32>, tensor<1x4x2xf32>, tensor<2x4xf32>
}

// -----

// ZeRO-2's reduce_scatters, each right after its gradient is made: they
// pack where the last stood, as long as nothing reads one before.
// CHECK-LABEL: func.func @zero2
// CHECK: weft.neg
// CHECK: weft.neg
// CHECK: %[[J:.*]] = weft.concat
// CHECK: shard.reduce_scatter %[[J]] on @mesh grid_axes = [0] scatter_axis = 0 : tensor<2x5xf32> -> tensor<1x5xf32>
// CHECK-NOT: shard.reduce_scatter
// CHECK: return
shard.grid @mesh(shape = 2) {weft.mesh_axes = ["dp"]}
func.func @zero2(%x1: tensor<4x2xf32>, %x2: tensor<2xf32>) -> (tensor<2x2xf32>, tensor<1xf32>) {
  %g1 = weft.neg %x1 : tensor<4x2xf32>
  %r1 = shard.reduce_scatter %g1 on @mesh grid_axes = [0] scatter_axis = 0 : tensor<4x2xf32> -> tensor<2x2xf32>
  %g2 = weft.neg %x2 : tensor<2xf32>
  %r2 = shard.reduce_scatter %g2 on @mesh grid_axes = [0] scatter_axis = 0 : tensor<2xf32> -> tensor<1xf32>
  return %r1, %r2 : tensor<2x2xf32>, tensor<1xf32>
}

// -----

// Neither place works when the first result is read before the second
// gradient is made: the two stay apart. Pipeline stages never share one.
// CHECK-LABEL: func.func @apart
// CHECK-COUNT-2: shard.reduce_scatter %{{.*}} : tensor<4x2xf32> -> tensor<2x2xf32>
// CHECK: shard.all_gather %{{.*}} {weft.stage = 0 : i64}
// CHECK: shard.all_gather %{{.*}} {weft.stage = 1 : i64}
shard.grid @mesh(shape = 2) {weft.mesh_axes = ["dp"]}
func.func @apart(%x: tensor<4x2xf32>, %b1: tensor<2x2xf32>, %b2: tensor<2x2xf32>) -> (tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>) {
  %r1 = shard.reduce_scatter %x on @mesh grid_axes = [0] scatter_axis = 0 : tensor<4x2xf32> -> tensor<2x2xf32>
  %u1 = weft.mul %r1, %r1 : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %g2 = shard.all_gather %u1 on @mesh grid_axes = [0] gather_axis = 0 : tensor<2x2xf32> -> tensor<4x2xf32>
  %r2 = shard.reduce_scatter %g2 on @mesh grid_axes = [0] scatter_axis = 0 : tensor<4x2xf32> -> tensor<2x2xf32>
  %a1 = shard.all_gather %b1 on @mesh grid_axes = [0] gather_axis = 0 {weft.stage = 0 : i64} : tensor<2x2xf32> -> tensor<4x2xf32>
  %a2 = shard.all_gather %b2 on @mesh grid_axes = [0] gather_axis = 0 {weft.stage = 1 : i64} : tensor<2x2xf32> -> tensor<4x2xf32>
  %w = shard.all_gather %r2 on @mesh grid_axes = [0] gather_axis = 0 : tensor<2x2xf32> -> tensor<4x2xf32>
  return %a1, %a2, %w : tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>
}

// -----

// A parameter's update reading a gathered value does not hold the bucket
// back: it moves down, after the packed all_gather.
// CHECK-LABEL: func.func @updates
// CHECK: shard.all_gather %{{.*}} on @mesh grid_axes = [0] gather_axis = 0 : tensor<1x6xf32> -> tensor<2x6xf32>
// CHECK-NOT: shard.all_gather
// CHECK-DAG: weft.param_update "w1", %{{.*}} : tensor<4x2xf32>
// CHECK-DAG: weft.param_update "w2", %{{.*}} : tensor<2x2xf32>
// CHECK: return
shard.grid @mesh(shape = 2) {weft.mesh_axes = ["dp"]}
func.func @updates(%u1: tensor<2x2xf32>, %x: tensor<1x2xf32>) {
  %a1 = shard.all_gather %u1 on @mesh grid_axes = [0] gather_axis = 0 : tensor<2x2xf32> -> tensor<4x2xf32>
  weft.param_update "w1", %a1 : tensor<4x2xf32>
  %u2 = weft.neg %x : tensor<1x2xf32>
  %a2 = shard.all_gather %u2 on @mesh grid_axes = [0] gather_axis = 0 : tensor<1x2xf32> -> tensor<2x2xf32>
  weft.param_update "w2", %a2 : tensor<2x2xf32>
  return
}
