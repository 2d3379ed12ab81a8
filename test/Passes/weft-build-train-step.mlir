// RUN: weft-opt %s -split-input-file -weft-build-train-step | FileCheck %s
// RUN: weft-opt %s -split-input-file -weft-build-train-step="optimizer=sgd lr=0.1 momentum=0.9 clip-grad-norm=1.0" | FileCheck %s --check-prefix=SGD
// RUN: weft-opt %s -split-input-file -weft-build-train-step="lr=0.01 lr-schedule=cosine warmup-steps=10 decay-steps=100 min-lr=0.001" | FileCheck %s --check-prefix=COSINE
// RUN: weft-opt %s -split-input-file -weft-build-train-step="optimizer=sgd lr=0.1 lr-schedule=constant warmup-steps=3" | FileCheck %s --check-prefix=WARMUP
// RUN: weft-opt %s -split-input-file -weft-build-train-step="lr=0.01 lr-schedule=cosine warmup-steps=10 decay-steps=100 min-lr=0.001" -weft-lower-to-runtime | FileCheck %s --check-prefix=KERNEL

// AdamW (torch defaults, weight decay 1e-2): a step counter, two moments per
// parameter, and every new value stored with param_update; the loss alone is
// returned.
// CHECK-LABEL: func.func @main
// CHECK-SAME: -> (tensor<f32> {weft.name = "loss"})
// CHECK: %[[STEP:.*]] = weft.param "weft.step" {weft.role = "step"} : tensor<i64>
// CHECK: %[[ONE:.*]] = weft.constant dense<1> : tensor<i64>
// CHECK: %[[T:.*]] = weft.add %[[STEP]], %[[ONE]]
// CHECK: %[[W:.*]] = weft.param "w" : tensor<4x2xf32>
// CHECK: %[[M:.*]] = weft.param "adamw.m.w" {weft.role = "optimizer_state"} : tensor<4x2xf32>
// CHECK: %[[V:.*]] = weft.param "adamw.v.w" {weft.role = "optimizer_state"} : tensor<4x2xf32>
// CHECK: %[[P:.*]], %[[NM:.*]], %[[NV:.*]] = weft.adamw_update %[[W]], %arg1, %[[M]], %[[V]], %[[T]] {beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, eps = 1.000000e-08 : f64, lr = 1.000000e-03 : f64, weight_decay = 1.000000e-02 : f64} : tensor<4x2xf32>, tensor<i64>
// CHECK: weft.param_update "w", %[[P]]
// CHECK: weft.param_update "adamw.m.w", %[[NM]]
// CHECK: weft.param_update "adamw.v.w", %[[NV]]
// CHECK: weft.adamw_update
// CHECK: weft.param_update "b"
// CHECK: weft.param_update "weft.step", %[[T]]
// CHECK: return %arg0 : tensor<f32>

// SGD with momentum and clipping: the global norm scales every gradient, one
// momentum buffer per parameter.
// SGD-LABEL: func.func @main
// SGD: weft.reduce_sum
// SGD: weft.add
// SGD: %[[NORM:.*]] = weft.sqrt
// SGD: %[[CLAMP:.*]] = weft.min
// SGD: %[[G:.*]] = weft.mul %arg1, %[[CLAMP]]
// SGD: %[[BUF:.*]] = weft.param "sgd.momentum.w" {weft.role = "optimizer_state"}
// SGD: weft.sgd_update %{{.*}}, %[[G]], buffer %[[BUF]], %{{.*}} {lr = 1.000000e-01 : f64, momentum = 9.000000e-01 : f64}
// SGD: weft.param_update "sgd.momentum.w"
// A learning-rate schedule: every update carries it, the minimum as a ratio
// of lr; the kernels take it after their own attributes (kind 2 = cosine,
// warmup, decay steps, the ratio's double bits).
// COSINE-COUNT-2: weft.adamw_update {{.*}} {beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, decay_steps = 100 : i64, eps = 1.000000e-08 : f64, lr = 1.000000e-02 : f64, lr_schedule = "cosine", min_lr_ratio = 1.000000e-01 : f64, warmup_steps = 10 : i64, weight_decay = 1.000000e-02 : f64}
// WARMUP: weft.sgd_update %{{.*}}, %{{.*}}, %{{.*}} {lr = 1.000000e-01 : f64, warmup_steps = 3 : i64}
// KERNEL: weftrt.launch "adamw"
// KERNEL-SAME: 9, 4576918229304087675, 4606281698874543309, 4607173411600762667, 4487126258331716666, 4576918229304087675, 2, 10, 100, 4591870180066957722>}
func.func @main(%loss: tensor<f32>, %gw: tensor<4x2xf32>, %gb: tensor<2xf32>)
    -> (tensor<f32>, tensor<4x2xf32>, tensor<2xf32>)
    attributes {weft.trainable = ["w", "b"]} {
  return %loss, %gw, %gb : tensor<f32>, tensor<4x2xf32>, tensor<2xf32>
}
