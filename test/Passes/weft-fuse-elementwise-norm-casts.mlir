// RUN: weft-opt %s -split-input-file -weft-fuse-elementwise | FileCheck %s
// RUN: weft-opt %s -split-input-file -weft-fuse-elementwise=fold-norm-casts=false | FileCheck %s --check-prefix=OFF

// Mixed precision's normalized input of a product: the layer norm writes
// the bf16 the cast made of it, and the cast goes
// (weft-fuse-elementwise-norm-casts-kernel.mlir lowers it).
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

// The cast to f16 after a reshape moves above the reshape first, then
// folds the same way.
// CHECK-LABEL: func.func @through_reshape
// CHECK: %[[N:.*]] = weft.layer_norm {{.*}} -> tensor<2x3x8xf16>
// CHECK-NEXT: %[[R:.*]] = weft.reshape %[[N]] : tensor<2x3x8xf16> to tensor<6x8xf16>
// CHECK-NOT: weft.cast
// CHECK: return %[[R]]
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

// A cast in another pipeline stage or microbatch than the norm stays (the
// value crosses there in f32).
// CHECK-LABEL: func.func @other_place
// CHECK: weft.layer_norm {{.*}} -> tensor<4x8xf32>
// CHECK: weft.cast
// CHECK: weft.layer_norm {{.*}} -> tensor<4x8xf32>
// CHECK: weft.cast
func.func @other_place(%x: tensor<4x8xf32>, %s: tensor<8xf32>) -> (tensor<4x8xbf16>, tensor<4x8xbf16>) {
  %0 = weft.layer_norm %x, %s {axis = 1 : i64, weft.stage = 0 : i64} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %1 = weft.cast %0 {weft.stage = 1 : i64} : tensor<4x8xf32> to tensor<4x8xbf16>
  %2 = weft.layer_norm %x, %s {axis = 1 : i64, weft.microbatch = 0 : i64} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %3 = weft.cast %2 {weft.microbatch = 1 : i64} : tensor<4x8xf32> to tensor<4x8xbf16>
  return %1, %3 : tensor<4x8xbf16>, tensor<4x8xbf16>
}

// -----

// A widening cast is not a rounding: it stays.
// CHECK-LABEL: func.func @widening
// CHECK: weft.layer_norm {{.*}} -> tensor<4x8xbf16>
// CHECK: weft.cast {{.*}} : tensor<4x8xbf16> to tensor<4x8xf32>
func.func @widening(%x: tensor<4x8xbf16>, %s: tensor<8xbf16>) -> tensor<4x8xf32> {
  %0 = weft.layer_norm %x, %s {axis = 1 : i64} : (tensor<4x8xbf16>, tensor<8xbf16>) -> tensor<4x8xbf16>
  %1 = weft.cast %0 : tensor<4x8xbf16> to tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}
