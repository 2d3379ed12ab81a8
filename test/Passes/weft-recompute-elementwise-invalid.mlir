// RUN: weft-opt %s -weft-recompute-elementwise="max-ops=-1" -verify-diagnostics

// expected-error @+1 {{weft-recompute-elementwise: max-ops must not be negative, got -1}}
module {
  func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
    return %x : tensor<4x8xf32>
  }
}
