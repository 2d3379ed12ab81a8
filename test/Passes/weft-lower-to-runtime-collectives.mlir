// RUN: weft-opt %s -weft-lower-to-runtime | FileCheck %s
// RUN: weft-opt %s -weft-lower-to-runtime -weftrt-assign-buffers -weftrt-to-llvm | FileCheck %s --check-prefix=SIG

// shard collectives become launches of the runtime's collective kernels
// (KernelABI.h): all_reduce (reduction, axes), all_gather (dim, axes),
// all_to_all (split dim, concat dim, axes),
// mesh_offset (block, axes). The
// mesh and each input's split go into the signature, the grid goes away.
// CHECK-NOT: shard.grid
// CHECK-LABEL: func.func @weft_model_run()
// CHECK-SAME: weftrt.inputs = [{name = "x", shard = {dim = 0 : i64, mesh_axes = [0]}, type = tensor<4x16xf32>}]
// CHECK-SAME: weftrt.mesh_axes = ["dp", "tp"]
// CHECK-SAME: weftrt.mesh_shape = array<i64: 2, 2>
// CHECK: %[[X:.*]] = weftrt.input 0
// CHECK: %[[R:.*]] = weftrt.alloc {bytes = 256 : i64}
// CHECK: weftrt.launch "all_reduce"(%[[X]], %[[R]]) {desc = array<i64: 2, 0, 2, 4, 16, 0, 2, 4, 16, 3, 0, 1, 1>}
// CHECK: %[[G:.*]] = weftrt.output 0
// CHECK: weftrt.launch "all_gather"(%[[R]], %[[G]]) {desc = array<i64: 2, 0, 2, 4, 16, 0, 2, 8, 16, 3, 0, 1, 0>}
// weft.mesh_offset: one i64 tensor, then block and the axes.
// CHECK: %[[O:.*]] = weftrt.output 1
// CHECK: weftrt.launch "mesh_offset"(%[[O]]) {desc = array<i64: 1, 4, 0, 4, 6, 2, 1, 0>}
// all_to_all: split dim, concat dim, axes.
// CHECK: %[[T:.*]] = weftrt.output 2
// CHECK: weftrt.launch "all_to_all"(%[[X]], %[[T]]) {desc = array<i64: 2, 0, 2, 4, 16, 0, 2, 8, 8, 4, 1, 0, 1, 0>}
// SIG: \22shard\22:{\22dim\22:0,\22mesh_axes\22:[0]}
// SIG-SAME: \22mesh\22:{\22axes\22:[\22dp\22,\22tp\22],\22shape\22:[2,2]}
// SIG-SAME: \22world_size\22:4
shard.grid @mesh(shape = 2x2) {weft.mesh_axes = ["dp", "tp"]}
func.func @main(%x: tensor<4x16xf32> {weft.name = "x", weft.shard = {dims = [array<i16: 0>, array<i16>], partial = array<i16>}}) -> (tensor<8x16xf32> {weft.name = "y"}, tensor<i64> {weft.name = "start"}, tensor<8x8xf32> {weft.name = "moved"}) {
  %0 = shard.all_reduce %x on @mesh grid_axes = [1] : tensor<4x16xf32> -> tensor<4x16xf32>
  %1 = shard.all_gather %0 on @mesh grid_axes = [0] gather_axis = 0 : tensor<4x16xf32> -> tensor<8x16xf32>
  %2 = weft.mesh_offset on @mesh grid_axes = [1, 0] block = 6 : tensor<i64>
  %3 = shard.all_to_all %x on @mesh grid_axes = [0] split_axis = 1 concat_axis = 0 : tensor<4x16xf32> -> tensor<8x8xf32>
  return %1, %2, %3 : tensor<8x16xf32>, tensor<i64>, tensor<8x8xf32>
}
