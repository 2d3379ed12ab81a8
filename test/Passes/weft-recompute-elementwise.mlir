// RUN: weft-opt %s -split-input-file -weft-recompute-elementwise | FileCheck %s
// RUN: weft-opt %s -split-input-file -weft-recompute-elementwise="ignore-stage=true" | FileCheck %s --check-prefix=IGNORE
// RUN: weft-opt %s -split-input-file -weft-recompute-elementwise="ignore-stage=true max-ops=2" | FileCheck %s --check-prefix=FEW

// GELU as PyTorch exports it, after weft-fuse-elementwise: the forward
// group keeps the pre-activation, x / sqrt(2) and 1 + erf(x / sqrt(2)) in
// f32 for the gradient; the gradient's exp term is a group of its own. The
// gradient group recomputes all three from the bf16 product and the bias
// (2 bytes an element against 12), the exp group joins it (nothing else
// reads it) and the forward group keeps only its bf16 output.
// CHECK-LABEL: func.func @gelu
// CHECK: %[[FWD:.*]] = weft.fused %[[P:.*]], %[[B:.*]] : (tensor<4x8xbf16>, tensor<8xf32>) -> tensor<4x8xbf16> {
// CHECK: weft.erf
// CHECK: weft.yield %{{.*}} : tensor<4x8xbf16>
// CHECK: %[[BWD:.*]] = weft.fused %[[G:.*]], %[[P]], %[[B]] {weft.backward} : (tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<8xf32>) -> tensor<4x8xf32> {
// CHECK-NEXT: ^bb0(%[[AG:.*]]: tensor<4x8xbf16>, %[[AP:.*]]: tensor<4x8xbf16>, %[[AB:.*]]: tensor<8xf32>):
// The pre-activation and x / sqrt(2) are computed once, for all readers.
// CHECK-COUNT-1: weft.cast %[[AP]]
// CHECK-NOT: weft.cast %[[AP]]
// CHECK: weft.exp
// CHECK: weft.erf
// CHECK: weft.yield %{{.*}} : tensor<4x8xf32>
// CHECK-NOT: weft.fused
// CHECK: return %[[FWD]], %[[BWD]]
func.func @gelu(%p: tensor<4x8xbf16>, %b: tensor<8xf32>, %g: tensor<4x8xbf16>) -> (tensor<4x8xbf16>, tensor<4x8xf32>) {
  %f:4 = weft.fused %p, %b : (tensor<4x8xbf16>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xbf16>) {
  ^bb0(%a: tensor<4x8xbf16>, %c: tensor<8xf32>):
    %s2 = weft.constant dense<1.41421354> : tensor<f32>
    %one = weft.constant dense<1.0> : tensor<f32>
    %half = weft.constant dense<0.5> : tensor<f32>
    %0 = weft.cast %a : tensor<4x8xbf16> to tensor<4x8xf32>
    %1 = weft.add %0, %c : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    %2 = weft.div %1, %s2 : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
    %3 = weft.erf %2 : tensor<4x8xf32>
    %4 = weft.add %3, %one : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
    %5 = weft.mul %1, %4 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %6 = weft.mul %5, %half : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
    %7 = weft.cast %6 : tensor<4x8xf32> to tensor<4x8xbf16>
    weft.yield %1, %2, %4, %7 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xbf16>
  }
  %e = weft.fused %f#1 {weft.backward} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%u: tensor<4x8xf32>):
    %k = weft.constant dense<1.12837923> : tensor<f32>
    %0 = weft.mul %u, %u : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %1 = weft.neg %0 : tensor<4x8xf32>
    %2 = weft.exp %1 : tensor<4x8xf32>
    %3 = weft.mul %2, %k : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
    weft.yield %3 : tensor<4x8xf32>
  }
  %d = weft.fused %g, %f#2, %f#0, %e {weft.backward} : (tensor<4x8xbf16>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%dy: tensor<4x8xbf16>, %t: tensor<4x8xf32>, %x: tensor<4x8xf32>, %q: tensor<4x8xf32>):
    %half = weft.constant dense<0.5> : tensor<f32>
    %s2 = weft.constant dense<1.41421354> : tensor<f32>
    %0 = weft.cast %dy : tensor<4x8xbf16> to tensor<4x8xf32>
    %1 = weft.mul %0, %half : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
    %2 = weft.mul %1, %t : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %3 = weft.mul %1, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %4 = weft.mul %3, %q : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %5 = weft.div %4, %s2 : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
    %6 = weft.add %2, %5 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    weft.yield %6 : tensor<4x8xf32>
  }
  return %f#3, %d : tensor<4x8xbf16>, tensor<4x8xf32>
}

// -----

// A residual sum of two f32 tensors read later: recomputing it would read
// 8 bytes an element for 4, and the producer must still write the sum for
// its other reader. Nothing changes.
// CHECK-LABEL: func.func @no_gain
// CHECK: %[[S:.*]]:2 = weft.fused %{{.*}}, %{{.*}} :
// CHECK: weft.fused %[[S]]#0 :
// CHECK: return
func.func @no_gain(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %s:2 = weft.fused %a, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  ^bb0(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>):
    %0 = weft.add %x, %y : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %1 = weft.tanh %0 : tensor<4x8xf32>
    weft.yield %0, %1 : tensor<4x8xf32>, tensor<4x8xf32>
  }
  %t = weft.fused %s#0 : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%x: tensor<4x8xf32>):
    %0 = weft.exp %x : tensor<4x8xf32>
    %1 = weft.neg %0 : tensor<4x8xf32>
    weft.yield %1 : tensor<4x8xf32>
  }
  return %s#0, %s#1, %t : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// A producer whose value is read only by the consumer, at as many bytes
// as it reads: recomputed, and one launch fewer.
// CHECK-LABEL: func.func @same_bytes_one_launch
// CHECK: %[[F:.*]] = weft.fused %{{.*}}, %{{.*}} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK: weft.exp
// CHECK: weft.mul
// CHECK-NOT: weft.fused
// CHECK: return %[[F]]
func.func @same_bytes_one_launch(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e = weft.fused %a : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%x: tensor<4x8xf32>):
    %0 = weft.exp %x : tensor<4x8xf32>
    %1 = weft.neg %0 : tensor<4x8xf32>
    weft.yield %1 : tensor<4x8xf32>
  }
  %m = weft.fused %e, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>):
    %0 = weft.mul %x, %y : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %1 = weft.tanh %0 : tensor<4x8xf32>
    weft.yield %1 : tensor<4x8xf32>
  }
  return %m : tensor<4x8xf32>
}

// -----

// A value of another iteration shape (broadcast along the rows) is not
// recomputed. A value of another pipeline stage is not either, unless the
// planner's profile ignores stages; with max-ops=2 its three-op chain is
// too long as well.
// CHECK-LABEL: func.func @boundaries
// CHECK: %[[F:.*]]:2 = weft.fused %{{.*}} {weft.stage = 0 : i64}
// CHECK: %[[W:.*]] = weft.fused
// CHECK: weft.fused %[[W]], %{{.*}} : (tensor<8xf32>, tensor<4x8xf32>)
// CHECK: weft.fused %[[F]]#0, %{{.*}} {weft.stage = 1 : i64}
// IGNORE-LABEL: func.func @boundaries
// IGNORE: %[[F:.*]] = weft.fused %[[P:[^ ]*]] {weft.stage = 0 : i64} : (tensor<4x8xbf16>) -> tensor<4x8xbf16>
// IGNORE: %[[W:.*]] = weft.fused
// IGNORE: weft.fused %[[W]], %{{.*}} : (tensor<8xf32>, tensor<4x8xf32>)
// IGNORE: weft.fused %{{.*}}, %[[P]] {weft.stage = 1 : i64} : (tensor<4x8xf32>, tensor<4x8xbf16>)
// IGNORE-NEXT: ^bb0
// IGNORE-NEXT: weft.cast
// IGNORE-NEXT: weft.exp
// IGNORE-NEXT: weft.neg
// FEW-LABEL: func.func @boundaries
// FEW: %[[F:.*]]:2 = weft.fused %{{.*}} {weft.stage = 0 : i64}
// FEW: weft.fused %[[F]]#0, %{{.*}} {weft.stage = 1 : i64}
func.func @boundaries(%p: tensor<4x8xbf16>, %v: tensor<8xbf16>, %h: tensor<4x8xf32>) -> (tensor<4x8xbf16>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %f:2 = weft.fused %p {weft.stage = 0 : i64} : (tensor<4x8xbf16>) -> (tensor<4x8xf32>, tensor<4x8xbf16>) {
  ^bb0(%a: tensor<4x8xbf16>):
    %0 = weft.cast %a : tensor<4x8xbf16> to tensor<4x8xf32>
    %1 = weft.exp %0 : tensor<4x8xf32>
    %2 = weft.neg %1 : tensor<4x8xf32>
    %3 = weft.cast %2 : tensor<4x8xf32> to tensor<4x8xbf16>
    weft.yield %2, %3 : tensor<4x8xf32>, tensor<4x8xbf16>
  }
  %w = weft.fused %v : (tensor<8xbf16>) -> tensor<8xf32> {
  ^bb0(%a: tensor<8xbf16>):
    %0 = weft.cast %a : tensor<8xbf16> to tensor<8xf32>
    %1 = weft.exp %0 : tensor<8xf32>
    weft.yield %1 : tensor<8xf32>
  }
  %x = weft.fused %w, %h : (tensor<8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<8xf32>, %b: tensor<4x8xf32>):
    %0 = weft.mul %a, %b : (tensor<8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    weft.yield %0 : tensor<4x8xf32>
  }
  %y = weft.fused %f#0, %h {weft.stage = 1 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>):
    %0 = weft.mul %a, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    weft.yield %0 : tensor<4x8xf32>
  }
  return %f#1, %x, %y : tensor<4x8xbf16>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// The producer keeps a result another op reads; the ops only the
// recomputed value needed leave its body (last first).
// CHECK-LABEL: func.func @prune_body
// CHECK: %[[P:.*]] = weft.fused %{{.*}} : (tensor<4x8xbf16>) -> tensor<4x8xf32> {
// CHECK-NEXT: ^bb0
// CHECK-NEXT: weft.cast
// CHECK-NEXT: weft.exp
// CHECK-NEXT: weft.yield
// CHECK: weft.fused %{{.*}}, %{{.*}} : (tensor<4x8xf32>, tensor<4x8xbf16>) -> tensor<4x8xf32>
// CHECK: weft.tanh
// CHECK-NEXT: weft.sqrt
// CHECK-NEXT: weft.mul
// CHECK: return %[[P]]
func.func @prune_body(%p: tensor<4x8xbf16>, %g: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %f:2 = weft.fused %p : (tensor<4x8xbf16>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  ^bb0(%a: tensor<4x8xbf16>):
    %0 = weft.cast %a : tensor<4x8xbf16> to tensor<4x8xf32>
    %1 = weft.exp %0 : tensor<4x8xf32>
    %2 = weft.tanh %0 : tensor<4x8xf32>
    %3 = weft.sqrt %2 : tensor<4x8xf32>
    weft.yield %1, %3 : tensor<4x8xf32>, tensor<4x8xf32>
  }
  %d = weft.fused %g, %f#1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>):
    %0 = weft.mul %x, %y : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    weft.yield %0 : tensor<4x8xf32>
  }
  return %f#0, %d : tensor<4x8xf32>, tensor<4x8xf32>
}
