// RUN: weft-opt %s -split-input-file -verify-diagnostics

func.func @main(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>) {
  // expected-error @+1 {{results differ in shape: 'tensor<8xf32>' against 'tensor<4x8xf32>'}}
  %0:2 = weft.fused %x : (tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>) {
  ^bb0(%a: tensor<4x8xf32>):
    %1 = weft.neg %a : tensor<4x8xf32>
    weft.yield %1, %1 : tensor<4x8xf32>, tensor<4x8xf32>
  }
  return %0#0, %0#1 : tensor<4x8xf32>, tensor<8xf32>
}

// -----

func.func @main(%x: tensor<4x8xf32>, %y: tensor<3xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{operand 1 of type 'tensor<3xf32>' does not broadcast to the iteration shape}}
  %0 = weft.fused %x, %y : (tensor<4x8xf32>, tensor<3xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>, %b: tensor<3xf32>):
    %1 = weft.neg %a : tensor<4x8xf32>
    weft.yield %1 : tensor<4x8xf32>
  }
  return %0 : tensor<4x8xf32>
}

// -----

func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = weft.fused %x : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    // expected-error @+1 {{cannot run in a weft.fused body}}
    %1 = weft.softmax %a {axis = 1 : i64} : tensor<4x8xf32>
    weft.yield %1 : tensor<4x8xf32>
  }
  return %0 : tensor<4x8xf32>
}

// -----

func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = weft.fused %x : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    // expected-error @+1 {{must be a splat f32, bf16 or f16 constant that broadcasts to the iteration shape}}
    %c = weft.constant dense<[1.0, 2.0]> : tensor<2xf32>
    %1 = weft.neg %a : tensor<4x8xf32>
    weft.yield %1 : tensor<4x8xf32>
  }
  return %0 : tensor<4x8xf32>
}

// -----

func.func @main(%x: tensor<4x8xf32>, %v: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = weft.fused %x, %v : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>, %b: tensor<8xf32>):
    // expected-error @+1 {{must give an f32, bf16 or f16 tensor of the iteration shape, not 'tensor<8xf32>'}}
    %1 = weft.neg %b : tensor<8xf32>
    %2 = weft.add %a, %1 : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    weft.yield %2 : tensor<4x8xf32>
  }
  return %0 : tensor<4x8xf32>
}

// -----

func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xbf16> {
  // expected-error @+1 {{yields 'tensor<4x8xf32>' for results of type 'tensor<4x8xbf16>'}}
  %0 = weft.fused %x : (tensor<4x8xf32>) -> tensor<4x8xbf16> {
  ^bb0(%a: tensor<4x8xf32>):
    %1 = weft.neg %a : tensor<4x8xf32>
    weft.yield %1 : tensor<4x8xf32>
  }
  return %0 : tensor<4x8xbf16>
}

// -----

func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{body argument 0 has type 'tensor<4x8xbf16>', its operand 'tensor<4x8xf32>'}}
  %0 = weft.fused %x : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xbf16>):
    %1 = weft.cast %a : tensor<4x8xbf16> to tensor<4x8xf32>
    weft.yield %1 : tensor<4x8xf32>
  }
  return %0 : tensor<4x8xf32>
}

// -----

func.func @main(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xbf16> {
  // expected-error @+2 {{inferred type(s) 'tensor<4x8xf32>' are incompatible with return type(s) of operation 'tensor<4x8xbf16>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xbf16>
  return %0 : tensor<4x8xbf16>
}
