// RUN: weft-opt %s -split-input-file -verify-diagnostics
// The optimizer updates' verifiers: the learning-rate schedule's attributes
// (LrSchedule.h) and SGD's momentum buffer.

func.func @schedule_kind(%p: tensor<4xf32>, %g: tensor<4xf32>, %t: tensor<i64>) -> tensor<4xf32> {
  // expected-error @+1 {{has lr_schedule 'exponential' (constant, linear or cosine)}}
  %0, %1, %2 = weft.adamw_update %p, %g, %p, %p, %t {beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, lr = 1.0e-3 : f64, weight_decay = 0.0 : f64, lr_schedule = "exponential"} : tensor<4xf32>, tensor<i64>
  return %0 : tensor<4xf32>
}

// -----

func.func @decay_before_warmup(%p: tensor<4xf32>, %g: tensor<4xf32>, %t: tensor<i64>) -> tensor<4xf32> {
  // expected-error @+1 {{decays over decay_steps 10, which must exceed warmup_steps 10}}
  %0, %1, %2 = weft.adamw_update %p, %g, %p, %p, %t {beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, lr = 1.0e-3 : f64, weight_decay = 0.0 : f64, lr_schedule = "cosine", warmup_steps = 10 : i64, decay_steps = 10 : i64} : tensor<4xf32>, tensor<i64>
  return %0 : tensor<4xf32>
}

// -----

func.func @negative_warmup(%p: tensor<4xf32>, %g: tensor<4xf32>, %t: tensor<i64>) -> tensor<4xf32> {
  // expected-error @+1 {{has a negative warmup_steps}}
  %0, %1 = weft.sgd_update %p, %g, buffer %p, %t {lr = 0.1 : f64, momentum = 0.9 : f64, warmup_steps = -1 : i64} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<i64>) -> (tensor<4xf32>, tensor<4xf32>)
  return %0 : tensor<4xf32>
}

// -----

func.func @min_ratio(%p: tensor<4xf32>, %g: tensor<4xf32>, %t: tensor<i64>) -> tensor<4xf32> {
  // expected-error @+1 {{has min_lr_ratio 1.500000e+00 outside [0, 1]}}
  %0, %1 = weft.sgd_update %p, %g, buffer %p, %t {lr = 0.1 : f64, momentum = 0.9 : f64, lr_schedule = "linear", decay_steps = 5 : i64, min_lr_ratio = 1.5 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<i64>) -> (tensor<4xf32>, tensor<4xf32>)
  return %0 : tensor<4xf32>
}

// -----

func.func @sgd_buffer(%p: tensor<4xf32>, %g: tensor<4xf32>, %t: tensor<i64>) -> tensor<4xf32> {
  // expected-error @+1 {{needs a momentum buffer exactly when momentum != 0}}
  %0, %1 = weft.sgd_update %p, %g, buffer %p, %t {lr = 0.1 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<i64>) -> (tensor<4xf32>, tensor<4xf32>)
  return %0 : tensor<4xf32>
}
