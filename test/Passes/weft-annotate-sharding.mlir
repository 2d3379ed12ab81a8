// RUN: weft-opt %s -weft-annotate-sharding="dp=4" | FileCheck %s
// RUN: weft-opt %s -weft-annotate-sharding="dp=2 tp=2" | FileCheck %s --check-prefix=MESH2D
// RUN: weft-opt %s -weft-annotate-sharding | FileCheck %s --check-prefix=ONE

// The mesh is dp x tp; every input is split along its batch dim over "dp"
// (axis 0); parameters are left whole.
// CHECK: shard.grid @mesh(shape = 4x1) {weft.mesh_axes = ["dp", "tp"]}
// CHECK-LABEL: func.func @main
// CHECK-SAME: %{{.*}}: tensor<8x16xf32> {weft.name = "x", weft.shard = {dims = [array<i16: 0>, array<i16>], partial = array<i16>}}
// CHECK-SAME: %{{.*}}: tensor<8xi64> {weft.name = "labels", weft.shard = {dims = [array<i16: 0>], partial = array<i16>}}
// CHECK: weft.param "w" : tensor<16x4xf32>
// MESH2D: shard.grid @mesh(shape = 2x2) {weft.mesh_axes = ["dp", "tp"]}
// MESH2D: weft.shard = {dims = [array<i16: 0>, array<i16>], partial = array<i16>}
// With dp=1 nothing is split.
// ONE: shard.grid @mesh(shape = 1x1)
// ONE-NOT: weft.shard
func.func @main(%x: tensor<8x16xf32> {weft.name = "x"}, %l: tensor<8xi64> {weft.name = "labels"}) -> tensor<8x4xf32> {
  %w = weft.param "w" : tensor<16x4xf32>
  %0 = weft.matmul %x, %w : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}
