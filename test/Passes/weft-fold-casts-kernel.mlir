// RUN: weft-opt %s -split-input-file -weft-fold-casts -weft-lower-to-runtime | FileCheck %s
// RUN: weft-opt %s -split-input-file -weft-fold-casts=fold-norm-casts=false -weft-lower-to-runtime | FileCheck %s --check-prefix=OFF

// A layer norm that took its cast's type: one launch whose result is bf16
// (dtype code 2 in the desc, f32 is 0), and no cast launch.
// CHECK-LABEL: func.func @weft_model_run()
// CHECK: weftrt.launch "layer_norm"
// CHECK-SAME: desc = array<i64: 4, 0, 2, 4, 8, 0, 1, 8, 0, 1, 8, 2, 2, 4, 8, 3, 1,
// CHECK-NOT: weftrt.launch "cast"
// CHECK: weftrt.launch "matmul"
// OFF-LABEL: func.func @weft_model_run()
// OFF: weftrt.launch "layer_norm"
// OFF-SAME: desc = array<i64: 4, 0, 2, 4, 8, 0, 1, 8, 0, 1, 8, 0, 2, 4, 8, 3, 1,
// OFF: weftrt.launch "cast"
func.func @main(%x: tensor<4x8xf32>, %s: tensor<8xf32>, %b: tensor<8xf32>, %w: tensor<8x8xbf16>) -> tensor<4x8xbf16> {
  %0 = weft.layer_norm %x, %s, %b {axis = 1 : i64} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %1 = weft.cast %0 : tensor<4x8xf32> to tensor<4x8xbf16>
  %2 = weft.matmul %1, %w : (tensor<4x8xbf16>, tensor<8x8xbf16>) -> tensor<4x8xbf16>
  return %2 : tensor<4x8xbf16>
}

// -----

// A bias gradient's sum of a widened bf16 tensor: the reduce kernel reads
// the bf16 tensor (dtype 2 in its descriptor) and no cast runs. A widening
// read by something else too stays a cast.
// CHECK-LABEL: func.func @weft_model_run()
// CHECK: %[[X:.*]] = weftrt.input 0
// CHECK-NOT: weftrt.launch "cast"
// CHECK: weftrt.launch "reduce"(%[[X]], %{{.*}}) {desc = array<i64: 2, 2, 2, 6, 4, 0, 2, 1, 4,
// CHECK: %[[W:.*]] = weftrt.output 2
// CHECK: weftrt.launch "cast"(%[[X]], %[[W]])
// CHECK: weftrt.launch "reduce"(%[[W]], %{{.*}}) {desc = array<i64: 2, 0, 2, 6, 4, 0, 2, 1, 4,
func.func @main(%x: tensor<6x4xbf16> {weft.name = "x"}) -> (tensor<1x4xf32> {weft.name = "db"}, tensor<1x4xf32> {weft.name = "s"}, tensor<6x4xf32> {weft.name = "wide"}) {
  %w = weft.cast %x : tensor<6x4xbf16> to tensor<6x4xf32>
  %db = weft.reduce_sum %w {axes = array<i64: 0>} : (tensor<6x4xf32>) -> tensor<1x4xf32>
  %w2 = weft.cast %x : tensor<6x4xbf16> to tensor<6x4xf32>
  %s = weft.reduce_sum %w2 {axes = array<i64: 0>} : (tensor<6x4xf32>) -> tensor<1x4xf32>
  return %db, %s, %w2 : tensor<1x4xf32>, tensor<1x4xf32>, tensor<6x4xf32>
}
