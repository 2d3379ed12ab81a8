// RUN: weft-opt %s -split-input-file -weft-fuse-elementwise=ignore-stage=true | FileCheck %s
// RUN: weft-opt %s -split-input-file -weft-fuse-elementwise | FileCheck %s --check-prefix=STAGED

// ignore-stage (the planner's profile, where every forward op is its own
// unit): ops of different stages share a group, which takes the last
// member's attributes. Without it the stages stay apart.
// CHECK-LABEL: func.func @units
// CHECK-NEXT: %[[F:.*]] = weft.fused %{{.*}}, %{{.*}} {weft.stage = 2 : i64} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32> {
// CHECK: weft.add
// CHECK-NEXT: weft.relu
// CHECK-NEXT: weft.sigmoid
// CHECK-NEXT: weft.yield
// CHECK-NEXT: }
// CHECK-NEXT: return %[[F]]
// STAGED-LABEL: func.func @units
// STAGED: weft.fused {{.*}} {weft.stage = 0 : i64}
// STAGED: weft.sigmoid %{{.*}} {weft.stage = 2 : i64}
func.func @units(%x: tensor<4x8xf32>, %v: tensor<8xf32>) -> tensor<4x8xf32> {
  %1 = weft.add %x, %v {weft.stage = 0 : i64} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %2 = weft.relu %1 {weft.stage = 0 : i64} : tensor<4x8xf32>
  %3 = weft.sigmoid %2 {weft.stage = 2 : i64} : tensor<4x8xf32>
  return %3 : tensor<4x8xf32>
}

// -----

// The other attributes still separate groups: a forward op and a backward
// op do not fuse, whatever their stages.
// CHECK-LABEL: func.func @phases
// CHECK-NEXT: %[[F:.*]] = weft.fused %{{.*}}, %{{.*}} {weft.stage = 1 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
// CHECK: weft.add
// CHECK-NEXT: weft.relu
// CHECK-NEXT: weft.yield
// CHECK-NEXT: }
// CHECK-NEXT: %[[B:.*]] = weft.neg %[[F]] {weft.backward, weft.stage = 1 : i64}
// CHECK-NEXT: return %[[B]]
func.func @phases(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %1 = weft.add %x, %y {weft.stage = 0 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = weft.relu %1 {weft.stage = 1 : i64} : tensor<4x8xf32>
  %3 = weft.neg %2 {weft.backward, weft.stage = 1 : i64} : tensor<4x8xf32>
  return %3 : tensor<4x8xf32>
}

// -----

// Casts of one value to one type merge across stages too (the first
// stands for the others); without ignore-stage they stay apart.
// CHECK-LABEL: func.func @casts
// CHECK: %[[C:.*]] = weft.cast %{{.*}} {weft.stage = 0 : i64} : tensor<4x8xf32> to tensor<4x8xbf16>
// CHECK-NOT: weft.cast
// CHECK: return %[[C]], %[[C]]
// STAGED-LABEL: func.func @casts
// STAGED-COUNT-2: weft.cast
func.func @casts(%x: tensor<4x8xf32>) -> (tensor<4x8xbf16>, tensor<4x8xbf16>) {
  %0 = weft.cast %x {weft.stage = 0 : i64} : tensor<4x8xf32> to tensor<4x8xbf16>
  %1 = weft.cast %x {weft.stage = 3 : i64} : tensor<4x8xf32> to tensor<4x8xbf16>
  return %0, %1 : tensor<4x8xbf16>, tensor<4x8xbf16>
}
