// RUN: weft-opt %s -weft-lower-to-runtime | FileCheck %s

// Point-to-point transfers between pipeline stages become the runtime's send
// and recv kernels (KernelABI.h: peer, tag, then the mesh axes). A send's
// start passes its operand's buffer on to its comm_wait; a recv's start
// writes a buffer of its own, complete after its comm_wait. Kernels between
// a start and its wait are followed by comm_progress.
// CHECK-LABEL: func.func @weft_model_run()
// CHECK: %[[X:.*]] = weftrt.input 0
// CHECK: weftrt.launch "send"(%[[X]]) {desc = array<i64: 1, 0, 2, 2, 3, 4, 1, 4, 1, 2>}
// CHECK: %[[R:.*]] = weftrt.alloc {bytes = 24 : i64}
// CHECK: weftrt.launch "recv"(%[[R]]) {desc = array<i64: 1, 0, 2, 2, 3, 4, 1, 5, 1, 2>}
// CHECK: weftrt.launch "send_start"(%[[R]]) {desc = array<i64: 1, 0, 2, 2, 3, 5, 0, 1, 6, 1, 2>}
// CHECK: %[[Q:.*]] = weftrt.alloc {bytes = 24 : i64}
// CHECK: weftrt.launch "recv_start"(%[[Q]]) {desc = array<i64: 1, 0, 2, 2, 3, 5, 1, 1, 7, 1, 2>}
// CHECK: weftrt.launch "unary"(%[[R]],
// CHECK-NEXT: weftrt.launch "comm_progress"()
// CHECK-NEXT: weftrt.launch "comm_wait"(%[[Q]]) {desc = array<i64: 1, 0, 2, 2, 3, 1, 1>}
// CHECK-NEXT: weftrt.launch "comm_wait"(%[[R]]) {desc = array<i64: 1, 0, 2, 2, 3, 1, 0>}
// CHECK: weftrt.launch "binary"({{.*}}, %[[Q]],
shard.grid @mesh(shape = 1x1x2) {weft.mesh_axes = ["dp", "tp", "pp"]}
func.func @main(%x: tensor<2x3xf32> {weft.name = "x"}) -> (tensor<2x3xf32> {weft.name = "y"}, tensor<2x3xf32> {weft.name = "z"}) {
  weft.send %x to 1 on @mesh grid_axes = [2] tag = 4 : tensor<2x3xf32>
  %0 = weft.recv from 1 on @mesh grid_axes = [2] tag = 5 : tensor<2x3xf32>
  %p = weft.send_start %0 to 1 on @mesh grid_axes = [2] tag = 6 slot = 0 : tensor<2x3xf32>
  %q = weft.recv_start from 1 on @mesh grid_axes = [2] tag = 7 slot = 1 : tensor<2x3xf32>
  %1 = weft.tanh %0 : tensor<2x3xf32>
  %2 = weft.comm_wait %q slot = 1 : tensor<2x3xf32>
  %3 = weft.comm_wait %p slot = 0 : tensor<2x3xf32>
  %4 = weft.add %1, %2 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %4, %1 : tensor<2x3xf32>, tensor<2x3xf32>
}
