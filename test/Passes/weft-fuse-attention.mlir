// RUN: weft-opt %s -split-input-file -weft-fuse-attention -canonicalize | FileCheck %s

// An exported encoder's attention: the queries divided by sqrt(D) before
// the product, a dense causal mask of -inf, the keys as [B, D, S].
// CHECK-LABEL: func.func @exported
// CHECK-SAME: (%[[Q:.*]]: tensor<4x8x16xf32>, %[[K:.*]]: tensor<4x16x8xf32>, %[[V:.*]]: tensor<4x8x16xf32>)
// CHECK-NEXT: %[[KT:.*]] = weft.transpose %[[K]] {permutation = array<i64: 0, 2, 1>} : (tensor<4x16x8xf32>) -> tensor<4x8x16xf32>
// CHECK-NEXT: %[[O:.*]], %{{.*}} = weft.attention %[[Q]], %[[KT]], %[[V]] {causal = true, scale = 2.500000e-01 : f64} : (tensor<4x8x16xf32>, tensor<4x8x16xf32>, tensor<4x8x16xf32>) -> (tensor<4x8x16xf32>, tensor<4x8xf32>)
// CHECK-NEXT: return %[[O]]
func.func @exported(%q: tensor<4x8x16xf32>, %k: tensor<4x16x8xf32>, %v: tensor<4x8x16xf32>) -> tensor<4x8x16xf32> {
  %c = weft.constant dense<4.0> : tensor<f32>
  %qs = weft.div %q, %c : (tensor<4x8x16xf32>, tensor<f32>) -> tensor<4x8x16xf32>
  %s = weft.matmul %qs, %k : (tensor<4x8x16xf32>, tensor<4x16x8xf32>) -> tensor<4x8x8xf32>
  %m = weft.constant dense<[[[0.0, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000],
                             [0.0, 0.0, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000],
                             [0.0, 0.0, 0.0, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000],
                             [0.0, 0.0, 0.0, 0.0, 0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000],
                             [0.0, 0.0, 0.0, 0.0, 0.0, 0xFF800000, 0xFF800000, 0xFF800000],
                             [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0xFF800000, 0xFF800000],
                             [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0xFF800000],
                             [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]]]> : tensor<1x8x8xf32>
  %a = weft.add %s, %m : (tensor<4x8x8xf32>, tensor<1x8x8xf32>) -> tensor<4x8x8xf32>
  %p = weft.softmax %a {axis = 2 : i64} : tensor<4x8x8xf32>
  %o = weft.matmul %p, %v : (tensor<4x8x8xf32>, tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
  return %o : tensor<4x8x16xf32>
}

// -----

// Mixed precision's GPT attention: bf16 products with the widening and
// narrowing casts, the scores scaled after the widening, a trilu of -1e9.
// The lse is f32; the output stays bf16 and is widened as before.
// CHECK-LABEL: func.func @mixed
// CHECK-SAME: (%[[Q:.*]]: tensor<2x2x8x4xbf16>, %[[K:.*]]: tensor<2x2x4x8xbf16>, %[[V:.*]]: tensor<2x2x8x4xbf16>)
// CHECK-NEXT: %[[KT:.*]] = weft.transpose %[[K]] {permutation = array<i64: 0, 1, 3, 2>}
// CHECK-NEXT: %[[O:.*]], %[[L:.*]] = weft.attention %[[Q]], %[[KT]], %[[V]] {causal = true, scale = 5.000000e-01 : f64} : (tensor<2x2x8x4xbf16>, tensor<2x2x8x4xbf16>, tensor<2x2x8x4xbf16>) -> (tensor<2x2x8x4xbf16>, tensor<2x2x8xf32>)
// CHECK-NEXT: %[[W:.*]] = weft.cast %[[O]] : tensor<2x2x8x4xbf16> to tensor<2x2x8x4xf32>
// CHECK-NEXT: return %[[W]]
func.func @mixed(%q: tensor<2x2x8x4xbf16>, %k: tensor<2x2x4x8xbf16>, %v: tensor<2x2x8x4xbf16>) -> tensor<2x2x8x4xf32> {
  %big = weft.constant dense<-1.0e9> : tensor<8x8xf32>
  %half = weft.constant dense<0.5> : tensor<f32>
  %s = weft.matmul %q, %k : (tensor<2x2x8x4xbf16>, tensor<2x2x4x8xbf16>) -> tensor<2x2x8x8xbf16>
  %sf = weft.cast %s : tensor<2x2x8x8xbf16> to tensor<2x2x8x8xf32>
  %ss = weft.mul %sf, %half : (tensor<2x2x8x8xf32>, tensor<f32>) -> tensor<2x2x8x8xf32>
  %m = weft.trilu %big {k = 1 : i64} : tensor<8x8xf32>
  %a = weft.add %ss, %m : (tensor<2x2x8x8xf32>, tensor<8x8xf32>) -> tensor<2x2x8x8xf32>
  %p = weft.softmax %a {axis = 3 : i64} : tensor<2x2x8x8xf32>
  %pb = weft.cast %p : tensor<2x2x8x8xf32> to tensor<2x2x8x8xbf16>
  %o = weft.matmul %pb, %v : (tensor<2x2x8x8xbf16>, tensor<2x2x8x4xbf16>) -> tensor<2x2x8x4xbf16>
  %of = weft.cast %o : tensor<2x2x8x4xbf16> to tensor<2x2x8x4xf32>
  return %of : tensor<2x2x8x4xf32>
}

// -----

// No scale and no mask; the keys transposed by the product's flag, the
// values by the second product's (a transpose brings them to [.., Sk, Dv]).
// Fewer queries than keys.
// CHECK-LABEL: func.func @plain
// CHECK-SAME: (%[[Q:.*]]: tensor<3x5xf32>, %[[K:.*]]: tensor<7x5xf32>, %[[V:.*]]: tensor<2x7xf32>)
// CHECK-NEXT: %[[VT:.*]] = weft.transpose %[[V]] {permutation = array<i64: 1, 0>} : (tensor<2x7xf32>) -> tensor<7x2xf32>
// CHECK-NEXT: %[[O:.*]], %{{.*}} = weft.attention %[[Q]], %[[K]], %[[VT]] {scale = 1.000000e+00 : f64} : (tensor<3x5xf32>, tensor<7x5xf32>, tensor<7x2xf32>) -> (tensor<3x2xf32>, tensor<3xf32>)
// CHECK-NEXT: return %[[O]]
func.func @plain(%q: tensor<3x5xf32>, %k: tensor<7x5xf32>, %v: tensor<2x7xf32>) -> tensor<3x2xf32> {
  %s = weft.matmul %q, %k {transpose_b = true} : (tensor<3x5xf32>, tensor<7x5xf32>) -> tensor<3x7xf32>
  %p = weft.softmax %s {axis = 1 : i64} : tensor<3x7xf32>
  %o = weft.matmul %p, %v {transpose_b = true} : (tensor<3x7xf32>, tensor<2x7xf32>) -> tensor<3x2xf32>
  return %o : tensor<3x2xf32>
}

// -----

// A causal trilu mask with fewer queries than keys: query i sees keys up
// to i + Sk - Sq, so the trilu's diagonal is k = Sk - Sq + 1.
// CHECK-LABEL: func.func @offset_causal
// CHECK: weft.attention {{.*}} {causal = true, scale = 1.000000e+00 : f64}
func.func @offset_causal(%q: tensor<3x4xf32>, %k: tensor<5x4xf32>, %v: tensor<5x4xf32>) -> tensor<3x4xf32> {
  %big = weft.constant dense<0xFF800000> : tensor<3x5xf32>
  %m = weft.trilu %big {k = 3 : i64} : tensor<3x5xf32>
  %s = weft.matmul %q, %k {transpose_b = true} : (tensor<3x4xf32>, tensor<5x4xf32>) -> tensor<3x5xf32>
  %a = weft.add %m, %s : (tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
  %p = weft.softmax %a {axis = 1 : i64} : tensor<3x5xf32>
  %o = weft.matmul %p, %v : (tensor<3x5xf32>, tensor<5x4xf32>) -> tensor<3x4xf32>
  return %o : tensor<3x4xf32>
}

// -----

// Left alone: a mask that is not causal (the diagonal is masked too), a
// softmax read twice, a scale that is not a constant, a softmax over
// another axis, a causal mask with more queries than keys (the written-out
// softmax of a query that sees no key is uniform), and mixed dtypes.
// CHECK-LABEL: func.func @alone
// CHECK-NOT: weft.attention
// CHECK: return
func.func @alone(%q: tensor<4x4xf32>, %k: tensor<4x4xf32>, %v: tensor<4x4xf32>, %x: tensor<f32>, %q6: tensor<6x4xf32>, %vb: tensor<4x4xbf16>) -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<6x4xf32>, tensor<4x4xbf16>) {
  %big = weft.constant dense<-1.0e9> : tensor<4x4xf32>
  %strict = weft.trilu %big {k = 0 : i64} : tensor<4x4xf32>
  %s0 = weft.matmul %q, %k {transpose_b = true} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %a0 = weft.add %s0, %strict : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %p0 = weft.softmax %a0 {axis = 1 : i64} : tensor<4x4xf32>
  %o0 = weft.matmul %p0, %v : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>

  %s1 = weft.matmul %q, %k {transpose_b = true} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %p1 = weft.softmax %s1 {axis = 1 : i64} : tensor<4x4xf32>
  %o1 = weft.matmul %p1, %v : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>

  %s2 = weft.matmul %q, %k {transpose_b = true} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %c2 = weft.mul %s2, %x : (tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
  %p2 = weft.softmax %c2 {axis = 1 : i64} : tensor<4x4xf32>
  %o2 = weft.matmul %p2, %v : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>

  %s3 = weft.matmul %q, %k {transpose_b = true} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %p3 = weft.softmax %s3 {axis = 0 : i64} : tensor<4x4xf32>
  %o3 = weft.matmul %p3, %v : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>

  %inf = weft.constant dense<0xFF800000> : tensor<6x4xf32>
  %m4 = weft.trilu %inf {k = -1 : i64} : tensor<6x4xf32>
  %s4 = weft.matmul %q6, %k {transpose_b = true} : (tensor<6x4xf32>, tensor<4x4xf32>) -> tensor<6x4xf32>
  %a4 = weft.add %s4, %m4 : (tensor<6x4xf32>, tensor<6x4xf32>) -> tensor<6x4xf32>
  %p4 = weft.softmax %a4 {axis = 1 : i64} : tensor<6x4xf32>
  %o4 = weft.matmul %p4, %v : (tensor<6x4xf32>, tensor<4x4xf32>) -> tensor<6x4xf32>

  %s5 = weft.matmul %q, %k {transpose_b = true} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %p5 = weft.softmax %s5 {axis = 1 : i64} : tensor<4x4xf32>
  %p5b = weft.cast %p5 : tensor<4x4xf32> to tensor<4x4xbf16>
  %o5 = weft.matmul %p5b, %vb : (tensor<4x4xbf16>, tensor<4x4xbf16>) -> tensor<4x4xbf16>
  return %o0, %o1, %p1, %o2, %o3, %o4, %o5 : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<6x4xf32>, tensor<4x4xbf16>
}
