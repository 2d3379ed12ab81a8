// RUN: weft-opt %s -split-input-file -weft-mixed-precision -verify-diagnostics
// RUN: not weft-opt %s -split-input-file -weft-mixed-precision="dtype=f16" 2>&1 | FileCheck %s --check-prefix=DTYPE
// DTYPE: error: mixed precision supports dtype bf16, not 'f16'

// Nothing to run in bf16: a warning, and the program is unchanged.
// expected-warning @+1 {{no f32 matmul or conv to run in bf16; the program stays f32}}
module {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %0 = weft.tanh %x : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
