// RUN: weft-opt %s -weft-lower-to-runtime | FileCheck %s --check-prefix=RT
// RUN: weft-opt %s -weft-lower-to-runtime -weftrt-assign-buffers -weftrt-to-llvm | FileCheck %s

// A pipeline's ranks run their own stage's kernels only: the lowering reads
// this rank's stage first (mesh_offset over the pipeline axis, block 1) and
// marks each launch with its op's stage; weftrt-to-llvm puts each run of
// launches of one stage in a block entered when the stage matches. Pointers
// stay in the entry block.
// RT: weftrt.launch "mesh_offset"(%{{.*}}) {desc = array<i64: 1, 4, 0, 3, 1, 1, 2>, weftrt.stage_index}
// RT: weftrt.launch "unary"({{.*}}) {desc = {{.*}}, weftrt.stage = 0 : i64}
// RT: weftrt.launch "unary"({{.*}}) {desc = {{.*}}, weftrt.stage = 0 : i64}
// RT: weftrt.launch "unary"({{.*}}) {desc = {{.*}}, weftrt.stage = 1 : i64}
// The signature lists the launches with their stages (for traces) and each
// stage's extent of the arena (what its ranks allocate).
// CHECK: @weft_model_signature("{{.*}}\22launches\22:[{\22kernel\22:\22mesh_offset\22,\22tensors\22:[\22i64\22]},{\22kernel\22:\22unary\22,\22stage\22:0,\22tensors\22:[\224xf32\22,\224xf32\22]},{\22kernel\22:\22unary\22,\22stage\22:0,\22tensors\22:[\224xf32\22,\224xf32\22]},{\22kernel\22:\22unary\22,\22stage\22:1,\22tensors\22:[\224xf32\22,\224xf32\22]}]
// CHECK-SAME: \22stage_arena_bytes\22:[128,128]
// CHECK-LABEL: llvm.func @weft_model_run
// CHECK: llvm.call @weft_k_mesh_offset
// CHECK-NEXT: llvm.mlir.constant(0 : i64)
// CHECK-NEXT: llvm.call @weft_trace_launch
// CHECK-NEXT: %[[STAGE:.*]] = llvm.load %{{.*}} : !llvm.ptr -> i64
// CHECK: %[[IS0:.*]] = llvm.icmp "eq" %[[STAGE]], %{{.*}} : i64
// CHECK: llvm.cond_br %[[IS0]], ^[[S0:.*]], ^[[AFTER0:.*]]
// CHECK: ^[[S0]]:
// CHECK: llvm.call @weft_k_unary
// CHECK: llvm.call @weft_k_unary
// CHECK: llvm.br ^[[AFTER0]]
// CHECK: ^[[AFTER0]]:
// CHECK: %[[ONE:.*]] = llvm.mlir.constant(1 : i64) : i64
// CHECK-NEXT: %[[IS1:.*]] = llvm.icmp "eq" %[[STAGE]], %[[ONE]] : i64
// CHECK-NEXT: llvm.cond_br %[[IS1]], ^[[S1:.*]], ^[[AFTER1:.*]]
// CHECK: ^[[S1]]:
// CHECK: llvm.call @weft_k_unary
// CHECK: llvm.br ^[[AFTER1]]
// CHECK: ^[[AFTER1]]:
// CHECK: llvm.return
shard.grid @mesh(shape = 1x1x2) {weft.mesh_axes = ["dp", "tp", "pp"]}
func.func @main(%x: tensor<4xf32> {weft.name = "x"}) -> (tensor<4xf32> {weft.name = "y"}) attributes {weft.pipeline_axis = 2 : i64} {
  %0 = weft.tanh %x {weft.stage = 0 : i64} : tensor<4xf32>
  %1 = weft.exp %0 {weft.stage = 0 : i64} : tensor<4xf32>
  %2 = weft.neg %1 {weft.stage = 1 : i64} : tensor<4xf32>
  return %2 : tensor<4xf32>
}
