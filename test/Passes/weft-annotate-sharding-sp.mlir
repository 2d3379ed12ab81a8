// RUN: weft-opt %s -weft-annotate-sharding="tp=2 sequence-parallel=true" -weft-partition | FileCheck %s
// RUN: not weft-opt %s -weft-annotate-sharding="sequence-parallel=true" 2>&1 | FileCheck %s --check-prefix=NOTP
// NOTP: sequence parallelism needs tp > 1
// With the integer program's prices (under which, without sequence
// parallelism, it splits the first weight alone) sequence parallelism still
// gets Megatron's layout: the same program, and no weft.tp_plan.
// RUN: weft-opt %s -weft-annotate-sharding="tp=2 sequence-parallel=true tp-flop-seconds=1e-15 tp-byte-seconds=1 tp-latency=1 tp-memory=1e12" -weft-partition | FileCheck %s
// RUN: weft-opt %s -weft-annotate-sharding="tp=2 tp-flop-seconds=1e-15 tp-byte-seconds=1 tp-latency=1 tp-memory=1e12" | FileCheck %s --check-prefix=ILP
// ILP: weft.tp_plan = "1 column- and 0 row-parallel of 2 weights
// RUN: weft-opt %s -weft-annotate-sharding="tp=2 sequence-parallel=true tp-flop-seconds=1e-15 tp-byte-seconds=1 tp-latency=1 tp-memory=1e12" | FileCheck %s --check-prefix=NOPLAN
// NOPLAN: shard.grid @mesh
// NOPLAN-NOT: weft.tp_plan

// Sequence parallelism: the input is split along the sequence (dim 1) over
// tp; the norm runs on the rank's tokens, the column-parallel product gets
// them gathered (all_gather), and the row-parallel product's partial sums
// meet the sequence split again in one reduce_scatter.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[X:.*]]: tensor<2x4x8xf32>
// CHECK: %[[N:.*]] = weft.layer_norm %[[X]], %{{.*}} {axis = 2 : i64} : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
// CHECK: %[[G:.*]] = shard.all_gather %[[N]] on @mesh grid_axes = [1] gather_axis = 1 : tensor<2x4x8xf32> -> tensor<2x8x8xf32>
// CHECK: weft.matmul %[[G]], %{{.*}} : (tensor<2x8x8xf32>, tensor<8x8xf32>) -> tensor<2x8x8xf32>
// CHECK: %[[D:.*]] = weft.matmul %{{.*}}, %{{.*}} : (tensor<2x8x8xf32>, tensor<8x8xf32>) -> tensor<2x8x8xf32>
// CHECK: %[[RS:.*]] = shard.reduce_scatter %[[D]] on @mesh grid_axes = [1] scatter_axis = 1 : tensor<2x8x8xf32> -> tensor<2x4x8xf32>
// CHECK: weft.add %[[X]], %[[RS]] : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
func.func @main(%x: tensor<2x8x8xf32>) -> tensor<2x8x8xf32> {
  %g = weft.param "norm" : tensor<8xf32>
  %up = weft.param "up" : tensor<8x16xf32>
  %down = weft.param "down" : tensor<16x8xf32>
  %0 = weft.layer_norm %x, %g {axis = 2 : i64} : (tensor<2x8x8xf32>, tensor<8xf32>) -> tensor<2x8x8xf32>
  %1 = weft.matmul %0, %up : (tensor<2x8x8xf32>, tensor<8x16xf32>) -> tensor<2x8x16xf32>
  %2 = weft.tanh %1 : tensor<2x8x16xf32>
  %3 = weft.matmul %2, %down : (tensor<2x8x16xf32>, tensor<16x8xf32>) -> tensor<2x8x8xf32>
  %4 = weft.add %x, %3 : (tensor<2x8x8xf32>, tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  return %4 : tensor<2x8x8xf32>
}
