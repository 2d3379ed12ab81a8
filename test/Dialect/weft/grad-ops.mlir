// RUN: weft-opt %s -split-input-file | weft-opt -split-input-file | FileCheck %s
// RUN: weft-opt %s -split-input-file -weft-lower-to-runtime | FileCheck %s --check-prefix=KERNEL

// The backward ops of WeftGradOps.td: they round-trip, and each lowers to its
// kernel with the attribute layout of KernelABI.h's "Backward kernels" (the
// descriptor ends with the attribute count and the attributes).

// CHECK-LABEL: func.func @main
// CHECK: weft.scatter_add %{{.*}}, %{{.*}} {axis = 0 : i64} : (tensor<2x3xi64>, tensor<2x3x4xf32>) -> tensor<5x4xf32>
// KERNEL: weftrt.launch "scatter_add"(%{{.*}}) {desc = array<i64: 3, 4, 2, 2, 3, 0, 3, 2, 3, 4, 0, 2, 5, 4, 1, 0>}
func.func @main(%idx: tensor<2x3xi64>, %u: tensor<2x3x4xf32>) -> tensor<5x4xf32> {
  %0 = weft.scatter_add %idx, %u {axis = 0 : i64} : (tensor<2x3xi64>, tensor<2x3x4xf32>) -> tensor<5x4xf32>
  return %0 : tensor<5x4xf32>
}

// -----

// group, strides[s], pads[2s], dilations[s].
// CHECK-LABEL: func.func @main
// CHECK: weft.conv_grad_input %{{.*}}, %{{.*}} {dilations = array<i64: 2, 1>, group = 2 : i64, pads = array<i64: 1, 0, 0, 2>, strides = array<i64: 2, 1>}
// KERNEL: weftrt.launch "conv_grad_input"(%{{.*}}) {desc = array<i64: 3, {{.*}}, 9, 2, 2, 1, 1, 0, 0, 2, 2, 1>}
func.func @main(%dy: tensor<1x6x2x7xf32>, %w: tensor<6x2x3x2xf32>) -> tensor<1x4x7x6xf32> {
  %0 = weft.conv_grad_input %dy, %w {dilations = array<i64: 2, 1>, group = 2 : i64, pads = array<i64: 1, 0, 0, 2>, strides = array<i64: 2, 1>} : (tensor<1x6x2x7xf32>, tensor<6x2x3x2xf32>) -> tensor<1x4x7x6xf32>
  return %0 : tensor<1x4x7x6xf32>
}

// -----

// CHECK-LABEL: func.func @main
// CHECK: weft.conv_grad_weight %{{.*}}, %{{.*}} {dilations = array<i64: 2, 1>, group = 2 : i64, pads = array<i64: 1, 0, 0, 2>, strides = array<i64: 2, 1>}
// KERNEL: weftrt.launch "conv_grad_weight"(%{{.*}}) {desc = array<i64: 3, {{.*}}, 9, 2, 2, 1, 1, 0, 0, 2, 2, 1>}
func.func @main(%x: tensor<1x4x7x6xf32>, %dy: tensor<1x6x2x7xf32>) -> tensor<6x2x3x2xf32> {
  %0 = weft.conv_grad_weight %x, %dy {dilations = array<i64: 2, 1>, group = 2 : i64, pads = array<i64: 1, 0, 0, 2>, strides = array<i64: 2, 1>} : (tensor<1x4x7x6xf32>, tensor<1x6x2x7xf32>) -> tensor<6x2x3x2xf32>
  return %0 : tensor<6x2x3x2xf32>
}

// -----

// kernel[s], strides[s], pads[2s], dilations[s]; ceil_mode shows in dy.
// CHECK-LABEL: func.func @main
// CHECK: weft.max_pool_grad %{{.*}}, %{{.*}} {ceil_mode = true, dilations = array<i64: 2, 2>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>}
// KERNEL: weftrt.launch "max_pool_grad"(%{{.*}}) {desc = array<i64: 3, {{.*}}, 10, 2, 2, 2, 2, 0, 0, 0, 0, 2, 2>}
func.func @main(%x: tensor<1x2x8x8xf32>, %dy: tensor<1x2x4x4xf32>) -> tensor<1x2x8x8xf32> {
  %0 = weft.max_pool_grad %x, %dy {ceil_mode = true, dilations = array<i64: 2, 2>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x2x8x8xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x8x8xf32>
  return %0 : tensor<1x2x8x8xf32>
}

// -----

// count_include_pad, kernel[s], strides[s], pads[2s].
// CHECK-LABEL: func.func @main
// CHECK: weft.avg_pool_grad %{{.*}} {ceil_mode = true, count_include_pad = true, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>}
// KERNEL: weftrt.launch "avg_pool_grad"(%{{.*}}) {desc = array<i64: 2, {{.*}}, 9, 1, 3, 3, 2, 2, 1, 1, 1, 1>}
func.func @main(%dy: tensor<1x2x4x4xf32>) -> tensor<1x2x6x6xf32> {
  %0 = weft.avg_pool_grad %dy {ceil_mode = true, count_include_pad = true, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x6x6xf32>
  return %0 : tensor<1x2x6x6xf32>
}

// -----

// axis, epsilon (the bits of 1e-3 as a double).
// CHECK-LABEL: func.func @main
// CHECK: %{{.*}}, %{{.*}}, %{{.*}} = weft.layer_norm_grad %{{.*}}, %{{.*}}, %{{.*}} {axis = 2 : i64, epsilon = 1.000000e-03 : f64} : (tensor<2x3x8xf32>, tensor<8xf32>, tensor<2x3x8xf32>) -> (tensor<2x3x8xf32>, tensor<8xf32>, tensor<8xf32>)
// KERNEL: weftrt.launch "layer_norm_grad"(%{{.*}}) {desc = array<i64: 6, {{.*}}, 2, 2, 4562254508917369340>}
func.func @main(%x: tensor<2x3x8xf32>, %s: tensor<8xf32>, %dy: tensor<2x3x8xf32>) -> (tensor<2x3x8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %dx, %ds, %db = weft.layer_norm_grad %x, %s, %dy {axis = 2 : i64, epsilon = 1.000000e-03 : f64} : (tensor<2x3x8xf32>, tensor<8xf32>, tensor<2x3x8xf32>) -> (tensor<2x3x8xf32>, tensor<8xf32>, tensor<8xf32>)
  return %dx, %ds, %db : tensor<2x3x8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// axis, log.
// CHECK-LABEL: func.func @main
// CHECK: weft.softmax_grad %{{.*}}, %{{.*}} {axis = 0 : i64, log = true}
// KERNEL: weftrt.launch "softmax_grad"(%{{.*}}) {desc = array<i64: 3, {{.*}}, 2, 0, 1>}
func.func @main(%y: tensor<2x3xf32>, %dy: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = weft.softmax_grad %y, %dy {axis = 0 : i64, log = true} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// reduction (sum = 2), has_ignore_index, ignore_index, has_weights; the
// operands in order scores, labels, weights, dloss.
// CHECK-LABEL: func.func @main
// CHECK: weft.softmax_cross_entropy_grad %[[S:.*]], %[[L:.*]] weights %[[W:.*]], %[[G:.*]] {ignore_index = -1 : i64, reduction = "sum"} : (tensor<5x4xf32>, tensor<5xi64>, tensor<4xf32>, tensor<f32>) -> tensor<5x4xf32>
// KERNEL: weftrt.launch "softmax_xent_grad"(%{{.*}}) {desc = array<i64: 5, 0, 2, 5, 4, 4, 1, 5, 0, 1, 4, 0, 0, {{.*}}, 4, 2, 1, -1, 1>}
func.func @main(%s: tensor<5x4xf32>, %l: tensor<5xi64>, %w: tensor<4xf32>, %g: tensor<f32>) -> tensor<5x4xf32> {
  %0 = weft.softmax_cross_entropy_grad %s, %l weights %w, %g {ignore_index = -1 : i64, reduction = "sum"} : (tensor<5x4xf32>, tensor<5xi64>, tensor<4xf32>, tensor<f32>) -> tensor<5x4xf32>
  return %0 : tensor<5x4xf32>
}

// -----

// Without weights or ignore_index; "mean" is the default (code 1).
// CHECK-LABEL: func.func @main
// CHECK: weft.softmax_cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}} : (tensor<3x4x2xf32>, tensor<3x2xi32>, tensor<f32>) -> tensor<3x4x2xf32>
// KERNEL: weftrt.launch "softmax_xent_grad"(%{{.*}}) {desc = array<i64: 4, {{.*}}, 4, 1, 0, 0, 0>}
func.func @main(%s: tensor<3x4x2xf32>, %l: tensor<3x2xi32>, %g: tensor<f32>) -> tensor<3x4x2xf32> {
  %0 = weft.softmax_cross_entropy_grad %s, %l, %g : (tensor<3x4x2xf32>, tensor<3x2xi32>, tensor<f32>) -> tensor<3x4x2xf32>
  return %0 : tensor<3x4x2xf32>
}

// -----

// bf16 scores with padding after 5 of the 8 entries: the gradient is bf16
// and the kernel gets `classes` as a fifth attribute.
// CHECK-LABEL: func.func @main
// CHECK: weft.softmax_cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}} {classes = 5 : i64} : (tensor<3x8xbf16>, tensor<3xi64>, tensor<f32>) -> tensor<3x8xbf16>
// KERNEL: weftrt.launch "softmax_xent_grad"(%{{.*}}) {desc = array<i64: 4, 2, 2, 3, 8, {{.*}}, 2, 2, 3, 8, 5, 1, 0, 0, 0, 5>}
func.func @main(%s: tensor<3x8xbf16>, %l: tensor<3xi64>, %g: tensor<f32>) -> tensor<3x8xbf16> {
  %0 = weft.softmax_cross_entropy_grad %s, %l, %g {classes = 5 : i64} : (tensor<3x8xbf16>, tensor<3xi64>, tensor<f32>) -> tensor<3x8xbf16>
  return %0 : tensor<3x8xbf16>
}

// -----

// starts[rank], steps[rank].
// CHECK-LABEL: func.func @main
// CHECK: weft.slice_grad %{{.*}} {starts = array<i64: 1, 5>, steps = array<i64: 2, -2>} : (tensor<2x3xf32>) -> tensor<5x6xf32>
// KERNEL: weftrt.launch "slice_grad"(%{{.*}}) {desc = array<i64: 2, 0, 2, 2, 3, 0, 2, 5, 6, 4, 1, 5, 2, -2>}
func.func @main(%dy: tensor<2x3xf32>) -> tensor<5x6xf32> {
  %0 = weft.slice_grad %dy {starts = array<i64: 1, 5>, steps = array<i64: 2, -2>} : (tensor<2x3xf32>) -> tensor<5x6xf32>
  return %0 : tensor<5x6xf32>
}
