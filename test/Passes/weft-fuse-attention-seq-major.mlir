// RUN: weft-opt %s -split-input-file -weft-fuse-attention="seq-major=true" | FileCheck %s
// RUN: weft-opt %s -split-input-file -weft-fuse-attention | FileCheck %s --check-prefix=HEADS

// A GPT block's attention in mixed precision: q, k and v split into heads
// from [B, S, H, D] by transposes (the key's to [B, H, D, S]), cast to bf16,
// and the result widened and merged back. Seq-major, the attention reads
// the casts of the untransposed tensors and its widened result is the
// merged one: no transpose is left.
// CHECK-LABEL: func.func @gpt
// CHECK-SAME: (%[[Q:.*]]: tensor<2x8x3x4xf32>, %[[K:.*]]: tensor<2x8x3x4xf32>, %[[V:.*]]: tensor<2x8x3x4xf32>)
// CHECK-NOT: weft.transpose
// CHECK-DAG: %[[QB:.*]] = weft.cast %[[Q]] : tensor<2x8x3x4xf32> to tensor<2x8x3x4xbf16>
// CHECK-DAG: %[[KB:.*]] = weft.cast %[[K]] : tensor<2x8x3x4xf32> to tensor<2x8x3x4xbf16>
// CHECK-DAG: %[[VB:.*]] = weft.cast %[[V]] : tensor<2x8x3x4xf32> to tensor<2x8x3x4xbf16>
// CHECK: %[[O:.*]], %[[L:.*]] = weft.attention %[[QB]], %[[KB]], %[[VB]] {causal = true, scale = 5.000000e-01 : f64, seq_major = true} : (tensor<2x8x3x4xbf16>, tensor<2x8x3x4xbf16>, tensor<2x8x3x4xbf16>) -> (tensor<2x8x3x4xbf16>, tensor<2x3x8xf32>)
// CHECK-NEXT: %[[W:.*]] = weft.cast %[[O]] : tensor<2x8x3x4xbf16> to tensor<2x8x3x4xf32>
// CHECK-NOT: weft.transpose
// CHECK: return %[[W]]
// Without seq-major the transposes stay.
// HEADS-LABEL: func.func @gpt
// HEADS: weft.attention {{.*}} {causal = true, scale = 5.000000e-01 : f64} : (tensor<2x3x8x4xbf16>, tensor<2x3x8x4xbf16>, tensor<2x3x8x4xbf16>)
// HEADS: weft.transpose
func.func @gpt(%q: tensor<2x8x3x4xf32>, %k: tensor<2x8x3x4xf32>, %v: tensor<2x8x3x4xf32>) -> tensor<2x8x3x4xf32> {
  %big = weft.constant dense<-1.0e9> : tensor<8x8xf32>
  %half = weft.constant dense<0.5> : tensor<f32>
  %qt = weft.transpose %q {permutation = array<i64: 0, 2, 1, 3>} : (tensor<2x8x3x4xf32>) -> tensor<2x3x8x4xf32>
  %kt = weft.transpose %k {permutation = array<i64: 0, 2, 3, 1>} : (tensor<2x8x3x4xf32>) -> tensor<2x3x4x8xf32>
  %vt = weft.transpose %v {permutation = array<i64: 0, 2, 1, 3>} : (tensor<2x8x3x4xf32>) -> tensor<2x3x8x4xf32>
  %qb = weft.cast %qt : tensor<2x3x8x4xf32> to tensor<2x3x8x4xbf16>
  %kb = weft.cast %kt : tensor<2x3x4x8xf32> to tensor<2x3x4x8xbf16>
  %vb = weft.cast %vt : tensor<2x3x8x4xf32> to tensor<2x3x8x4xbf16>
  %s = weft.matmul %qb, %kb : (tensor<2x3x8x4xbf16>, tensor<2x3x4x8xbf16>) -> tensor<2x3x8x8xbf16>
  %sf = weft.cast %s : tensor<2x3x8x8xbf16> to tensor<2x3x8x8xf32>
  %ss = weft.mul %sf, %half : (tensor<2x3x8x8xf32>, tensor<f32>) -> tensor<2x3x8x8xf32>
  %m = weft.trilu %big {k = 1 : i64} : tensor<8x8xf32>
  %a = weft.add %ss, %m : (tensor<2x3x8x8xf32>, tensor<8x8xf32>) -> tensor<2x3x8x8xf32>
  %p = weft.softmax %a {axis = 3 : i64} : tensor<2x3x8x8xf32>
  %pb = weft.cast %p : tensor<2x3x8x8xf32> to tensor<2x3x8x8xbf16>
  %o = weft.matmul %pb, %vb : (tensor<2x3x8x8xbf16>, tensor<2x3x8x4xbf16>) -> tensor<2x3x8x4xbf16>
  %of = weft.cast %o : tensor<2x3x8x4xbf16> to tensor<2x3x8x4xf32>
  %merged = weft.transpose %of {permutation = array<i64: 0, 2, 1, 3>} : (tensor<2x3x8x4xf32>) -> tensor<2x8x3x4xf32>
  return %merged : tensor<2x8x3x4xf32>
}

// -----

// f32, the result read by the merge and by something else: the merge reads
// the seq-major result, the other reader a transpose of it to [B, H, S, D].
// CHECK-LABEL: func.func @other_reader
// CHECK-SAME: (%[[Q:.*]]: tensor<2x8x3x4xf32>, %[[K:.*]]: tensor<2x8x3x4xf32>, %[[V:.*]]: tensor<2x8x3x4xf32>)
// CHECK: %[[O:.*]], %{{.*}} = weft.attention %[[Q]], %[[K]], %[[V]] {scale = 1.000000e+00 : f64, seq_major = true}
// CHECK-NEXT: %[[T:.*]] = weft.transpose %[[O]] {permutation = array<i64: 0, 2, 1, 3>} : (tensor<2x8x3x4xf32>) -> tensor<2x3x8x4xf32>
// CHECK: return %[[O]], %[[T]]
func.func @other_reader(%q: tensor<2x8x3x4xf32>, %k: tensor<2x8x3x4xf32>, %v: tensor<2x8x3x4xf32>) -> (tensor<2x8x3x4xf32>, tensor<2x3x8x4xf32>) {
  %qt = weft.transpose %q {permutation = array<i64: 0, 2, 1, 3>} : (tensor<2x8x3x4xf32>) -> tensor<2x3x8x4xf32>
  %kt = weft.transpose %k {permutation = array<i64: 0, 2, 1, 3>} : (tensor<2x8x3x4xf32>) -> tensor<2x3x8x4xf32>
  %vt = weft.transpose %v {permutation = array<i64: 0, 2, 1, 3>} : (tensor<2x8x3x4xf32>) -> tensor<2x3x8x4xf32>
  %s = weft.matmul %qt, %kt {transpose_b = true} : (tensor<2x3x8x4xf32>, tensor<2x3x8x4xf32>) -> tensor<2x3x8x8xf32>
  %p = weft.softmax %s {axis = 3 : i64} : tensor<2x3x8x8xf32>
  %o = weft.matmul %p, %vt : (tensor<2x3x8x8xf32>, tensor<2x3x8x4xf32>) -> tensor<2x3x8x4xf32>
  %merged = weft.transpose %o {permutation = array<i64: 0, 2, 1, 3>} : (tensor<2x3x8x4xf32>) -> tensor<2x8x3x4xf32>
  return %merged, %o : tensor<2x8x3x4xf32>, tensor<2x3x8x4xf32>
}

// -----

// The values come in as [B, H, S, D] already (no transpose to undo): the
// attention stays as it is, with the query's and key's transposes.
// CHECK-LABEL: func.func @values_not_split
// CHECK: weft.transpose
// CHECK: weft.attention {{.*}} {scale = 1.000000e+00 : f64} : (tensor<2x3x8x4xf32>
// CHECK-NOT: seq_major
func.func @values_not_split(%q: tensor<2x8x3x4xf32>, %k: tensor<2x8x3x4xf32>, %v: tensor<2x3x8x4xf32>) -> tensor<2x3x8x4xf32> {
  %qt = weft.transpose %q {permutation = array<i64: 0, 2, 1, 3>} : (tensor<2x8x3x4xf32>) -> tensor<2x3x8x4xf32>
  %kt = weft.transpose %k {permutation = array<i64: 0, 2, 1, 3>} : (tensor<2x8x3x4xf32>) -> tensor<2x3x8x4xf32>
  %s = weft.matmul %qt, %kt {transpose_b = true} : (tensor<2x3x8x4xf32>, tensor<2x3x8x4xf32>) -> tensor<2x3x8x8xf32>
  %p = weft.softmax %s {axis = 3 : i64} : tensor<2x3x8x8xf32>
  %o = weft.matmul %p, %v : (tensor<2x3x8x8xf32>, tensor<2x3x8x4xf32>) -> tensor<2x3x8x4xf32>
  return %o : tensor<2x3x8x4xf32>
}
