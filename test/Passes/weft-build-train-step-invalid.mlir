// RUN: weft-opt %s -split-input-file -weft-build-train-step -verify-diagnostics
// RUN: not weft-opt %s -split-input-file -weft-build-train-step="optimizer=adam" 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not weft-opt %s -split-input-file -weft-build-train-step="optimizer=sgd lr=0.1 nesterov=true" 2>&1 | FileCheck %s --check-prefix=NESTEROV
// RUN: not weft-opt %s -split-input-file -weft-build-train-step="lr-schedule=step" 2>&1 | FileCheck %s --check-prefix=SCHEDULE
// RUN: not weft-opt %s -split-input-file -weft-build-train-step="lr-schedule=linear warmup-steps=5 decay-steps=5" 2>&1 | FileCheck %s --check-prefix=DECAY
// RUN: not weft-opt %s -split-input-file -weft-build-train-step="lr-schedule=cosine decay-steps=5 min-lr=0.1" 2>&1 | FileCheck %s --check-prefix=MINLR
// RUN: not weft-opt %s -split-input-file -weft-build-train-step="min-lr=0.0001" 2>&1 | FileCheck %s --check-prefix=MINLR-CONSTANT
// RUN: not weft-opt %s -split-input-file -weft-build-train-step="warmup-steps=-2" 2>&1 | FileCheck %s --check-prefix=WARMUP
// UNKNOWN: unknown optimizer 'adam' (adamw or sgd)
// SCHEDULE: unknown learning-rate schedule 'step' (constant, linear or cosine)
// DECAY: a linear schedule needs decay-steps (5) above warmup-steps (5)
// MINLR: min-lr (1.000000e-01) must lie between 0 and lr (1.000000e-03)
// MINLR-CONSTANT: min-lr is the end of a linear or cosine schedule's decay
// WARMUP: warmup-steps must not be negative
// NESTEROV: nesterov momentum needs momentum > 0 and zero dampening

// expected-error @+1 {{has no 'weft.trainable' list: run weft-autodiff first}}
func.func @main(%loss: tensor<f32>) -> tensor<f32> {
  return %loss : tensor<f32>
}

// -----

// expected-error @+1 {{returns 1 values; weft-autodiff leaves the loss and 1 gradients}}
func.func @main(%loss: tensor<f32>) -> tensor<f32> attributes {weft.trainable = ["w"]} {
  return %loss : tensor<f32>
}
