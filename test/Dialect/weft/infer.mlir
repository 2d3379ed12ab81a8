// RUN: weft-opt %s -split-input-file -verify-diagnostics
// Shape inference: each case gives a deliberately wrong result type, so the
// verifier's message shows the type inference computed. The last cases are
// well-typed edge cases that must verify silently.

func.func @broadcast_ranks(%a: tensor<2x1x3xf32>, %b: tensor<4x1xf32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<2x4x3xf32>' are incompatible}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.add %a, %b : (tensor<2x1x3xf32>, tensor<4x1xf32>) -> tensor<2x1x3xf32>
  return
}

// -----

func.func @broadcast_scalar(%a: tensor<i64>, %b: tensor<3xi64>) {
  // expected-error @+2 {{inferred type(s) 'tensor<3xi64>' are incompatible}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.div %a, %b : (tensor<i64>, tensor<3xi64>) -> tensor<i64>
  return
}

// -----

func.func @compare_is_i1(%a: tensor<2x3xf32>, %b: tensor<3xf32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<2x3xi1>' are incompatible with return type(s) of operation 'tensor<3xi1>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.greater_equal %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<3xi1>
  return
}

// -----

func.func @where_three_way(%c: tensor<2x1x1xi1>, %x: tensor<3x1xi64>, %y: tensor<4xi64>) {
  // expected-error @+2 {{inferred type(s) 'tensor<2x3x4xi64>' are incompatible}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.where %c, %x, %y : (tensor<2x1x1xi1>, tensor<3x1xi64>, tensor<4xi64>) -> tensor<3x4xi64>
  return
}

// -----

func.func @matmul_batch_broadcast(%a: tensor<1x5x2x3xf32>, %b: tensor<7x1x3x4xf32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<7x5x2x4xf32>' are incompatible}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.matmul %a, %b : (tensor<1x5x2x3xf32>, tensor<7x1x3x4xf32>) -> tensor<5x2x4xf32>
  return
}

// -----

func.func @matmul_transposed(%a: tensor<3x2xf16>, %b: tensor<4x3xf16>) {
  // expected-error @+2 {{inferred type(s) 'tensor<2x4xf16>' are incompatible}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.matmul %a, %b {transpose_a = true, transpose_b = true} : (tensor<3x2xf16>, tensor<4x3xf16>) -> tensor<3x3xf16>
  return
}

// -----

func.func @matmul_rank_mismatch(%a: tensor<2x3xf32>, %b: tensor<6x3x4xf32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<6x2x4xf32>' are incompatible}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.matmul %a, %b : (tensor<2x3xf32>, tensor<6x3x4xf32>) -> tensor<2x4xf32>
  return
}

// -----

// H: floor((32 + 1 + 2 - 2 * (5 - 1) - 1) / 2) + 1 = 14
// W: floor((32 - 1 * (5 - 1) - 1) / 3) + 1 = 10
func.func @conv_2d(%x: tensor<1x3x32x32xf32>, %w: tensor<16x3x5x5xf32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<1x16x14x10xf32>' are incompatible}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.conv %x, %w {strides = array<i64: 2, 3>, pads = array<i64: 1, 0, 2, 0>, dilations = array<i64: 2, 1>} : (tensor<1x3x32x32xf32>, tensor<16x3x5x5xf32>) -> tensor<1x16x32x32xf32>
  return
}

// -----

func.func @conv_1d_grouped(%x: tensor<2x4x10xf32>, %w: tensor<8x2x3xf32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<2x8x8xf32>' are incompatible}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.conv %x, %w {strides = array<i64: 1>, pads = array<i64: 0, 0>, dilations = array<i64: 1>, group = 2} : (tensor<2x4x10xf32>, tensor<8x2x3xf32>) -> tensor<2x8x10xf32>
  return
}

// -----

// ceil((6 + 2 - 3) / 2) + 1 = 4; the last window starts at 6 < 6 + 1.
func.func @max_pool_ceil(%x: tensor<1x1x6x6xf32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<1x1x4x4xf32>' are incompatible}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.max_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, ceil_mode = true} : (tensor<1x1x6x6xf32>) -> tensor<1x1x3x3xf32>
  return
}

// -----

// ceil((4 + 1 - 2) / 2) + 1 = 3, but the third window would start at
// 4 >= 4 + 0, inside the end padding only: dropped, 2 remain.
func.func @max_pool_ceil_drops_last(%x: tensor<1x1x4x4xf32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<1x1x2x2xf32>' are incompatible}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 1, 1>, dilations = array<i64: 1, 1>, ceil_mode = true} : (tensor<1x1x4x4xf32>) -> tensor<1x1x3x3xf32>
  return
}

// -----

func.func @max_pool_dilated(%x: tensor<1x2x10xf32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<1x2x6xf32>' are incompatible}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.max_pool %x {kernel_shape = array<i64: 3>, strides = array<i64: 1>, pads = array<i64: 0, 0>, dilations = array<i64: 2>} : (tensor<1x2x10xf32>) -> tensor<1x2x8xf32>
  return
}

// -----

// ceil((8 - 3) / 2) + 1 = 4 with ceil_mode.
func.func @avg_pool_ceil(%x: tensor<1x2x8x8xf32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<1x2x4x4xf32>' are incompatible}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.avg_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, ceil_mode = true} : (tensor<1x2x8x8xf32>) -> tensor<1x2x3x3xf32>
  return
}

// -----

func.func @batch_norm_same(%x: tensor<2x4x5xf32>, %c: tensor<4xf32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<2x4x5xf32>' are incompatible}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.batch_norm %x, %c, %c, %c, %c : (tensor<2x4x5xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return
}

// -----

// The input's type, or its shape in bf16/f16 (a folded cast): not another
// shape.
func.func @layer_norm_same(%x: tensor<2x5x8xf32>, %s: tensor<8xf32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<2x5x8xf32>' are incompatible}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.layer_norm %x, %s {axis = 2 : i64} : (tensor<2x5x8xf32>, tensor<8xf32>) -> tensor<2x5x4xf16>
  return
}

// -----

func.func @reduce_drop_dims(%x: tensor<2x5x3xf32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<5xf32>' are incompatible}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.reduce_mean %x {axes = array<i64: 0, 2>, keepdims = false} : (tensor<2x5x3xf32>) -> tensor<1x5x1xf32>
  return
}

// -----

func.func @reduce_keep_dims(%x: tensor<2x5x3xi32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<1x5x1xi32>' are incompatible}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.reduce_sum %x {axes = array<i64: 0, 2>} : (tensor<2x5x3xi32>) -> tensor<5xi32>
  return
}

// -----

func.func @reduce_to_scalar(%x: tensor<2x5xi64>) {
  // expected-error @+2 {{inferred type(s) 'tensor<i64>' are incompatible}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.reduce_max %x {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x5xi64>) -> tensor<1xi64>
  return
}

// -----

func.func @transpose_shape(%x: tensor<2x5x3xf32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<5x3x2xf32>' are incompatible}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.transpose %x {permutation = array<i64: 1, 2, 0>} : (tensor<2x5x3xf32>) -> tensor<3x2x5xf32>
  return
}

// -----

func.func @concat_three(%a: tensor<1x3xi64>, %b: tensor<2x3xi64>, %c: tensor<4x3xi64>) {
  // expected-error @+2 {{inferred type(s) 'tensor<7x3xi64>' are incompatible}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.concat %a, %b, %c {axis = 0 : i64} : (tensor<1x3xi64>, tensor<2x3xi64>, tensor<4x3xi64>) -> tensor<7x9xi64>
  return
}

// -----

func.func @gather_scalar_index(%x: tensor<5x3xi64>, %i: tensor<i64>) {
  // expected-error @+2 {{inferred type(s) 'tensor<3xi64>' are incompatible}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.gather %x, %i {axis = 0 : i64} : (tensor<5x3xi64>, tensor<i64>) -> tensor<1x3xi64>
  return
}

// -----

func.func @gather_matrix_index(%x: tensor<4x6x8xf32>, %i: tensor<2x2xi32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<4x2x2x8xf32>' are incompatible}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.gather %x, %i {axis = 1 : i64} : (tensor<4x6x8xf32>, tensor<2x2xi32>) -> tensor<4x4x8xf32>
  return
}

// -----

// 16-bit scores give an f32 loss (computed in f32).
func.func @sce_none(%s: tensor<4x10x3xf16>, %l: tensor<4x3xi32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<4x3xf32>' are incompatible}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.softmax_cross_entropy %s, %l {reduction = "none"} : (tensor<4x10x3xf16>, tensor<4x3xi32>) -> tensor<f16>
  return
}

// -----

func.func @sce_mean(%s: tensor<4x10xf32>, %l: tensor<4xi64>) {
  // expected-error @+2 {{inferred type(s) 'tensor<f32>' are incompatible}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.softmax_cross_entropy %s, %l : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<4xf32>
  return
}

// -----

// Well-typed edge cases: no diagnostics.
func.func @edge_cases(%x: tensor<1x1x5x5xf32>, %e: tensor<0x3xf32>, %f: tensor<2x3xf32>, %g: tensor<3x0xf32>, %h: tensor<1x3xf32>) {
  // A window exactly as large as the padded input; ceil_mode changes nothing.
  %0 = weft.max_pool %x {kernel_shape = array<i64: 7, 7>, strides = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, ceil_mode = true} : (tensor<1x1x5x5xf32>) -> tensor<1x1x1x1xf32>
  // Empty tensors concatenate, and a dim of 1 broadcasts to 0.
  %1 = weft.concat %e, %f {axis = 0 : i64} : (tensor<0x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = weft.add %e, %h : (tensor<0x3xf32>, tensor<1x3xf32>) -> tensor<0x3xf32>
  %3 = weft.matmul %f, %g : (tensor<2x3xf32>, tensor<3x0xf32>) -> tensor<2x0xf32>
  // An empty slice of an empty dim starts at 0.
  %4 = weft.slice %e {starts = array<i64: 0, 2>, steps = array<i64: 1, -1>} : (tensor<0x3xf32>) -> tensor<0x3xf32>
  return
}
