// RUN: weft-opt %s -split-input-file -weft-partition -verify-diagnostics

// A parameter whole on every rank, added to rows whose split is strided
// (outer 6), would need a strided slice.
shard.grid @mesh(shape = 2x1) {weft.mesh_axes = ["dp", "tp"]}
func.func @main(%x: tensor<6x4x8xf32> {weft.shard = {dims = [array<i16>, array<i16: 0>, array<i16>], partial = array<i16>}}) -> tensor<24x8xf32> {
  %p = weft.param "p" : tensor<24x8xf32>
  %0 = weft.reshape %x : tensor<6x4x8xf32> to tensor<24x8xf32>
  // expected-error @+1 {{needs 'tensor<24x8xf32>' split as [[0] outer 6, []] but it is whole on every rank; strided slices are not supported yet}}
  %1 = weft.add %0, %p : (tensor<24x8xf32>, tensor<24x8xf32>) -> tensor<24x8xf32>
  return %1 : tensor<24x8xf32>
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

// -----

// A split outer factor needs a split rest and an outer of at least 2.
shard.grid @mesh(shape = 2x2) {weft.mesh_axes = ["dp", "tp"]}
func.func @main(%x: tensor<8x6xf32>) -> tensor<8x6xf32> {
  // expected-error @+1 {{has a malformed weft.shard attribute}}
  %w = weft.param "w" {weft.shard = {dims = [array<i16: 1>, array<i16>], outer_axes = [array<i16: 0>, array<i16>], partial = array<i16>}} : tensor<8x6xf32>
  %0 = weft.add %x, %w : (tensor<8x6xf32>, tensor<8x6xf32>) -> tensor<8x6xf32>
  return %0 : tensor<8x6xf32>
}
