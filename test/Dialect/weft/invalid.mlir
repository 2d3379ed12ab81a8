// RUN: weft-opt %s -split-input-file -verify-diagnostics
// One broken invariant per case. Errors found by shape inference are
// followed by MLIR's generic "failed to infer returned types".

//===----------------------------------------------------------------------===//
// Values from outside the graph
//===----------------------------------------------------------------------===//

func.func @param_dynamic() {
  // expected-error @+1 {{result must have a static shape, got 'tensor<?x3xf32>'}}
  %0 = weft.param "w" : tensor<?x3xf32>
  return
}

// -----

func.func @param_empty_name() {
  // expected-error @+1 {{name must not be empty}}
  %0 = weft.param "" : tensor<3xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

func.func @binary_element_types(%a: tensor<3xf32>, %b: tensor<3xi64>) {
  // expected-error @+2 {{'weft.add' op operands must have the same element type, got 'f32' and 'i64'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.add %a, %b : (tensor<3xf32>, tensor<3xi64>) -> tensor<3xf32>
  return
}

// -----

func.func @binary_no_broadcast(%a: tensor<2x3xf32>, %b: tensor<2xf32>) {
  // expected-error @+2 {{'weft.mul' op operand shapes [2, 3] and [2] do not broadcast}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.mul %a, %b : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @rem_no_broadcast(%a: tensor<2x3xi64>, %b: tensor<2xi64>) {
  // expected-error @+2 {{'weft.rem' op operand shapes [2, 3] and [2] do not broadcast}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.rem %a, %b : (tensor<2x3xi64>, tensor<2xi64>) -> tensor<2x3xi64>
  return
}

// -----

func.func @binary_wrong_result(%a: tensor<2x3xf32>, %b: tensor<3xf32>) {
  // expected-error @+2 {{'weft.sub' op inferred type(s) 'tensor<2x3xf32>' are incompatible with return type(s) of operation 'tensor<3xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.sub %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return
}

// -----

func.func @binary_dynamic(%a: tensor<?xf32>) {
  // expected-error @+2 {{'weft.add' op lhs must have a static shape, got 'tensor<?xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.add %a, %a : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  return
}

// -----

func.func @compare_element_types(%a: tensor<3xf32>, %b: tensor<3xf16>) {
  // expected-error @+2 {{'weft.less' op operands must have the same element type, got 'f32' and 'f16'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.less %a, %b : (tensor<3xf32>, tensor<3xf16>) -> tensor<3xi1>
  return
}

// -----

func.func @where_element_types(%c: tensor<3xi1>, %a: tensor<3xf32>, %b: tensor<3xi32>) {
  // expected-error @+2 {{'weft.where' op x and y must have the same element type, got 'f32' and 'i32'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.where %c, %a, %b : (tensor<3xi1>, tensor<3xf32>, tensor<3xi32>) -> tensor<3xf32>
  return
}

// -----

func.func @where_no_broadcast(%c: tensor<4xi1>, %a: tensor<3xf32>) {
  // expected-error @+2 {{'weft.where' op shapes [4], [3] and [3] of condition, x and y do not broadcast}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.where %c, %a, %a : (tensor<4xi1>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return
}

// -----

func.func @cast_shape(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{input and result must have the same shape, got 'tensor<2x3xf32>' and 'tensor<3x2xi64>'}}
  %0 = weft.cast %a : tensor<2x3xf32> to tensor<3x2xi64>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Linear algebra and convolution
//===----------------------------------------------------------------------===//

func.func @matmul_rank(%a: tensor<3xf32>, %b: tensor<3x4xf32>) {
  // expected-error @+2 {{'weft.matmul' op operands must have rank >= 2, got 'tensor<3xf32>' and 'tensor<3x4xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.matmul %a, %b : (tensor<3xf32>, tensor<3x4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @matmul_contracted(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+2 {{'weft.matmul' op contracted dims differ: lhs has 3 columns but rhs has 4 rows}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.matmul %a, %b : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  return
}

// -----

func.func @matmul_contracted_transposed(%a: tensor<2x3xf32>, %b: tensor<5x4xf32>) {
  // expected-error @+2 {{contracted dims differ: lhs has 2 columns (transposed) but rhs has 4 rows (transposed)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.matmul %a, %b {transpose_a = true, transpose_b = true} : (tensor<2x3xf32>, tensor<5x4xf32>) -> tensor<3x5xf32>
  return
}

// -----

func.func @matmul_batch(%a: tensor<2x2x3xf32>, %b: tensor<3x3x4xf32>) {
  // expected-error @+2 {{'weft.matmul' op batch dims [2] and [3] do not broadcast}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.matmul %a, %b : (tensor<2x2x3xf32>, tensor<3x3x4xf32>) -> tensor<2x2x4xf32>
  return
}

// -----

func.func @matmul_element_types(%a: tensor<2x3xf32>, %b: tensor<3x4xf16>) {
  // expected-error @+2 {{'weft.matmul' op operands must have the same element type, got 'f32' and 'f16'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.matmul %a, %b : (tensor<2x3xf32>, tensor<3x4xf16>) -> tensor<2x4xf32>
  return
}

// -----

func.func @conv_input_rank(%x: tensor<4x8xf32>, %w: tensor<6x4xf32>) {
  // expected-error @+2 {{'weft.conv' op input must have rank >= 3 (N, C, spatial dims), got 'tensor<4x8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.conv %x, %w {strides = array<i64>, pads = array<i64>, dilations = array<i64>} : (tensor<4x8xf32>, tensor<6x4xf32>) -> tensor<4x6xf32>
  return
}

// -----

func.func @conv_weight_rank(%x: tensor<1x4x8x8xf32>, %w: tensor<6x4x3xf32>) {
  // expected-error @+2 {{'weft.conv' op weight must have the input's rank 4 (M, C/group, kernel dims), got 'tensor<6x4x3xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x4x8x8xf32>, tensor<6x4x3xf32>) -> tensor<1x6x6x6xf32>
  return
}

// -----

func.func @conv_strides_length(%x: tensor<1x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) {
  // expected-error @+2 {{'weft.conv' op expected 2 strides (one per spatial dim), got 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.conv %x, %w {strides = array<i64: 1, 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<1x6x6x6xf32>
  return
}

// -----

func.func @conv_pads_length(%x: tensor<1x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) {
  // expected-error @+2 {{'weft.conv' op expected 4 pads (begin values then end values of the spatial dims), got 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<1x6x8x8xf32>
  return
}

// -----

func.func @conv_dilations_length(%x: tensor<1x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) {
  // expected-error @+2 {{'weft.conv' op expected 2 dilations (one per spatial dim), got 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1>} : (tensor<1x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<1x6x6x6xf32>
  return
}

// -----

func.func @conv_zero_stride(%x: tensor<1x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) {
  // expected-error @+2 {{'weft.conv' op strides must be >= 1, got 0 in spatial dim 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.conv %x, %w {strides = array<i64: 1, 0>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<1x6x6x6xf32>
  return
}

// -----

func.func @conv_negative_pad(%x: tensor<1x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) {
  // expected-error @+2 {{'weft.conv' op pads must be >= 0, got -1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, -1, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<1x6x6x6xf32>
  return
}

// -----

func.func @conv_window_too_large(%x: tensor<1x4x8x2xf32>, %w: tensor<6x4x3x3xf32>) {
  // expected-error @+2 {{'weft.conv' op window of 3 (dilation 1) does not fit spatial dim 1 of size 2 with pads 0 and 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x4x8x2xf32>, tensor<6x4x3x3xf32>) -> tensor<1x6x6x1xf32>
  return
}

// -----

func.func @conv_group_channels(%x: tensor<1x4x8x8xf32>, %w: tensor<6x2x3x3xf32>) {
  // expected-error @+1 {{'weft.conv' op group 3 must divide the input channels 4}}
  %0 = weft.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 3} : (tensor<1x4x8x8xf32>, tensor<6x2x3x3xf32>) -> tensor<1x6x6x6xf32>
  return
}

// -----

func.func @conv_weight_channels(%x: tensor<1x4x8x8xf32>, %w: tensor<6x3x3x3xf32>) {
  // expected-error @+1 {{'weft.conv' op weight has 3 input channels per group; with group 1 the input needs 3 channels, got 4}}
  %0 = weft.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x4x8x8xf32>, tensor<6x3x3x3xf32>) -> tensor<1x6x6x6xf32>
  return
}

// -----

func.func @conv_group_outputs(%x: tensor<1x4x8x8xf32>, %w: tensor<5x2x3x3xf32>) {
  // expected-error @+1 {{'weft.conv' op group 2 must divide the output channels (weight dim 0) 5}}
  %0 = weft.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 2} : (tensor<1x4x8x8xf32>, tensor<5x2x3x3xf32>) -> tensor<1x5x6x6xf32>
  return
}

// -----

func.func @conv_group_zero(%x: tensor<1x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) {
  // expected-error @+1 {{'weft.conv' op group must be >= 1, got 0}}
  %0 = weft.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 0} : (tensor<1x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<1x6x6x6xf32>
  return
}

// -----

func.func @conv_bias(%x: tensor<1x4x8x8xf32>, %w: tensor<6x4x3x3xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'weft.conv' op bias must have shape [M] = [6], got 'tensor<4xf32>'}}
  %0 = weft.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x4x8x8xf32>, tensor<6x4x3x3xf32>, tensor<4xf32>) -> tensor<1x6x6x6xf32>
  return
}

// -----

func.func @conv_weight_element(%x: tensor<1x4x8x8xf32>, %w: tensor<6x4x3x3xf16>) {
  // expected-error @+1 {{'weft.conv' op weight must have the input's element type 'f32', got 'f16'}}
  %0 = weft.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x4x8x8xf32>, tensor<6x4x3x3xf16>) -> tensor<1x6x6x6xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Pooling and normalization
//===----------------------------------------------------------------------===//

func.func @max_pool_kernel_length(%x: tensor<1x4x8x8xf32>) {
  // expected-error @+2 {{'weft.max_pool' op expected 2 kernel dims (one per spatial dim), got 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.max_pool %x {kernel_shape = array<i64: 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
  return
}

// -----

func.func @max_pool_dilations_length(%x: tensor<1x4x8x8xf32>) {
  // expected-error @+2 {{'weft.max_pool' op expected 2 dilations (one per spatial dim), got 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
  return
}

// -----

func.func @max_pool_zero_kernel(%x: tensor<1x4x8x8xf32>) {
  // expected-error @+2 {{'weft.max_pool' op kernel dims must be >= 1, got 0 in spatial dim 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.max_pool %x {kernel_shape = array<i64: 0, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
  return
}

// -----

func.func @max_pool_pad_covers_window(%x: tensor<1x4x8x8xf32>) {
  // expected-error @+2 {{'weft.max_pool' op pads must be smaller than the kernel, got pad 2 for kernel 2 in spatial dim 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 2>, dilations = array<i64: 1, 1>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x5xf32>
  return
}

// -----

func.func @max_pool_rank(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{'weft.max_pool' op input must have rank >= 3 (N, C, spatial dims), got 'tensor<4x8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.max_pool %x {kernel_shape = array<i64>, strides = array<i64>, pads = array<i64>, dilations = array<i64>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @avg_pool_pads_length(%x: tensor<1x4x8x8xf32>) {
  // expected-error @+2 {{'weft.avg_pool' op expected 4 pads (begin values then end values of the spatial dims), got 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.avg_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0>} : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
  return
}

// -----

func.func @avg_pool_ceil_mode_shape(%x: tensor<1x4x7x7xf32>) {
  // floor((7 - 2) / 2) + 1 = 3 without ceil_mode.
  // expected-error @+2 {{inferred type(s) 'tensor<1x4x3x3xf32>' are incompatible with return type(s) of operation 'tensor<1x4x4x4xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.avg_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x4x7x7xf32>) -> tensor<1x4x4x4xf32>
  return
}

// -----

func.func @batch_norm_rank(%x: tensor<4xf32>, %c: tensor<4xf32>) {
  // expected-error @+2 {{'weft.batch_norm' op input must have rank >= 2 (N, C, ...), got 'tensor<4xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.batch_norm %x, %c, %c, %c, %c : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @batch_norm_stats(%x: tensor<2x4x5xf32>, %c: tensor<4xf32>, %v: tensor<5xf32>) {
  // expected-error @+2 {{'weft.batch_norm' op variance must have shape [C] = [4], got 'tensor<5xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.batch_norm %x, %c, %c, %c, %v : (tensor<2x4x5xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<5xf32>) -> tensor<2x4x5xf32>
  return
}

// -----

func.func @batch_norm_element(%x: tensor<2x4x5xf16>, %c: tensor<4xf16>, %s: tensor<4xf32>) {
  // expected-error @+2 {{'weft.batch_norm' op scale must have the input's element type 'f16', got 'f32'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.batch_norm %x, %s, %c, %c, %c : (tensor<2x4x5xf16>, tensor<4xf32>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>) -> tensor<2x4x5xf16>
  return
}

// -----

func.func @layer_norm_axis(%x: tensor<2x5x8xf32>, %s: tensor<8xf32>) {
  // expected-error @+1 {{'weft.layer_norm' op axis 3 is out of range [0, 3)}}
  %0 = weft.layer_norm %x, %s {axis = 3 : i64} : (tensor<2x5x8xf32>, tensor<8xf32>) -> tensor<2x5x8xf32>
  return
}

// -----

func.func @layer_norm_scale(%x: tensor<2x5x8xf32>, %s: tensor<8xf32>) {
  // expected-error @+1 {{'weft.layer_norm' op scale must hold the normalized shape (input dims from axis 1, 40 elements), got 'tensor<8xf32>'}}
  %0 = weft.layer_norm %x, %s {axis = 1 : i64} : (tensor<2x5x8xf32>, tensor<8xf32>) -> tensor<2x5x8xf32>
  return
}

// -----

func.func @layer_norm_bias(%x: tensor<2x5x8xf32>, %s: tensor<8xf32>, %b: tensor<5xf32>) {
  // expected-error @+1 {{'weft.layer_norm' op bias must hold the normalized shape (input dims from axis 2, 8 elements), got 'tensor<5xf32>'}}
  %0 = weft.layer_norm %x, %s, %b {axis = 2 : i64} : (tensor<2x5x8xf32>, tensor<8xf32>, tensor<5xf32>) -> tensor<2x5x8xf32>
  return
}

// -----

// Only an f32 layer norm rounds its result, and only to bf16 or f16.
func.func @layer_norm_widened(%x: tensor<2x8xbf16>, %s: tensor<8xbf16>) {
  // expected-error @+2 {{'weft.layer_norm' op inferred type(s) 'tensor<2x8xbf16>' are incompatible with return type(s) of operation 'tensor<2x8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.layer_norm %x, %s {axis = 1 : i64} : (tensor<2x8xbf16>, tensor<8xbf16>) -> tensor<2x8xf32>
  return
}

// -----

func.func @layer_norm_narrowed_reshaped(%x: tensor<2x8xf32>, %s: tensor<8xf32>) {
  // expected-error @+2 {{'weft.layer_norm' op inferred type(s) 'tensor<2x8xf32>' are incompatible with return type(s) of operation 'tensor<16xbf16>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.layer_norm %x, %s {axis = 1 : i64} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<16xbf16>
  return
}

// -----

func.func @layer_norm_to_f64(%x: tensor<2x8xf32>, %s: tensor<8xf32>) {
  // expected-error @+2 {{'weft.layer_norm' op inferred type(s) 'tensor<2x8xf32>' are incompatible with return type(s) of operation 'tensor<2x8xf64>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.layer_norm %x, %s {axis = 1 : i64} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf64>
  return
}

// -----

// Only a bf16 sum changes type, and only to f32; the other reductions
// never do.
func.func @reduce_sum_narrowed(%x: tensor<2x8xf32>) {
  // expected-error @+2 {{'weft.reduce_sum' op inferred type(s) 'tensor<1x8xf32>' are incompatible with return type(s) of operation 'tensor<1x8xbf16>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.reduce_sum %x {axes = array<i64: 0>} : (tensor<2x8xf32>) -> tensor<1x8xbf16>
  return
}

// -----

func.func @reduce_max_widened(%x: tensor<2x8xbf16>) {
  // expected-error @+2 {{'weft.reduce_max' op inferred type(s) 'tensor<1x8xbf16>' are incompatible with return type(s) of operation 'tensor<1x8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.reduce_max %x {axes = array<i64: 0>} : (tensor<2x8xbf16>) -> tensor<1x8xf32>
  return
}

// -----

func.func @softmax_negative_axis(%x: tensor<2x5xf32>) {
  // expected-error @+1 {{'weft.softmax' op axis -1 is out of range [0, 2)}}
  %0 = weft.softmax %x {axis = -1 : i64} : tensor<2x5xf32>
  return
}

// -----

func.func @log_softmax_axis(%x: tensor<2x5xf32>) {
  // expected-error @+1 {{'weft.log_softmax' op axis 2 is out of range [0, 2)}}
  %0 = weft.log_softmax %x {axis = 2 : i64} : tensor<2x5xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

func.func @reduce_empty_axes(%x: tensor<2x5xf32>) {
  // expected-error @+2 {{'weft.reduce_sum' op axes must not be empty (list every axis to reduce them all)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.reduce_sum %x {axes = array<i64>} : (tensor<2x5xf32>) -> tensor<2x5xf32>
  return
}

// -----

func.func @reduce_axis_range(%x: tensor<2x5xf32>) {
  // expected-error @+2 {{'weft.reduce_mean' op axis 2 is out of range [0, 2) for input 'tensor<2x5xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.reduce_mean %x {axes = array<i64: 2>} : (tensor<2x5xf32>) -> tensor<2x5xf32>
  return
}

// -----

func.func @reduce_negative_axis(%x: tensor<2x5xf32>) {
  // expected-error @+2 {{'weft.reduce_max' op axis -1 is out of range [0, 2)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.reduce_max %x {axes = array<i64: -1>} : (tensor<2x5xf32>) -> tensor<2x1xf32>
  return
}

// -----

func.func @reduce_axes_order(%x: tensor<2x5x3xf32>) {
  // expected-error @+2 {{'weft.reduce_sum' op axes must be ascending and unique, got [2, 1]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.reduce_sum %x {axes = array<i64: 2, 1>} : (tensor<2x5x3xf32>) -> tensor<2x1x1xf32>
  return
}

// -----

func.func @reduce_axes_duplicate(%x: tensor<2x5x3xf32>) {
  // expected-error @+2 {{'weft.reduce_sum' op axes must be ascending and unique, got [1, 1]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.reduce_sum %x {axes = array<i64: 1, 1>} : (tensor<2x5x3xf32>) -> tensor<2x1x3xf32>
  return
}

// -----

func.func @reduce_keepdims_shape(%x: tensor<2x5xf32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<2xf32>' are incompatible with return type(s) of operation 'tensor<2x1xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.reduce_sum %x {axes = array<i64: 1>, keepdims = false} : (tensor<2x5xf32>) -> tensor<2x1xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

func.func @reshape_count(%x: tensor<2x5xf32>) {
  // expected-error @+1 {{'weft.reshape' op input and result must have the same number of elements, got 10 ('tensor<2x5xf32>') and 12 ('tensor<3x4xf32>')}}
  %0 = weft.reshape %x : tensor<2x5xf32> to tensor<3x4xf32>
  return
}

// -----

func.func @reshape_element(%x: tensor<2x5xf32>) {
  // expected-error @+1 {{'weft.reshape' op input and result must have the same element type, got 'f32' and 'i32'}}
  %0 = weft.reshape %x : tensor<2x5xf32> to tensor<10xi32>
  return
}

// -----

func.func @reshape_dynamic(%x: tensor<?x5xf32>) {
  // expected-error @+1 {{'weft.reshape' op input must have a static shape, got 'tensor<?x5xf32>'}}
  %0 = weft.reshape %x : tensor<?x5xf32> to tensor<10xf32>
  return
}

// -----

func.func @transpose_permutation(%x: tensor<2x5x3xf32>) {
  // expected-error @+2 {{'weft.transpose' op permutation [0, 2, 2] must hold each of 0..2 once (input rank 3)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.transpose %x {permutation = array<i64: 0, 2, 2>} : (tensor<2x5x3xf32>) -> tensor<2x3x3xf32>
  return
}

// -----

func.func @transpose_permutation_length(%x: tensor<2x5x3xf32>) {
  // expected-error @+2 {{'weft.transpose' op permutation [1, 0] must hold each of 0..2 once (input rank 3)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.transpose %x {permutation = array<i64: 1, 0>} : (tensor<2x5x3xf32>) -> tensor<5x2xf32>
  return
}

// -----

func.func @concat_axis(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{'weft.concat' op axis 2 is out of range [0, 2) for inputs of rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.concat %a, %a {axis = 2 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
  return
}

// -----

func.func @concat_dims(%a: tensor<2x3xf32>, %b: tensor<3x3xf32>) {
  // expected-error @+2 {{'weft.concat' op input #1 has size 3 in dim 0 but input #0 has 2 (only the axis 1 may differ)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.concat %a, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x6xf32>
  return
}

// -----

func.func @concat_rank(%a: tensor<2x3xf32>, %b: tensor<3xf32>) {
  // expected-error @+2 {{'weft.concat' op input #1 has rank 1 but input #0 has rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.concat %a, %b {axis = 0 : i64} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<5x3xf32>
  return
}

// -----

func.func @concat_element(%a: tensor<2xi64>, %b: tensor<2xi32>) {
  // expected-error @+2 {{'weft.concat' op input #1 has element type 'i32' but input #0 has 'i64'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.concat %a, %b {axis = 0 : i64} : (tensor<2xi64>, tensor<2xi32>) -> tensor<4xi64>
  return
}

// -----

func.func @concat_none() {
  // expected-error @+2 {{'weft.concat' op needs at least one input}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.concat {axis = 0 : i64} : () -> tensor<0xf32>
  return
}

// -----

func.func @split_sum(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{'weft.split' op pieces must add up to input dim 1 of size 8, got a total of 7}}
  %0:2 = weft.split %x {axis = 1 : i64} : (tensor<2x8xf32>) -> (tensor<2x3xf32>, tensor<2x4xf32>)
  return
}

// -----

func.func @split_axis(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{'weft.split' op axis 2 is out of range [0, 2)}}
  %0:2 = weft.split %x {axis = 2 : i64} : (tensor<2x8xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>)
  return
}

// -----

func.func @split_other_dim(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{'weft.split' op result #1 has size 3 in dim 0 but input has 2 (only the axis 1 may differ)}}
  %0:2 = weft.split %x {axis = 1 : i64} : (tensor<2x8xf32>) -> (tensor<2x4xf32>, tensor<3x4xf32>)
  return
}

// -----

func.func @split_element(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{'weft.split' op result #0 has element type 'f16' but input has 'f32'}}
  %0:2 = weft.split %x {axis = 1 : i64} : (tensor<2x8xf32>) -> (tensor<2x4xf16>, tensor<2x4xf32>)
  return
}

// -----

func.func @slice_lengths(%x: tensor<4x6xf32>) {
  // expected-error @+1 {{'weft.slice' op needs one start and one step per dim (2), got 1 starts and 2 steps}}
  %0 = weft.slice %x {starts = array<i64: 0>, steps = array<i64: 1, 1>} : (tensor<4x6xf32>) -> tensor<4x6xf32>
  return
}

// -----

func.func @slice_zero_step(%x: tensor<4x6xf32>) {
  // expected-error @+1 {{'weft.slice' op step of dim 1 must not be zero}}
  %0 = weft.slice %x {starts = array<i64: 0, 0>, steps = array<i64: 1, 0>} : (tensor<4x6xf32>) -> tensor<4x6xf32>
  return
}

// -----

func.func @slice_start(%x: tensor<4x6xf32>) {
  // expected-error @+1 {{'weft.slice' op start 6 of dim 1 must be in [0, 6)}}
  %0 = weft.slice %x {starts = array<i64: 0, 6>, steps = array<i64: 1, 1>} : (tensor<4x6xf32>) -> tensor<4x0xf32>
  return
}

// -----

func.func @slice_past_end(%x: tensor<4x6xf32>) {
  // expected-error @+1 {{'weft.slice' op dim 1 takes 3 elements from 2 by step 2, which leaves the input's [0, 6)}}
  %0 = weft.slice %x {starts = array<i64: 0, 2>, steps = array<i64: 1, 2>} : (tensor<4x6xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @slice_before_begin(%x: tensor<4x6xf32>) {
  // expected-error @+1 {{'weft.slice' op dim 0 takes 3 elements from 1 by step -1, which leaves the input's [0, 4)}}
  %0 = weft.slice %x {starts = array<i64: 1, 0>, steps = array<i64: -1, 1>} : (tensor<4x6xf32>) -> tensor<3x6xf32>
  return
}

// -----

func.func @slice_rank(%x: tensor<4x6xf32>) {
  // expected-error @+1 {{'weft.slice' op result must have the input's rank 2, got 'tensor<24xf32>'}}
  %0 = weft.slice %x {starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : (tensor<4x6xf32>) -> tensor<24xf32>
  return
}

// -----

func.func @gather_axis(%x: tensor<4x6xf32>, %i: tensor<2xi64>) {
  // expected-error @+2 {{'weft.gather' op axis 2 is out of range [0, 2) for data 'tensor<4x6xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.gather %x, %i {axis = 2 : i64} : (tensor<4x6xf32>, tensor<2xi64>) -> tensor<4x6xf32>
  return
}

// -----

func.func @gather_shape(%x: tensor<4x6xf32>, %i: tensor<2x3xi32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<4x2x3xf32>' are incompatible with return type(s) of operation 'tensor<4x6xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.gather %x, %i {axis = 1 : i64} : (tensor<4x6xf32>, tensor<2x3xi32>) -> tensor<4x6xf32>
  return
}

// -----

func.func @broadcast_to_shape(%x: tensor<3x2xf32>) {
  // expected-error @+1 {{'weft.broadcast_to' op input 'tensor<3x2xf32>' does not broadcast to result 'tensor<3x4xf32>'}}
  %0 = weft.broadcast_to %x : tensor<3x2xf32> to tensor<3x4xf32>
  return
}

// -----

func.func @broadcast_to_rank(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'weft.broadcast_to' op input 'tensor<2x3xf32>' does not broadcast to result 'tensor<3xf32>'}}
  %0 = weft.broadcast_to %x : tensor<2x3xf32> to tensor<3xf32>
  return
}

// -----

func.func @broadcast_to_element(%x: tensor<3xf32>) {
  // expected-error @+1 {{'weft.broadcast_to' op input and result must have the same element type, got 'f32' and 'f64'}}
  %0 = weft.broadcast_to %x : tensor<3xf32> to tensor<2x3xf64>
  return
}

// -----

func.func @topk_k(%x: tensor<2x4xf32>) {
  // expected-error @+2 {{'weft.topk' op k = 5 is outside [0, 4], the extent of axis 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %v, %i = weft.topk %x {axis = 1 : i64, k = 5 : i64} : tensor<2x4xf32> -> tensor<2x5xf32>, tensor<2x5xi64>
  return
}

// -----

func.func @topk_axis(%x: tensor<2x4xf32>) {
  // expected-error @+2 {{'weft.topk' op axis 2 is out of range [0, 2) for input 'tensor<2x4xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %v, %i = weft.topk %x {axis = 2 : i64, k = 1 : i64} : tensor<2x4xf32> -> tensor<2x1xf32>, tensor<2x1xi64>
  return
}

// -----

func.func @topk_bool(%x: tensor<2x4xi1>) {
  // expected-error @+2 {{'weft.topk' op input must hold numbers, got 'tensor<2x4xi1>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %v, %i = weft.topk %x {axis = 1 : i64, k = 1 : i64} : tensor<2x4xi1> -> tensor<2x1xi1>, tensor<2x1xi64>
  return
}

// -----

func.func @trilu_rank(%x: tensor<4xf32>) {
  // expected-error @+1 {{'weft.trilu' op input must have rank >= 2 (the last two dims are the matrices), got 'tensor<4xf32>'}}
  %0 = weft.trilu %x : tensor<4xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

func.func @sce_labels(%s: tensor<4x10x3xf32>, %l: tensor<4x10xi64>) {
  // expected-error @+2 {{'weft.softmax_cross_entropy' op labels must have the scores' shape without the class dim, [4, 3], got 'tensor<4x10xi64>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.softmax_cross_entropy %s, %l : (tensor<4x10x3xf32>, tensor<4x10xi64>) -> tensor<f32>
  return
}

// -----

func.func @sce_weights(%s: tensor<4x10xf32>, %l: tensor<4xi64>, %w: tensor<4xf32>) {
  // expected-error @+2 {{'weft.softmax_cross_entropy' op weights must have shape [classes] = [10], got 'tensor<4xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.softmax_cross_entropy %s, %l, %w : (tensor<4x10xf32>, tensor<4xi64>, tensor<4xf32>) -> tensor<f32>
  return
}

// -----

func.func @sce_classes(%s: tensor<4x10xf32>, %l: tensor<4xi64>) {
  // expected-error @+2 {{'weft.softmax_cross_entropy' op classes 11 must lie in [1, 10] (the scores' dim 1)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.softmax_cross_entropy %s, %l {classes = 11 : i64} : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
  return
}

// -----

// With `classes`, the weights hold one value per class, not per entry.
func.func @sce_classes_weights(%s: tensor<4x10xf32>, %l: tensor<4xi64>, %w: tensor<10xf32>) {
  // expected-error @+2 {{'weft.softmax_cross_entropy' op weights must have shape [classes] = [7], got 'tensor<10xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.softmax_cross_entropy %s, %l, %w {classes = 7 : i64} : (tensor<4x10xf32>, tensor<4xi64>, tensor<10xf32>) -> tensor<f32>
  return
}

// -----

func.func @sce_reduction(%s: tensor<4x10xf32>, %l: tensor<4xi64>) {
  // expected-error @+2 {{'weft.softmax_cross_entropy' op reduction must be "mean", "sum" or "none", got "avg"}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.softmax_cross_entropy %s, %l {reduction = "avg"} : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
  return
}

// -----

func.func @sce_scores_rank(%s: tensor<10xf32>, %l: tensor<i64>) {
  // expected-error @+2 {{'weft.softmax_cross_entropy' op scores must have rank >= 2 (N, C, d1..dk), got 'tensor<10xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.softmax_cross_entropy %s, %l : (tensor<10xf32>, tensor<i64>) -> tensor<f32>
  return
}

// -----

func.func @sce_none_shape(%s: tensor<4x10xf32>, %l: tensor<4xi64>) {
  // expected-error @+2 {{inferred type(s) 'tensor<4xf32>' are incompatible with return type(s) of operation 'tensor<f32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.softmax_cross_entropy %s, %l {reduction = "none"} : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
  return
}

// -----

func.func @dropout_ratio(%x: tensor<2x4xf32>, %s: tensor<i64>, %o: tensor<2xi64>) {
  // expected-error @+1 {{'weft.dropout' op ratio must be in [0, 1), got 1}}
  %y, %m = weft.dropout %x, %s, %o {global_shape = array<i64: 2, 4>, ratio = 1.0 : f64, seed = 0 : i64, stream = 0 : i64} : tensor<2x4xf32>, tensor<i64>, tensor<2xi64> -> tensor<2x4xf32>, tensor<2x4xi1>
  return
}

// -----

func.func @dropout_offsets(%x: tensor<2x4xf32>, %s: tensor<i64>, %o: tensor<3xi64>) {
  // expected-error @+1 {{'weft.dropout' op global_shape and offsets need one entry per dim of the input}}
  %y, %m = weft.dropout %x, %s, %o {global_shape = array<i64: 2, 4>, ratio = 0.5 : f64, seed = 0 : i64, stream = 0 : i64} : tensor<2x4xf32>, tensor<i64>, tensor<3xi64> -> tensor<2x4xf32>, tensor<2x4xi1>
  return
}

// -----

func.func @dropout_global(%x: tensor<2x4xf32>, %s: tensor<i64>, %o: tensor<2xi64>) {
  // expected-error @+1 {{'weft.dropout' op the input is larger than global_shape}}
  %y, %m = weft.dropout %x, %s, %o {global_shape = array<i64: 2, 3>, ratio = 0.5 : f64, seed = 0 : i64, stream = 0 : i64} : tensor<2x4xf32>, tensor<i64>, tensor<2xi64> -> tensor<2x4xf32>, tensor<2x4xi1>
  return
}

// -----

func.func @random_shape(%x: tensor<2x4xf32>, %s: tensor<i64>, %o: tensor<2xi64>) {
  // expected-error @+1 {{'weft.random' op output must have the shape of `like`}}
  %y = weft.random %x, %s, %o {a = 0.0 : f64, b = 1.0 : f64, distribution = "normal", global_shape = array<i64: 2, 4>, seed = 0 : i64, stream = 0 : i64} : tensor<2x4xf32>, tensor<i64>, tensor<2xi64> -> tensor<4x2xf32>
  return
}

// -----

func.func @random_distribution(%x: tensor<2x4xf32>, %s: tensor<i64>, %o: tensor<2xi64>) {
  // expected-error @+1 {{'weft.random' op distribution must be "uniform" or "normal", got "poisson"}}
  %y = weft.random %x, %s, %o {a = 0.0 : f64, b = 1.0 : f64, distribution = "poisson", global_shape = array<i64: 2, 4>, seed = 0 : i64, stream = 0 : i64} : tensor<2x4xf32>, tensor<i64>, tensor<2xi64> -> tensor<2x4xf32>
  return
}

// -----

func.func @random_scale(%x: tensor<2x4xf32>, %s: tensor<i64>, %o: tensor<2xi64>) {
  // expected-error @+1 {{'weft.random' op a normal distribution's scale (b) must not be negative, got -1}}
  %y = weft.random %x, %s, %o {a = 0.0 : f64, b = -1.0 : f64, distribution = "normal", global_shape = array<i64: 2, 4>, seed = 0 : i64, stream = 0 : i64} : tensor<2x4xf32>, tensor<i64>, tensor<2xi64> -> tensor<2x4xf32>
  return
}

// -----

func.func @random_global(%x: tensor<2x4xf32>, %s: tensor<i64>, %o: tensor<2xi64>) {
  // expected-error @+1 {{'weft.random' op the output is larger than global_shape}}
  %y = weft.random %x, %s, %o {a = 0.0 : f64, b = 1.0 : f64, distribution = "uniform", global_shape = array<i64: 2, 3>, seed = 0 : i64, stream = 0 : i64} : tensor<2x4xf32>, tensor<i64>, tensor<2xi64> -> tensor<2x4xf32>
  return
}

// -----

func.func @random_offsets(%x: tensor<2x4xf32>, %s: tensor<i64>, %o: tensor<3xi64>) {
  // expected-error @+1 {{'weft.random' op global_shape and offsets need one entry per dim of the output}}
  %y = weft.random %x, %s, %o {a = 0.0 : f64, b = 1.0 : f64, distribution = "uniform", global_shape = array<i64: 2, 4>, seed = 0 : i64, stream = 0 : i64} : tensor<2x4xf32>, tensor<i64>, tensor<3xi64> -> tensor<2x4xf32>
  return
}

// -----

func.func @random_infinite(%x: tensor<2x4xf32>, %s: tensor<i64>, %o: tensor<2xi64>) {
  // expected-error @+1 {{'weft.random' op a and b must be finite}}
  %y = weft.random %x, %s, %o {a = 0x7FF0000000000000 : f64, b = 1.0 : f64, distribution = "uniform", global_shape = array<i64: 2, 4>, seed = 0 : i64, stream = 0 : i64} : tensor<2x4xf32>, tensor<i64>, tensor<2xi64> -> tensor<2x4xf32>
  return
}
