// RUN: weft-opt %s -split-input-file -verify-diagnostics
// One broken invariant of a backward op (WeftGradOps.td) per case.

func.func @scatter_add_updates(%idx: tensor<2xi64>, %u: tensor<3x4xf32>) {
  // expected-error @+1 {{updates must have the shape gathering 'tensor<2xi64>' along axis 0 from 'tensor<5x4xf32>' gives, got 'tensor<3x4xf32>'}}
  %0 = weft.scatter_add %idx, %u {axis = 0 : i64} : (tensor<2xi64>, tensor<3x4xf32>) -> tensor<5x4xf32>
  return
}

// -----

func.func @scatter_add_axis(%idx: tensor<2xi64>, %u: tensor<2x4xf32>) {
  // expected-error @+1 {{axis 2 is out of range [0, 2)}}
  %0 = weft.scatter_add %idx, %u {axis = 2 : i64} : (tensor<2xi64>, tensor<2x4xf32>) -> tensor<5x4xf32>
  return
}

// -----

func.func @conv_grad_input_shape(%dy: tensor<1x6x3x4xf32>, %w: tensor<6x2x3x2xf32>) {
  // expected-error @+1 {{gradient 'tensor<1x6x3x4xf32>' does not have the forward result's shape [1, 6, 2, 7] for input 'tensor<1x4x7x6xf32>'}}
  %0 = weft.conv_grad_input %dy, %w {dilations = array<i64: 2, 1>, group = 2 : i64, pads = array<i64: 1, 0, 0, 2>, strides = array<i64: 2, 1>} : (tensor<1x6x3x4xf32>, tensor<6x2x3x2xf32>) -> tensor<1x4x7x6xf32>
  return
}

// -----

func.func @conv_grad_weight_group(%x: tensor<1x4x5x5xf32>, %dy: tensor<1x6x3x3xf32>) {
  // expected-error @+1 {{weight 'tensor<6x2x3x3xf32>' does not fit input 'tensor<1x4x5x5xf32>' with group 1}}
  %0 = weft.conv_grad_weight %x, %dy {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x4x5x5xf32>, tensor<1x6x3x3xf32>) -> tensor<6x2x3x3xf32>
  return
}

// -----

func.func @max_pool_grad_shape(%x: tensor<1x2x8x8xf32>, %dy: tensor<1x2x3x3xf32>) {
  // expected-error @+2 {{grad must have the forward result's type 'tensor<1x2x4x4xf32>', got 'tensor<1x2x3x3xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.max_pool_grad %x, %dy {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x2x8x8xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x8x8xf32>
  return
}

// -----

func.func @avg_pool_grad_window(%dy: tensor<1x2x4x4xf32>) {
  // expected-error @+1 {{needs 2 kernel dims, strides and dilations and 4 pads, got 1, 2, 2 and 4}}
  %0 = weft.avg_pool_grad %dy {kernel_shape = array<i64: 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x6x6xf32>
  return
}

// -----

func.func @layer_norm_grad_scale(%x: tensor<2x3x8xf32>, %s: tensor<4xf32>, %dy: tensor<2x3x8xf32>) {
  // expected-error @+2 {{scale must hold the normalized shape (input dims from axis 2, 8 elements of 'f32'), got 'tensor<4xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %a, %b, %c = weft.layer_norm_grad %x, %s, %dy {axis = 2 : i64} : (tensor<2x3x8xf32>, tensor<4xf32>, tensor<2x3x8xf32>) -> (tensor<2x3x8xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @softmax_grad_axis(%y: tensor<2x3xf32>, %dy: tensor<2x3xf32>) {
  // expected-error @+2 {{axis 2 is out of range [0, 2) for output 'tensor<2x3xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.softmax_grad %y, %dy {axis = 2 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @softmax_cross_entropy_grad_loss(%s: tensor<5x4xf32>, %l: tensor<5xi64>, %g: tensor<5xf32>) {
  // expected-error @+2 {{loss_grad must have the forward result's type 'tensor<f32>', got 'tensor<5xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.softmax_cross_entropy_grad %s, %l, %g : (tensor<5x4xf32>, tensor<5xi64>, tensor<5xf32>) -> tensor<5x4xf32>
  return
}

// -----

func.func @slice_grad_window(%dy: tensor<3x3xf32>) {
  // expected-error @+1 {{dim 0 takes 3 elements from 1 by step 2, which leaves the input's [0, 5)}}
  %0 = weft.slice_grad %dy {starts = array<i64: 1, 5>, steps = array<i64: 2, -2>} : (tensor<3x3xf32>) -> tensor<5x6xf32>
  return
}
