// RUN: weft-opt %s -weft-annotate-sharding="tp=2" | FileCheck %s
// RUN: weft-opt %s -weft-annotate-sharding="tp=2" -weft-partition | FileCheck %s --check-prefix=PART

// Tensor parallelism found by trial: the up projection is column-parallel
// (with its bias), the down projection row-parallel; the packed q/k/v
// projection is split in 3 strided blocks so each rank keeps whole heads of
// q, k and v; the vocabulary projection feeding a cross-entropy (which needs
// all classes) stays whole, as does everything after the row-parallel sum.
// CHECK-LABEL: func.func @main
// CHECK: weft.param "up" {weft.shard = {dims = [array<i16>, array<i16: 1>], partial = array<i16>}} : tensor<8x16xf32>
// CHECK: weft.param "up.bias" {weft.shard = {dims = [array<i16: 1>], partial = array<i16>}} : tensor<16xf32>
// CHECK: weft.param "down" {weft.shard = {dims = [array<i16: 1>, array<i16>], partial = array<i16>}} : tensor<16x8xf32>
// CHECK: weft.param "qkv" {weft.shard = {dims = [array<i16>, array<i16: 1>], outer = array<i64: 1, 3>, partial = array<i16>}} : tensor<8x24xf32>
// CHECK: weft.param "out" {weft.shard = {dims = [array<i16: 1>, array<i16>], partial = array<i16>}} : tensor<8x8xf32>
// CHECK: weft.param "vocab" : tensor<8x5xf32>
// Each rank's blocks: whole heads, one all_reduce after each row-parallel
// product.
// PART-LABEL: func.func @main
// PART: weft.matmul %{{.*}}, %{{.*}} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
// PART: %[[D:.*]] = weft.matmul %{{.*}}, %{{.*}} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
// PART: shard.all_reduce %[[D]] on @mesh grid_axes = [1]
// PART: weft.matmul %{{.*}}, %{{.*}} : (tensor<4x8xf32>, tensor<8x12xf32>) -> tensor<4x12xf32>
// PART: weft.slice %{{.*}} {starts = array<i64: 0, 0>, {{.*}}} : (tensor<4x12xf32>) -> tensor<4x4xf32>
// PART: weft.slice %{{.*}} {starts = array<i64: 0, 4>, {{.*}}} : (tensor<4x12xf32>) -> tensor<4x4xf32>
// PART: %[[O:.*]] = weft.matmul %{{.*}}, %{{.*}} : (tensor<4x4xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// PART: shard.all_reduce %[[O]] on @mesh grid_axes = [1]
// PART-NOT: shard.all_gather
func.func @main(%x: tensor<4x8xf32>, %labels: tensor<4xi64>) -> tensor<f32> {
  %up = weft.param "up" : tensor<8x16xf32>
  %upb = weft.param "up.bias" : tensor<16xf32>
  %down = weft.param "down" : tensor<16x8xf32>
  %qkv = weft.param "qkv" : tensor<8x24xf32>
  %out = weft.param "out" : tensor<8x8xf32>
  %vocab = weft.param "vocab" : tensor<8x5xf32>
  %0 = weft.matmul %x, %up : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %1 = weft.add %0, %upb : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %2 = weft.tanh %1 : tensor<4x16xf32>
  %3 = weft.matmul %2, %down : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %4 = weft.tanh %3 : tensor<4x8xf32>
  %5 = weft.matmul %4, %qkv : (tensor<4x8xf32>, tensor<8x24xf32>) -> tensor<4x24xf32>
  %q = weft.slice %5 {starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : (tensor<4x24xf32>) -> tensor<4x8xf32>
  %k = weft.slice %5 {starts = array<i64: 0, 8>, steps = array<i64: 1, 1>} : (tensor<4x24xf32>) -> tensor<4x8xf32>
  %6 = weft.mul %q, %k : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %7 = weft.matmul %6, %out : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %8 = weft.tanh %7 : tensor<4x8xf32>
  %9 = weft.matmul %8, %vocab : (tensor<4x8xf32>, tensor<8x5xf32>) -> tensor<4x5xf32>
  %10 = weft.softmax_cross_entropy %9, %labels : (tensor<4x5xf32>, tensor<4xi64>) -> tensor<f32>
  return %10 : tensor<f32>
}
