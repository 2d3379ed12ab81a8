// RUN: weft-opt %s -split-input-file | weft-opt -split-input-file | FileCheck %s
// RUN: weft-opt %s -split-input-file -weft-lower-to-runtime | FileCheck %s --check-prefix=KERNEL

// weft.attention and weft.attention_grad round-trip and lower to their
// kernels with KernelABI.h's layout: the tensors (dtype, rank, dims), then
// the attribute count, scale as the bits of a double (0.5 here) and causal.

// CHECK-LABEL: func.func @main
// CHECK: %{{.*}}, %{{.*}} = weft.attention %{{.*}}, %{{.*}}, %{{.*}} {causal = true, scale = 5.000000e-01 : f64} : (tensor<2x3x4xbf16>, tensor<2x5x4xbf16>, tensor<2x5x6xbf16>) -> (tensor<2x3x6xbf16>, tensor<2x3xf32>)
// KERNEL: weftrt.launch "attention"(%{{.*}}) {desc = array<i64: 5, 2, 3, 2, 3, 4, 2, 3, 2, 5, 4, 2, 3, 2, 5, 6, 2, 3, 2, 3, 6, 0, 2, 2, 3, 2, 4602678819172646912, 1>}
func.func @main(%q: tensor<2x3x4xbf16>, %k: tensor<2x5x4xbf16>, %v: tensor<2x5x6xbf16>) -> (tensor<2x3x6xbf16>, tensor<2x3xf32>) {
  %o, %lse = weft.attention %q, %k, %v {scale = 0.5 : f64, causal = true} : (tensor<2x3x4xbf16>, tensor<2x5x4xbf16>, tensor<2x5x6xbf16>) -> (tensor<2x3x6xbf16>, tensor<2x3xf32>)
  return %o, %lse : tensor<2x3x6xbf16>, tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @main
// CHECK: %{{.*}}, %{{.*}}, %{{.*}} = weft.attention_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {scale = 5.000000e-01 : f64} : (tensor<3x4xf32>, tensor<5x4xf32>, tensor<5x2xf32>, tensor<3x2xf32>, tensor<3xf32>, tensor<3x2xf32>) -> (tensor<3x4xf32>, tensor<5x4xf32>, tensor<5x2xf32>)
// KERNEL: weftrt.launch "attention_grad"(%{{.*}}) {desc = array<i64: 9, 0, 2, 3, 4, 0, 2, 5, 4, 0, 2, 5, 2, 0, 2, 3, 2, 0, 1, 3, 0, 2, 3, 2, 0, 2, 3, 4, 0, 2, 5, 4, 0, 2, 5, 2, 2, 4602678819172646912, 0>}
func.func @main(%q: tensor<3x4xf32>, %k: tensor<5x4xf32>, %v: tensor<5x2xf32>, %o: tensor<3x2xf32>, %lse: tensor<3xf32>, %g: tensor<3x2xf32>) -> (tensor<3x4xf32>, tensor<5x4xf32>, tensor<5x2xf32>) {
  %dq, %dk, %dv = weft.attention_grad %q, %k, %v, %o, %lse, %g {scale = 0.5 : f64} : (tensor<3x4xf32>, tensor<5x4xf32>, tensor<5x2xf32>, tensor<3x2xf32>, tensor<3xf32>, tensor<3x2xf32>) -> (tensor<3x4xf32>, tensor<5x4xf32>, tensor<5x2xf32>)
  return %dq, %dk, %dv : tensor<3x4xf32>, tensor<5x4xf32>, tensor<5x2xf32>
}

// -----

// Seq-major: [B, S, H, D] operands, lse [B, H, S]; the kernel gets a third
// attribute, 1. Its gradient carries the layout too.
// CHECK-LABEL: func.func @main
// CHECK: weft.attention %{{.*}}, %{{.*}}, %{{.*}} {scale = 5.000000e-01 : f64, seq_major = true} : (tensor<2x5x3x4xf32>, tensor<2x7x3x4xf32>, tensor<2x7x3x6xf32>) -> (tensor<2x5x3x6xf32>, tensor<2x3x5xf32>)
// CHECK: weft.attention_grad {{.*}} {scale = 5.000000e-01 : f64, seq_major = true}
// KERNEL: weftrt.launch "attention"(%{{.*}}) {desc = array<i64: 5, 0, 4, 2, 5, 3, 4, 0, 4, 2, 7, 3, 4, 0, 4, 2, 7, 3, 6, 0, 4, 2, 5, 3, 6, 0, 3, 2, 3, 5, 3, 4602678819172646912, 0, 1>}
// KERNEL: weftrt.launch "attention_grad"(%{{.*}}) {desc = array<i64: 9, {{.*}}, 3, 4602678819172646912, 0, 1>}
func.func @main(%q: tensor<2x5x3x4xf32>, %k: tensor<2x7x3x4xf32>, %v: tensor<2x7x3x6xf32>, %g: tensor<2x5x3x6xf32>) -> (tensor<2x5x3x4xf32>, tensor<2x7x3x4xf32>, tensor<2x7x3x6xf32>) {
  %o, %lse = weft.attention %q, %k, %v {scale = 0.5 : f64, seq_major = true} : (tensor<2x5x3x4xf32>, tensor<2x7x3x4xf32>, tensor<2x7x3x6xf32>) -> (tensor<2x5x3x6xf32>, tensor<2x3x5xf32>)
  %dq, %dk, %dv = weft.attention_grad %q, %k, %v, %o, %lse, %g {scale = 0.5 : f64, seq_major = true} : (tensor<2x5x3x4xf32>, tensor<2x7x3x4xf32>, tensor<2x7x3x6xf32>, tensor<2x5x3x6xf32>, tensor<2x3x5xf32>, tensor<2x5x3x6xf32>) -> (tensor<2x5x3x4xf32>, tensor<2x7x3x4xf32>, tensor<2x7x3x6xf32>)
  return %dq, %dk, %dv : tensor<2x5x3x4xf32>, tensor<2x7x3x4xf32>, tensor<2x7x3x6xf32>
}
