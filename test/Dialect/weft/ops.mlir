// RUN: weft-opt %s | weft-opt | FileCheck %s
// Round trip of every weft op in its custom assembly.

// CHECK-LABEL: func.func @values
func.func @values() -> (tensor<2xi64>, tensor<4x3xf32>, tensor<f32>) {
  // CHECK: %[[C:.*]] = weft.constant dense<[1, 2]> : tensor<2xi64>
  %c = weft.constant dense<[1, 2]> : tensor<2xi64>
  // CHECK: %[[P:.*]] = weft.param "fc.weight" : tensor<4x3xf32>
  %p = weft.param "fc.weight" : tensor<4x3xf32>
  // CHECK: weft.constant dense<1.500000e+00> : tensor<f32>
  %s = weft.constant dense<1.5> : tensor<f32>
  return %c, %p, %s : tensor<2xi64>, tensor<4x3xf32>, tensor<f32>
}

// CHECK-LABEL: func.func @unary
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>, %[[I:.*]]: tensor<4xi32>, %[[B:.*]]: tensor<4xi1>)
func.func @unary(%x: tensor<2x3xf32>, %i: tensor<4xi32>, %b: tensor<4xi1>) {
  // CHECK: weft.neg %[[X]] : tensor<2x3xf32>
  %0 = weft.neg %x : tensor<2x3xf32>
  // CHECK: weft.neg %[[I]] : tensor<4xi32>
  %1 = weft.neg %i : tensor<4xi32>
  // CHECK: weft.sqrt %[[X]] : tensor<2x3xf32>
  %2 = weft.sqrt %x : tensor<2x3xf32>
  // CHECK: weft.exp %[[X]] : tensor<2x3xf32>
  %3 = weft.exp %x : tensor<2x3xf32>
  // CHECK: weft.log %[[X]] : tensor<2x3xf32>
  %4 = weft.log %x : tensor<2x3xf32>
  // CHECK: weft.tanh %[[X]] : tensor<2x3xf32>
  %5 = weft.tanh %x : tensor<2x3xf32>
  // CHECK: weft.erf %[[X]] : tensor<2x3xf32>
  %6 = weft.erf %x : tensor<2x3xf32>
  // CHECK: weft.relu %[[I]] : tensor<4xi32>
  %7 = weft.relu %i : tensor<4xi32>
  // CHECK: weft.sigmoid %[[X]] : tensor<2x3xf32>
  %8 = weft.sigmoid %x : tensor<2x3xf32>
  // CHECK: weft.not %[[B]] : tensor<4xi1>
  %9 = weft.not %b : tensor<4xi1>
  // CHECK: weft.sin %[[X]] : tensor<2x3xf32>
  %10 = weft.sin %x : tensor<2x3xf32>
  // CHECK: weft.cos %[[X]] : tensor<2x3xf32>
  %11 = weft.cos %x : tensor<2x3xf32>
  // CHECK: weft.floor %[[X]] : tensor<2x3xf32>
  %12 = weft.floor %x : tensor<2x3xf32>
  // CHECK: weft.ceil %[[X]] : tensor<2x3xf32>
  %13 = weft.ceil %x : tensor<2x3xf32>
  // CHECK: weft.round %[[X]] : tensor<2x3xf32>
  %14 = weft.round %x : tensor<2x3xf32>
  // CHECK: weft.atan %[[X]] : tensor<2x3xf32>
  %15 = weft.atan %x : tensor<2x3xf32>
  return
}

// CHECK-LABEL: func.func @binary
// CHECK-SAME: (%[[A:.*]]: tensor<2x3xf32>, %[[V:.*]]: tensor<3xf32>, %[[I:.*]]: tensor<4xi64>, %[[B:.*]]: tensor<4xi1>)
func.func @binary(%a: tensor<2x3xf32>, %v: tensor<3xf32>, %i: tensor<4xi64>, %b: tensor<4xi1>) {
  // CHECK: weft.add %[[A]], %[[V]] : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %0 = weft.add %a, %v : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK: weft.sub %[[V]], %[[A]] : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = weft.sub %v, %a : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK: weft.mul %[[I]], %[[I]] : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  %2 = weft.mul %i, %i : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  // CHECK: weft.div %[[I]], %[[I]] : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  %3 = weft.div %i, %i : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  // CHECK: weft.pow %[[A]], %[[A]] : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %4 = weft.pow %a, %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK: weft.max %[[A]], %[[V]] : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %5 = weft.max %a, %v : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK: weft.min %[[A]], %[[V]] : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %6 = weft.min %a, %v : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK: weft.and %[[B]], %[[B]] : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  %7 = weft.and %b, %b : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  // CHECK: weft.or %[[B]], %[[B]] : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  %8 = weft.or %b, %b : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  // CHECK: weft.rem %[[A]], %[[V]] : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %9 = weft.rem %a, %v : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK: weft.rem %[[I]], %[[I]] : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  %10 = weft.rem %i, %i : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  return
}

// CHECK-LABEL: func.func @compare_and_select
// CHECK-SAME: (%[[A:.*]]: tensor<2x3xf32>, %[[V:.*]]: tensor<3xf32>, %[[C:.*]]: tensor<2x1xi1>)
func.func @compare_and_select(%a: tensor<2x3xf32>, %v: tensor<3xf32>, %c: tensor<2x1xi1>) {
  // CHECK: weft.equal %[[A]], %[[V]] : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %0 = weft.equal %a, %v : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  // CHECK: weft.less %[[A]], %[[V]] : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %1 = weft.less %a, %v : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  // CHECK: weft.greater %[[A]], %[[V]] : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %2 = weft.greater %a, %v : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  // CHECK: weft.less_equal %[[A]], %[[V]] : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %3 = weft.less_equal %a, %v : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  // CHECK: weft.greater_equal %[[A]], %[[V]] : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %4 = weft.greater_equal %a, %v : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  // CHECK: weft.where %[[C]], %[[A]], %[[V]] : (tensor<2x1xi1>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %5 = weft.where %c, %a, %v : (tensor<2x1xi1>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK: weft.cast %[[A]] : tensor<2x3xf32> to tensor<2x3xbf16>
  %6 = weft.cast %a : tensor<2x3xf32> to tensor<2x3xbf16>
  return
}

// CHECK-LABEL: func.func @linear_algebra
func.func @linear_algebra(%a: tensor<5x2x3xf32>, %b: tensor<4x3xf32>, %x: tensor<1x4x8x8xf32>, %w: tensor<6x2x3x3xf32>, %bias: tensor<6xf32>) {
  // CHECK: weft.matmul %{{.*}}, %{{.*}} {transpose_b = true} : (tensor<5x2x3xf32>, tensor<4x3xf32>) -> tensor<5x2x4xf32>
  %0 = weft.matmul %a, %b {transpose_b = true} : (tensor<5x2x3xf32>, tensor<4x3xf32>) -> tensor<5x2x4xf32>
  // CHECK: weft.matmul %{{.*}}, %{{.*}} {transpose_a = true} : (tensor<5x2x3xf32>, tensor<2x4xf32>) -> tensor<5x3x4xf32>
  %c = weft.param "c" : tensor<2x4xf32>
  %1 = weft.matmul %a, %c {transpose_a = true} : (tensor<5x2x3xf32>, tensor<2x4xf32>) -> tensor<5x3x4xf32>
  // CHECK: weft.conv %{{.*}}, %{{.*}}, %{{.*}} {dilations = array<i64: 1, 1>, group = 2 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x4x8x8xf32>, tensor<6x2x3x3xf32>, tensor<6xf32>) -> tensor<1x6x4x4xf32>
  %2 = weft.conv %x, %w, %bias {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 2} : (tensor<1x4x8x8xf32>, tensor<6x2x3x3xf32>, tensor<6xf32>) -> tensor<1x6x4x4xf32>
  // CHECK: weft.conv %{{.*}}, %{{.*}} {dilations = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<1x6x4x4xf32>
  %w1 = weft.param "w1" : tensor<6x4x3x3xf32>
  %3 = weft.conv %x, %w1 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 2, 2>} : (tensor<1x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<1x6x4x4xf32>
  return
}

// CHECK-LABEL: func.func @pool_and_norm
func.func @pool_and_norm(%x: tensor<1x4x7x7xf32>, %c: tensor<4xf32>, %t: tensor<2x5x8xf32>, %s: tensor<8xf32>) {
  // CHECK: weft.max_pool %{{.*}} {ceil_mode = true, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x4x7x7xf32>) -> tensor<1x4x4x4xf32>
  %0 = weft.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = true} : (tensor<1x4x7x7xf32>) -> tensor<1x4x4x4xf32>
  // CHECK: weft.avg_pool %{{.*}} {count_include_pad = true, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x4x7x7xf32>) -> tensor<1x4x4x4xf32>
  %1 = weft.avg_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, count_include_pad = true} : (tensor<1x4x7x7xf32>) -> tensor<1x4x4x4xf32>
  // CHECK: weft.batch_norm %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {epsilon = 1.000000e-03 : f64} : (tensor<1x4x7x7xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x7x7xf32>
  %2 = weft.batch_norm %x, %c, %c, %c, %c {epsilon = 1.0e-3 : f64} : (tensor<1x4x7x7xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x7x7xf32>
  // CHECK: weft.layer_norm %{{.*}}, %{{.*}}, %{{.*}} {axis = 2 : i64} : (tensor<2x5x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x5x8xf32>
  %3 = weft.layer_norm %t, %s, %s {axis = 2 : i64} : (tensor<2x5x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x5x8xf32>
  // CHECK: weft.layer_norm %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<2x5x8xf32>, tensor<40xf32>) -> tensor<2x5x8xf32>
  %ss = weft.param "ln" : tensor<40xf32>
  %4 = weft.layer_norm %t, %ss {axis = 1 : i64} : (tensor<2x5x8xf32>, tensor<40xf32>) -> tensor<2x5x8xf32>
  // An f32 layer norm may round its result to bf16 or f16 (a folded cast).
  // CHECK: weft.layer_norm %{{.*}}, %{{.*}} {axis = 2 : i64} : (tensor<2x5x8xf32>, tensor<8xf32>) -> tensor<2x5x8xbf16>
  %n16 = weft.layer_norm %t, %s {axis = 2 : i64} : (tensor<2x5x8xf32>, tensor<8xf32>) -> tensor<2x5x8xbf16>
  // CHECK: weft.layer_norm %{{.*}}, %{{.*}} {axis = 2 : i64} : (tensor<2x5x8xf32>, tensor<8xf32>) -> tensor<2x5x8xf16>
  %h16 = weft.layer_norm %t, %s {axis = 2 : i64} : (tensor<2x5x8xf32>, tensor<8xf32>) -> tensor<2x5x8xf16>
  // CHECK: weft.softmax %{{.*}} {axis = 2 : i64} : tensor<2x5x8xf32>
  %5 = weft.softmax %t {axis = 2 : i64} : tensor<2x5x8xf32>
  // CHECK: weft.log_softmax %{{.*}} {axis = 0 : i64} : tensor<2x5x8xf32>
  %6 = weft.log_softmax %t {axis = 0 : i64} : tensor<2x5x8xf32>
  return
}

// CHECK-LABEL: func.func @reductions
func.func @reductions(%t: tensor<2x5x8xf32>, %i: tensor<2x5xi64>) {
  // CHECK: weft.reduce_sum %{{.*}} {axes = array<i64: 1, 2>} : (tensor<2x5x8xf32>) -> tensor<2x1x1xf32>
  %0 = weft.reduce_sum %t {axes = array<i64: 1, 2>} : (tensor<2x5x8xf32>) -> tensor<2x1x1xf32>
  // CHECK: weft.reduce_mean %{{.*}} {axes = array<i64: 2>, keepdims = false} : (tensor<2x5x8xf32>) -> tensor<2x5xf32>
  %1 = weft.reduce_mean %t {axes = array<i64: 2>, keepdims = false} : (tensor<2x5x8xf32>) -> tensor<2x5xf32>
  // CHECK: weft.reduce_max %{{.*}} {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x5xi64>) -> tensor<i64>
  %2 = weft.reduce_max %i {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x5xi64>) -> tensor<i64>
  // A sum of bf16 may give f32 (a folded widening).
  // CHECK: weft.reduce_sum %{{.*}} {axes = array<i64: 0>} : (tensor<2x5xbf16>) -> tensor<1x5xf32>
  %h = weft.cast %i : tensor<2x5xi64> to tensor<2x5xbf16>
  %3 = weft.reduce_sum %h {axes = array<i64: 0>} : (tensor<2x5xbf16>) -> tensor<1x5xf32>
  return
}

// CHECK-LABEL: func.func @data_movement
func.func @data_movement(%t: tensor<2x5x8xf32>, %u: tensor<2x3x8xf32>, %idx: tensor<4xi64>, %r: tensor<3x1xi32>) {
  // CHECK: weft.reshape %{{.*}} : tensor<2x5x8xf32> to tensor<10x8xf32>
  %0 = weft.reshape %t : tensor<2x5x8xf32> to tensor<10x8xf32>
  // CHECK: weft.transpose %{{.*}} {permutation = array<i64: 2, 0, 1>} : (tensor<2x5x8xf32>) -> tensor<8x2x5xf32>
  %1 = weft.transpose %t {permutation = array<i64: 2, 0, 1>} : (tensor<2x5x8xf32>) -> tensor<8x2x5xf32>
  // CHECK: weft.concat %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<2x5x8xf32>, tensor<2x3x8xf32>) -> tensor<2x8x8xf32>
  %2 = weft.concat %t, %u {axis = 1 : i64} : (tensor<2x5x8xf32>, tensor<2x3x8xf32>) -> tensor<2x8x8xf32>
  // CHECK: weft.split %{{.*}} {axis = 2 : i64} : (tensor<2x5x8xf32>) -> (tensor<2x5x3xf32>, tensor<2x5x5xf32>)
  %3:2 = weft.split %t {axis = 2 : i64} : (tensor<2x5x8xf32>) -> (tensor<2x5x3xf32>, tensor<2x5x5xf32>)
  // CHECK: weft.slice %{{.*}} {starts = array<i64: 1, 4, 0>, steps = array<i64: 1, -2, 3>} : (tensor<2x5x8xf32>) -> tensor<1x3x3xf32>
  %4 = weft.slice %t {starts = array<i64: 1, 4, 0>, steps = array<i64: 1, -2, 3>} : (tensor<2x5x8xf32>) -> tensor<1x3x3xf32>
  // CHECK: weft.gather %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<2x5x8xf32>, tensor<4xi64>) -> tensor<2x4x8xf32>
  %5 = weft.gather %t, %idx {axis = 1 : i64} : (tensor<2x5x8xf32>, tensor<4xi64>) -> tensor<2x4x8xf32>
  // CHECK: weft.broadcast_to %{{.*}} : tensor<3x1xi32> to tensor<2x3x4xi32>
  %6 = weft.broadcast_to %r : tensor<3x1xi32> to tensor<2x3x4xi32>
  // CHECK: weft.trilu %{{.*}} {k = 1 : i64, upper = false} : tensor<2x5x8xf32>
  %7 = weft.trilu %t {upper = false, k = 1} : tensor<2x5x8xf32>
  // CHECK: weft.topk %{{.*}} {axis = 2 : i64, k = 3 : i64, largest = false} : tensor<2x5x8xf32> -> tensor<2x5x3xf32>, tensor<2x5x3xi64>
  %v, %i = weft.topk %t {axis = 2 : i64, k = 3 : i64, largest = false} : tensor<2x5x8xf32> -> tensor<2x5x3xf32>, tensor<2x5x3xi64>
  return
}

// CHECK-LABEL: func.func @dropout
func.func @dropout(%x: tensor<4x6xf32>, %step: tensor<i64>, %off: tensor<2xi64>) {
  // CHECK: weft.dropout %{{.*}}, %{{.*}}, %{{.*}} {global_shape = array<i64: 8, 6>, ratio = 1.000000e-01 : f64, seed = 3 : i64, stream = 2 : i64} : tensor<4x6xf32>, tensor<i64>, tensor<2xi64> -> tensor<4x6xf32>, tensor<4x6xi1>
  %y, %m = weft.dropout %x, %step, %off {global_shape = array<i64: 8, 6>, ratio = 0.1 : f64, seed = 3 : i64, stream = 2 : i64} : tensor<4x6xf32>, tensor<i64>, tensor<2xi64> -> tensor<4x6xf32>, tensor<4x6xi1>
  return
}

// CHECK-LABEL: func.func @random
func.func @random(%x: tensor<4x6xi64>, %step: tensor<i64>, %off: tensor<2xi64>) {
  // CHECK: weft.random %{{.*}}, %{{.*}}, %{{.*}} {a = 1.000000e+00 : f64, b = 2.000000e+00 : f64, distribution = "uniform", global_shape = array<i64: 8, 6>, seed = 3 : i64, stream = 2 : i64} : tensor<4x6xi64>, tensor<i64>, tensor<2xi64> -> tensor<4x6xf32>
  %y = weft.random %x, %step, %off {a = 1.0 : f64, b = 2.0 : f64, distribution = "uniform", global_shape = array<i64: 8, 6>, seed = 3 : i64, stream = 2 : i64} : tensor<4x6xi64>, tensor<i64>, tensor<2xi64> -> tensor<4x6xf32>
  return
}

// CHECK-LABEL: func.func @losses
func.func @losses(%scores: tensor<4x10x3xf32>, %labels: tensor<4x3xi64>, %w: tensor<10xf32>) {
  // CHECK: weft.softmax_cross_entropy %{{.*}}, %{{.*}} : (tensor<4x10x3xf32>, tensor<4x3xi64>) -> tensor<f32>
  %0 = weft.softmax_cross_entropy %scores, %labels : (tensor<4x10x3xf32>, tensor<4x3xi64>) -> tensor<f32>
  // CHECK: weft.softmax_cross_entropy %{{.*}}, %{{.*}}, %{{.*}} {ignore_index = -100 : i64, reduction = "none"} : (tensor<4x10x3xf32>, tensor<4x3xi64>, tensor<10xf32>) -> tensor<4x3xf32>
  %1 = weft.softmax_cross_entropy %scores, %labels, %w {reduction = "none", ignore_index = -100} : (tensor<4x10x3xf32>, tensor<4x3xi64>, tensor<10xf32>) -> tensor<4x3xf32>
  // CHECK: weft.softmax_cross_entropy %{{.*}}, %{{.*}} {reduction = "sum"} : (tensor<4x10x3xf32>, tensor<4x3xi64>) -> tensor<f32>
  %2 = weft.softmax_cross_entropy %scores, %labels {reduction = "sum"} : (tensor<4x10x3xf32>, tensor<4x3xi64>) -> tensor<f32>
  return
}
