// RUN: weft-opt %s -weft-pipeline-stages="stages=2 virtual-stages=2 boundaries=l2,l3,l4" -weft-autodiff -weft-annotate-sharding="pp=2 microbatches=4" -weft-partition -weft-microbatch -weft-pipeline="schedule=interleaved" | FileCheck %s
// RUN: weft-opt %s -weft-pipeline-stages="stages=2 virtual-stages=2 boundaries=l2,l3,l4" -weft-autodiff -weft-annotate-sharding="pp=2 microbatches=4" -weft-partition -weft-microbatch -weft-pipeline="schedule=interleaved" | grep "weft.matmul" | grep -v transpose_b | grep "weft.stage = 0" | FileCheck %s --check-prefix=S0
// RUN: weft-opt %s -weft-pipeline-stages="stages=2 virtual-stages=2 boundaries=l2,l3,l4" -weft-autodiff -weft-annotate-sharding="pp=2 microbatches=4" -weft-partition -weft-microbatch -weft-pipeline="schedule=interleaved" | grep "weft.matmul" | grep -v transpose_b | grep "weft.stage = 1" | FileCheck %s --check-prefix=S1

// Interleaved 1F1B: two stages, two chunks each (four layers, one per
// chunk), four microbatches. Chunk c runs on stage c mod 2, and its ops are
// marked with their chunk on that stage (c / 2).
// CHECK: weft.param "l1.weight" {weft.chunk = 0 : i64, weft.stage = 0 : i64}
// CHECK: weft.param "l2.weight" {weft.chunk = 0 : i64, weft.stage = 1 : i64}
// CHECK: weft.param "l3.weight" {weft.chunk = 1 : i64, weft.stage = 0 : i64}
// CHECK: weft.param "l4.weight" {weft.chunk = 1 : i64, weft.stage = 1 : i64}
// Activations cross between stages both ways (chunk 0 of stage 1, the
// model's second chunk, sends to chunk 1 of stage 0), gradients too.
// CHECK: weft.send_start %{{.*}} to 1 {{.*}} {weft.chunk = 0 : i64, weft.microbatch = 0 : i64, weft.stage = 0 : i64}
// CHECK: weft.send_start %{{.*}} to 0 {{.*}} {weft.chunk = 0 : i64, weft.microbatch = 0 : i64, weft.stage = 1 : i64}

// Each stage's units (one forward matmul, one weight-gradient matmul per
// unit): F = forward, B = backward, cK = the stage's chunk, mK = microbatch.
// Stage 0 warms up with 2(P-1-s) + (V-1)P = 4 forwards, groups of P = 2
// microbatches going through chunk 0 then chunk 1 (backwards in reverse
// chunk order), then alternates; stage 1 warms up with 2.
// S0: {weft.chunk = 0 : i64, weft.microbatch = 0 : i64
// S0-NEXT: {weft.chunk = 0 : i64, weft.microbatch = 1 : i64
// S0-NEXT: {weft.chunk = 1 : i64, weft.microbatch = 0 : i64
// S0-NEXT: {weft.chunk = 1 : i64, weft.microbatch = 1 : i64
// S0-NEXT: {weft.chunk = 0 : i64, weft.microbatch = 2 : i64
// S0-NEXT: {transpose_a = true, weft.backward, weft.chunk = 1 : i64, weft.microbatch = 0 : i64
// S0-NEXT: {weft.chunk = 0 : i64, weft.microbatch = 3 : i64
// S0-NEXT: {transpose_a = true, weft.backward, weft.chunk = 1 : i64, weft.microbatch = 1 : i64
// S0-NEXT: {weft.chunk = 1 : i64, weft.microbatch = 2 : i64
// S0-NEXT: {transpose_a = true, weft.backward, weft.chunk = 0 : i64, weft.microbatch = 0 : i64
// S0-NEXT: {weft.chunk = 1 : i64, weft.microbatch = 3 : i64
// S0-NEXT: {transpose_a = true, weft.backward, weft.chunk = 0 : i64, weft.microbatch = 1 : i64
// S0-NEXT: {transpose_a = true, weft.backward, weft.chunk = 1 : i64, weft.microbatch = 2 : i64
// S0-NEXT: {transpose_a = true, weft.backward, weft.chunk = 1 : i64, weft.microbatch = 3 : i64
// S0-NEXT: {transpose_a = true, weft.backward, weft.chunk = 0 : i64, weft.microbatch = 2 : i64
// S0-NEXT: {transpose_a = true, weft.backward, weft.chunk = 0 : i64, weft.microbatch = 3 : i64
// S1: {weft.chunk = 0 : i64, weft.microbatch = 0 : i64
// S1-NEXT: {weft.chunk = 0 : i64, weft.microbatch = 1 : i64
// S1-NEXT: {weft.chunk = 1 : i64, weft.microbatch = 0 : i64
// S1-NEXT: {transpose_a = true, weft.backward, weft.chunk = 1 : i64, weft.microbatch = 0 : i64
// S1-NEXT: {weft.chunk = 1 : i64, weft.microbatch = 1 : i64
// S1-NEXT: {transpose_a = true, weft.backward, weft.chunk = 1 : i64, weft.microbatch = 1 : i64
// S1-NEXT: {weft.chunk = 0 : i64, weft.microbatch = 2 : i64
// S1-NEXT: {transpose_a = true, weft.backward, weft.chunk = 0 : i64, weft.microbatch = 0 : i64
// S1-NEXT: {weft.chunk = 0 : i64, weft.microbatch = 3 : i64
// S1-NEXT: {transpose_a = true, weft.backward, weft.chunk = 0 : i64, weft.microbatch = 1 : i64
// S1-NEXT: {weft.chunk = 1 : i64, weft.microbatch = 2 : i64
// S1-NEXT: {transpose_a = true, weft.backward, weft.chunk = 1 : i64, weft.microbatch = 2 : i64
// S1-NEXT: {weft.chunk = 1 : i64, weft.microbatch = 3 : i64
// S1-NEXT: {transpose_a = true, weft.backward, weft.chunk = 1 : i64, weft.microbatch = 3 : i64
// S1-NEXT: {transpose_a = true, weft.backward, weft.chunk = 0 : i64, weft.microbatch = 2 : i64
// S1-NEXT: {transpose_a = true, weft.backward, weft.chunk = 0 : i64, weft.microbatch = 3 : i64
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
