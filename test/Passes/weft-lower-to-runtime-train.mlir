// RUN: weft-opt %s -weft-lower-to-runtime | FileCheck %s

// A training step: parameters and optimizer state are persistent slots with
// their roles; the update kernels write them in place (no copies), and the
// step counter is incremented in place too.
// CHECK-LABEL: func.func @weft_model_run()
// CHECK-SAME: weftrt.mode = "train"
// CHECK-SAME: weftrt.params = [{name = "w", role = "param", trainable = true, type = tensor<3xf32>}, {name = "weft.step", role = "step", trainable = false, type = tensor<i64>}, {name = "adamw.m.w", role = "optimizer_state", trainable = false, type = tensor<3xf32>}, {name = "adamw.v.w", role = "optimizer_state", trainable = false, type = tensor<3xf32>}]
// CHECK: %[[W:.*]] = weftrt.param 0
// CHECK: weftrt.launch "reduce"
// CHECK: %[[STEP:.*]] = weftrt.param 1
// CHECK: weftrt.launch "binary"(%[[STEP]], %{{.*}}, %[[STEP]])
// CHECK: %[[M:.*]] = weftrt.param 2
// CHECK: %[[V:.*]] = weftrt.param 3
// CHECK: weftrt.launch "adamw"(%[[W]], %{{.*}}, %[[M]], %[[V]], %[[STEP]], %[[W]], %[[M]], %[[V]])
// CHECK-NOT: weftrt.copy
// CHECK: return
func.func @main(%x: tensor<3xf32>) -> (tensor<f32> {weft.name = "loss"}) attributes {weft.trainable = ["w"]} {
  %w = weft.param "w" : tensor<3xf32>
  %d = weft.mul %w, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %loss = weft.reduce_sum %d {axes = array<i64: 0>, keepdims = false} : (tensor<3xf32>) -> tensor<f32>
  %step = weft.param "weft.step" {weft.role = "step"} : tensor<i64>
  %one = weft.constant dense<1> : tensor<i64>
  %t = weft.add %step, %one : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %w2 = weft.param "w" : tensor<3xf32>
  %m = weft.param "adamw.m.w" {weft.role = "optimizer_state"} : tensor<3xf32>
  %v = weft.param "adamw.v.w" {weft.role = "optimizer_state"} : tensor<3xf32>
  %nw, %nm, %nv = weft.adamw_update %w2, %x, %m, %v, %t {beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, lr = 1.0e-3, weight_decay = 0.01} : tensor<3xf32>, tensor<i64>
  weft.param_update "w", %nw : tensor<3xf32>
  weft.param_update "adamw.m.w", %nm : tensor<3xf32>
  weft.param_update "adamw.v.w", %nv : tensor<3xf32>
  weft.param_update "weft.step", %t : tensor<i64>
  return %loss : tensor<f32>
}
