// RUN: weft-opt %s -split-input-file -weft-partition | FileCheck %s

// Attention splits over its leading (batch, head) dims: with the heads
// split over tp, the forward and the gradient run on each rank's heads with
// no collective; only the returned whole value is gathered.
// CHECK-LABEL: func.func @main
// CHECK-NOT: shard.
// CHECK: %[[O:.*]], %[[L:.*]] = weft.attention %arg0, %arg1, %arg2 {causal = true, scale = 2.500000e-01 : f64} : (tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>) -> (tensor<2x2x8x16xf32>, tensor<2x2x8xf32>)
// CHECK-NOT: shard.
// CHECK: weft.attention_grad %arg0, %arg1, %arg2, %[[O]], %[[L]], %{{.*}} {{.*}} -> (tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>)
// CHECK-NOT: shard.
// CHECK: shard.all_gather %{{.*}} on @mesh grid_axes = [1] gather_axis = 1 : tensor<2x2x8x16xf32> -> tensor<2x4x8x16xf32>
// CHECK-NEXT: return
shard.grid @mesh(shape = 1x2) {weft.mesh_axes = ["dp", "tp"]}
func.func @main(%q: tensor<2x4x8x16xf32> {weft.name = "q", weft.shard = {dims = [array<i16>, array<i16: 1>, array<i16>, array<i16>], partial = array<i16>}},
                %k: tensor<2x4x8x16xf32> {weft.name = "k", weft.shard = {dims = [array<i16>, array<i16: 1>, array<i16>, array<i16>], partial = array<i16>}},
                %v: tensor<2x4x8x16xf32> {weft.name = "v", weft.shard = {dims = [array<i16>, array<i16: 1>, array<i16>, array<i16>], partial = array<i16>}}) -> (tensor<2x4x8x16xf32> {weft.name = "o"}) {
  %o, %lse = weft.attention %q, %k, %v {scale = 0.25 : f64, causal = true} : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> (tensor<2x4x8x16xf32>, tensor<2x4x8xf32>)
  %g = weft.constant dense<1.0> : tensor<2x4x8x16xf32>
  %dq, %dk, %dv = weft.attention_grad %q, %k, %v, %o, %lse, %g {scale = 0.25 : f64, causal = true} : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8xf32>, tensor<2x4x8x16xf32>) -> (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>)
  %s = weft.add %dq, %dk : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  %t = weft.add %s, %dv : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  %u = weft.add %t, %o : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  return %u : tensor<2x4x8x16xf32>
}

// -----

// A query split along its rows (the sequence): each problem needs all of
// its rows' scores against all keys, so the query is gathered first.
// CHECK-LABEL: func.func @main
// CHECK: %[[Q:.*]] = shard.all_gather %arg0 on @mesh grid_axes = [1] gather_axis = 1 : tensor<2x4x8xf32> -> tensor<2x8x8xf32>
// CHECK: weft.attention %[[Q]], %arg1, %arg2 {{.*}} -> (tensor<2x8x8xf32>, tensor<2x8xf32>)
shard.grid @mesh(shape = 1x2) {weft.mesh_axes = ["dp", "tp"]}
func.func @main(%q: tensor<2x8x8xf32> {weft.name = "q", weft.shard = {dims = [array<i16>, array<i16: 1>, array<i16>], partial = array<i16>}},
                %k: tensor<2x8x8xf32> {weft.name = "k"},
                %v: tensor<2x8x8xf32> {weft.name = "v"}) -> (tensor<2x8x8xf32> {weft.name = "o"}) {
  %o, %lse = weft.attention %q, %k, %v {scale = 0.25 : f64} : (tensor<2x8x8xf32>, tensor<2x8x8xf32>, tensor<2x8x8xf32>) -> (tensor<2x8x8xf32>, tensor<2x8xf32>)
  return %o : tensor<2x8x8xf32>
}
