// RUN: weft-opt %s -weft-lower-to-runtime | FileCheck %s

// A concat or split whose pieces lie one after the other in the whole (all
// dims before the axis are 1) carries each piece's byte offset for
// weftrt-assign-buffers; one along a later axis of a whole whose leading
// dim is not 1 (strided pieces: ZeRO's [dp, k] blocks) does not.
// CHECK: weftrt.launch "concat"({{.*}}) {desc = {{.*}}, weftrt.piece_offsets = array<i64: 0, 16>}
// CHECK: weftrt.launch "split"({{.*}}) {desc = {{.*}}, weftrt.piece_offsets = array<i64: 0, 4>}
// CHECK: weftrt.launch "concat"({{.*}}) {desc = array<i64: 3, 0, 2, 2, 2, 0, 2, 2, 3, 0, 2, 2, 5, 1, 1>}
// CHECK-NOT: piece_offsets
func.func @main(%a: tensor<4xf32>, %b: tensor<1x2xf32>, %c: tensor<2x2xf32>, %d: tensor<2x3xf32>) -> (tensor<6xf32>, tensor<1x1xf32>, tensor<1x1xf32>, tensor<2x5xf32>) {
  %0 = weft.tanh %a : tensor<4xf32>
  %1 = weft.reshape %b : tensor<1x2xf32> to tensor<2xf32>
  %2 = weft.concat %0, %1 {axis = 0 : i64} : (tensor<4xf32>, tensor<2xf32>) -> tensor<6xf32>
  %3:2 = weft.split %b {axis = 1 : i64} : (tensor<1x2xf32>) -> (tensor<1x1xf32>, tensor<1x1xf32>)
  %4 = weft.concat %c, %d {axis = 1 : i64} : (tensor<2x2xf32>, tensor<2x3xf32>) -> tensor<2x5xf32>
  return %2, %3#0, %3#1, %4 : tensor<6xf32>, tensor<1x1xf32>, tensor<1x1xf32>, tensor<2x5xf32>
}
