// RUN: weft-opt %s -weft-fuse-elementwise -weft-lower-to-runtime | FileCheck %s
// RUN: weft-opt %s -weft-fuse-elementwise=fold-norm-casts=false -weft-lower-to-runtime | FileCheck %s --check-prefix=OFF

// A layer norm that took its cast's type: one launch whose result is bf16
// (dtype code 2 in the desc, f32 is 0), and no cast launch.
// CHECK: weftrt.launch "layer_norm"
// CHECK-SAME: desc = array<i64: 4, 0, 2, 4, 8, 0, 1, 8, 0, 1, 8, 2, 2, 4, 8, 3, 1,
// CHECK-NOT: weftrt.launch "cast"
// CHECK: weftrt.launch "matmul"
// OFF: weftrt.launch "layer_norm"
// OFF-SAME: desc = array<i64: 4, 0, 2, 4, 8, 0, 1, 8, 0, 1, 8, 0, 2, 4, 8, 3, 1,
// OFF: weftrt.launch "cast"
func.func @main(%x: tensor<4x8xf32>, %s: tensor<8xf32>, %b: tensor<8xf32>, %w: tensor<8x8xbf16>) -> tensor<4x8xbf16> {
  %0 = weft.layer_norm %x, %s, %b {axis = 1 : i64} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %1 = weft.cast %0 : tensor<4x8xf32> to tensor<4x8xbf16>
  %2 = weft.matmul %1, %w : (tensor<4x8xbf16>, tensor<8x8xbf16>) -> tensor<4x8xbf16>
  return %2 : tensor<4x8xbf16>
}
