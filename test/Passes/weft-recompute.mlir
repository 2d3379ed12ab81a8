// RUN: weft-opt %s -weft-autodiff -weft-recompute="mode=full" | FileCheck %s --check-prefix=FULL
// RUN: weft-opt %s -weft-autodiff -weft-recompute="mode=selective" | FileCheck %s --check-prefix=SEL
// RUN: weft-opt %s -weft-autodiff -weft-recompute="mode=none" | FileCheck %s --check-prefix=NONE
// RUN: weft-opt %s -weft-pipeline-stages="stages=2" -weft-autodiff -weft-annotate-sharding="pp=2 microbatches=2" -weft-partition -weft-microbatch -weft-recompute="mode=full" | FileCheck %s --check-prefix=STAGES

// Four layers and a loss. The forward has a layer boundary after nearly
// every op; full recomputation keeps every ~sqrt(n)-th boundary's activation
// (l2's product %[[C1]], l3's tanh %[[C2]]) and recomputes the rest from
// them, each segment right before its backward: the l4 product and the loss
// difference from %[[C2]] before the seed's use, l3's tanh from %[[C1]],
// l1 from the input.
// FULL: %[[A:.*]] = weft.matmul %arg0, %{{.*}} :
// FULL: %[[C1:.*]] = weft.matmul %{{.*}}, %{{.*}} :
// FULL: %[[T3:.*]] = weft.tanh %[[C1]] :
// FULL: %[[C2:.*]] = weft.tanh %{{.*}} :
// FULL: %[[P4:.*]] = weft.matmul %[[C2]], %{{.*}} {weft.backward, weft.recompute}
// FULL-NEXT: %[[D:.*]] = weft.sub %[[P4]], %arg1 {weft.backward, weft.recompute}
// FULL-NEXT: weft.mul %{{.*}}, %[[D]] :
// FULL: weft.tanh %[[C1]] {weft.backward, weft.recompute}
// FULL: %[[R1:.*]] = weft.matmul %arg0, %{{.*}} {weft.backward, weft.recompute}
// FULL-NEXT: weft.tanh %[[R1]] {weft.backward, weft.recompute}
// FULL-NOT: weft.recompute
// FULL: return

// Selective: products stay; the tanh activations and the loss difference
// are made again from them.
// SEL: %[[P1:.*]] = weft.matmul %arg0, %{{.*}} :
// SEL: %[[P2:.*]] = weft.matmul %{{.*}}, %{{.*}} :
// SEL: %[[P3:.*]] = weft.matmul %{{.*}}, %{{.*}} :
// SEL: %[[P4:.*]] = weft.matmul %{{.*}}, %{{.*}} :
// SEL: weft.sub %[[P4]], %arg1 {weft.backward, weft.recompute}
// SEL: weft.tanh %[[P2]] {weft.backward, weft.recompute}
// SEL: weft.tanh %[[P1]] {weft.backward, weft.recompute}
// SEL-NOT: weft.matmul {{.*}}weft.recompute
// SEL: return

// NONE-NOT: weft.recompute

// In a pipeline each stage recomputes its own forward, per microbatch; a
// value from another stage is read as it is.
// STAGES: weft.matmul {{.*}}{weft.backward, weft.microbatch = 0 : i64, weft.recompute, weft.stage = 0 : i64}
// STAGES: weft.matmul {{.*}}{weft.backward, weft.microbatch = 1 : i64, weft.recompute, weft.stage = 0 : i64}
func.func @main(%x: tensor<4x8xf32> {weft.name = "x"}, %y: tensor<4x8xf32> {weft.name = "y"}) -> (tensor<f32> {weft.name = "loss"}) {
  %w1 = weft.param "l1.weight" : tensor<8x8xf32>
  %w2 = weft.param "l2.weight" : tensor<8x8xf32>
  %w3 = weft.param "l3.weight" : tensor<8x8xf32>
  %w4 = weft.param "l4.weight" : tensor<8x8xf32>
  %0 = weft.matmul %x, %w1 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("l1/MatMul")
  %1 = weft.tanh %0 : tensor<4x8xf32> loc("l1/Tanh")
  %2 = weft.matmul %1, %w2 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("l2/MatMul")
  %3 = weft.tanh %2 : tensor<4x8xf32> loc("l2/Tanh")
  %4 = weft.matmul %3, %w3 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("l3/MatMul")
  %5 = weft.tanh %4 : tensor<4x8xf32> loc("l3/Tanh")
  %6 = weft.matmul %5, %w4 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("l4/MatMul")
  %7 = weft.sub %6, %y : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("loss/Sub")
  %8 = weft.mul %7, %7 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("loss/Mul")
  %9 = weft.reduce_mean %8 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x8xf32>) -> tensor<f32> loc("loss/Mean")
  return %9 : tensor<f32>
}
