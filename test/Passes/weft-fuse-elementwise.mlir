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

// The softmax reads the exp before the add, which reads nothing defined
// after the exp: the add and the neg join the exp's group hoisted, and the
// group stays where the exp stood, before the softmax.
// CHECK-LABEL: func.func @reader_between
// CHECK: %[[F:.*]]:2 = weft.fused %{{.*}}, %{{.*}} : (tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
// CHECK: %[[E:.*]] = weft.exp
// CHECK-NEXT: %[[A:.*]] = weft.add %[[E]]
// CHECK-NEXT: %[[N:.*]] = weft.neg %[[A]]
// CHECK-NEXT: weft.yield %[[E]], %[[N]]
// CHECK: %[[S:.*]] = weft.softmax %[[F]]#0
// CHECK: return %[[S]], %[[F]]#1
func.func @reader_between(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %0 = weft.exp %x : tensor<4x8xf32>
  %1 = weft.softmax %0 {axis = 1 : i64} : tensor<4x8xf32>
  %2 = weft.add %0, %y : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %3 = weft.neg %2 : tensor<4x8xf32>
  return %1, %3 : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// The add reads the softmax, defined after the exp: it cannot move above
// the softmax, so it starts a group of its own with the neg. A lone op
// stays as it is.
// CHECK-LABEL: func.func @reader_between_no_hoist
// CHECK: %[[E:.*]] = weft.exp %{{.*}} : tensor<4x8xf32>
// CHECK-NEXT: %[[S:.*]] = weft.softmax %[[E]]
// CHECK-NEXT: %[[F:.*]] = weft.fused %[[E]], %[[S]] : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK: weft.add
// CHECK-NEXT: weft.neg
// CHECK-NEXT: weft.yield
// CHECK: return %[[S]], %[[F]]
func.func @reader_between_no_hoist(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %0 = weft.exp %x : tensor<4x8xf32>
  %1 = weft.softmax %0 {axis = 1 : i64} : tensor<4x8xf32>
  %2 = weft.add %0, %1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %3 = weft.neg %2 : tensor<4x8xf32>
  return %1, %3 : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// A bias gradient: the reduction reads the gradient group's value before
// its bf16 cast, which is hoisted into the group as a second result.
// CHECK-LABEL: func.func @bias_grad_cast
// CHECK: %[[G:.*]]:2 = weft.fused
// CHECK: weft.mul
// CHECK-NEXT: %[[C:.*]] = weft.cast
// CHECK-NEXT: weft.yield %{{.*}}, %[[C]] : tensor<4x8xf32>, tensor<4x8xbf16>
// CHECK-NEXT: }
// CHECK-NEXT: weft.reduce_sum %[[G]]#0
// CHECK-NOT: weft.cast
// CHECK: return %{{.*}}, %[[G]]#1
func.func @bias_grad_cast(%g: tensor<4x8xf32>, %h: tensor<4x8xf32>) -> (tensor<1x8xf32>, tensor<4x8xbf16>) {
  %0 = weft.mul %g, %h : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = weft.reduce_sum %0 {axes = array<i64: 0>} : (tensor<4x8xf32>) -> tensor<1x8xf32>
  %2 = weft.cast %0 : tensor<4x8xf32> to tensor<4x8xbf16>
  return %1, %2 : tensor<1x8xf32>, tensor<4x8xbf16>
}

// -----

// More than eight ops below the group: not hoisted, the cast stays alone.
// CHECK-LABEL: func.func @hoist_too_far
// CHECK: weft.fused
// CHECK-COUNT-9: weft.reduce_sum
// CHECK-NEXT: weft.cast
func.func @hoist_too_far(%g: tensor<4x8xf32>, %h: tensor<4x8xf32>) -> (tensor<1x8xf32>, tensor<4x8xbf16>) {
  %0 = weft.mul %g, %h : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = weft.exp %0 : tensor<4x8xf32>
  %r0 = weft.reduce_sum %1 {axes = array<i64: 0>} : (tensor<4x8xf32>) -> tensor<1x8xf32>
  %r1 = weft.reduce_sum %1 {axes = array<i64: 0>} : (tensor<4x8xf32>) -> tensor<1x8xf32>
  %r2 = weft.reduce_sum %1 {axes = array<i64: 0>} : (tensor<4x8xf32>) -> tensor<1x8xf32>
  %r3 = weft.reduce_sum %1 {axes = array<i64: 0>} : (tensor<4x8xf32>) -> tensor<1x8xf32>
  %r4 = weft.reduce_sum %1 {axes = array<i64: 0>} : (tensor<4x8xf32>) -> tensor<1x8xf32>
  %r5 = weft.reduce_sum %1 {axes = array<i64: 0>} : (tensor<4x8xf32>) -> tensor<1x8xf32>
  %r6 = weft.reduce_sum %1 {axes = array<i64: 0>} : (tensor<4x8xf32>) -> tensor<1x8xf32>
  %r7 = weft.reduce_sum %1 {axes = array<i64: 0>} : (tensor<4x8xf32>) -> tensor<1x8xf32>
  %r8 = weft.reduce_sum %1 {axes = array<i64: 0>} : (tensor<4x8xf32>) -> tensor<1x8xf32>
  %2 = weft.cast %1 : tensor<4x8xf32> to tensor<4x8xbf16>
  return %r8, %2 : tensor<1x8xf32>, tensor<4x8xbf16>
}

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

// -----

// Mixed precision's attention input gradient: each head gradient widens to
// f32 before its head merge, the three are concatenated, the bias gradient
// sums the concat and the next product reads it narrowed again. The
// widenings move below the transposes, reshapes and the concat (the data
// moves in bf16), one widening is left for the sum, and the narrowing of
// it cancels. The key's transpose of a transpose is one.
// CHECK-LABEL: func.func @widen_late
// CHECK-NOT: weft.cast
// CHECK-NOT: array<i64: 0, 1, 3, 2>
// CHECK: weft.transpose %arg1 {permutation = array<i64: 0, 2, 1, 3>} : (tensor<2x4x8x16xbf16>) -> tensor<2x8x4x16xbf16>
// CHECK-NOT: array<i64: 0, 1, 3, 2>
// CHECK: %[[C:.*]] = weft.concat %{{.*}}, %{{.*}}, %{{.*}} {axis = 2 : i64} : (tensor<2x8x64xbf16>, tensor<2x8x64xbf16>, tensor<2x8x64xbf16>) -> tensor<2x8x192xbf16>
// CHECK-NEXT: %[[W:.*]] = weft.cast %[[C]] : tensor<2x8x192xbf16> to tensor<2x8x192xf32>
// CHECK-NEXT: %[[S:.*]] = weft.reduce_sum %[[W]]
// CHECK-NOT: weft.cast
// CHECK: return %[[S]], %[[C]]
func.func @widen_late(%q: tensor<2x4x8x16xbf16>, %k: tensor<2x4x8x16xbf16>, %v: tensor<2x4x8x16xbf16>) -> (tensor<1x1x192xf32>, tensor<2x8x192xbf16>) {
  %kt = weft.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : (tensor<2x4x8x16xbf16>) -> tensor<2x4x16x8xbf16>
  %qw = weft.cast %q : tensor<2x4x8x16xbf16> to tensor<2x4x8x16xf32>
  %kw = weft.cast %kt : tensor<2x4x16x8xbf16> to tensor<2x4x16x8xf32>
  %vw = weft.cast %v : tensor<2x4x8x16xbf16> to tensor<2x4x8x16xf32>
  %q1 = weft.transpose %qw {permutation = array<i64: 0, 2, 1, 3>} : (tensor<2x4x8x16xf32>) -> tensor<2x8x4x16xf32>
  %k1 = weft.transpose %kw {permutation = array<i64: 0, 3, 1, 2>} : (tensor<2x4x16x8xf32>) -> tensor<2x8x4x16xf32>
  %v1 = weft.transpose %vw {permutation = array<i64: 0, 2, 1, 3>} : (tensor<2x4x8x16xf32>) -> tensor<2x8x4x16xf32>
  %q2 = weft.reshape %q1 : tensor<2x8x4x16xf32> to tensor<2x8x64xf32>
  %k2 = weft.reshape %k1 : tensor<2x8x4x16xf32> to tensor<2x8x64xf32>
  %v2 = weft.reshape %v1 : tensor<2x8x4x16xf32> to tensor<2x8x64xf32>
  %c = weft.concat %q2, %k2, %v2 {axis = 2 : i64} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x192xf32>
  %s = weft.reduce_sum %c {axes = array<i64: 0, 1>} : (tensor<2x8x192xf32>) -> tensor<1x1x192xf32>
  %n = weft.cast %c : tensor<2x8x192xf32> to tensor<2x8x192xbf16>
  return %s, %n : tensor<1x1x192xf32>, tensor<2x8x192xbf16>
}

// -----

// A widening read twice stays where it is (moving it would widen twice),
// and so does a concat with an input that is no widening.
// CHECK-LABEL: func.func @widen_stays
// CHECK: %[[W:.*]] = weft.cast %{{.*}} : tensor<4x8xbf16> to tensor<4x8xf32>
// CHECK-NEXT: weft.transpose %[[W]] {{.*}} : (tensor<4x8xf32>) -> tensor<8x4xf32>
// CHECK: %[[X:.*]] = weft.cast %{{.*}} : tensor<4x8xbf16> to tensor<4x8xf32>
// CHECK-NEXT: weft.concat %[[X]], %{{.*}} {axis = 0 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
func.func @widen_stays(%a: tensor<4x8xbf16>, %b: tensor<4x8xbf16>, %f: tensor<4x8xf32>) -> (tensor<8x4xf32>, tensor<1x8xf32>, tensor<8x8xf32>) {
  %w = weft.cast %a : tensor<4x8xbf16> to tensor<4x8xf32>
  %t = weft.transpose %w {permutation = array<i64: 1, 0>} : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %s = weft.reduce_sum %w {axes = array<i64: 0>} : (tensor<4x8xf32>) -> tensor<1x8xf32>
  %x = weft.cast %b : tensor<4x8xbf16> to tensor<4x8xf32>
  %c = weft.concat %x, %f {axis = 0 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  return %t, %s, %c : tensor<8x4xf32>, tensor<1x8xf32>, tensor<8x8xf32>
}
