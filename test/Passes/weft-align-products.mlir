// RUN: weft-opt %s -split-input-file -weft-align-products="min-dim=16" | FileCheck %s

// A bf16 product widened to f32: the rhs gets 7 zero columns (1001 -> 1008)
// and the real columns are sliced after the widening cast.
// CHECK-LABEL: func.func @widened
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xbf16>, %[[W:.*]]: tensor<8x1001xbf16>)
// CHECK-NEXT: %[[Z:.*]] = weft.constant dense<0.000000e+00> : tensor<8x7xbf16>
// CHECK-NEXT: %[[C:.*]] = weft.concat %[[W]], %[[Z]] {axis = 1 : i64} : (tensor<8x1001xbf16>, tensor<8x7xbf16>) -> tensor<8x1008xbf16>
// CHECK-NEXT: %[[P:.*]] = weft.matmul %[[X]], %[[C]] : (tensor<4x8xbf16>, tensor<8x1008xbf16>) -> tensor<4x1008xbf16>
// CHECK-NEXT: %[[F:.*]] = weft.cast %[[P]] : tensor<4x1008xbf16> to tensor<4x1008xf32>
// CHECK-NEXT: %[[S:.*]] = weft.slice %[[F]] {starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : (tensor<4x1008xf32>) -> tensor<4x1001xf32>
// CHECK-NEXT: return %[[S]]
func.func @widened(%x: tensor<4x8xbf16>, %w: tensor<8x1001xbf16>) -> tensor<4x1001xf32> {
  %0 = weft.matmul %x, %w : (tensor<4x8xbf16>, tensor<8x1001xbf16>) -> tensor<4x1001xbf16>
  %1 = weft.cast %0 : tensor<4x1001xbf16> to tensor<4x1001xf32>
  return %1 : tensor<4x1001xf32>
}

// -----

// transpose_b: the rhs's rows are the output dimension.
// CHECK-LABEL: func.func @transposed
// CHECK: %[[Z:.*]] = weft.constant dense<0.000000e+00> : tensor<3x8xf32>
// CHECK: weft.concat %{{.*}}, %[[Z]] {axis = 0 : i64} : (tensor<21x8xf32>, tensor<3x8xf32>) -> tensor<24x8xf32>
// CHECK: %[[P:.*]] = weft.matmul %{{.*}}, %{{.*}} {transpose_b = true} : (tensor<4x8xf32>, tensor<24x8xf32>) -> tensor<4x24xf32>
// CHECK: weft.slice %[[P]] {{.*}} -> tensor<4x21xf32>
func.func @transposed(%x: tensor<4x8xf32>, %w: tensor<21x8xf32>) -> tensor<4x21xf32> {
  %0 = weft.matmul %x, %w {transpose_b = true} : (tensor<4x8xf32>, tensor<21x8xf32>) -> tensor<4x21xf32>
  return %0 : tensor<4x21xf32>
}

// -----

// Left alone: an aligned output, one below min-dim, and a bf16 product read
// by something other than a widening cast (its slice's gradient would be
// bf16).
// CHECK-LABEL: func.func @alone
// CHECK-NOT: weft.concat
// CHECK-NOT: weft.slice
func.func @alone(%x: tensor<4x8xf32>, %a: tensor<8x24xf32>, %b: tensor<8x9xf32>, %xb: tensor<4x8xbf16>, %c: tensor<8x17xbf16>) -> (tensor<4x24xf32>, tensor<4x9xf32>, tensor<4x17xbf16>) {
  %0 = weft.matmul %x, %a : (tensor<4x8xf32>, tensor<8x24xf32>) -> tensor<4x24xf32>
  %1 = weft.matmul %x, %b : (tensor<4x8xf32>, tensor<8x9xf32>) -> tensor<4x9xf32>
  %2 = weft.matmul %xb, %c : (tensor<4x8xbf16>, tensor<8x17xbf16>) -> tensor<4x17xbf16>
  return %0, %1, %2 : tensor<4x24xf32>, tensor<4x9xf32>, tensor<4x17xbf16>
}

// -----

// The LM head's cross-entropy reads the padded bf16 logits itself: the
// widening cast, the slice back to 1001 classes and the reshape's f32 copy
// go, the `classes` attribute leaves the padding out, the loss stays f32.
// CHECK-LABEL: func.func @head
// CHECK: %[[P:.*]] = weft.matmul %{{.*}}, %{{.*}} : (tensor<2x4x8xbf16>, tensor<8x1008xbf16>) -> tensor<2x4x1008xbf16>
// CHECK-NEXT: %[[R:.*]] = weft.reshape %[[P]] : tensor<2x4x1008xbf16> to tensor<8x1008xbf16>
// CHECK-NEXT: %[[L:.*]] = weft.softmax_cross_entropy %[[R]], %{{.*}} {classes = 1001 : i64} : (tensor<8x1008xbf16>, tensor<8xi64>) -> tensor<f32>
// CHECK-NEXT: return %[[L]]
func.func @head(%x: tensor<2x4x8xbf16>, %w: tensor<8x1001xbf16>, %labels: tensor<8xi64>) -> tensor<f32> {
  %0 = weft.matmul %x, %w : (tensor<2x4x8xbf16>, tensor<8x1001xbf16>) -> tensor<2x4x1001xbf16>
  %1 = weft.cast %0 : tensor<2x4x1001xbf16> to tensor<2x4x1001xf32>
  %2 = weft.reshape %1 : tensor<2x4x1001xf32> to tensor<8x1001xf32>
  %3 = weft.softmax_cross_entropy %2, %labels : (tensor<8x1001xf32>, tensor<8xi64>) -> tensor<f32>
  return %3 : tensor<f32>
}

// -----

// An aligned vocabulary (nothing padded): the cross-entropy still reads the
// bf16 logits without the widening cast.
// CHECK-LABEL: func.func @aligned_head
// CHECK-NEXT: %[[P:.*]] = weft.matmul
// CHECK-NEXT: %[[L:.*]] = weft.softmax_cross_entropy %[[P]], %{{.*}} : (tensor<8x1024xbf16>, tensor<8xi64>) -> tensor<f32>
// CHECK-NEXT: return %[[L]]
func.func @aligned_head(%x: tensor<8x8xbf16>, %w: tensor<8x1024xbf16>, %labels: tensor<8xi64>) -> tensor<f32> {
  %0 = weft.matmul %x, %w : (tensor<8x8xbf16>, tensor<8x1024xbf16>) -> tensor<8x1024xbf16>
  %1 = weft.cast %0 : tensor<8x1024xbf16> to tensor<8x1024xf32>
  %2 = weft.softmax_cross_entropy %1, %labels : (tensor<8x1024xf32>, tensor<8xi64>) -> tensor<f32>
  return %2 : tensor<f32>
}

// -----

// Left alone: logits that something else reads too (the model returns
// them), and scores whose classes are not the last dim (rank 3).
// CHECK-LABEL: func.func @head_alone
// CHECK: weft.cast
// CHECK: weft.softmax_cross_entropy %{{.*}}, %{{.*}} : (tensor<8x1024xf32>, tensor<8xi64>) -> tensor<f32>
// CHECK: weft.softmax_cross_entropy %{{.*}}, %{{.*}} : (tensor<2x16x4xf32>, tensor<2x4xi64>) -> tensor<f32>
func.func @head_alone(%x: tensor<8x8xbf16>, %w: tensor<8x1024xbf16>, %labels: tensor<8xi64>, %s: tensor<2x16x4xbf16>, %l3: tensor<2x4xi64>) -> (tensor<f32>, tensor<8x1024xf32>, tensor<f32>) {
  %0 = weft.matmul %x, %w : (tensor<8x8xbf16>, tensor<8x1024xbf16>) -> tensor<8x1024xbf16>
  %1 = weft.cast %0 : tensor<8x1024xbf16> to tensor<8x1024xf32>
  %2 = weft.softmax_cross_entropy %1, %labels : (tensor<8x1024xf32>, tensor<8xi64>) -> tensor<f32>
  %3 = weft.cast %s : tensor<2x16x4xbf16> to tensor<2x16x4xf32>
  %4 = weft.softmax_cross_entropy %3, %l3 : (tensor<2x16x4xf32>, tensor<2x4xi64>) -> tensor<f32>
  return %2, %1, %4 : tensor<f32>, tensor<8x1024xf32>, tensor<f32>
}
