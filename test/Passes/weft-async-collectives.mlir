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
// The start writes its result buffer, the wait completes it in place; each
// compute kernel in between is followed by a comm_progress (no tensors, no
// attributes), which polls the transfers in flight.
// RT: weftrt.launch "all_reduce_start"(%[[X:.*]], %[[B:.*]]) {desc = array<i64: 2, 0, 1, 4, 0, 1, 4, 4, 0, 0, 1, 0>}
// RT: weftrt.launch "unary"
// RT-NEXT: weftrt.launch "comm_progress"() {desc = array<i64: 0, 0>}
// RT: weftrt.launch "unary"
// RT-NEXT: weftrt.launch "comm_progress"() {desc = array<i64: 0, 0>}
// RT-NEXT: weftrt.launch "comm_wait"(%[[B]]) {desc = array<i64: 1, 0, 1, 4, 1, 0>}
// RT: weftrt.launch "binary"(%[[B]],
// RT-NOT: comm_progress
// RT: weftrt.launch "all_reduce"
// RT-NOT: comm_progress
// RT: return
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

// -----

// ZeRO-3 gathers of parameters are prefetched: the first starts where its
// parameter is read, each next one right after the previous one is waited
// for (a strided parameter's view moves up with its start), so the next
// product's weight travels while this one computes. An activation's gather,
// complete before the product above it, starts ahead of that product and is
// waited for where first needed.
// CHECK-LABEL: func.func @main
// CHECK: %[[W1:.*]] = weft.param "w1"
// CHECK-NEXT: %[[P1:.*]] = weft.all_gather_start %[[W1]] on @mesh grid_axes = [0] gather_axis = 0 slot = 0 : tensor<4x8xf32> -> tensor<8x8xf32>
// CHECK: %[[W2:.*]] = weft.param "w2"
// CHECK: %[[W3:.*]] = weft.param "w3"
// CHECK-NEXT: %[[G1:.*]] = weft.comm_wait %[[P1]] slot = 0
// CHECK-NEXT: %[[P2:.*]] = weft.all_gather_start %[[W2]] {{.*}} slot = 1
// CHECK-NEXT: %[[M1:.*]] = weft.matmul %{{.*}}, %[[G1]]
// CHECK-NEXT: %[[T1:.*]] = weft.tanh %[[M1]]
// CHECK-NEXT: %[[G2:.*]] = weft.comm_wait %[[P2]] slot = 1
// CHECK-NEXT: %[[V3:.*]] = weft.reshape %[[W3]] : tensor<6x8xf32> to tensor<3x2x8xf32>
// CHECK-NEXT: %[[P3:.*]] = weft.all_gather_start %[[V3]] on @mesh grid_axes = [0] gather_axis = 1 slot = 2 : tensor<3x2x8xf32> -> tensor<3x4x8xf32>
// CHECK-NEXT: weft.matmul %[[T1]], %[[G2]]
// CHECK-NEXT: weft.tanh
// CHECK-NEXT: weft.comm_wait %[[P3]] slot = 2
// CHECK: %[[PA:.*]] = weft.all_gather_start %[[T1]] {{.*}} slot = 3
// CHECK-NEXT: %[[M3:.*]] = weft.matmul
// CHECK-NEXT: weft.exp %[[M3]]
// CHECK-NEXT: weft.comm_wait %[[PA]] slot = 3
// CHECK-NOT: shard.all_gather
// RT: weftrt.launch "all_gather_start"({{.*}}) {desc = array<i64: 2, 0, 2, 4, 8, 0, 2, 8, 8, 4, 0, 0, 1, 0>}
// RT: weftrt.launch "comm_wait"
shard.grid @mesh(shape = 2x1) {weft.mesh_axes = ["dp", "tp"]}
func.func @main(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %w1 = weft.param "w1" : tensor<4x8xf32>
  %w2 = weft.param "w2" : tensor<4x8xf32>
  %w3 = weft.param "w3" : tensor<6x8xf32>
  %g1 = shard.all_gather %w1 on @mesh grid_axes = [0] gather_axis = 0 : tensor<4x8xf32> -> tensor<8x8xf32>
  %0 = weft.matmul %x, %g1 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %1 = weft.tanh %0 : tensor<4x8xf32>
  %g2 = shard.all_gather %w2 on @mesh grid_axes = [0] gather_axis = 0 : tensor<4x8xf32> -> tensor<8x8xf32>
  %2 = weft.matmul %1, %g2 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %3 = weft.tanh %2 : tensor<4x8xf32>
  %v3 = weft.reshape %w3 : tensor<6x8xf32> to tensor<3x2x8xf32>
  %g3 = shard.all_gather %v3 on @mesh grid_axes = [0] gather_axis = 1 : tensor<3x2x8xf32> -> tensor<3x4x8xf32>
  %r3 = weft.reshape %g3 : tensor<3x4x8xf32> to tensor<12x8xf32>
  %s3 = weft.slice %r3 {starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : (tensor<12x8xf32>) -> tensor<8x8xf32>
  %4 = weft.matmul %3, %s3 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %act = shard.all_gather %1 on @mesh grid_axes = [0] gather_axis = 0 : tensor<4x8xf32> -> tensor<8x8xf32>
  %5 = weft.exp %4 : tensor<4x8xf32>
  %6 = weft.slice %act {starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : (tensor<8x8xf32>) -> tensor<4x8xf32>
  %7 = weft.add %5, %6 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %7, %4 : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// A reduce_scatter (ZeRO-2's gradient) with work between it and its user
// starts where it stood and is waited for right before the user; the
// runtime kernel takes slot, reduction, scatter dim and the axes.
// CHECK-LABEL: func.func @main
// CHECK: %[[P:.*]] = weft.reduce_scatter_start %{{.*}} on @mesh grid_axes = [0] scatter_axis = 1 slot = 0 : tensor<2x4xf32> -> tensor<2x2xf32>
// CHECK: weft.tanh
// CHECK: %[[R:.*]] = weft.comm_wait %[[P]] slot = 0 : tensor<2x2xf32>
// CHECK: weft.add %[[R]], %{{.*}}
// RT: weftrt.launch "reduce_scatter_start"(%{{.*}}, %[[B:.*]]) {desc = array<i64: 2, 0, 2, 2, 4, 0, 2, 2, 2, 5, 0, 0, 1, 1, 0>}
// RT: weftrt.launch "unary"
// RT-NEXT: weftrt.launch "comm_progress"() {desc = array<i64: 0, 0>}
// RT-NEXT: weftrt.launch "comm_wait"(%[[B]])
shard.grid @mesh(shape = 2x1) {weft.mesh_axes = ["dp", "tp"]}
func.func @main(%x: tensor<2x4xf32>, %y: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %0 = shard.reduce_scatter %x on @mesh grid_axes = [0] scatter_axis = 1 : tensor<2x4xf32> -> tensor<2x2xf32>
  %1 = weft.tanh %y : tensor<2x2xf32>
  %2 = weft.add %0, %1 : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  return %2 : tensor<2x2xf32>
}

// -----

// A bucket of ZeRO-2 gradients: the split and reshapes that unpack the
// reduce_scatter's block move down to the updates that read them, so the
// wait goes there and the backward in between overlaps the transfer.
// CHECK-LABEL: func.func @main
// CHECK: %[[P:.*]] = weft.reduce_scatter_start %{{.*}} scatter_axis = 0 slot = 0 : tensor<2x6xf32> -> tensor<1x6xf32>
// CHECK: weft.tanh
// CHECK: %[[R:.*]] = weft.comm_wait %[[P]] slot = 0 : tensor<1x6xf32>
// CHECK: %[[S:.*]]:2 = weft.split %[[R]]
// CHECK: weft.reshape %[[S]]#0
// CHECK: weft.add
shard.grid @mesh(shape = 2x1) {weft.mesh_axes = ["dp", "tp"]}
func.func @main(%g: tensor<2x6xf32>, %y: tensor<2xf32>) -> (tensor<2xf32>, tensor<4xf32>) {
  %0 = shard.reduce_scatter %g on @mesh grid_axes = [0] scatter_axis = 0 : tensor<2x6xf32> -> tensor<1x6xf32>
  %1:2 = weft.split %0 {axis = 1 : i64} : (tensor<1x6xf32>) -> (tensor<1x2xf32>, tensor<1x4xf32>)
  %2 = weft.reshape %1#0 : tensor<1x2xf32> to tensor<2xf32>
  %3 = weft.reshape %1#1 : tensor<1x4xf32> to tensor<4xf32>
  %4 = weft.tanh %y : tensor<2xf32>
  %5 = weft.add %2, %4 : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %5, %3 : tensor<2xf32>, tensor<4xf32>
}

// -----

// An all_reduce_start of an intermediate nothing reads later reduces in the
// operand's own buffer (the runtime skips its copy into the result); one of
// a value read after the start keeps its own result buffer.
// RT: weftrt.launch "all_reduce_start"(%[[T:[^,]+]], %[[T]])
// RT: weftrt.launch "comm_wait"(%[[T]])
// RT: %[[R:.*]] = weftrt.alloc
// RT-NEXT: weftrt.launch "all_reduce_start"(%[[E:[^,]+]], %[[R]])
// RT: weftrt.launch "unary"(%[[E]],
shard.grid @mesh(shape = 2x1) {weft.mesh_axes = ["dp", "tp"]}
func.func @main(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %t = weft.tanh %x : tensor<4xf32>
  %0 = shard.all_reduce %t on @mesh grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>
  %1 = weft.neg %y : tensor<4xf32>
  %2 = weft.add %0, %1 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %e = weft.exp %x : tensor<4xf32>
  %3 = shard.all_reduce %e on @mesh grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>
  %4 = weft.neg %e : tensor<4xf32>
  %5 = weft.add %3, %4 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %2, %5, %e : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// A gather of a value complete before the product above it (the backward
// gathering a forward activation again for a weight gradient, under
// sequence parallelism) starts ahead of that product, its operand's view
// with it, and is waited for where used: it travels while the product
// computes. A gather of a value just made stays where it is.
// CHECK-LABEL: func.func @main
// CHECK: %[[N:.*]] = weft.tanh %arg0 : tensor<2x8xf32>
// CHECK-NEXT: %[[V:.*]] = weft.reshape %[[N]] : tensor<2x8xf32> to tensor<2x2x4xf32>
// CHECK-NEXT: %[[S:.*]] = weft.all_gather_start %[[V]] on @mesh grid_axes = [1] gather_axis = 0 slot = 0 : tensor<2x2x4xf32> -> tensor<4x2x4xf32>
// CHECK-NEXT: %[[P:.*]] = weft.matmul %arg1, %arg2
// CHECK-NEXT: %[[G:.*]] = weft.comm_wait %[[S]] slot = 0 : tensor<4x2x4xf32>
// CHECK-NEXT: %[[GV:.*]] = weft.reshape %[[G]] : tensor<4x2x4xf32> to tensor<4x8xf32>
// CHECK-NEXT: %[[Q:.*]] = weft.matmul %[[GV]], %[[P]] {transpose_a = true}
// CHECK-NEXT: %[[M:.*]] = weft.tanh %[[Q]]
// CHECK-NEXT: shard.all_gather %[[M]]
shard.grid @mesh(shape = 1x2) {weft.mesh_axes = ["dp", "tp"]}
func.func @main(%x: tensor<2x8xf32>, %a: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<16x8xf32> {
  %n = weft.tanh %x : tensor<2x8xf32>
  %p = weft.matmul %a, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %v = weft.reshape %n : tensor<2x8xf32> to tensor<2x2x4xf32>
  %g = shard.all_gather %v on @mesh grid_axes = [1] gather_axis = 0 : tensor<2x2x4xf32> -> tensor<4x2x4xf32>
  %gv = weft.reshape %g : tensor<4x2x4xf32> to tensor<4x8xf32>
  %q = weft.matmul %gv, %p {transpose_a = true} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  %m = weft.tanh %q : tensor<8x8xf32>
  %h = shard.all_gather %m on @mesh grid_axes = [1] gather_axis = 0 : tensor<8x8xf32> -> tensor<16x8xf32>
  return %h : tensor<16x8xf32>
}
