// RUN: weft-opt %s -weft-lower-to-runtime | FileCheck %s
// RUN: weft-opt %s -weft-lower-to-runtime -weftrt-assign-buffers -weftrt-to-llvm | FileCheck %s --check-prefix=SIG

// Data and sequence parallelism: an input's rows split over dp (dim 0) and
// each row's sequence over tp (dim 1) is fed as two splits, "shard" and
// "sequence_shard", in the slot and in the signature.
// CHECK-LABEL: func.func @weft_model_run()
// CHECK-SAME: weftrt.inputs = [{name = "tokens", sequence_shard = {dim = 1 : i64, mesh_axes = [1]}, shard = {dim = 0 : i64, mesh_axes = [0]}, type = tensor<2x3xi64>}]
// SIG: \22sequence_shard\22:{\22dim\22:1,\22mesh_axes\22:[1]}
// SIG-SAME: \22shard\22:{\22dim\22:0,\22mesh_axes\22:[0]}
shard.grid @mesh(shape = 2x2) {weft.mesh_axes = ["dp", "tp"]}
func.func @main(%t: tensor<2x3xi64> {weft.name = "tokens", weft.shard = {dims = [array<i16: 0>, array<i16: 1>], partial = array<i16>}}) -> (tensor<2x6xi64> {weft.name = "y"}) {
  %0 = shard.all_gather %t on @mesh grid_axes = [1] gather_axis = 1 : tensor<2x3xi64> -> tensor<2x6xi64>
  return %0 : tensor<2x6xi64>
}
