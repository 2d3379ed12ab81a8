// Named boundaries that cannot be: each error names the boundary.
// RUN: not weft-opt %s -weft-pipeline-stages="stages=2 boundaries=nothing" 2>&1 | FileCheck %s --check-prefix=NONE
// NONE: error: stage boundary 'nothing' names no op and no parameter of @main
// RUN: not weft-opt %s -weft-pipeline-stages="stages=3 boundaries=l3,l2" 2>&1 | FileCheck %s --check-prefix=ORDER
// ORDER: error: stage boundary 'l2' (op 'l2/MatMul') does not come after the start of stage 1 (op 'l3/MatMul'); boundaries go in program order, one per stage
// RUN: not weft-opt %s -weft-pipeline-stages="stages=3 boundaries=l2,l2.weight" 2>&1 | FileCheck %s --check-prefix=REPEAT
// REPEAT: error: stage boundary 'l2.weight' (op 'l2/MatMul') does not come after the start of stage 1 (op 'l2/MatMul')
// RUN: not weft-opt %s -weft-pipeline-stages="stages=2 boundaries=l2,l3" 2>&1 | FileCheck %s --check-prefix=COUNT
// COUNT: error: 2 stage boundaries for 2 stages: give one per stage after the first (1)
// RUN: not weft-opt %s -weft-pipeline-stages="stages=2 boundaries=l1" 2>&1 | FileCheck %s --check-prefix=FIRST
// FIRST: error: stage boundary 'l1' (op 'l1/MatMul') does not come after the start of stage 0 (op 'l1/MatMul')
// RUN: not weft-opt %s -weft-pipeline-stages="stages=0" 2>&1 | FileCheck %s --check-prefix=ZERO
// ZERO: error: the number of pipeline stages must be at least 1, got 0
func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %w1 = weft.param "l1.weight" : tensor<8x8xf32>
  %w2 = weft.param "l2.weight" : tensor<8x8xf32>
  %w3 = weft.param "l3.weight" : tensor<8x8xf32>
  %0 = weft.matmul %x, %w1 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("l1/MatMul")
  %1 = weft.matmul %0, %w2 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("l2/MatMul")
  %2 = weft.matmul %1, %w3 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("l3/MatMul")
  return %2 : tensor<4x8xf32>
}
