// RUN: weft-opt %s -split-input-file -weft-merge-slice-grads | FileCheck %s

// q, k and v's gradients into one packed projection: the two sums of three
// slice gradients become one concat (the slice gradient covering the whole
// input folds away), in the blocks' order along the axis.
// CHECK-LABEL: func.func @packed
// CHECK-SAME: (%[[Q:.*]]: tensor<2x4xf32>, %[[K:.*]]: tensor<2x4xf32>, %[[V:.*]]: tensor<2x4xf32>)
// CHECK-NEXT: %[[C:.*]] = weft.concat %[[Q]], %[[K]], %[[V]] {axis = 1 : i64} : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x12xf32>
// CHECK-NEXT: return %[[C]]
func.func @packed(%q: tensor<2x4xf32>, %k: tensor<2x4xf32>, %v: tensor<2x4xf32>) -> tensor<2x12xf32> {
  %gv = weft.slice_grad %v {starts = array<i64: 0, 8>, steps = array<i64: 1, 1>} : (tensor<2x4xf32>) -> tensor<2x12xf32>
  %gk = weft.slice_grad %k {starts = array<i64: 0, 4>, steps = array<i64: 1, 1>} : (tensor<2x4xf32>) -> tensor<2x12xf32>
  %s = weft.add %gv, %gk : (tensor<2x12xf32>, tensor<2x12xf32>) -> tensor<2x12xf32>
  %gq = weft.slice_grad %q {starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : (tensor<2x4xf32>) -> tensor<2x12xf32>
  %t = weft.add %s, %gq : (tensor<2x12xf32>, tensor<2x12xf32>) -> tensor<2x12xf32>
  return %t : tensor<2x12xf32>
}

// -----

// Two adjacent blocks that do not cover the input: one slice gradient of
// their concat, at the first block's start.
// CHECK-LABEL: func.func @partial
// CHECK-NEXT: %[[C:.*]] = weft.concat %arg0, %arg1 {axis = 0 : i64} : (tensor<2x3xf32>, tensor<1x3xf32>) -> tensor<3x3xf32>
// CHECK-NEXT: %[[G:.*]] = weft.slice_grad %[[C]] {starts = array<i64: 1, 0>, steps = array<i64: 1, 1>} : (tensor<3x3xf32>) -> tensor<5x3xf32>
// CHECK-NEXT: return %[[G]]
func.func @partial(%a: tensor<2x3xf32>, %b: tensor<1x3xf32>) -> tensor<5x3xf32> {
  %ga = weft.slice_grad %a {starts = array<i64: 1, 0>, steps = array<i64: 1, 1>} : (tensor<2x3xf32>) -> tensor<5x3xf32>
  %gb = weft.slice_grad %b {starts = array<i64: 3, 0>, steps = array<i64: 1, 1>} : (tensor<1x3xf32>) -> tensor<5x3xf32>
  %s = weft.add %ga, %gb : (tensor<5x3xf32>, tensor<5x3xf32>) -> tensor<5x3xf32>
  return %s : tensor<5x3xf32>
}

// -----

// Left alone: blocks with a gap between them, overlapping blocks, strided
// slices, blocks that differ in two dims, and a slice gradient read twice.
// CHECK-LABEL: func.func @alone
// CHECK-NOT: weft.concat
// CHECK: return
func.func @alone(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>, %c: tensor<1x2xf32>) -> (tensor<8x3xf32>, tensor<8x3xf32>, tensor<8x3xf32>, tensor<8x3xf32>, tensor<8x3xf32>, tensor<8x3xf32>) {
  %g0 = weft.slice_grad %a {starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : (tensor<2x3xf32>) -> tensor<8x3xf32>
  %g1 = weft.slice_grad %b {starts = array<i64: 3, 0>, steps = array<i64: 1, 1>} : (tensor<2x3xf32>) -> tensor<8x3xf32>
  %gap = weft.add %g0, %g1 : (tensor<8x3xf32>, tensor<8x3xf32>) -> tensor<8x3xf32>
  %g2 = weft.slice_grad %a {starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : (tensor<2x3xf32>) -> tensor<8x3xf32>
  %g3 = weft.slice_grad %b {starts = array<i64: 1, 0>, steps = array<i64: 1, 1>} : (tensor<2x3xf32>) -> tensor<8x3xf32>
  %overlap = weft.add %g2, %g3 : (tensor<8x3xf32>, tensor<8x3xf32>) -> tensor<8x3xf32>
  %g4 = weft.slice_grad %a {starts = array<i64: 0, 0>, steps = array<i64: 2, 1>} : (tensor<2x3xf32>) -> tensor<8x3xf32>
  %g5 = weft.slice_grad %b {starts = array<i64: 4, 0>, steps = array<i64: 1, 1>} : (tensor<2x3xf32>) -> tensor<8x3xf32>
  %strided = weft.add %g4, %g5 : (tensor<8x3xf32>, tensor<8x3xf32>) -> tensor<8x3xf32>
  %g6 = weft.slice_grad %a {starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : (tensor<2x3xf32>) -> tensor<8x3xf32>
  %g7 = weft.slice_grad %c {starts = array<i64: 2, 1>, steps = array<i64: 1, 1>} : (tensor<1x2xf32>) -> tensor<8x3xf32>
  %twodims = weft.add %g6, %g7 : (tensor<8x3xf32>, tensor<8x3xf32>) -> tensor<8x3xf32>
  %g8 = weft.slice_grad %a {starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : (tensor<2x3xf32>) -> tensor<8x3xf32>
  %g9 = weft.slice_grad %b {starts = array<i64: 2, 0>, steps = array<i64: 1, 1>} : (tensor<2x3xf32>) -> tensor<8x3xf32>
  %twice = weft.add %g8, %g9 : (tensor<8x3xf32>, tensor<8x3xf32>) -> tensor<8x3xf32>
  return %gap, %overlap, %strided, %twodims, %twice, %g8 : tensor<8x3xf32>, tensor<8x3xf32>, tensor<8x3xf32>, tensor<8x3xf32>, tensor<8x3xf32>, tensor<8x3xf32>
}
