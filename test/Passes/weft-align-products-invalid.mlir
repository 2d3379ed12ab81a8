// RUN: weft-opt %s -weft-align-products="multiple=1" -verify-diagnostics

// expected-error @+1 {{weft-align-products needs multiple >= 2 and min-dim >= 1, got multiple=1 min-dim=1024}}
module {
  func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
    return %x : tensor<4x8xf32>
  }
}
