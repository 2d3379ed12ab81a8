// RUN: weft-opt %s -split-input-file -weft-annotate-sharding="tp=2 sequence-parallel=1" -verify-diagnostics
// RUN: not weft-opt %s -split-input-file -weft-annotate-sharding="tp=2 sequence-parallel=1" 2>/dev/null | FileCheck %s --check-prefix=MIXED

// An image has no sequence (its dim 1 is channels): a model whose inputs
// are all images has nothing for sequence parallelism to split.
// expected-error @+1 {{sequence parallelism splits the sequence (dim 1) of [batch, sequence] and [batch, sequence, features] inputs, and no input is one: input 'image' is 'tensor<2x3x8x8xf32>'; tensor parallelism alone splits this model}}
func.func @main(%x: tensor<2x3x8x8xf32> {weft.name = "image"}) -> tensor<2x3x8x8xf32> {
  return %x : tensor<2x3x8x8xf32>
}

// -----

// expected-error @+1 {{the sequence of input 'tokens' (5) does not split into tp=2 equal parts}}
func.func @main(%x: tensor<2x5xi64> {weft.name = "tokens"}) -> tensor<2x5xi64> {
  return %x : tensor<2x5xi64>
}

// -----

// Tokens and an image: the tokens' sequence is split, the image stays whole
// along its channels.
// MIXED: func.func @main(%{{.*}}: tensor<2x4xi64> {weft.name = "tokens", weft.shard = {dims = [array<i16>, array<i16: 1>], partial = array<i16>}}, %{{.*}}: tensor<2x3x8x8xf32> {weft.name = "image"})
func.func @main(%t: tensor<2x4xi64> {weft.name = "tokens"}, %x: tensor<2x3x8x8xf32> {weft.name = "image"}) -> tensor<2x3x8x8xf32> {
  return %x : tensor<2x3x8x8xf32>
}
