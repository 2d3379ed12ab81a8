// RUN: weft-opt %s -split-input-file -weft-async-collectives | FileCheck %s
// RUN: weft-opt %s -split-input-file -weft-async-collectives -weft-lower-to-runtime | FileCheck %s --check-prefix=RT

// An all_reduce with work between it and its user starts where it stood and
// is waited for right before the user; one right before its user stays.
// CHECK-LABEL: func.func @main
// CHECK: %[[P:.*]] = weft.all_reduce_start %{{.*}} on @mesh grid_axes = [0] slot = 0 : tensor<4xf32> -> tensor<4xf32>
// CHECK: weft.tanh
// CHECK: weft.exp
// CHECK: %[[R:.*]] = weft.comm_wait %[[P]] slot = 0 : tensor<4xf32>
// CHECK: weft.add %[[R]], %{{.*}}
// CHECK: %[[S:.*]] = shard.all_reduce
// CHECK-NEXT: weft.mul %[[S]]
// The start writes its result buffer, the wait completes it in place.
// RT: weftrt.launch "all_reduce_start"(%[[X:.*]], %[[B:.*]]) {desc = array<i64: 2, 0, 1, 4, 0, 1, 4, 4, 0, 0, 1, 0>}
// RT: weftrt.launch "comm_wait"(%[[B]]) {desc = array<i64: 1, 0, 1, 4, 1, 0>}
// RT: weftrt.launch "binary"(%[[B]],
shard.grid @mesh(shape = 2x1) {weft.mesh_axes = ["dp", "tp"]}
func.func @main(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = shard.all_reduce %x on @mesh grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>
  %1 = weft.tanh %y : tensor<4xf32>
  %2 = weft.exp %1 : tensor<4xf32>
  %3 = weft.add %0, %2 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %4 = shard.all_reduce %y on @mesh grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>
  %5 = weft.mul %4, %4 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %3, %5 : tensor<4xf32>, tensor<4xf32>
}

// -----

// A bucket's unpacking (split, reshapes) moves down to its users, so the
// wait goes there too.
// CHECK-LABEL: func.func @main
// CHECK: %[[P:.*]] = weft.all_reduce_start %{{.*}} slot = 0 : tensor<8xf32> -> tensor<8xf32>
// CHECK: weft.tanh
// CHECK: %[[R:.*]] = weft.comm_wait %[[P]] slot = 0 : tensor<8xf32>
// CHECK: %[[S:.*]]:2 = weft.split %[[R]]
// CHECK: weft.reshape %[[S]]#0 : tensor<4xf32> to tensor<2x2xf32>
shard.grid @mesh(shape = 2x1) {weft.mesh_axes = ["dp", "tp"]}
func.func @main(%x: tensor<8xf32>, %y: tensor<4xf32>) -> (tensor<2x2xf32>, tensor<4xf32>, tensor<4xf32>) {
  %0 = shard.all_reduce %x on @mesh grid_axes = [0] : tensor<8xf32> -> tensor<8xf32>
  %1:2 = weft.split %0 {axis = 0 : i64} : (tensor<8xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  %2 = weft.reshape %1#0 : tensor<4xf32> to tensor<2x2xf32>
  %3 = weft.tanh %y : tensor<4xf32>
  %4 = weft.add %1#1, %3 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %2, %4, %3 : tensor<2x2xf32>, tensor<4xf32>, tensor<4xf32>
}
