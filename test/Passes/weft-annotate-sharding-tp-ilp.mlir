// RUN: weft-opt %s -weft-annotate-sharding="tp=2 tp-flop-seconds=1e-9 tp-byte-seconds=1e-12 tp-latency=1e-9" | FileCheck %s --check-prefix=CHEAP
// RUN: weft-opt %s -weft-annotate-sharding="tp=2 tp-flop-seconds=1e-9 tp-byte-seconds=1e-12 tp-latency=1e-9" -weft-partition | FileCheck %s --check-prefix=PART
// RUN: weft-opt %s -weft-annotate-sharding="tp=2 tp-flop-seconds=1e-9 tp-byte-seconds=1" | FileCheck %s --check-prefix=DEAR
// RUN: weft-opt %s -weft-annotate-sharding="tp=2 tp-flop-seconds=1e-9 tp-byte-seconds=1 tp-memory=1800" | FileCheck %s --check-prefix=TIGHT

// Tensor-parallel splits chosen by the integer program (same model as
// weft-annotate-sharding-tp.mlir). Weights: up 512 bytes, down 512, qkv
// 768, out 256, vocab 160; up.bias (64) is not a product's weight.
//
// Cheap collectives: every split that pays is taken, Megatron's pairs (the
// vocabulary projection's 5 classes do not split in 2, and a row split
// alone would gather the weight).
// CHEAP: weft.tp_plan = "2 column- and 2 row-parallel of 5 weights (integer program: {{.*}}, optimal
// CHEAP: weft.param "up" {weft.shard = {dims = [array<i16>, array<i16: 1>], partial = array<i16>}} : tensor<8x16xf32>
// CHEAP: weft.param "up.bias" {weft.shard = {dims = [array<i16: 1>], partial = array<i16>}} : tensor<16xf32>
// CHEAP: weft.param "down" {weft.shard = {dims = [array<i16: 1>, array<i16>], partial = array<i16>}} : tensor<16x8xf32>
// CHEAP: weft.param "qkv" {weft.shard = {dims = [array<i16>, array<i16: 1>], outer = array<i64: 1, 3>, partial = array<i16>}} : tensor<8x24xf32>
// CHEAP: weft.param "out" {weft.shard = {dims = [array<i16: 1>, array<i16>], partial = array<i16>}} : tensor<8x8xf32>
// CHEAP: weft.param "vocab" : tensor<8x5xf32>
// PART-COUNT-2: shard.all_reduce
// PART-NOT: shard.all_gather
//
// Dear collectives (a second per byte): a split saves nanoseconds of
// products and costs an all_reduce of hundreds of bytes, so nothing splits.
// DEAR: weft.tp_plan = "0 column- and 0 row-parallel of 5 weights
// DEAR-NOT: weft.shard
//
// Dear collectives and 1800 bytes for weights: 2208 - 1800 + 64 = 472
// bytes must go. Either pair (up with down, qkv with out) saves 512 bytes
// for one all_reduce of a 4x8 f32 result (128 s) and the same FLOPs, so
// the program splits exactly one pair, whichever.
// TIGHT: weft.tp_plan = "1 column- and 1 row-parallel of 5 weights (integer program: 128000.{{[0-9]+}} ms, optimal
// TIGHT: weft.param "vocab" : tensor<8x5xf32>

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
