// RUN: weft-opt %s -weft-pipeline-stages="stages=2 boundaries=l3" -weft-autodiff -weft-annotate-sharding="pp=2 microbatches=4" -weft-partition -weft-microbatch -weft-pipeline="schedule=zb-h1" | grep "weft.matmul" | grep "weft.stage = 0" | FileCheck %s --check-prefix=S0
// RUN: weft-opt %s -weft-pipeline-stages="stages=2 boundaries=l3" -weft-autodiff -weft-annotate-sharding="pp=2 microbatches=4" -weft-partition -weft-microbatch -weft-pipeline="schedule=zb-h1" | grep "weft.matmul" | grep "weft.stage = 1" | grep -v "transpose_b = true, weft.backward" | FileCheck %s --check-prefix=S1

// ZB-H1 on two stages (l1 l2 | l3 l4 and the loss), four microbatches.
// weft-autodiff marks the ops that only make a weight's gradient (the
// transpose_a products) weft.weight_grad: the zero-bubble schedule runs
// them as a unit W of their own, W of microbatch i right before B of i + 1
// (the last at the end), so a stage waiting for B's gradient computes W
// meanwhile, and the gradient travels back through the B's alone (the
// transpose_b products: the gradient carried to the earlier layer).
// Stage 0: F0 F1 B0 F2 W0 B1 F3 W1 B2 W2 B3 W3 (its forward and weight
// units have a product per layer; l1's input needs no gradient, so B has
// one).
// S0: {weft.microbatch = 0 : i64, weft.stage = 0 : i64}
// S0-NEXT: {weft.microbatch = 0 : i64, weft.stage = 0 : i64}
// S0-NEXT: {weft.microbatch = 1 : i64, weft.stage = 0 : i64}
// S0-NEXT: {weft.microbatch = 1 : i64, weft.stage = 0 : i64}
// S0-NEXT: {transpose_b = true, weft.backward, weft.microbatch = 0 : i64, weft.stage = 0 : i64}
// S0-NEXT: {weft.microbatch = 2 : i64, weft.stage = 0 : i64}
// S0-NEXT: {weft.microbatch = 2 : i64, weft.stage = 0 : i64}
// S0-NEXT: {transpose_a = true, weft.backward, weft.microbatch = 0 : i64, weft.stage = 0 : i64, weft.weight_grad}
// S0-NEXT: {transpose_a = true, weft.backward, weft.microbatch = 0 : i64, weft.stage = 0 : i64, weft.weight_grad}
// S0-NEXT: {transpose_b = true, weft.backward, weft.microbatch = 1 : i64, weft.stage = 0 : i64}
// S0-NEXT: {weft.microbatch = 3 : i64, weft.stage = 0 : i64}
// S0-NEXT: {weft.microbatch = 3 : i64, weft.stage = 0 : i64}
// S0-NEXT: {transpose_a = true, weft.backward, weft.microbatch = 1 : i64, weft.stage = 0 : i64, weft.weight_grad}
// S0-NEXT: {transpose_a = true, weft.backward, weft.microbatch = 1 : i64, weft.stage = 0 : i64, weft.weight_grad}
// S0-NEXT: {transpose_b = true, weft.backward, weft.microbatch = 2 : i64, weft.stage = 0 : i64}
// S0-NEXT: {transpose_a = true, weft.backward, weft.microbatch = 2 : i64, weft.stage = 0 : i64, weft.weight_grad}
// S0-NEXT: {transpose_a = true, weft.backward, weft.microbatch = 2 : i64, weft.stage = 0 : i64, weft.weight_grad}
// S0-NEXT: {transpose_b = true, weft.backward, weft.microbatch = 3 : i64, weft.stage = 0 : i64}
// S0-NEXT: {transpose_a = true, weft.backward, weft.microbatch = 3 : i64, weft.stage = 0 : i64, weft.weight_grad}
// S0-NEXT: {transpose_a = true, weft.backward, weft.microbatch = 3 : i64, weft.stage = 0 : i64, weft.weight_grad}
// The last stage: F0 B0 F1 W0 B1 F2 W1 B2 ... (its B's filtered out here).
// S1: {weft.microbatch = 0 : i64, weft.stage = 1 : i64}
// S1-NEXT: {weft.microbatch = 0 : i64, weft.stage = 1 : i64}
// S1-NEXT: {weft.microbatch = 1 : i64, weft.stage = 1 : i64}
// S1-NEXT: {weft.microbatch = 1 : i64, weft.stage = 1 : i64}
// S1-NEXT: {transpose_a = true, weft.backward, weft.microbatch = 0 : i64, weft.stage = 1 : i64, weft.weight_grad}
// S1-NEXT: {transpose_a = true, weft.backward, weft.microbatch = 0 : i64, weft.stage = 1 : i64, weft.weight_grad}
// S1-NEXT: {weft.microbatch = 2 : i64, weft.stage = 1 : i64}
// S1-NEXT: {weft.microbatch = 2 : i64, weft.stage = 1 : i64}
// S1-NEXT: {transpose_a = true, weft.backward, weft.microbatch = 1 : i64, weft.stage = 1 : i64, weft.weight_grad}
// S1-NEXT: {transpose_a = true, weft.backward, weft.microbatch = 1 : i64, weft.stage = 1 : i64, weft.weight_grad}
func.func @main(%x: tensor<8x8xf32> {weft.name = "x"}, %y: tensor<8x8xf32> {weft.name = "y"}) -> (tensor<f32> {weft.name = "loss"}) {
  %w1 = weft.param "l1.weight" : tensor<8x8xf32>
  %w2 = weft.param "l2.weight" : tensor<8x8xf32>
  %w3 = weft.param "l3.weight" : tensor<8x8xf32>
  %w4 = weft.param "l4.weight" : tensor<8x8xf32>
  %0 = weft.matmul %x, %w1 : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32> loc("l1/MatMul")
  %1 = weft.tanh %0 : tensor<8x8xf32> loc("l1/Tanh")
  %2 = weft.matmul %1, %w2 : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32> loc("l2/MatMul")
  %3 = weft.tanh %2 : tensor<8x8xf32> loc("l2/Tanh")
  %4 = weft.matmul %3, %w3 : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32> loc("l3/MatMul")
  %5 = weft.tanh %4 : tensor<8x8xf32> loc("l3/Tanh")
  %6 = weft.matmul %5, %w4 : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32> loc("l4/MatMul")
  %7 = weft.sub %6, %y : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32> loc("loss/Sub")
  %8 = weft.mul %7, %7 : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32> loc("loss/Mul")
  %9 = weft.reduce_mean %8 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<8x8xf32>) -> tensor<f32> loc("loss/Mean")
  return %9 : tensor<f32>
}
