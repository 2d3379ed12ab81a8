// RUN: weft-opt %s -split-input-file -weft-pipeline-stages="stages=4" -verify-diagnostics
// Interleaving needs stages x virtual stages chunks: 2 x 2 of a model with
// one layer boundary cannot be.
// RUN: not weft-opt %s -split-input-file -weft-pipeline-stages="stages=2 virtual-stages=2" 2>&1 | FileCheck %s --check-prefix=CHUNKS
// CHUNKS: error: cannot cut @main into 4 model chunks (pipeline stages x virtual stages): it has 1 layer boundaries
// RUN: not weft-opt %s -split-input-file -weft-pipeline-stages="stages=2 virtual-stages=0" 2>&1 | FileCheck %s --check-prefix=VIRTUAL
// VIRTUAL: error: the number of virtual stages must be at least 1, got 0
// RUN: not weft-opt %s -split-input-file -weft-pipeline-stages="stages=2 virtual-stages=2 boundaries=b" 2>&1 | FileCheck %s --check-prefix=COUNT
// COUNT: error: 1 stage boundaries for 4 model chunks (pipeline stages x virtual stages): give one per stage after the first (3)

// Two layers have one boundary: at most 2 stages.
// expected-error @+1 {{cannot cut @main into 4 pipeline stages: it has 1 layer boundaries (places where exactly one activation crosses), so at most 2 stages; name the stage boundaries to cut elsewhere}}
func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %w1 = weft.param "a" : tensor<8x8xf32>
  %w2 = weft.param "b" : tensor<8x8xf32>
  %0 = weft.matmul %x, %w1 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %1 = weft.matmul %0, %w2 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}
