// RUN: weft-opt %s -split-input-file -weft-lower-to-runtime="unpacked-buckets=true" | FileCheck %s
// RUN: weft-opt %s -split-input-file -weft-async-collectives -weft-lower-to-runtime="unpacked-buckets=true" | FileCheck %s --check-prefix=ASYNC
// RUN: weft-opt %s -split-input-file -weft-async-collectives -weft-lower-to-runtime="unpacked-buckets=true" -weftrt-assign-buffers | FileCheck %s --check-prefix=ARENA
// RUN: weft-opt %s -split-input-file -weft-async-collectives -weft-lower-to-runtime="unpacked-buckets=true" -weftrt-assign-buffers -weftrt-to-llvm | FileCheck %s --check-prefix=LLVM
// RUN: weft-opt %s -split-input-file -weft-lower-to-runtime | FileCheck %s --check-prefix=OFF

// A ZeRO gradient bucket: each gradient as its ranks' blocks [2, k],
// concatenated along dim 1 and reduce-scattered along dim 0. With
// unpacked-buckets the reduce-scatter reads the gradients where they are
// (reduce_scatter_pieces: the pieces, then the result; reduction sum, no
// dim, one mesh axis) and the concat is gone; the result is still split
// in place (piece offsets).
// CHECK-LABEL: func.func @weft_model_run
// CHECK: %[[G1:.*]] = weftrt.alloc {bytes = 16 : i64}
// CHECK-NEXT: weftrt.launch "unary"(%{{.*}}, %[[G1]])
// CHECK: %[[G2:.*]] = weftrt.alloc {bytes = 24 : i64}
// CHECK-NEXT: weftrt.launch "unary"(%{{.*}}, %[[G2]])
// CHECK-NEXT: %[[R:.*]] = weftrt.alloc {bytes = 20 : i64}
// CHECK-NEXT: weftrt.launch "reduce_scatter_pieces"(%[[G1]], %[[G2]], %[[R]]) {desc = array<i64: 3, 0, 2, 2, 2, 0, 2, 2, 3, 0, 2, 1, 5, 3, 0, 1, 0>}
// CHECK-NOT: "concat"
// CHECK: weftrt.launch "split"(%[[R]], {{.*}}weftrt.piece_offsets = array<i64: 0, 8>
// Started: the pieces are read until the wait, after which a keep_alive
// holds them (attributes: slot, reduction, one axis).
// ASYNC-LABEL: func.func @weft_model_run
// ASYNC: weftrt.launch "reduce_scatter_pieces_start"(%[[G1:.*]], %[[G2:.*]], %[[R:.*]]) {desc = array<i64: 3, 0, 2, 2, 2, 0, 2, 2, 3, 0, 2, 1, 5, 4, 0, 0, 1, 0>}
// ASYNC: weftrt.launch "unary"
// ASYNC-NEXT: weftrt.launch "comm_progress"
// ASYNC: weftrt.launch "comm_wait"(%[[R]]) {desc = array<i64: 1, 0, 2, 1, 5, 1, 0>}
// ASYNC-NEXT: weftrt.keep_alive(%[[G1]], %[[G2]])
// So the negation started while the transfer reads the gradients gets
// bytes of its own (without the keep_alive it would reuse the first
// gradient's, at offset 0).
// ARENA-LABEL: func.func @weft_model_run
// ARENA: %[[G1:.*]] = weftrt.arena_slice {bytes = 16 : i64, offset = 0 : i64}
// ARENA: %[[G2:.*]] = weftrt.arena_slice {bytes = 24 : i64, offset = 64 : i64}
// ARENA: weftrt.launch "reduce_scatter_pieces_start"(%[[G1]], %[[G2]],
// ARENA: %[[N:.*]] = weftrt.arena_slice {bytes = 12 : i64, offset = 192 : i64}
// ARENA-NEXT: weftrt.launch "unary"(%{{.*}}, %[[N]])
// ARENA: weftrt.keep_alive(%[[G1]], %[[G2]])
// Nothing is emitted for the keep_alive.
// LLVM-LABEL: llvm.func @weft_model_run
// LLVM: llvm.call @weft_k_reduce_scatter_pieces_start
// LLVM: llvm.call @weft_k_comm_wait
// LLVM-NOT: keep_alive
// LLVM: llvm.return
// Without the option: the concat and the plain reduce-scatter.
// OFF-LABEL: func.func @weft_model_run
// OFF: weftrt.launch "concat"
// OFF: weftrt.launch "reduce_scatter"(
// OFF-NOT: pieces
shard.grid @mesh(shape = 2x1) {weft.mesh_axes = ["dp", "tp"]}
func.func @main(%x: tensor<2x2xf32>, %z: tensor<2x3xf32>, %y: tensor<3xf32>) -> (tensor<1x2xf32>, tensor<1x3xf32>, tensor<3xf32>) {
  %g1 = weft.tanh %x : tensor<2x2xf32>
  %g2 = weft.exp %z : tensor<2x3xf32>
  %b = weft.concat %g1, %g2 {axis = 1 : i64} : (tensor<2x2xf32>, tensor<2x3xf32>) -> tensor<2x5xf32>
  %r = shard.reduce_scatter %b on @mesh grid_axes = [0] scatter_axis = 0 : tensor<2x5xf32> -> tensor<1x5xf32>
  %n = weft.neg %y : tensor<3xf32>
  %m = weft.exp %n : tensor<3xf32>
  %s:2 = weft.split %r {axis = 1 : i64} : (tensor<1x5xf32>) -> (tensor<1x2xf32>, tensor<1x3xf32>)
  %a = weft.tanh %s#0 : tensor<1x2xf32>
  return %a, %s#1, %m : tensor<1x2xf32>, tensor<1x3xf32>, tensor<3xf32>
}

// -----

// ZeRO's parameter bucket: the updated shards [1, k] concatenated (in
// place) and gathered along dim 0, then split along dim 1 into the whole
// parameters. all_gather_pieces writes the parameters directly (x, then
// the pieces; no dim): no split.
// CHECK-LABEL: func.func @weft_model_run
// CHECK: %[[X:.*]] = weftrt.alloc {bytes = 20 : i64}
// CHECK-NEXT: weftrt.launch "concat"
// CHECK-NEXT: %[[P1:.*]] = weftrt.alloc {bytes = 16 : i64}
// CHECK-NEXT: %[[P2:.*]] = weftrt.output 1
// CHECK-NEXT: weftrt.launch "all_gather_pieces"(%[[X]], %[[P1]], %[[P2]]) {desc = array<i64: 3, 0, 2, 1, 5, 0, 2, 2, 2, 0, 2, 2, 3, 2, 1, 0>}
// CHECK-NOT: "split"
// CHECK: weftrt.launch "unary"(%[[P1]],
// Started, it is waited for on its first piece (the slot's result), whose
// type the comm_wait describes.
// ASYNC-LABEL: func.func @weft_model_run
// ASYNC: weftrt.launch "all_gather_pieces_start"(%{{.*}}, %[[P1:.*]], %{{.*}}) {desc = array<i64: 3, 0, 2, 1, 5, 0, 2, 2, 2, 0, 2, 2, 3, 3, 0, 1, 0>}
// ASYNC: weftrt.launch "comm_wait"(%[[P1]]) {desc = array<i64: 1, 0, 2, 2, 2, 1, 0>}
// ASYNC-NOT: keep_alive
// ASYNC-NOT: "split"
// OFF-LABEL: func.func @weft_model_run
// OFF: weftrt.launch "all_gather"(
// OFF: weftrt.launch "split"
shard.grid @mesh(shape = 2x1) {weft.mesh_axes = ["dp", "tp"]}
func.func @main(%p: tensor<1x2xf32>, %q: tensor<1x3xf32>, %y: tensor<3xf32>) -> (tensor<2x2xf32>, tensor<2x3xf32>, tensor<3xf32>) {
  %t = weft.tanh %p : tensor<1x2xf32>
  %u = weft.exp %q : tensor<1x3xf32>
  %x = weft.concat %t, %u {axis = 1 : i64} : (tensor<1x2xf32>, tensor<1x3xf32>) -> tensor<1x5xf32>
  %g = shard.all_gather %x on @mesh grid_axes = [0] gather_axis = 0 : tensor<1x5xf32> -> tensor<2x5xf32>
  %n = weft.neg %y : tensor<3xf32>
  %s:2 = weft.split %g {axis = 1 : i64} : (tensor<2x5xf32>) -> (tensor<2x2xf32>, tensor<2x3xf32>)
  %a = weft.tanh %s#0 : tensor<2x2xf32>
  return %a, %s#1, %n : tensor<2x2xf32>, tensor<2x3xf32>, tensor<3xf32>
}

// -----

// Left alone: a bucket something else reads too, a reduce-scatter of a
// concat along dim 0, an all-gather read by more than its split, one
// split along dim 0, and blocks of two rows (a reduce-scatter into [2, 5]
// and a gather of [2, 2]), whose pieces' rows interleave in the whole.
// CHECK-LABEL: func.func @weft_model_run
// ASYNC-LABEL: func.func @weft_model_run
// CHECK-NOT: pieces
// CHECK: weftrt.launch "concat"
// CHECK: weftrt.launch "reduce_scatter"(
// CHECK: weftrt.launch "concat"
// CHECK: weftrt.launch "reduce_scatter"(
// CHECK: weftrt.launch "all_gather"(
// CHECK: weftrt.launch "split"
// CHECK: weftrt.launch "all_gather"(
// CHECK: weftrt.launch "split"
// CHECK: weftrt.launch "concat"
// CHECK: weftrt.launch "reduce_scatter"(
// CHECK: weftrt.launch "all_gather"(
// CHECK: weftrt.launch "split"
// CHECK-NOT: pieces
shard.grid @mesh(shape = 2x1) {weft.mesh_axes = ["dp", "tp"]}
func.func @main(%a: tensor<2x2xf32>, %b: tensor<2x3xf32>, %c: tensor<1x2xf32>, %d: tensor<2x2xf32>, %e: tensor<4x2xf32>, %f: tensor<4x3xf32>) -> (tensor<1x5xf32>, tensor<2x5xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<1x2xf32>, tensor<2x2xf32>, tensor<2x5xf32>, tensor<4x1xf32>, tensor<4x1xf32>) {
  %0 = weft.concat %a, %b {axis = 1 : i64} : (tensor<2x2xf32>, tensor<2x3xf32>) -> tensor<2x5xf32>
  %1 = shard.reduce_scatter %0 on @mesh grid_axes = [0] scatter_axis = 0 : tensor<2x5xf32> -> tensor<1x5xf32>
  %2 = weft.concat %a, %d {axis = 0 : i64} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<4x2xf32>
  %3 = shard.reduce_scatter %2 on @mesh grid_axes = [0] scatter_axis = 0 : tensor<4x2xf32> -> tensor<2x2xf32>
  %4 = shard.all_gather %c on @mesh grid_axes = [0] gather_axis = 0 : tensor<1x2xf32> -> tensor<2x2xf32>
  %5:2 = weft.split %4 {axis = 1 : i64} : (tensor<2x2xf32>) -> (tensor<2x1xf32>, tensor<2x1xf32>)
  %6 = weft.concat %5#0, %5#1 {axis = 1 : i64} : (tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x2xf32>
  %7 = shard.all_gather %c on @mesh grid_axes = [0] gather_axis = 0 : tensor<1x2xf32> -> tensor<2x2xf32>
  %8:2 = weft.split %7 {axis = 0 : i64} : (tensor<2x2xf32>) -> (tensor<1x2xf32>, tensor<1x2xf32>)
  %9 = weft.concat %e, %f {axis = 1 : i64} : (tensor<4x2xf32>, tensor<4x3xf32>) -> tensor<4x5xf32>
  %10 = shard.reduce_scatter %9 on @mesh grid_axes = [0] scatter_axis = 0 : tensor<4x5xf32> -> tensor<2x5xf32>
  %11 = shard.all_gather %d on @mesh grid_axes = [0] gather_axis = 0 : tensor<2x2xf32> -> tensor<4x2xf32>
  %12:2 = weft.split %11 {axis = 1 : i64} : (tensor<4x2xf32>) -> (tensor<4x1xf32>, tensor<4x1xf32>)
  return %1, %0, %3, %4, %8#0, %6, %10, %12#0, %12#1 : tensor<1x5xf32>, tensor<2x5xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<1x2xf32>, tensor<2x2xf32>, tensor<2x5xf32>, tensor<4x1xf32>, tensor<4x1xf32>
}
