// RUN: weft-opt %s -split-input-file -weft-recompute="mode=full" -verify-diagnostics
// RUN: not weft-opt %s -split-input-file -weft-recompute="mode=most" 2>&1 | FileCheck %s --check-prefix=MODE
// MODE: error: unknown recompute mode 'most' (none, selective or full)

// expected-error @+1 {{recomputation needs a training step: @main's first result is not a loss}}
func.func @main(%x: tensor<4xi64>) -> tensor<4xi64> {
  return %x : tensor<4xi64>
}

// -----

// expected-error @+1 {{no single-block function 'main' to recompute in}}
module {
  func.func @other(%x: tensor<4xf32>) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
}
