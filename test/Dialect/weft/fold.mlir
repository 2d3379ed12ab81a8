// RUN: weft-opt %s -canonicalize -split-input-file | FileCheck %s
// Folders and canonicalization patterns, and cases that must not fold.

//===----------------------------------------------------------------------===//
// The ONNX importer's shape chains (torch.onnx.export)
//===----------------------------------------------------------------------===//

// Shape -> Gather -> Unsqueeze -> Concat -> Reshape's shape operand.
// CHECK-LABEL: func.func @shape_chain
// CHECK-NEXT: %[[C:.*]] = weft.constant dense<[2, 12, -1]> : tensor<3xi64>
// CHECK-NEXT: return %[[C]]
func.func @shape_chain() -> tensor<3xi64> {
  %shape = weft.constant dense<[2, 3, 4, 5]> : tensor<4xi64>
  %i0 = weft.constant dense<0> : tensor<i64>
  %i1 = weft.constant dense<1> : tensor<i64>
  %i2 = weft.constant dense<-2> : tensor<i64>
  %d0 = weft.gather %shape, %i0 {axis = 0 : i64} : (tensor<4xi64>, tensor<i64>) -> tensor<i64>
  %d1 = weft.gather %shape, %i1 {axis = 0 : i64} : (tensor<4xi64>, tensor<i64>) -> tensor<i64>
  %d2 = weft.gather %shape, %i2 {axis = 0 : i64} : (tensor<4xi64>, tensor<i64>) -> tensor<i64>
  %prod = weft.mul %d1, %d2 : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %u0 = weft.reshape %d0 : tensor<i64> to tensor<1xi64>
  %u1 = weft.reshape %prod : tensor<i64> to tensor<1xi64>
  %rest = weft.constant dense<-1> : tensor<1xi64>
  %cat = weft.concat %u0, %u1, %rest {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  return %cat : tensor<3xi64>
}

// -----

// Shape -> Slice [-2:] -> Concat with a constant, and integer division of a
// dim by a head count.
// CHECK-LABEL: func.func @shape_slice_and_div
// CHECK-DAG: weft.constant dense<[4, 5, 8]> : tensor<3xi64>
// CHECK-DAG: weft.constant dense<2> : tensor<1xi64>
// CHECK-NOT: weft.slice
// CHECK-NOT: weft.div
func.func @shape_slice_and_div() -> (tensor<3xi64>, tensor<1xi64>) {
  %shape = weft.constant dense<[2, 3, 4, 5]> : tensor<4xi64>
  %tail = weft.slice %shape {starts = array<i64: 2>, steps = array<i64: 1>} : (tensor<4xi64>) -> tensor<2xi64>
  %eight = weft.constant dense<8> : tensor<1xi64>
  %cat = weft.concat %tail, %eight {axis = 0 : i64} : (tensor<2xi64>, tensor<1xi64>) -> tensor<3xi64>
  %head = weft.slice %shape {starts = array<i64: 3>, steps = array<i64: 1>} : (tensor<4xi64>) -> tensor<1xi64>
  %heads = weft.constant dense<2> : tensor<i64>
  %per_head = weft.div %head, %heads : (tensor<1xi64>, tensor<i64>) -> tensor<1xi64>
  return %cat, %per_head : tensor<3xi64>, tensor<1xi64>
}

// -----

// Attention's scale: 1 / sqrt(float(head_dim)).
// CHECK-LABEL: func.func @attention_scale
// CHECK-NEXT: %[[C:.*]] = weft.constant dense<1.250000e-01> : tensor<f32>
// CHECK-NEXT: return %[[C]]
func.func @attention_scale() -> tensor<f32> {
  %shape = weft.constant dense<[1, 8, 16, 64]> : tensor<4xi64>
  %i = weft.constant dense<3> : tensor<i64>
  %dim = weft.gather %shape, %i {axis = 0 : i64} : (tensor<4xi64>, tensor<i64>) -> tensor<i64>
  %f = weft.cast %dim : tensor<i64> to tensor<f32>
  %s = weft.sqrt %f : tensor<f32>
  %one = weft.constant dense<1.0> : tensor<f32>
  %r = weft.div %one, %s : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %r : tensor<f32>
}

// -----

// Expand's shape: where(shape == -1, 1, shape).
// CHECK-LABEL: func.func @expand_shape
// CHECK-NEXT: %[[C:.*]] = weft.constant dense<[1, 4, 1]> : tensor<3xi64>
// CHECK-NEXT: return %[[C]]
func.func @expand_shape() -> tensor<3xi64> {
  %shape = weft.constant dense<[-1, 4, -1]> : tensor<3xi64>
  %m1 = weft.constant dense<-1> : tensor<i64>
  %one = weft.constant dense<1> : tensor<i64>
  %eq = weft.equal %shape, %m1 : (tensor<3xi64>, tensor<i64>) -> tensor<3xi1>
  %r = weft.where %eq, %one, %shape : (tensor<3xi1>, tensor<i64>, tensor<3xi64>) -> tensor<3xi64>
  return %r : tensor<3xi64>
}

// -----

//===----------------------------------------------------------------------===//
// Unary
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @unary_float
// CHECK-DAG: weft.constant dense<[-1.000000e+00, 4.000000e+00, -0.000000e+00]> : tensor<3xf32>
// CHECK-DAG: weft.constant dense<[1.000000e+00, 2.000000e+00, 0.000000e+00]> : tensor<3xf32>
// CHECK-DAG: weft.constant dense<[2.71828175, 0.0183156393, 1.000000e+00]> : tensor<3xf32>
// CHECK-DAG: weft.constant dense<[0.000000e+00, 1.38629436, 0xFF800000]> : tensor<3xf32>
// CHECK-DAG: weft.constant dense<[0.761594176, -0.999329328, 0.000000e+00]> : tensor<3xf32>
// CHECK-DAG: weft.constant dense<[0.842700779, -1.000000e+00, 0.000000e+00]> : tensor<3xf32>
// CHECK-DAG: weft.constant dense<[1.000000e+00, 0.000000e+00, 0.000000e+00]> : tensor<3xf32>
// CHECK-DAG: weft.constant dense<[0.731058597, 0.0179862101, 5.000000e-01]> : tensor<3xf32>
// CHECK-DAG: weft.constant dense<[0x{{7FC|FFC}}00000, 2.000000e+00]> : tensor<2xf32>
// CHECK-NOT: weft.neg
// CHECK-NOT: weft.sqrt
func.func @unary_float() -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<2xf32>) {
  %a = weft.constant dense<[1.0, -4.0, 0.0]> : tensor<3xf32>
  %sq = weft.constant dense<[1.0, 4.0, 0.0]> : tensor<3xf32>
  %b = weft.constant dense<[1.0, -4.0, 0.0]> : tensor<3xf32>
  %l = weft.constant dense<[1.0, 4.0, 0.0]> : tensor<3xf32>
  %0 = weft.neg %a : tensor<3xf32>
  %1 = weft.sqrt %sq : tensor<3xf32>
  %2 = weft.exp %b : tensor<3xf32>
  %3 = weft.log %l : tensor<3xf32>
  %4 = weft.tanh %b : tensor<3xf32>
  %5 = weft.erf %b : tensor<3xf32>
  %6 = weft.relu %b : tensor<3xf32>
  %7 = weft.sigmoid %b : tensor<3xf32>
  %nan = weft.constant dense<[-1.0, 4.0]> : tensor<2xf32>
  %8 = weft.sqrt %nan : tensor<2xf32>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8 : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<2xf32>
}

// -----

// Sin and cos fold in double precision, rounded to the element type.
// CHECK-LABEL: func.func @sin_cos
// CHECK-DAG: weft.constant dense<[0.000000e+00, 1.000000e+00, -0.756802499]> : tensor<3xf32>
// CHECK-DAG: weft.constant dense<[1.000000e+00, -4.37113883E-8, -0.653643608]> : tensor<3xf32>
// CHECK-NOT: weft.sin
// CHECK-NOT: weft.cos
func.func @sin_cos() -> (tensor<3xf32>, tensor<3xf32>) {
  %a = weft.constant dense<[0.0, 1.57079632679489661923, 4.0]> : tensor<3xf32>
  %0 = weft.sin %a : tensor<3xf32>
  %1 = weft.cos %a : tensor<3xf32>
  return %0, %1 : tensor<3xf32>, tensor<3xf32>
}

// -----

// Rounding folds exactly: floor, ceil, and round with ties to even.
// CHECK-LABEL: func.func @rounding
// CHECK-DAG: weft.constant dense<[-3.000000e+00, 2.000000e+00, 2.000000e+00, -1.000000e+00]> : tensor<4xf32>
// CHECK-DAG: weft.constant dense<[-2.000000e+00, 3.000000e+00, 3.000000e+00, -0.000000e+00]> : tensor<4xf32>
// CHECK-DAG: weft.constant dense<[-2.000000e+00, 2.000000e+00, 2.000000e+00, -0.000000e+00]> : tensor<4xf32>
// CHECK-NOT: weft.floor
// CHECK-NOT: weft.round
func.func @rounding() -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %a = weft.constant dense<[-2.5, 2.5, 2.25, -0.5]> : tensor<4xf32>
  %0 = weft.floor %a : tensor<4xf32>
  %1 = weft.ceil %a : tensor<4xf32>
  %2 = weft.round %a : tensor<4xf32>
  return %0, %1, %2 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// atan folds in the element type (f32 here); its gradient is 1 / (1 + x^2)
// (test/gradients).
// CHECK-LABEL: func.func @atan
// CHECK: weft.constant dense<[0.000000e+00, 0.785398185, -1.10714877]> : tensor<3xf32>
// CHECK-NOT: weft.atan
func.func @atan() -> tensor<3xf32> {
  %a = weft.constant dense<[0.0, 1.0, -2.0]> : tensor<3xf32>
  %0 = weft.atan %a : tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// CHECK-LABEL: func.func @unary_int_and_bool
// CHECK-DAG: weft.constant dense<[-3, 5, -128]> : tensor<3xi8>
// CHECK-DAG: weft.constant dense<[3, 0, 0]> : tensor<3xi8>
// CHECK-DAG: weft.constant dense<[false, true]> : tensor<2xi1>
// CHECK-DAG: weft.constant dense<-7> : tensor<2x2xi64>
func.func @unary_int_and_bool() -> (tensor<3xi8>, tensor<3xi8>, tensor<2xi1>, tensor<2x2xi64>) {
  %a = weft.constant dense<[3, -5, -128]> : tensor<3xi8>
  %0 = weft.neg %a : tensor<3xi8>
  %1 = weft.relu %a : tensor<3xi8>
  %b = weft.constant dense<[true, false]> : tensor<2xi1>
  %2 = weft.not %b : tensor<2xi1>
  %s = weft.constant dense<7> : tensor<2x2xi64>
  %3 = weft.neg %s : tensor<2x2xi64>
  return %0, %1, %2, %3 : tensor<3xi8>, tensor<3xi8>, tensor<2xi1>, tensor<2x2xi64>
}

// -----

// CHECK-LABEL: func.func @unary_chains
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>, %[[B:.*]]: tensor<4xi1>)
// CHECK-NEXT: %[[R:.*]] = weft.relu %[[X]] : tensor<4xf32>
// CHECK-NEXT: return %[[X]], %[[B]], %[[R]]
func.func @unary_chains(%x: tensor<4xf32>, %b: tensor<4xi1>) -> (tensor<4xf32>, tensor<4xi1>, tensor<4xf32>) {
  %0 = weft.neg %x : tensor<4xf32>
  %1 = weft.neg %0 : tensor<4xf32>
  %2 = weft.not %b : tensor<4xi1>
  %3 = weft.not %2 : tensor<4xi1>
  %4 = weft.relu %x : tensor<4xf32>
  %5 = weft.relu %4 : tensor<4xf32>
  return %1, %3, %5 : tensor<4xf32>, tensor<4xi1>, tensor<4xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Binary
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @binary_int
// CHECK-DAG: weft.constant dense<{{\[}}[11, 21, 31], [12, 22, 32]]> : tensor<2x3xi64>
// CHECK-DAG: weft.constant dense<[5, -9, 9, -5]> : tensor<4xi64>
// CHECK-DAG: weft.constant dense<[14, -14, -14, 14]> : tensor<4xi64>
// CHECK-DAG: weft.constant dense<[3, -3, -3, 3]> : tensor<4xi64>
// CHECK-DAG: weft.constant dense<[1024, 1, -8]> : tensor<3xi64>
// CHECK-DAG: weft.constant dense<[7, 2, 7, -2]> : tensor<4xi64>
// CHECK-DAG: weft.constant dense<[2, -7, -2, -7]> : tensor<4xi64>
// CHECK-DAG: weft.constant dense<[200, 100]> : tensor<2xui8>
// CHECK-DAG: weft.constant dense<[-128, 2147483647]> : tensor<2xi32>
// CHECK-NOT: weft.add
// CHECK-NOT: weft.sub
// CHECK-NOT: weft.mul
// CHECK-NOT: weft.div
// CHECK-NOT: weft.pow
// CHECK-NOT: weft.max
func.func @binary_int() -> (tensor<2x3xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<3xi64>, tensor<4xi64>, tensor<4xi64>, tensor<2xui8>, tensor<2xi32>) {
  %x = weft.constant dense<[[1], [2]]> : tensor<2x1xi64>
  %y = weft.constant dense<[10, 20, 30]> : tensor<3xi64>
  %0 = weft.add %x, %y : (tensor<2x1xi64>, tensor<3xi64>) -> tensor<2x3xi64>
  %n = weft.constant dense<[7, -7, 7, -7]> : tensor<4xi64>
  %d = weft.constant dense<[2, 2, -2, -2]> : tensor<4xi64>
  %1 = weft.sub %n, %d : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  %2 = weft.mul %n, %d : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  // Integer division truncates toward zero.
  %3 = weft.div %n, %d : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  %base = weft.constant dense<[2, 1, -2]> : tensor<3xi64>
  %exp = weft.constant dense<[10, 0, 3]> : tensor<3xi64>
  %4 = weft.pow %base, %exp : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi64>
  %5 = weft.max %n, %d : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  %6 = weft.min %n, %d : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  // ui8 compares unsigned: 200 is the larger.
  %u = weft.constant dense<[200, 50]> : tensor<2xui8>
  %v = weft.constant dense<[100, 100]> : tensor<2xui8>
  %7 = weft.max %u, %v : (tensor<2xui8>, tensor<2xui8>) -> tensor<2xui8>
  // Wrap-around at the element width.
  %big = weft.constant dense<[127, 2147483647]> : tensor<2xi32>
  %small = weft.constant dense<[-255, 0]> : tensor<2xi32>
  %8 = weft.add %big, %small : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8 : tensor<2x3xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<3xi64>, tensor<4xi64>, tensor<4xi64>, tensor<2xui8>, tensor<2xi32>
}

// -----

// weft.rem is the truncated remainder, exact: C's % and fmod.
// CHECK-LABEL: func.func @remainder
// CHECK-DAG: weft.constant dense<[1, -1, 1, -1, 0]> : tensor<5xi64>
// CHECK-DAG: weft.constant dense<[1.500000e+00, -1.500000e+00, 1.000000e+00, 3.000000e+00, -0.000000e+00]> : tensor<5xf32>
// CHECK-DAG: weft.constant dense<0x7FC00000> : tensor<2xf32>
// CHECK-DAG: %[[N:.*]] = weft.constant dense<[4, 5]> : tensor<2xi64>
// CHECK-DAG: %[[D:.*]] = weft.constant dense<[2, 0]> : tensor<2xi64>
// CHECK: weft.rem %[[N]], %[[D]]
// CHECK-NOT: weft.rem
func.func @remainder() -> (tensor<5xi64>, tensor<5xf32>, tensor<2xf32>, tensor<2xi64>) {
  %n = weft.constant dense<[7, -7, 7, -7, -9223372036854775808]> : tensor<5xi64>
  %d = weft.constant dense<[3, 3, -3, -3, -1]> : tensor<5xi64>
  %0 = weft.rem %n, %d : (tensor<5xi64>, tensor<5xi64>) -> tensor<5xi64>
  // 1e10 = 3 * 3333333333 + 1; fmod(x, inf) = x; the dividend's sign.
  %a = weft.constant dense<[7.5, -7.5, 1.0e10, 3.0, -4.0]> : tensor<5xf32>
  %b = weft.constant dense<[2.0, 2.0, 3.0, 0x7F800000, 2.0]> : tensor<5xf32>
  %1 = weft.rem %a, %b : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>
  // fmod(inf, y) and fmod(x, 0) are NaN.
  %c = weft.constant dense<[0x7F800000, 1.0]> : tensor<2xf32>
  %e = weft.constant dense<[2.0, 0.0]> : tensor<2xf32>
  %2 = weft.rem %c, %e : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  // Integer remainder by zero is left for the runtime to report.
  %m = weft.constant dense<[4, 5]> : tensor<2xi64>
  %z = weft.constant dense<[2, 0]> : tensor<2xi64>
  %3 = weft.rem %m, %z : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
  return %0, %1, %2, %3 : tensor<5xi64>, tensor<5xf32>, tensor<2xf32>, tensor<2xi64>
}

// -----

// CHECK-LABEL: func.func @binary_float
// CHECK-DAG: weft.constant dense<[1.500000e+00, 4.500000e+00]> : tensor<2xf32>
// CHECK-DAG: weft.constant dense<[5.000000e-01, 0x7F800000]> : tensor<2xf32>
// CHECK-DAG: weft.constant dense<[1.000000e+00, 8.000000e+00]> : tensor<2xf32>
// CHECK-DAG: weft.constant dense<[0x7FC00000, 3.000000e+00]> : tensor<2xf32>
// CHECK-DAG: weft.constant dense<[2.500000e+00, 1.000000e+00]> : tensor<2xbf16>
func.func @binary_float() -> (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xbf16>) {
  %a = weft.constant dense<[1.0, 3.0]> : tensor<2xf32>
  %b = weft.constant dense<[0.5, 1.5]> : tensor<2xf32>
  %z = weft.constant dense<[2.0, 0.0]> : tensor<2xf32>
  %0 = weft.add %a, %b : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  // Float division by zero is IEEE: inf.
  %1 = weft.div %a, %z : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %two = weft.constant dense<2.0> : tensor<f32>
  %e = weft.constant dense<[0.0, 3.0]> : tensor<2xf32>
  %2 = weft.pow %two, %e : (tensor<f32>, tensor<2xf32>) -> tensor<2xf32>
  // max propagates NaN.
  %nan = weft.constant dense<[0x7FC00000, 1.0]> : tensor<2xf32>
  %3 = weft.max %nan, %a : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %h = weft.constant dense<[1.25, 0.5]> : tensor<2xbf16>
  %4 = weft.mul %h, %h : (tensor<2xbf16>, tensor<2xbf16>) -> tensor<2xbf16>
  %5 = weft.add %4, %h : (tensor<2xbf16>, tensor<2xbf16>) -> tensor<2xbf16>
  %6 = weft.sub %5, %4 : (tensor<2xbf16>, tensor<2xbf16>) -> tensor<2xbf16>
  %two_bf = weft.constant dense<2.0> : tensor<bf16>
  %7 = weft.mul %6, %two_bf : (tensor<2xbf16>, tensor<bf16>) -> tensor<2xbf16>
  return %0, %1, %2, %3, %7 : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xbf16>
}

// -----

// CHECK-LABEL: func.func @binary_bool
// CHECK-DAG: weft.constant dense<[true, false, false, false]> : tensor<4xi1>
// CHECK-DAG: weft.constant dense<[true, true, true, false]> : tensor<4xi1>
func.func @binary_bool() -> (tensor<4xi1>, tensor<4xi1>) {
  %a = weft.constant dense<[true, true, false, false]> : tensor<4xi1>
  %b = weft.constant dense<[true, false, true, false]> : tensor<4xi1>
  %0 = weft.and %a, %b : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  %1 = weft.or %a, %b : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  return %0, %1 : tensor<4xi1>, tensor<4xi1>
}

// -----

// CHECK-LABEL: func.func @identities
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>, %[[I:.*]]: tensor<3xi64>, %[[B:.*]]: tensor<3xi1>)
// CHECK-DAG: %[[Z:.*]] = weft.constant dense<0> : tensor<3xi64>
// CHECK-DAG: %[[F:.*]] = weft.constant dense<false> : tensor<3xi1>
// CHECK-DAG: %[[T:.*]] = weft.constant dense<true> : tensor<3xi1>
// CHECK-NOT: weft.add
// CHECK-NOT: weft.sub
// CHECK-NOT: weft.mul
// CHECK-NOT: weft.div
// CHECK-NOT: weft.pow
// CHECK-NOT: weft.and
// CHECK-NOT: weft.or
// CHECK-NOT: weft.max
// CHECK: return %[[X]], %[[X]], %[[X]], %[[X]], %[[X]], %[[X]], %[[I]], %[[I]], %[[Z]], %[[Z]], %[[B]], %[[B]], %[[F]], %[[T]], %[[X]], %[[B]]
func.func @identities(%x: tensor<2x3xf32>, %i: tensor<3xi64>, %b: tensor<3xi1>)
    -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>,
        tensor<3xi64>, tensor<3xi64>, tensor<3xi64>, tensor<3xi64>,
        tensor<3xi1>, tensor<3xi1>, tensor<3xi1>, tensor<3xi1>, tensor<2x3xf32>, tensor<3xi1>) {
  %fz = weft.constant dense<0.0> : tensor<3xf32>
  %fo = weft.constant dense<1.0> : tensor<f32>
  %iz = weft.constant dense<0> : tensor<i64>
  %io = weft.constant dense<1> : tensor<3xi64>
  %t = weft.constant dense<true> : tensor<i1>
  %f = weft.constant dense<false> : tensor<3xi1>
  %0 = weft.add %x, %fz : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = weft.add %fz, %x : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = weft.sub %x, %fz : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %3 = weft.mul %fo, %x : (tensor<f32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %4 = weft.div %x, %fo : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %5 = weft.pow %x, %fo : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %6 = weft.add %iz, %i : (tensor<i64>, tensor<3xi64>) -> tensor<3xi64>
  %7 = weft.mul %i, %io : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi64>
  // Integer x * 0 and x - x are 0.
  %8 = weft.mul %i, %iz : (tensor<3xi64>, tensor<i64>) -> tensor<3xi64>
  %9 = weft.sub %i, %i : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi64>
  %10 = weft.and %b, %t : (tensor<3xi1>, tensor<i1>) -> tensor<3xi1>
  %11 = weft.or %f, %b : (tensor<3xi1>, tensor<3xi1>) -> tensor<3xi1>
  %12 = weft.and %b, %f : (tensor<3xi1>, tensor<3xi1>) -> tensor<3xi1>
  %13 = weft.or %t, %b : (tensor<i1>, tensor<3xi1>) -> tensor<3xi1>
  %14 = weft.max %x, %x : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %15 = weft.and %b, %b : (tensor<3xi1>, tensor<3xi1>) -> tensor<3xi1>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15
    : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>,
      tensor<3xi64>, tensor<3xi64>, tensor<3xi64>, tensor<3xi64>,
      tensor<3xi1>, tensor<3xi1>, tensor<3xi1>, tensor<3xi1>, tensor<2x3xf32>, tensor<3xi1>
}

// -----

// CHECK-LABEL: func.func @no_fold_binary
// CHECK: weft.add
// CHECK: weft.mul
// CHECK: weft.sub
// CHECK: weft.div
// CHECK: weft.sub
// CHECK-NOT: weft.
func.func @no_fold_binary(%x: tensor<3xf32>, %i: tensor<3xi64>) -> (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<2xi64>, tensor<3xi64>) {
  // x + 0 would have to broadcast x: the result type differs from x's.
  %z = weft.constant dense<0.0> : tensor<2x3xf32>
  %0 = weft.add %x, %z : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  // Float x * 0 is NaN for inf and NaN; float x - x likewise.
  %fz = weft.constant dense<0.0> : tensor<3xf32>
  %1 = weft.mul %x, %fz : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %2 = weft.sub %x, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  // Integer division by zero is left for the runtime to report.
  %n = weft.constant dense<[4, 5]> : tensor<2xi64>
  %d = weft.constant dense<[2, 0]> : tensor<2xi64>
  %3 = weft.div %n, %d : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
  // 0 - x is not x.
  %iz = weft.constant dense<0> : tensor<3xi64>
  %4 = weft.sub %iz, %i : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi64>
  return %0, %1, %2, %3, %4 : tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<2xi64>, tensor<3xi64>
}

// -----

// The runtime's integer corner cases: INT_MIN / -1 wraps, a negative
// exponent truncates 1 / x^n toward zero.
// CHECK-LABEL: func.func @int_corner_cases
// CHECK-DAG: weft.constant dense<-2147483648> : tensor<1xi32>
// CHECK-DAG: weft.constant dense<[0, 1, -1, 1, 0]> : tensor<5xi64>
// CHECK-NOT: weft.div
// CHECK-NOT: weft.pow
func.func @int_corner_cases() -> (tensor<1xi32>, tensor<5xi64>) {
  %min = weft.constant dense<-2147483648> : tensor<1xi32>
  %m1 = weft.constant dense<-1> : tensor<1xi32>
  %0 = weft.div %min, %m1 : (tensor<1xi32>, tensor<1xi32>) -> tensor<1xi32>
  %b = weft.constant dense<[2, 1, -1, -1, 0]> : tensor<5xi64>
  %e = weft.constant dense<[-1, -3, -3, -2, -1]> : tensor<5xi64>
  %1 = weft.pow %b, %e : (tensor<5xi64>, tensor<5xi64>) -> tensor<5xi64>
  return %0, %1 : tensor<1xi32>, tensor<5xi64>
}

// -----

//===----------------------------------------------------------------------===//
// Comparisons and select
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @compare
// CHECK-DAG: weft.constant dense<[false, false, true]> : tensor<3xi1>
// CHECK-DAG: weft.constant dense<[true, false, true]> : tensor<3xi1>
// CHECK-DAG: weft.constant dense<{{\[}}[true, true], [false, true]]> : tensor<2x2xi1>
// CHECK-DAG: weft.constant dense<[true, false]> : tensor<2xi1>
// CHECK-DAG: weft.constant dense<true> : tensor<4xi1>
// CHECK-DAG: weft.constant dense<false> : tensor<4xi1>
// CHECK: %[[E:.*]] = weft.equal %{{.*}}, %{{.*}} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
// CHECK-NOT: weft.less
// CHECK-NOT: weft.greater
func.func @compare(%i: tensor<4xi32>, %x: tensor<4xf32>) -> (tensor<3xi1>, tensor<3xi1>, tensor<2x2xi1>, tensor<2xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>) {
  // Comparisons with NaN are false.
  %a = weft.constant dense<[1.0, 0x7FC00000, 3.0]> : tensor<3xf32>
  %b = weft.constant dense<[1.0, 4.0, 9.0]> : tensor<3xf32>
  %0 = weft.less %a, %b : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>
  %1 = weft.less_equal %a, %b : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>
  %c = weft.constant dense<[[1], [3]]> : tensor<2x1xi64>
  %d = weft.constant dense<[2, 3]> : tensor<2xi64>
  %2 = weft.greater_equal %d, %c : (tensor<2xi64>, tensor<2x1xi64>) -> tensor<2x2xi1>
  // 200 > 100 as ui8.
  %u = weft.constant dense<[200, 1]> : tensor<2xui8>
  %v = weft.constant dense<100> : tensor<ui8>
  %3 = weft.greater %u, %v : (tensor<2xui8>, tensor<ui8>) -> tensor<2xi1>
  // x cmp x is known for integers, not for floats (NaN).
  %4 = weft.greater_equal %i, %i : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
  %5 = weft.less %i, %i : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
  %6 = weft.equal %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  return %0, %1, %2, %3, %4, %5, %6 : tensor<3xi1>, tensor<3xi1>, tensor<2x2xi1>, tensor<2xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>
}

// -----

// CHECK-LABEL: func.func @where
// CHECK-SAME: (%[[C:.*]]: tensor<3xi1>, %[[X:.*]]: tensor<3xf32>, %[[Y:.*]]: tensor<3xf32>)
// CHECK-DAG: %[[B:.*]] = weft.constant dense<{{\[}}[1.000000e+00, 2.000000e+00], [1.000000e+00, 2.000000e+00]]> : tensor<2x2xf32>
// CHECK-DAG: %[[S:.*]] = weft.constant dense<[1, 20, 3]> : tensor<3xi64>
// CHECK: %[[W:.*]] = weft.where %[[C]], %[[X]], %[[Y]]
// CHECK: return %[[X]], %[[Y]], %[[X]], %[[B]], %[[S]], %[[W]]
func.func @where(%c: tensor<3xi1>, %x: tensor<3xf32>, %y: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<2x2xf32>, tensor<3xi64>, tensor<3xf32>) {
  %t = weft.constant dense<true> : tensor<i1>
  %f = weft.constant dense<false> : tensor<3xi1>
  %0 = weft.where %t, %x, %y : (tensor<i1>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %1 = weft.where %f, %x, %y : (tensor<3xi1>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %2 = weft.where %c, %x, %x : (tensor<3xi1>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  // The chosen constant is broadcast to the result.
  %tt = weft.constant dense<true> : tensor<2x1xi1>
  %p = weft.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %q = weft.param "q" : tensor<2x2xf32>
  %3 = weft.where %tt, %p, %q : (tensor<2x1xi1>, tensor<2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %cc = weft.constant dense<[true, false, true]> : tensor<3xi1>
  %a = weft.constant dense<[1, 2, 3]> : tensor<3xi64>
  %b = weft.constant dense<20> : tensor<i64>
  %4 = weft.where %cc, %a, %b : (tensor<3xi1>, tensor<3xi64>, tensor<i64>) -> tensor<3xi64>
  // A condition that is not constant does not fold.
  %5 = weft.where %c, %x, %y : (tensor<3xi1>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<2x2xf32>, tensor<3xi64>, tensor<3xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Cast
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @cast
// CHECK-DAG: weft.constant dense<[1, -1, 2, 0]> : tensor<4xi64>
// CHECK-DAG: weft.constant dense<[true, true, false, true]> : tensor<4xi1>
// CHECK-DAG: weft.constant dense<[1.700200e+00, -1.700200e+00, 2.500000e+00, -0.000000e+00]> : tensor<4xf16>
// CHECK-DAG: weft.constant dense<[3.000000e+00, -2.000000e+00]> : tensor<2xf32>
// CHECK-DAG: weft.constant dense<[-1, 0]> : tensor<2xi8>
// CHECK-DAG: weft.constant dense<[1.000000e+00, 0.000000e+00]> : tensor<2xf64>
// CHECK-DAG: weft.constant dense<[200, 0]> : tensor<2xi32>
// CHECK-DAG: weft.constant dense<[-56, 0]> : tensor<2xi32>
func.func @cast() -> (tensor<4xi64>, tensor<4xi1>, tensor<4xf16>, tensor<2xf32>, tensor<2xi8>, tensor<2xf64>, tensor<2xi32>, tensor<2xi32>) {
  %f = weft.constant dense<[1.7, -1.7, 2.5, -0.0]> : tensor<4xf32>
  // Float to integer truncates toward zero.
  %0 = weft.cast %f : tensor<4xf32> to tensor<4xi64>
  // To i1 is x != 0.
  %nz = weft.constant dense<[1.0, -0.5, 0.0, 0x7FC00000]> : tensor<4xf32>
  %1 = weft.cast %nz : tensor<4xf32> to tensor<4xi1>
  %2 = weft.cast %f : tensor<4xf32> to tensor<4xf16>
  %i = weft.constant dense<[3, -2]> : tensor<2xi64>
  %3 = weft.cast %i : tensor<2xi64> to tensor<2xf32>
  // Integer narrowing keeps the low bits.
  %w = weft.constant dense<[255, 256]> : tensor<2xi64>
  %4 = weft.cast %w : tensor<2xi64> to tensor<2xi8>
  %b = weft.constant dense<[true, false]> : tensor<2xi1>
  %5 = weft.cast %b : tensor<2xi1> to tensor<2xf64>
  // ui8 widens without sign, i8 with.
  %u = weft.constant dense<[200, 0]> : tensor<2xui8>
  %6 = weft.cast %u : tensor<2xui8> to tensor<2xi32>
  %s = weft.constant dense<[-56, 0]> : tensor<2xi8>
  %7 = weft.cast %s : tensor<2xi8> to tensor<2xi32>
  return %0, %1, %2, %3, %4, %5, %6, %7 : tensor<4xi64>, tensor<4xi1>, tensor<4xf16>, tensor<2xf32>, tensor<2xi8>, tensor<2xf64>, tensor<2xi32>, tensor<2xi32>
}

// -----

// CHECK-LABEL: func.func @cast_no_fold
// CHECK-SAME: (%[[X:.*]]: tensor<2xf32>)
// CHECK: weft.cast %{{.*}} : tensor<2xf32> to tensor<2xi32>
// CHECK: weft.cast %{{.*}} : tensor<1xf32> to tensor<1xi8>
// CHECK: return %{{.*}}, %{{.*}}, %[[X]]
func.func @cast_no_fold(%x: tensor<2xf32>) -> (tensor<2xi32>, tensor<1xi8>, tensor<2xf32>) {
  // NaN and out-of-range values have no integer value.
  %nan = weft.constant dense<[0x7FC00000, 1.0]> : tensor<2xf32>
  %0 = weft.cast %nan : tensor<2xf32> to tensor<2xi32>
  %big = weft.constant dense<300.0> : tensor<1xf32>
  %1 = weft.cast %big : tensor<1xf32> to tensor<1xi8>
  // A cast to the same type is the input.
  %2 = weft.cast %x : tensor<2xf32> to tensor<2xf32>
  return %0, %1, %2 : tensor<2xi32>, tensor<1xi8>, tensor<2xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @reduce
// CHECK-DAG: weft.constant dense<{{\[}}[5], [7], [9]]> : tensor<3x1xi64>
// CHECK-DAG: weft.constant dense<[6, 15]> : tensor<2xi64>
// CHECK-DAG: weft.constant dense<21> : tensor<i64>
// CHECK-DAG: weft.constant dense<[2.500000e+00, 3.500000e+00, 4.500000e+00]> : tensor<3xf32>
// CHECK-DAG: weft.constant dense<{{\[}}[3.000000e+00, 0x7FC00000]]> : tensor<1x2xf32>
// CHECK-DAG: weft.constant dense<1.200000e+01> : tensor<1x1xf32>
// CHECK-DAG: weft.constant dense<[-1, -3]> : tensor<2xi32>
// CHECK-NOT: weft.reduce
func.func @reduce() -> (tensor<3x1xi64>, tensor<2xi64>, tensor<i64>, tensor<3xf32>, tensor<1x2xf32>, tensor<1x1xf32>, tensor<2xi32>) {
  %m = weft.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi64>
  %t = weft.transpose %m {permutation = array<i64: 1, 0>} : (tensor<2x3xi64>) -> tensor<3x2xi64>
  %0 = weft.reduce_sum %t {axes = array<i64: 1>} : (tensor<3x2xi64>) -> tensor<3x1xi64>
  %1 = weft.reduce_sum %m {axes = array<i64: 1>, keepdims = false} : (tensor<2x3xi64>) -> tensor<2xi64>
  %2 = weft.reduce_sum %m {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xi64>) -> tensor<i64>
  %f = weft.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %3 = weft.reduce_mean %f {axes = array<i64: 0>, keepdims = false} : (tensor<2x3xf32>) -> tensor<3xf32>
  // max propagates NaN.
  %g = weft.constant dense<[[1.0, 0x7FC00000], [3.0, 2.0]]> : tensor<2x2xf32>
  %4 = weft.reduce_max %g {axes = array<i64: 0>} : (tensor<2x2xf32>) -> tensor<1x2xf32>
  // A splat reduces without materializing its elements.
  %s = weft.constant dense<1.5> : tensor<2x4xf32>
  %5 = weft.reduce_sum %s {axes = array<i64: 0, 1>} : (tensor<2x4xf32>) -> tensor<1x1xf32>
  %n = weft.constant dense<[[-1, -5], [-3, -4], [-2, -3]]> : tensor<3x2xi32>
  %6 = weft.reduce_max %n {axes = array<i64: 0>, keepdims = false} : (tensor<3x2xi32>) -> tensor<2xi32>
  return %0, %1, %2, %3, %4, %5, %6 : tensor<3x1xi64>, tensor<2xi64>, tensor<i64>, tensor<3xf32>, tensor<1x2xf32>, tensor<1x1xf32>, tensor<2xi32>
}

// -----

// CHECK-LABEL: func.func @reduce_unit_dims
// CHECK-SAME: (%[[X:.*]]: tensor<2x1x3xf32>)
// CHECK-NEXT: %[[R:.*]] = weft.reduce_sum %[[X]] {axes = array<i64: 1>, keepdims = false}
// CHECK-NEXT: return %[[X]], %[[R]]
func.func @reduce_unit_dims(%x: tensor<2x1x3xf32>) -> (tensor<2x1x3xf32>, tensor<2x3xf32>) {
  // Reducing dims of size 1 with keepdims is the input.
  %0 = weft.reduce_mean %x {axes = array<i64: 1>} : (tensor<2x1x3xf32>) -> tensor<2x1x3xf32>
  %1 = weft.reduce_sum %x {axes = array<i64: 1>, keepdims = false} : (tensor<2x1x3xf32>) -> tensor<2x3xf32>
  return %0, %1 : tensor<2x1x3xf32>, tensor<2x3xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @reshape
// CHECK-SAME: (%[[X:.*]]: tensor<2x6xf32>)
// CHECK-DAG: %[[C:.*]] = weft.constant dense<{{\[}}[1, 2], [3, 4], [5, 6]]> : tensor<3x2xi64>
// CHECK-DAG: %[[R:.*]] = weft.reshape %[[X]] : tensor<2x6xf32> to tensor<3x4xf32>
// CHECK: return %[[C]], %[[X]], %[[R]], %[[X]]
func.func @reshape(%x: tensor<2x6xf32>) -> (tensor<3x2xi64>, tensor<2x6xf32>, tensor<3x4xf32>, tensor<2x6xf32>) {
  %c = weft.constant dense<[1, 2, 3, 4, 5, 6]> : tensor<6xi64>
  %0 = weft.reshape %c : tensor<6xi64> to tensor<3x2xi64>
  %1 = weft.reshape %x : tensor<2x6xf32> to tensor<2x6xf32>
  // reshape(reshape(x)) is one reshape, or x itself.
  %a = weft.reshape %x : tensor<2x6xf32> to tensor<12xf32>
  %2 = weft.reshape %a : tensor<12xf32> to tensor<3x4xf32>
  %b = weft.reshape %x : tensor<2x6xf32> to tensor<4x3xf32>
  %3 = weft.reshape %b : tensor<4x3xf32> to tensor<2x6xf32>
  return %0, %1, %2, %3 : tensor<3x2xi64>, tensor<2x6xf32>, tensor<3x4xf32>, tensor<2x6xf32>
}

// -----

// CHECK-LABEL: func.func @transpose
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-DAG: %[[C:.*]] = weft.constant dense<{{\[}}[1, 4], [2, 5], [3, 6]]> : tensor<3x2xi64>
// CHECK-DAG: %[[S:.*]] = weft.constant dense<7> : tensor<3x2xi32>
// CHECK-DAG: %[[T:.*]] = weft.transpose %[[X]] {permutation = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
// CHECK: return %[[C]], %[[S]], %[[X]], %[[T]], %[[X]]
func.func @transpose(%x: tensor<2x3x4xf32>) -> (tensor<3x2xi64>, tensor<3x2xi32>, tensor<2x3x4xf32>, tensor<4x2x3xf32>, tensor<2x3x4xf32>) {
  %c = weft.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi64>
  %0 = weft.transpose %c {permutation = array<i64: 1, 0>} : (tensor<2x3xi64>) -> tensor<3x2xi64>
  %s = weft.constant dense<7> : tensor<2x3xi32>
  %1 = weft.transpose %s {permutation = array<i64: 1, 0>} : (tensor<2x3xi32>) -> tensor<3x2xi32>
  %2 = weft.transpose %x {permutation = array<i64: 0, 1, 2>} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  // Two transposes compose into one...
  %a = weft.transpose %x {permutation = array<i64: 1, 0, 2>} : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
  %3 = weft.transpose %a {permutation = array<i64: 2, 1, 0>} : (tensor<3x2x4xf32>) -> tensor<4x2x3xf32>
  // ... or cancel.
  %b = weft.transpose %x {permutation = array<i64: 1, 2, 0>} : (tensor<2x3x4xf32>) -> tensor<3x4x2xf32>
  %4 = weft.transpose %b {permutation = array<i64: 2, 0, 1>} : (tensor<3x4x2xf32>) -> tensor<2x3x4xf32>
  return %0, %1, %2, %3, %4 : tensor<3x2xi64>, tensor<3x2xi32>, tensor<2x3x4xf32>, tensor<4x2x3xf32>, tensor<2x3x4xf32>
}

// -----

// CHECK-LABEL: func.func @concat
// CHECK-SAME: (%[[X:.*]]: tensor<2xi64>)
// CHECK-DAG: %[[C:.*]] = weft.constant dense<{{\[}}[1, 2, 5], [3, 4, 6]]> : tensor<2x3xi64>
// CHECK-DAG: %[[S:.*]] = weft.constant dense<0.000000e+00> : tensor<5xf32>
// CHECK-DAG: %[[K:.*]] = weft.constant dense<[7, 8]> : tensor<2xi64>
// CHECK-DAG: %[[N:.*]] = weft.concat %[[X]], %[[K]] {axis = 0 : i64}
// CHECK: return %[[C]], %[[S]], %[[X]], %[[N]]
func.func @concat(%x: tensor<2xi64>) -> (tensor<2x3xi64>, tensor<5xf32>, tensor<2xi64>, tensor<4xi64>) {
  %a = weft.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi64>
  %b = weft.constant dense<[[5], [6]]> : tensor<2x1xi64>
  %0 = weft.concat %a, %b {axis = 1 : i64} : (tensor<2x2xi64>, tensor<2x1xi64>) -> tensor<2x3xi64>
  %z2 = weft.constant dense<0.0> : tensor<2xf32>
  %z3 = weft.constant dense<0.0> : tensor<3xf32>
  %1 = weft.concat %z2, %z3 {axis = 0 : i64} : (tensor<2xf32>, tensor<3xf32>) -> tensor<5xf32>
  %2 = weft.concat %x {axis = 0 : i64} : (tensor<2xi64>) -> tensor<2xi64>
  // Not every input constant: no fold.
  %k = weft.constant dense<[7, 8]> : tensor<2xi64>
  %3 = weft.concat %x, %k {axis = 0 : i64} : (tensor<2xi64>, tensor<2xi64>) -> tensor<4xi64>
  return %0, %1, %2, %3 : tensor<2x3xi64>, tensor<5xf32>, tensor<2xi64>, tensor<4xi64>
}

// -----

// CHECK-LABEL: func.func @slice
// CHECK-SAME: (%[[X:.*]]: tensor<3x4xf32>)
// CHECK-DAG: weft.constant dense<{{\[}}[12, 10], [4, 2]]> : tensor<2x2xi64>
// CHECK-DAG: weft.constant dense<true> : tensor<2xi1>
// CHECK-DAG: %[[S:.*]] = weft.slice %[[X]]
// CHECK: return {{.*}}, {{.*}}, %[[X]], %[[S]]
func.func @slice(%x: tensor<3x4xf32>) -> (tensor<2x2xi64>, tensor<2xi1>, tensor<3x4xf32>, tensor<3x2xf32>) {
  %c = weft.constant dense<[[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]]> : tensor<3x4xi64>
  %0 = weft.slice %c {starts = array<i64: 2, 3>, steps = array<i64: -2, -2>} : (tensor<3x4xi64>) -> tensor<2x2xi64>
  %t = weft.constant dense<true> : tensor<5xi1>
  %1 = weft.slice %t {starts = array<i64: 1>, steps = array<i64: 3>} : (tensor<5xi1>) -> tensor<2xi1>
  %2 = weft.slice %x {starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %3 = weft.slice %x {starts = array<i64: 0, 1>, steps = array<i64: 1, 2>} : (tensor<3x4xf32>) -> tensor<3x2xf32>
  return %0, %1, %2, %3 : tensor<2x2xi64>, tensor<2xi1>, tensor<3x4xf32>, tensor<3x2xf32>
}

// -----

// CHECK-LABEL: func.func @gather
// CHECK-DAG: weft.constant dense<{{\[}}[3, 1], [6, 4]]> : tensor<2x2xi64>
// CHECK-DAG: weft.constant dense<{{\[}}[4.000000e+00, 5.000000e+00], [1.000000e+00, 2.000000e+00]]> : tensor<2x2xf32>
// CHECK-DAG: weft.constant dense<9> : tensor<3xi32>
// CHECK: weft.gather
// CHECK-NOT: weft.gather
func.func @gather() -> (tensor<2x2xi64>, tensor<2x2xf32>, tensor<3xi32>, tensor<i64>) {
  %d = weft.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi64>
  %i = weft.constant dense<[-1, 0]> : tensor<2xi64>
  %0 = weft.gather %d, %i {axis = 1 : i64} : (tensor<2x3xi64>, tensor<2xi64>) -> tensor<2x2xi64>
  %f = weft.constant dense<[[1.0, 2.0], [4.0, 5.0]]> : tensor<2x2xf32>
  %j = weft.constant dense<[1, 0]> : tensor<2xi32>
  %1 = weft.gather %f, %j {axis = 0 : i64} : (tensor<2x2xf32>, tensor<2xi32>) -> tensor<2x2xf32>
  %s = weft.constant dense<9> : tensor<4xi32>
  %k = weft.constant dense<[3, 0, -4]> : tensor<3xi64>
  %2 = weft.gather %s, %k {axis = 0 : i64} : (tensor<4xi32>, tensor<3xi64>) -> tensor<3xi32>
  // An index out of range does not fold.
  %v = weft.constant dense<[1, 2, 3]> : tensor<3xi64>
  %bad = weft.constant dense<3> : tensor<i64>
  %3 = weft.gather %v, %bad {axis = 0 : i64} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  return %0, %1, %2, %3 : tensor<2x2xi64>, tensor<2x2xf32>, tensor<3xi32>, tensor<i64>
}

// -----

// CHECK-LABEL: func.func @broadcast_to
// CHECK-SAME: (%[[X:.*]]: tensor<3x1xf32>)
// CHECK-DAG: weft.constant dense<1.000000e+00> : tensor<2x3xf32>
// CHECK-DAG: weft.constant dense<{{\[}}{{\[}}[1, 1], [2, 2]], {{\[}}[1, 1], [2, 2]]]> : tensor<2x2x2xi64>
// CHECK-DAG: %[[B:.*]] = weft.broadcast_to %[[X]] : tensor<3x1xf32> to tensor<4x3x5xf32>
// CHECK: return {{.*}}, {{.*}}, %[[X]], %[[B]]
func.func @broadcast_to(%x: tensor<3x1xf32>) -> (tensor<2x3xf32>, tensor<2x2x2xi64>, tensor<3x1xf32>, tensor<4x3x5xf32>) {
  %one = weft.constant dense<1.0> : tensor<f32>
  %0 = weft.broadcast_to %one : tensor<f32> to tensor<2x3xf32>
  %c = weft.constant dense<[[1], [2]]> : tensor<2x1xi64>
  %1 = weft.broadcast_to %c : tensor<2x1xi64> to tensor<2x2x2xi64>
  %2 = weft.broadcast_to %x : tensor<3x1xf32> to tensor<3x1xf32>
  // broadcast_to(broadcast_to(x)) is one broadcast_to.
  %a = weft.broadcast_to %x : tensor<3x1xf32> to tensor<3x5xf32>
  %3 = weft.broadcast_to %a : tensor<3x5xf32> to tensor<4x3x5xf32>
  return %0, %1, %2, %3 : tensor<2x3xf32>, tensor<2x2x2xi64>, tensor<3x1xf32>, tensor<4x3x5xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Canonicalization patterns
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @matmul_transpose
// CHECK-SAME: (%[[A:.*]]: tensor<5x3x2xf32>, %[[B:.*]]: tensor<4x3xf32>, %[[C:.*]]: tensor<3x5x3xf32>, %[[D:.*]]: tensor<5x2x3xf32>)
// CHECK-NEXT: %[[M0:.*]] = weft.matmul %[[A]], %[[B]] {transpose_a = true, transpose_b = true} : (tensor<5x3x2xf32>, tensor<4x3xf32>) -> tensor<5x2x4xf32>
// CHECK-NEXT: %[[M1:.*]] = weft.matmul %[[D]], %[[B]] {transpose_b = true} : (tensor<5x2x3xf32>, tensor<4x3xf32>) -> tensor<5x2x4xf32>
// CHECK-NEXT: %[[T:.*]] = weft.transpose %[[C]] {permutation = array<i64: 1, 0, 2>}
// CHECK-NEXT: %[[M2:.*]] = weft.matmul %[[T]], %[[B]] {transpose_b = true}
// CHECK-NEXT: return %[[M0]], %[[M1]], %[[M2]]
func.func @matmul_transpose(%a: tensor<5x3x2xf32>, %b: tensor<4x3xf32>, %c: tensor<3x5x3xf32>, %d: tensor<5x2x3xf32>) -> (tensor<5x2x4xf32>, tensor<5x2x4xf32>, tensor<5x3x4xf32>) {
  %at = weft.transpose %a {permutation = array<i64: 0, 2, 1>} : (tensor<5x3x2xf32>) -> tensor<5x2x3xf32>
  %bt = weft.transpose %b {permutation = array<i64: 1, 0>} : (tensor<4x3xf32>) -> tensor<3x4xf32>
  %0 = weft.matmul %at, %bt : (tensor<5x2x3xf32>, tensor<3x4xf32>) -> tensor<5x2x4xf32>
  // A transpose flag cancels with a transpose.
  %dt = weft.transpose %d {permutation = array<i64: 0, 2, 1>} : (tensor<5x2x3xf32>) -> tensor<5x3x2xf32>
  %1 = weft.matmul %dt, %bt {transpose_a = true} : (tensor<5x3x2xf32>, tensor<3x4xf32>) -> tensor<5x2x4xf32>
  // A transpose of batch dims stays.
  %ct = weft.transpose %c {permutation = array<i64: 1, 0, 2>} : (tensor<3x5x3xf32>) -> tensor<5x3x3xf32>
  %2 = weft.matmul %ct, %bt : (tensor<5x3x3xf32>, tensor<3x4xf32>) -> tensor<5x3x4xf32>
  return %0, %1, %2 : tensor<5x2x4xf32>, tensor<5x2x4xf32>, tensor<5x3x4xf32>
}

// -----

// The rewrite keeps what earlier passes marked on the matmul: its pipeline
// stage and that it is backward work (weft-pipeline schedules by them).
// CHECK-LABEL: func.func @matmul_transpose_keeps_marks
// CHECK-NEXT: %[[M:.*]] = weft.matmul %{{.*}}, %{{.*}} {transpose_b = true, weft.backward, weft.stage = 4 : i64, weft.weight_grad}
// CHECK-NEXT: return %[[M]]
func.func @matmul_transpose_keeps_marks(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>) -> tensor<2x4xf32> {
  %bt = weft.transpose %b {permutation = array<i64: 1, 0>} : (tensor<4x3xf32>) -> tensor<3x4xf32>
  %0 = weft.matmul %a, %bt {weft.backward, weft.stage = 4 : i64, weft.weight_grad} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

// A cast back to the type an exact widening came from is the value; a
// narrowing that is not a round trip, or a widening of a narrowing, stays.
// CHECK-LABEL: func.func @cast_round_trip
// CHECK-SAME: (%[[X:.*]]: tensor<4xbf16>, %[[Y:.*]]: tensor<4xf32>, %[[Z:.*]]: tensor<4xf16>)
// CHECK-NOT: weft.cast %[[X]]
// CHECK: %[[N:.*]] = weft.cast %[[Y]] : tensor<4xf32> to tensor<4xbf16>
// CHECK-NEXT: %[[W:.*]] = weft.cast %[[N]] : tensor<4xbf16> to tensor<4xf32>
// CHECK-NEXT: %[[ZW:.*]] = weft.cast %[[Z]] : tensor<4xf16> to tensor<4xf32>
// CHECK-NEXT: %[[ZB:.*]] = weft.cast %[[ZW]] : tensor<4xf32> to tensor<4xbf16>
// CHECK-NEXT: return %[[X]], %[[W]], %[[ZB]]
func.func @cast_round_trip(%x: tensor<4xbf16>, %y: tensor<4xf32>, %z: tensor<4xf16>) -> (tensor<4xbf16>, tensor<4xf32>, tensor<4xbf16>) {
  %0 = weft.cast %x : tensor<4xbf16> to tensor<4xf32>
  %1 = weft.cast %0 : tensor<4xf32> to tensor<4xbf16>
  %2 = weft.cast %y : tensor<4xf32> to tensor<4xbf16>
  %3 = weft.cast %2 : tensor<4xbf16> to tensor<4xf32>
  %4 = weft.cast %z : tensor<4xf16> to tensor<4xf32>
  %5 = weft.cast %4 : tensor<4xf32> to tensor<4xbf16>
  return %1, %3, %5 : tensor<4xbf16>, tensor<4xf32>, tensor<4xbf16>
}
