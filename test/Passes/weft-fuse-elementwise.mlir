// RUN: weft-opt %s -split-input-file -weft-fuse-elementwise | FileCheck %s

// A chain becomes one weft.fused: the splat constant an immediate, the
// values read outside (the bias sum, returned) results next to the last.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xbf16>, %[[B:.*]]: tensor<8xf32>, %[[R:.*]]: tensor<4x8xf32>)
// CHECK-NEXT: %[[F:.*]]:2 = weft.fused %[[X]], %[[B]], %[[R]] : (tensor<4x8xbf16>, tensor<8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xbf16>) {
// CHECK-NEXT: ^bb0(%[[A0:.*]]: tensor<4x8xbf16>, %[[A1:.*]]: tensor<8xf32>, %[[A2:.*]]: tensor<4x8xf32>):
// CHECK-NEXT: %[[C:.*]] = weft.constant dense<5.000000e-01> : tensor<f32>
// CHECK-NEXT: %[[W:.*]] = weft.cast %[[A0]] : tensor<4x8xbf16> to tensor<4x8xf32>
// CHECK-NEXT: %[[S:.*]] = weft.add %[[W]], %[[A1]]
// CHECK-NEXT: %[[M:.*]] = weft.mul %[[S]], %[[C]]
// CHECK-NEXT: %[[T:.*]] = weft.tanh %[[M]]
// CHECK-NEXT: %[[Y:.*]] = weft.add %[[T]], %[[A2]]
// CHECK-NEXT: %[[N:.*]] = weft.cast %[[Y]] : tensor<4x8xf32> to tensor<4x8xbf16>
// CHECK-NEXT: weft.yield %[[S]], %[[N]] : tensor<4x8xf32>, tensor<4x8xbf16>
// CHECK-NEXT: }
// CHECK-NEXT: return %[[F]]#0, %[[F]]#1
func.func @main(%x: tensor<4x8xbf16>, %b: tensor<8xf32>, %r: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xbf16>) {
  %c = weft.constant dense<0.5> : tensor<f32>
  %0 = weft.cast %x : tensor<4x8xbf16> to tensor<4x8xf32>
  %1 = weft.add %0, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %2 = weft.mul %1, %c : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %3 = weft.tanh %2 : tensor<4x8xf32>
  %4 = weft.add %3, %r : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %5 = weft.cast %4 : tensor<4x8xf32> to tensor<4x8xbf16>
  return %1, %5 : tensor<4x8xf32>, tensor<4x8xbf16>
}

// -----

// The softmax reads the exp before the add: the add cannot take the exp
// with it (the fused op would sit after the softmax), so it starts a group
// of its own with the neg. A lone op stays as it is.
// CHECK-LABEL: func.func @reader_between
// CHECK: %[[E:.*]] = weft.exp %{{.*}} : tensor<4x8xf32>
// CHECK-NEXT: %[[S:.*]] = weft.softmax %[[E]]
// CHECK-NEXT: %[[F:.*]] = weft.fused %[[E]], %{{.*}} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK: weft.add
// CHECK-NEXT: weft.neg
// CHECK-NEXT: weft.yield
// CHECK: return %[[S]], %[[F]]
func.func @reader_between(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %0 = weft.exp %x : tensor<4x8xf32>
  %1 = weft.softmax %0 {axis = 1 : i64} : tensor<4x8xf32>
  %2 = weft.add %0, %y : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %3 = weft.neg %2 : tensor<4x8xf32>
  return %1, %3 : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Ops of another shape, another stage or an integer type do not join; the
// group of one stage carries its stage.
// CHECK-LABEL: func.func @boundaries
// CHECK: %[[V:.*]] = weft.exp %{{.*}} : tensor<8xf32>
// CHECK-NEXT: %[[F0:.*]] = weft.fused %{{.*}}, %[[V]] {weft.stage = 0 : i64} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32> {
// CHECK: weft.add
// CHECK-NEXT: weft.relu
// CHECK-NEXT: weft.yield
// CHECK-NEXT: }
// CHECK-NEXT: %[[L:.*]] = weft.sigmoid %[[F0]] {weft.stage = 1 : i64}
// CHECK-NEXT: %[[I:.*]] = weft.add %{{.*}}, %{{.*}} : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
// CHECK-NEXT: %[[J:.*]] = weft.neg %[[I]] : tensor<4xi64>
// CHECK-NEXT: return %[[L]], %[[J]]
func.func @boundaries(%x: tensor<4x8xf32>, %v: tensor<8xf32>, %i: tensor<4xi64>) -> (tensor<4x8xf32>, tensor<4xi64>) {
  %0 = weft.exp %v : tensor<8xf32>
  %1 = weft.add %x, %0 {weft.stage = 0 : i64} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %2 = weft.relu %1 {weft.stage = 0 : i64} : tensor<4x8xf32>
  %3 = weft.sigmoid %2 {weft.stage = 1 : i64} : tensor<4x8xf32>
  %4 = weft.add %i, %i : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  %5 = weft.neg %4 : tensor<4xi64>
  return %3, %5 : tensor<4x8xf32>, tensor<4xi64>
}

// -----

// Two chains meeting: the add joins its first operand's group and reads
// the other group's result, which is computed before it.
// CHECK-LABEL: func.func @join
// CHECK: %[[G:.*]] = weft.fused %{{.*}} : (tensor<16xf32>) -> tensor<16xf32>
// CHECK: weft.exp
// CHECK-NEXT: weft.neg
// CHECK: %[[H:.*]] = weft.fused %{{.*}}, %[[G]] : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
// CHECK: weft.log
// CHECK-NEXT: weft.sqrt
// CHECK-NEXT: weft.add
// CHECK: return %[[H]]
func.func @join(%x: tensor<16xf32>, %y: tensor<16xf32>) -> tensor<16xf32> {
  %0 = weft.exp %x : tensor<16xf32>
  %1 = weft.neg %0 : tensor<16xf32>
  %2 = weft.log %y : tensor<16xf32>
  %3 = weft.sqrt %2 : tensor<16xf32>
  %4 = weft.add %3, %1 : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  return %4 : tensor<16xf32>
}

// -----

// A bf16 product widened for a non-fusible reader (the softmax) gives f32
// itself; one widened for a fusible reader stays bf16 and the cast joins
// the reader's group (it reads half the bytes).
// CHECK-LABEL: func.func @widen
// CHECK: %[[P:.*]] = weft.matmul %{{.*}}, %{{.*}} : (tensor<4x8xbf16>, tensor<8x8xbf16>) -> tensor<4x8xf32>
// CHECK-NEXT: %[[S:.*]] = weft.softmax %[[P]]
// CHECK-NEXT: %[[Q:.*]] = weft.matmul %{{.*}}, %{{.*}} : (tensor<4x8xbf16>, tensor<8x8xbf16>) -> tensor<4x8xbf16>
// CHECK-NEXT: %[[F:.*]] = weft.fused %[[Q]], %[[S]] : (tensor<4x8xbf16>, tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK: weft.cast
// CHECK-NEXT: weft.add
// CHECK: return %[[F]]
func.func @widen(%x: tensor<4x8xbf16>, %w: tensor<8x8xbf16>) -> tensor<4x8xf32> {
  %0 = weft.matmul %x, %w : (tensor<4x8xbf16>, tensor<8x8xbf16>) -> tensor<4x8xbf16>
  %1 = weft.cast %0 : tensor<4x8xbf16> to tensor<4x8xf32>
  %2 = weft.softmax %1 {axis = 1 : i64} : tensor<4x8xf32>
  %3 = weft.matmul %x, %w : (tensor<4x8xbf16>, tensor<8x8xbf16>) -> tensor<4x8xbf16>
  %4 = weft.cast %3 : tensor<4x8xbf16> to tensor<4x8xf32>
  %5 = weft.add %4, %2 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %5 : tensor<4x8xf32>
}
