// RUN: weft-opt %s -weft-bucket-collectives | FileCheck %s
// RUN: weft-opt %s -weft-bucket-collectives="bucket-mb=0.00001" | FileCheck %s --check-prefix=SMALL
// RUN: not weft-opt %s -weft-bucket-collectives="bucket-mb=0" 2>&1 | FileCheck %s --check-prefix=ZERO
// ZERO: bucket-mb must be positive, got 0

// Three gradient all_reduces over dp become one of their concatenation at
// the first one's place (every gradient is ready there); the count the
// forward pass divides by right away keeps its own (the first gradient is
// made after it), and so does the reduction over the other axis.
// CHECK-LABEL: func.func @main
// CHECK: %[[C:.*]] = shard.all_reduce %{{.*}} on @mesh grid_axes = [0] : tensor<f32>
// CHECK: weft.div %{{.*}}, %[[C]]
// CHECK: %[[A:.*]] = weft.reshape %{{.*}} : tensor<4x2xf32> to tensor<8xf32>
// CHECK: %[[J:.*]] = weft.concat %[[A]], %{{.*}}, %{{.*}} {axis = 0 : i64} : (tensor<8xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<12xf32>
// CHECK: %[[R:.*]] = shard.all_reduce %[[J]] on @mesh grid_axes = [0] : tensor<12xf32> -> tensor<12xf32>
// CHECK: %[[P:.*]]:3 = weft.split %[[R]] {axis = 0 : i64} : (tensor<12xf32>) -> (tensor<8xf32>, tensor<2xf32>, tensor<2xf32>)
// CHECK: weft.reshape %[[P]]#0 : tensor<8xf32> to tensor<4x2xf32>
// CHECK: %[[T:.*]] = shard.all_reduce %{{.*}} on @mesh grid_axes = [1] : tensor<3xf32>
// With 10-byte buckets nothing is packed.
// SMALL-COUNT-5: shard.all_reduce
// SMALL-NOT: shard.all_reduce
shard.grid @mesh(shape = 2x2) {weft.mesh_axes = ["dp", "tp"]}
func.func @main(%x1: tensor<4x2xf32>, %g2: tensor<2xf32>, %g3: tensor<2xf32>, %c: tensor<f32>, %t: tensor<3xf32>) -> (tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<f32>, tensor<3xf32>) {
  %count = shard.all_reduce %c on @mesh grid_axes = [0] : tensor<f32> -> tensor<f32>
  %q = weft.div %c, %count : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %g1 = weft.mul %x1, %q : (tensor<4x2xf32>, tensor<f32>) -> tensor<4x2xf32>
  %r1 = shard.all_reduce %g1 on @mesh grid_axes = [0] : tensor<4x2xf32> -> tensor<4x2xf32>
  %rt = shard.all_reduce %t on @mesh grid_axes = [1] : tensor<3xf32> -> tensor<3xf32>
  %r2 = shard.all_reduce %g2 on @mesh grid_axes = [0] : tensor<2xf32> -> tensor<2xf32>
  %r3 = shard.all_reduce %g3 on @mesh grid_axes = [0] : tensor<2xf32> -> tensor<2xf32>
  return %r1, %r2, %r3, %q, %rt : tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<f32>, tensor<3xf32>
}
