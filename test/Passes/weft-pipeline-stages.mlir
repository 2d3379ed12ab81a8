// RUN: weft-opt %s -weft-pipeline-stages="stages=3" | FileCheck %s
// RUN: weft-opt %s -weft-pipeline-stages="stages=2 boundaries=l3" -weft-autodiff | FileCheck %s --check-prefix=NAMED
// RUN: weft-opt %s -weft-mixed-precision -weft-pipeline-stages="stages=2 boundaries=l3" -weft-autodiff | FileCheck %s --check-prefix=BF16

// Three stages over a 3-layer MLP with its loss: the cuts are layer
// boundaries (one activation crosses: 4x8 f32, 128 bytes) that balance the
// floating-point work of training (1152, 1600, 1826): an op's forward flops
// and one more forward's worth per operand needing a gradient (l1's input
// needs none, so stage 0 also takes act1). Parameters join the stage that reads
// them; the constant 0.5, read by stages 0 and 2, is copied into each.
// CHECK-LABEL: func.func @main
// CHECK-SAME: weft.pipeline_stages = 3 : i64
// CHECK-SAME: weft.stage_cut_bytes = array<i64: 128, 128>
// CHECK-SAME: weft.stage_flops = array<i64: 1152, 1600, 1826>
// CHECK-DAG: %[[W1:.*]] = weft.param "l1.weight" {weft.stage = 0 : i64}
// CHECK-DAG: %[[W2:.*]] = weft.param "l2.weight" {weft.stage = 1 : i64}
// CHECK-DAG: %[[W3:.*]] = weft.param "l3.weight" {weft.stage = 2 : i64}
// CHECK-DAG: %[[H2:.*]] = weft.constant {weft.stage = 2 : i64} dense<5.000000e-01>
// CHECK-DAG: %[[H0:.*]] = weft.constant {weft.stage = 0 : i64} dense<5.000000e-01>
// CHECK: %[[A:.*]] = weft.matmul %{{.*}}, %[[W1]] {weft.stage = 0 : i64}
// CHECK: weft.mul %[[A]], %[[H0]] {weft.stage = 0 : i64}
// CHECK: weft.tanh %{{.*}} {weft.stage = 0 : i64}
// CHECK: weft.matmul %{{.*}}, %[[W2]] {weft.stage = 1 : i64}
// CHECK: weft.tanh %{{.*}} {weft.stage = 1 : i64}
// CHECK: %[[C:.*]] = weft.matmul %{{.*}}, %[[W3]] {weft.stage = 2 : i64}
// CHECK: weft.mul %[[C]], %[[H2]] {weft.stage = 2 : i64}
// CHECK: weft.reduce_mean {{.*}}weft.stage = 2 : i64

// A named boundary ("l3": the first op named l3... or reading a parameter
// named so) starts stage 1 there. weft-autodiff gives every gradient op the
// stage of the op it differentiates (and marks it weft.backward): the seed
// and l3's gradients in stage 1, l1's and l2's in stage 0. The ops that
// only compute a parameter's gradient (the weight products) are also marked
// weft.weight_grad (a zero-bubble schedule runs them later).
// NAMED-LABEL: func.func @main
// NAMED-SAME: weft.stage_flops = array<i64: 2752, 1826>
// NAMED: %[[W3:.*]] = weft.param "l3.weight" {weft.stage = 1 : i64}
// NAMED: weft.tanh {{.*}}weft.stage = 0 : i64
// NAMED: weft.matmul {{.*}}weft.stage = 1 : i64
// NAMED: weft.constant {weft.backward, weft.stage = 1 : i64} dense<1.000000e+00> : tensor<f32>
// NAMED: %[[D3:.*]] = weft.matmul %{{.*}}, %[[W3]] {transpose_b = true, weft.backward, weft.stage = 1 : i64}
// NAMED: %[[G3:.*]] = weft.matmul %{{.*}}, %{{.*}} {transpose_a = true, weft.backward, weft.stage = 1 : i64, weft.weight_grad}
// NAMED: weft.mul %[[D3]], %{{.*}} {weft.backward, weft.stage = 0 : i64}
// NAMED: %[[G2:.*]] = weft.matmul {{.*}} {transpose_a = true, weft.backward, weft.stage = 0 : i64, weft.weight_grad}
// NAMED: %[[G1:.*]] = weft.matmul %arg0, %{{.*}} {transpose_a = true, weft.backward, weft.stage = 0 : i64, weft.weight_grad}
// NAMED: return %{{.*}}, %[[G1]], %[[G2]], %[[G3]]

// In mixed precision a weight reaches its product through a cast to bf16:
// the weight products and the casts of their results back to f32 are still
// weight-gradient work.
// BF16: %[[P3:.*]] = weft.matmul %{{.*}}, %{{.*}} {transpose_a = true, weft.backward, weft.stage = 1 : i64, weft.weight_grad} : (tensor<4x8xbf16>, tensor<4x8xbf16>) -> tensor<8x8xbf16>
// BF16: weft.cast %[[P3]] {weft.backward, weft.stage = 1 : i64, weft.weight_grad} : tensor<8x8xbf16> to tensor<8x8xf32>
// BF16: %[[P2:.*]] = weft.matmul {{.*}} {transpose_a = true, weft.backward, weft.stage = 0 : i64, weft.weight_grad} : (tensor<4x8xbf16>, tensor<4x8xbf16>) -> tensor<8x8xbf16>
// BF16: weft.cast %[[P2]] {weft.backward, weft.stage = 0 : i64, weft.weight_grad}
func.func @main(%x: tensor<4x8xf32> {weft.name = "x"}, %y: tensor<4x8xf32> {weft.name = "y"}) -> (tensor<f32> {weft.name = "loss"}) {
  %w1 = weft.param "l1.weight" : tensor<8x8xf32>
  %w2 = weft.param "l2.weight" : tensor<8x8xf32>
  %w3 = weft.param "l3.weight" : tensor<8x8xf32>
  %half = weft.constant dense<5.000000e-01> : tensor<f32>
  %0 = weft.matmul %x, %w1 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("l1/MatMul")
  %1 = weft.mul %0, %half : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32> loc("l1/Mul")
  %2 = weft.tanh %1 : tensor<4x8xf32> loc("act1")
  %3 = weft.matmul %2, %w2 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("l2/MatMul")
  %4 = weft.tanh %3 : tensor<4x8xf32> loc("act2")
  %5 = weft.matmul %4, %w3 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("l3/MatMul")
  %6 = weft.mul %5, %half : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32> loc("l3/Mul")
  %7 = weft.sub %6, %y : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("loss/Sub")
  %8 = weft.mul %7, %7 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("loss/Mul")
  %9 = weft.reduce_mean %8 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x8xf32>) -> tensor<f32> loc("loss/Mean")
  return %9 : tensor<f32>
}
