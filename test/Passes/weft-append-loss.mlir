// RUN: weft-opt %s -split-input-file -weft-append-loss="loss=mse target=y" | FileCheck %s --check-prefix=MSE
// RUN: weft-opt %s -split-input-file -weft-append-loss="loss=cross_entropy target=labels" | FileCheck %s --check-prefix=XENT

// mse against a new target input shaped like the output.
// MSE-LABEL: func.func @main(%arg0: tensor<2x3xf32> {weft.name = "x"}, %arg1: tensor<2x4xf32> {weft.name = "y"}) -> (tensor<f32> {weft.name = "loss"})
// MSE: %[[D:.*]] = weft.sub %{{.*}}, %arg1
// MSE: %[[SQ:.*]] = weft.mul %[[D]], %[[D]]
// MSE: %[[L:.*]] = weft.reduce_mean %[[SQ]] {axes = array<i64: 0, 1>, keepdims = false}
// MSE: return %[[L]] : tensor<f32>

// cross_entropy: labels [N] of i64, mean reduction.
// XENT-LABEL: func.func @main(%arg0: tensor<2x3xf32> {weft.name = "x"}, %arg1: tensor<2xi64> {weft.name = "labels"}) -> (tensor<f32> {weft.name = "loss"})
// XENT: %[[L:.*]] = weft.softmax_cross_entropy %{{.*}}, %arg1 : (tensor<2x4xf32>, tensor<2xi64>) -> tensor<f32>
// XENT: return %[[L]]
func.func @main(%x: tensor<2x3xf32> {weft.name = "x"}) -> (tensor<2x4xf32> {weft.name = "logits"}) {
  %w = weft.param "w" : tensor<3x4xf32>
  %y = weft.matmul %x, %w : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}
