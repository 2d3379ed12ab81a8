// RUN: weft-opt %s -split-input-file -verify-diagnostics
// One broken invariant of weft.attention / weft.attention_grad per case.

func.func @head_size(%q: tensor<2x3x4xf32>, %k: tensor<2x5x8xf32>, %v: tensor<2x5x6xf32>) {
  // expected-error @+2 {{'weft.attention' op key must have query's last dim 4, got 'tensor<2x5x8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %o, %lse = weft.attention %q, %k, %v {scale = 1.0 : f64} : (tensor<2x3x4xf32>, tensor<2x5x8xf32>, tensor<2x5x6xf32>) -> (tensor<2x3x6xf32>, tensor<2x3xf32>)
  return
}

// -----

func.func @value_rows(%q: tensor<3x4xf32>, %k: tensor<5x4xf32>, %v: tensor<6x2xf32>) {
  // expected-error @+2 {{'weft.attention' op value must have as many rows as key (5), got 'tensor<6x2xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %o, %lse = weft.attention %q, %k, %v {scale = 1.0 : f64} : (tensor<3x4xf32>, tensor<5x4xf32>, tensor<6x2xf32>) -> (tensor<3x2xf32>, tensor<3xf32>)
  return
}

// -----

func.func @leading(%q: tensor<2x3x4xf32>, %k: tensor<1x5x4xf32>, %v: tensor<1x5x4xf32>) {
  // expected-error @+2 {{'weft.attention' op query, key and value must have the same leading dims}}
  // expected-error @+1 {{failed to infer returned types}}
  %o, %lse = weft.attention %q, %k, %v {scale = 1.0 : f64} : (tensor<2x3x4xf32>, tensor<1x5x4xf32>, tensor<1x5x4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3xf32>)
  return
}

// -----

func.func @dtypes(%q: tensor<3x4xbf16>, %k: tensor<5x4xf32>, %v: tensor<5x4xf32>) {
  // expected-error @+2 {{'weft.attention' op query, key and value must have one element type}}
  // expected-error @+1 {{failed to infer returned types}}
  %o, %lse = weft.attention %q, %k, %v {scale = 1.0 : f64} : (tensor<3x4xbf16>, tensor<5x4xf32>, tensor<5x4xf32>) -> (tensor<3x4xbf16>, tensor<3xf32>)
  return
}

// -----

func.func @rank(%q: tensor<4xf32>, %k: tensor<4xf32>, %v: tensor<4xf32>) {
  // expected-error @+2 {{'weft.attention' op query, key and value must have one rank of at least 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %o, %lse = weft.attention %q, %k, %v {scale = 1.0 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<f32>)
  return
}

// -----

func.func @result_type(%q: tensor<3x4xf32>, %k: tensor<5x4xf32>, %v: tensor<5x2xf32>) {
  // expected-error @+2 {{'weft.attention' op inferred type(s) 'tensor<3x2xf32>', 'tensor<3xf32>' are incompatible with return type(s) of operation 'tensor<3x4xf32>', 'tensor<3xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %o, %lse = weft.attention %q, %k, %v {scale = 1.0 : f64} : (tensor<3x4xf32>, tensor<5x4xf32>, tensor<5x2xf32>) -> (tensor<3x4xf32>, tensor<3xf32>)
  return
}

// -----

func.func @grad_lse(%q: tensor<3x4xf32>, %k: tensor<5x4xf32>, %v: tensor<5x2xf32>, %o: tensor<3x2xf32>, %lse: tensor<3xbf16>, %g: tensor<3x2xf32>) {
  // expected-error @+2 {{'weft.attention_grad' op lse must have the forward result's type 'tensor<3xf32>', got 'tensor<3xbf16>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %dq, %dk, %dv = weft.attention_grad %q, %k, %v, %o, %lse, %g {scale = 0.5 : f64} : (tensor<3x4xf32>, tensor<5x4xf32>, tensor<5x2xf32>, tensor<3x2xf32>, tensor<3xbf16>, tensor<3x2xf32>) -> (tensor<3x4xf32>, tensor<5x4xf32>, tensor<5x2xf32>)
  return
}

// -----

func.func @grad_shape(%q: tensor<3x4xf32>, %k: tensor<5x4xf32>, %v: tensor<5x2xf32>, %o: tensor<3x2xf32>, %lse: tensor<3xf32>, %g: tensor<3x4xf32>) {
  // expected-error @+2 {{'weft.attention_grad' op grad must have the forward result's type 'tensor<3x2xf32>', got 'tensor<3x4xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %dq, %dk, %dv = weft.attention_grad %q, %k, %v, %o, %lse, %g {scale = 0.5 : f64} : (tensor<3x4xf32>, tensor<5x4xf32>, tensor<5x2xf32>, tensor<3x2xf32>, tensor<3xf32>, tensor<3x4xf32>) -> (tensor<3x4xf32>, tensor<5x4xf32>, tensor<5x2xf32>)
  return
}

// -----

func.func @seq_major_heads(%q: tensor<2x8x3x4xf32>, %k: tensor<2x8x2x4xf32>, %v: tensor<2x8x3x4xf32>) {
  // expected-error @+2 {{'weft.attention' op query, key and value must have the same heads (dim 2)}}
  // expected-error @+1 {{failed to infer returned types}}
  %o, %lse = weft.attention %q, %k, %v {scale = 1.0 : f64, seq_major = true} : (tensor<2x8x3x4xf32>, tensor<2x8x2x4xf32>, tensor<2x8x3x4xf32>) -> (tensor<2x8x3x4xf32>, tensor<2x3x8xf32>)
  return
}

// -----

func.func @seq_major_rank(%q: tensor<8x4xf32>, %k: tensor<8x4xf32>, %v: tensor<8x4xf32>) {
  // expected-error @+2 {{'weft.attention' op query, key and value must have one rank of at least 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %o, %lse = weft.attention %q, %k, %v {scale = 1.0 : f64, seq_major = true} : (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<8xf32>)
  return
}
