// RUN: weft-opt %s -split-input-file -weft-partition -verify-diagnostics

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

// -----

// A split outer factor needs a split rest and an outer of at least 2.
shard.grid @mesh(shape = 2x2) {weft.mesh_axes = ["dp", "tp"]}
func.func @main(%x: tensor<8x6xf32>) -> tensor<8x6xf32> {
  // expected-error @+1 {{has a malformed weft.shard attribute}}
  %w = weft.param "w" {weft.shard = {dims = [array<i16: 1>, array<i16>], outer_axes = [array<i16: 0>, array<i16>], partial = array<i16>}} : tensor<8x6xf32>
  %0 = weft.add %x, %w : (tensor<8x6xf32>, tensor<8x6xf32>) -> tensor<8x6xf32>
  return %0 : tensor<8x6xf32>
}
