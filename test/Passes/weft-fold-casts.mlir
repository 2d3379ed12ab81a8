// RUN: weft-opt %s -split-input-file -weft-fold-casts | FileCheck %s
// RUN: weft-opt %s -split-input-file -weft-fold-casts=fold-norm-casts=false | FileCheck %s --check-prefix=OFF
// RUN: weft-opt %s -split-input-file -weft-fuse-elementwise -weft-fold-casts | FileCheck %s --check-prefix=FUSED

// Mixed precision's normalized input of a product: the layer norm writes
// the bf16 the cast made of it, and the cast goes (weft-fold-casts-kernel.mlir
// lowers it). Off, the layer norms keep their casts.
// CHECK-LABEL: func.func @norm_then_product
// CHECK: %[[N:.*]] = weft.layer_norm %arg0, %arg1, %arg2 {axis = 1 : i64} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xbf16>
// CHECK-NOT: weft.cast
// CHECK: weft.matmul %[[N]], %arg3
// OFF-LABEL: func.func @norm_then_product
// OFF: weft.layer_norm {{.*}} -> tensor<4x8xf32>
// OFF: weft.cast
func.func @norm_then_product(%x: tensor<4x8xf32>, %s: tensor<8xf32>, %b: tensor<8xf32>, %w: tensor<8x8xbf16>) -> tensor<4x8xbf16> {
  %0 = weft.layer_norm %x, %s, %b {axis = 1 : i64} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %1 = weft.cast %0 : tensor<4x8xf32> to tensor<4x8xbf16>
  %2 = weft.matmul %1, %w : (tensor<4x8xbf16>, tensor<8x8xbf16>) -> tensor<4x8xbf16>
  return %2 : tensor<4x8xbf16>
}

// -----

// A cast to f16 after a reshape: weft-fuse-elementwise (which weftc runs
// first) moves it above the reshape, and then it folds the same way; on
// its own this pass leaves it.
// CHECK-LABEL: func.func @through_reshape
// CHECK: weft.layer_norm {{.*}} -> tensor<2x3x8xf32>
// CHECK: weft.cast
// FUSED-LABEL: func.func @through_reshape
// FUSED: %[[N:.*]] = weft.layer_norm {{.*}} -> tensor<2x3x8xf16>
// FUSED-NEXT: %[[R:.*]] = weft.reshape %[[N]] : tensor<2x3x8xf16> to tensor<6x8xf16>
// FUSED-NOT: weft.cast
// FUSED: return %[[R]]
func.func @through_reshape(%x: tensor<2x3x8xf32>, %s: tensor<8xf32>) -> tensor<6x8xf16> {
  %0 = weft.layer_norm %x, %s {axis = 2 : i64} : (tensor<2x3x8xf32>, tensor<8xf32>) -> tensor<2x3x8xf32>
  %1 = weft.reshape %0 : tensor<2x3x8xf32> to tensor<6x8xf32>
  %2 = weft.cast %1 : tensor<6x8xf32> to tensor<6x8xf16>
  return %2 : tensor<6x8xf16>
}

// -----

// The f32 result has another reader: it is written anyway, and the cast
// stays.
// CHECK-LABEL: func.func @read_twice
// CHECK: %[[N:.*]] = weft.layer_norm {{.*}} -> tensor<4x8xf32>
// CHECK: weft.cast %[[N]] : tensor<4x8xf32> to tensor<4x8xbf16>
func.func @read_twice(%x: tensor<4x8xf32>, %s: tensor<8xf32>) -> (tensor<4x8xbf16>, tensor<4x8xf32>) {
  %0 = weft.layer_norm %x, %s {axis = 1 : i64} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %1 = weft.cast %0 : tensor<4x8xf32> to tensor<4x8xbf16>
  return %1, %0 : tensor<4x8xbf16>, tensor<4x8xf32>
}

// -----

// A cast in another pipeline stage or microbatch than its layer norm or
// its sum stays (the value crosses there in its own type).
// CHECK-LABEL: func.func @other_place
// CHECK: weft.layer_norm {{.*}} -> tensor<4x8xf32>
// CHECK: weft.cast
// CHECK: weft.layer_norm {{.*}} -> tensor<4x8xf32>
// CHECK: weft.cast
// CHECK: %[[W:.*]] = weft.cast %arg2 {weft.microbatch = 0 : i64} : tensor<4x8xbf16> to tensor<4x8xf32>
// CHECK: weft.reduce_sum %[[W]]
func.func @other_place(%x: tensor<4x8xf32>, %s: tensor<8xf32>, %g: tensor<4x8xbf16>) -> (tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<1x8xf32>) {
  %0 = weft.layer_norm %x, %s {axis = 1 : i64, weft.stage = 0 : i64} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %1 = weft.cast %0 {weft.stage = 1 : i64} : tensor<4x8xf32> to tensor<4x8xbf16>
  %2 = weft.layer_norm %x, %s {axis = 1 : i64, weft.microbatch = 0 : i64} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %3 = weft.cast %2 {weft.microbatch = 1 : i64} : tensor<4x8xf32> to tensor<4x8xbf16>
  %4 = weft.cast %g {weft.microbatch = 0 : i64} : tensor<4x8xbf16> to tensor<4x8xf32>
  %5 = weft.reduce_sum %4 {axes = array<i64: 0>, weft.microbatch = 1 : i64} : (tensor<4x8xf32>) -> tensor<1x8xf32>
  return %1, %3, %5 : tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<1x8xf32>
}

// -----

// A widening after a layer norm is not a rounding: it stays.
// CHECK-LABEL: func.func @widening
// CHECK: weft.layer_norm {{.*}} -> tensor<4x8xbf16>
// CHECK: weft.cast {{.*}} : tensor<4x8xbf16> to tensor<4x8xf32>
func.func @widening(%x: tensor<4x8xbf16>, %s: tensor<8xbf16>) -> tensor<4x8xf32> {
  %0 = weft.layer_norm %x, %s {axis = 1 : i64} : (tensor<4x8xbf16>, tensor<8xbf16>) -> tensor<4x8xbf16>
  %1 = weft.cast %0 : tensor<4x8xbf16> to tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

// A bias gradient's sum of a widened bf16 gradient reads the bf16 tensor
// itself, with fold-norm-casts off too. A widening read by something else
// as well, one from f16, and one read by another reduction stay.
// CHECK-LABEL: func.func @sums
// CHECK-NEXT: %[[DB:.*]] = weft.reduce_sum %arg0 {axes = array<i64: 0>} : (tensor<6x4xbf16>) -> tensor<1x4xf32>
// CHECK-NEXT: %[[W:.*]] = weft.cast %arg0 : tensor<6x4xbf16> to tensor<6x4xf32>
// CHECK-NEXT: weft.reduce_sum %[[W]]
// CHECK-NEXT: %[[H:.*]] = weft.cast %arg1 : tensor<6x4xf16> to tensor<6x4xf32>
// CHECK-NEXT: weft.reduce_sum %[[H]]
// CHECK-NEXT: %[[M:.*]] = weft.cast %arg0 : tensor<6x4xbf16> to tensor<6x4xf32>
// CHECK-NEXT: weft.reduce_max %[[M]]
// OFF-LABEL: func.func @sums
// OFF-NEXT: weft.reduce_sum %arg0 {axes = array<i64: 0>} : (tensor<6x4xbf16>) -> tensor<1x4xf32>
func.func @sums(%x: tensor<6x4xbf16>, %h: tensor<6x4xf16>) -> (tensor<1x4xf32>, tensor<1x4xf32>, tensor<6x4xf32>, tensor<1x4xf32>, tensor<1x4xf32>) {
  %w = weft.cast %x : tensor<6x4xbf16> to tensor<6x4xf32>
  %db = weft.reduce_sum %w {axes = array<i64: 0>} : (tensor<6x4xf32>) -> tensor<1x4xf32>
  %w2 = weft.cast %x : tensor<6x4xbf16> to tensor<6x4xf32>
  %s = weft.reduce_sum %w2 {axes = array<i64: 0>} : (tensor<6x4xf32>) -> tensor<1x4xf32>
  %hw = weft.cast %h : tensor<6x4xf16> to tensor<6x4xf32>
  %hs = weft.reduce_sum %hw {axes = array<i64: 0>} : (tensor<6x4xf32>) -> tensor<1x4xf32>
  %w3 = weft.cast %x : tensor<6x4xbf16> to tensor<6x4xf32>
  %m = weft.reduce_max %w3 {axes = array<i64: 0>} : (tensor<6x4xf32>) -> tensor<1x4xf32>
  return %db, %s, %w2, %hs, %m : tensor<1x4xf32>, tensor<1x4xf32>, tensor<6x4xf32>, tensor<1x4xf32>, tensor<1x4xf32>
}
