// RUN: weft-opt %s -split-input-file -weft-merge-products | FileCheck %s
// RUN: weft-opt %s -split-input-file -weft-merge-products=ignore-stage | FileCheck %s --check-prefix=PROFILE

// A recurrent weight's gradient: one product per step, summed. One product
// of the steps' rows joined along the contracted (batch) dim instead, in
// the sum's order.
// CHECK-LABEL: func.func @recurrence
// CHECK-SAME: (%[[G1:.*]]: tensor<4x64xf32>, %[[G2:.*]]: tensor<4x64xf32>, %[[G3:.*]]: tensor<4x64xf32>, %[[H0:.*]]: tensor<4x16xf32>, %[[H1:.*]]: tensor<4x16xf32>, %[[H2:.*]]: tensor<4x16xf32>)
// CHECK-NEXT: %[[G:.*]] = weft.concat %[[G1]], %[[G2]], %[[G3]] {axis = 0 : i64} : (tensor<4x64xf32>, tensor<4x64xf32>, tensor<4x64xf32>) -> tensor<12x64xf32>
// CHECK-NEXT: %[[H:.*]] = weft.concat %[[H0]], %[[H1]], %[[H2]] {axis = 0 : i64} : (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<12x16xf32>
// CHECK-NEXT: %[[P:.*]] = weft.matmul %[[G]], %[[H]] {transpose_a = true} : (tensor<12x64xf32>, tensor<12x16xf32>) -> tensor<64x16xf32>
// CHECK-NEXT: return %[[P]]
func.func @recurrence(%g1: tensor<4x64xf32>, %g2: tensor<4x64xf32>, %g3: tensor<4x64xf32>,
                      %h0: tensor<4x16xf32>, %h1: tensor<4x16xf32>, %h2: tensor<4x16xf32>) -> tensor<64x16xf32> {
  %p1 = weft.matmul %g1, %h0 {transpose_a = true} : (tensor<4x64xf32>, tensor<4x16xf32>) -> tensor<64x16xf32>
  %p2 = weft.matmul %g2, %h1 {transpose_a = true} : (tensor<4x64xf32>, tensor<4x16xf32>) -> tensor<64x16xf32>
  %s = weft.add %p1, %p2 : (tensor<64x16xf32>, tensor<64x16xf32>) -> tensor<64x16xf32>
  %p3 = weft.matmul %g3, %h2 {transpose_a = true} : (tensor<4x64xf32>, tensor<4x16xf32>) -> tensor<64x16xf32>
  %t = weft.add %s, %p3 : (tensor<64x16xf32>, tensor<64x16xf32>) -> tensor<64x16xf32>
  return %t : tensor<64x16xf32>
}

// -----

// Other transposes join along their own contracted dims; leaves that are
// not products, and a product of another kind, are added to the one
// product; a tree with more than one reader keeps its root.
// CHECK-LABEL: func.func @mixed
// CHECK-SAME: (%[[A:.*]]: tensor<8x3xf32>, %[[B:.*]]: tensor<8x2xf32>, %[[W:.*]]: tensor<5x3xf32>, %[[V:.*]]: tensor<5x2xf32>, %[[X:.*]]: tensor<8x5xf32>, %[[Z:.*]]: tensor<5x5xf32>)
// CHECK-NEXT: %[[Q:.*]] = weft.matmul %[[X]], %[[Z]] : (tensor<8x5xf32>, tensor<5x5xf32>) -> tensor<8x5xf32>
// CHECK-NEXT: %[[L:.*]] = weft.concat %[[A]], %[[B]] {axis = 1 : i64} : (tensor<8x3xf32>, tensor<8x2xf32>) -> tensor<8x5xf32>
// CHECK-NEXT: %[[R:.*]] = weft.concat %[[W]], %[[V]] {axis = 1 : i64} : (tensor<5x3xf32>, tensor<5x2xf32>) -> tensor<5x5xf32>
// CHECK-NEXT: %[[P:.*]] = weft.matmul %[[L]], %[[R]] {transpose_b = true} : (tensor<8x5xf32>, tensor<5x5xf32>) -> tensor<8x5xf32>
// CHECK-NEXT: %[[S1:.*]] = weft.add %[[P]], %[[X]]
// CHECK-NEXT: %[[S2:.*]] = weft.add %[[S1]], %[[Q]]
// CHECK-NEXT: return %[[S2]], %[[S2]]
func.func @mixed(%a: tensor<8x3xf32>, %b: tensor<8x2xf32>, %w: tensor<5x3xf32>, %v: tensor<5x2xf32>,
                 %x: tensor<8x5xf32>, %z: tensor<5x5xf32>) -> (tensor<8x5xf32>, tensor<8x5xf32>) {
  %p1 = weft.matmul %a, %w {transpose_b = true} : (tensor<8x3xf32>, tensor<5x3xf32>) -> tensor<8x5xf32>
  %s = weft.add %p1, %x : (tensor<8x5xf32>, tensor<8x5xf32>) -> tensor<8x5xf32>
  %p2 = weft.matmul %b, %v {transpose_b = true} : (tensor<8x2xf32>, tensor<5x2xf32>) -> tensor<8x5xf32>
  %q = weft.matmul %x, %z : (tensor<8x5xf32>, tensor<5x5xf32>) -> tensor<8x5xf32>
  %t = weft.add %s, %q : (tensor<8x5xf32>, tensor<8x5xf32>) -> tensor<8x5xf32>
  %u = weft.add %t, %p2 : (tensor<8x5xf32>, tensor<8x5xf32>) -> tensor<8x5xf32>
  return %u, %u : tensor<8x5xf32>, tensor<8x5xf32>
}

// -----

// Left alone: a product read outside the sum, products of another step's
// place (a pipeline's microbatch), a broadcasting add, and products whose
// joined operands would move more than the sums (K = 64 rows of 2 + 2).
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: weft.concat
func.func @left_alone(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>, %big1: tensor<64x2xf32>, %big2: tensor<64x2xf32>)
    -> (tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<2x2xf32>, tensor<2x8x8xf32>) {
  %p1 = weft.matmul %a, %a {transpose_a = true} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  %p2 = weft.matmul %b, %b {transpose_a = true} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  %s = weft.add %p1, %p2 : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %m1 = weft.matmul %a, %b {transpose_a = true, weft.microbatch = 0 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  %m2 = weft.matmul %b, %a {transpose_a = true, weft.microbatch = 1 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  %sm = weft.add %m1, %m2 {weft.microbatch = 1 : i64} : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %c1 = weft.matmul %big1, %big1 {transpose_a = true} : (tensor<64x2xf32>, tensor<64x2xf32>) -> tensor<2x2xf32>
  %c2 = weft.matmul %big2, %big2 {transpose_a = true} : (tensor<64x2xf32>, tensor<64x2xf32>) -> tensor<2x2xf32>
  %sc = weft.add %c1, %c2 : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %n1 = weft.matmul %b, %a {transpose_a = true} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  %n2 = weft.matmul %a, %b {transpose_a = true} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  %nb = weft.broadcast_to %n2 : tensor<8x8xf32> to tensor<2x8x8xf32>
  %sb = weft.add %n1, %nb : (tensor<8x8xf32>, tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  return %s, %p1, %sm, %sc, %sb : tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<2x2xf32>, tensor<2x8x8xf32>
}

// -----

// Batched (3-D) products are not joined.
// CHECK-LABEL: func.func @batched
// CHECK-NOT: weft.concat
// CHECK: weft.add
func.func @batched(%a: tensor<2x4x8xf32>, %b: tensor<2x4x8xf32>) -> tensor<2x8x8xf32> {
  %p1 = weft.matmul %a, %a {transpose_a = true} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x8x8xf32>
  %p2 = weft.matmul %b, %b {transpose_a = true} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x8x8xf32>
  %s = weft.add %p1, %p2 : (tensor<2x8x8xf32>, tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  return %s : tensor<2x8x8xf32>
}

// -----

// Products at one place of the step (a microbatch of a pipeline) merge, and
// the new ops take that place.
// CHECK-LABEL: func.func @placed
// CHECK-NEXT: weft.concat %arg0, %arg1 {axis = 0 : i64, weft.microbatch = 1 : i64, weft.stage = 0 : i64}
// CHECK-NEXT: weft.concat %arg1, %arg0 {axis = 0 : i64, weft.microbatch = 1 : i64, weft.stage = 0 : i64}
// CHECK-NEXT: %[[P:.*]] = weft.matmul {{.*}} {transpose_a = true, weft.microbatch = 1 : i64, weft.stage = 0 : i64}
// CHECK-NEXT: return %[[P]]
func.func @placed(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<8x8xf32> {
  %m1 = weft.matmul %a, %b {transpose_a = true, weft.microbatch = 1 : i64, weft.stage = 0 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  %m2 = weft.matmul %b, %a {transpose_a = true, weft.microbatch = 1 : i64, weft.stage = 0 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  %s = weft.add %m1, %m2 {weft.microbatch = 1 : i64, weft.stage = 0 : i64} : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  return %s : tensor<8x8xf32>
}

// -----

// Products in different weft.stage: apart in a program (pipeline stages),
// one product in the planner's profile (ignore-stage; every op its own
// unit there), placed where the sum is.
// CHECK-LABEL: func.func @stages
// CHECK-NOT: weft.concat
// PROFILE-LABEL: func.func @stages
// PROFILE: weft.concat {{.*}}weft.stage = 2 : i64
// PROFILE: weft.concat {{.*}}weft.stage = 2 : i64
// PROFILE: weft.matmul {{.*}}weft.stage = 2 : i64
// PROFILE-NOT: weft.add
func.func @stages(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<8x8xf32> {
  %m1 = weft.matmul %a, %b {transpose_a = true, weft.stage = 0 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  %m2 = weft.matmul %b, %a {transpose_a = true, weft.stage = 1 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  %s = weft.add %m1, %m2 {weft.stage = 2 : i64} : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  return %s : tensor<8x8xf32>
}
