// RUN: weft-opt %s -split-input-file -weft-partition -verify-diagnostics

// A parameter whole on every rank, combined elementwise with a split input
// of its full shape, would need a slice by mesh coordinate.
shard.grid @mesh(shape = 2x1) {weft.mesh_axes = ["dp", "tp"]}
func.func @main(%x: tensor<4x8xf32> {weft.shard = {dims = [array<i16: 0>, array<i16>], partial = array<i16>}}) -> tensor<4x8xf32> {
  %p = weft.param "p" : tensor<4x8xf32>
  // expected-error @+1 {{needs 'tensor<4x8xf32>' split as [[0], []] but it is whole on every rank; slicing by mesh coordinate is not supported yet}}
  %0 = weft.add %x, %p : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// A split that does not divide the dimension.
shard.grid @mesh(shape = 4x1) {weft.mesh_axes = ["dp", "tp"]}
func.func @main(%x: tensor<8x6xf32>) -> tensor<8x6xf32> {
  // expected-error @+1 {{cannot split 'tensor<6x6xf32>': dimension 0 of size 6 does not split into 4 equal blocks}}
  %p = weft.param "p" {weft.shard = {dims = [array<i16: 0>, array<i16>], partial = array<i16>}} : tensor<6x6xf32>
  return %x : tensor<8x6xf32>
}

// -----

shard.grid @mesh(shape = 2x1) {weft.mesh_axes = ["dp", "tp"]}
func.func @main(%x: tensor<8x6xf32>) -> tensor<8x6xf32> {
  // expected-error @+1 {{has a malformed weft.shard attribute}}
  %p = weft.param "p" {weft.shard = {dims = [array<i16: 0>]}} : tensor<6x6xf32>
  return %x : tensor<8x6xf32>
}

// -----

// expected-error @+1 {{the module has no device mesh (shard.grid) (run weft-annotate-sharding first)}}
module {
  func.func @main(%x: tensor<8x6xf32>) -> tensor<8x6xf32> {
    return %x : tensor<8x6xf32>
  }
}
