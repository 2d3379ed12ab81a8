// RUN: weft-opt %s -weft-lower-to-runtime -weftrt-assign-buffers -weftrt-to-llvm=target=cuda | FileCheck %s

// target=cuda: the pipeline stage index that mesh_offset writes lives in GPU
// memory; the model reads it with weft_rt_load_i64 (which waits for the
// kernels before it) instead of a load, then branches as for the cpu target
// (weftrt-to-llvm-stages.mlir).
// CHECK-LABEL: llvm.func @weft_model_run
// CHECK: %[[AT:.*]] = llvm.getelementptr %{{.*}}[%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK: llvm.call @weft_k_mesh_offset
// CHECK-NEXT: llvm.mlir.constant(0 : i64)
// CHECK-NEXT: llvm.call @weft_trace_launch
// CHECK-NEXT: %[[STAGE:.*]] = llvm.call @weft_rt_load_i64(%[[AT]]) : (!llvm.ptr) -> i64
// CHECK: %[[IS0:.*]] = llvm.icmp "eq" %[[STAGE]], %{{.*}} : i64
// CHECK: llvm.cond_br %[[IS0]]
// CHECK: %[[IS1:.*]] = llvm.icmp "eq" %[[STAGE]], %{{.*}} : i64
// CHECK: llvm.cond_br %[[IS1]]
// CHECK: llvm.return
// CHECK: llvm.func @weft_rt_load_i64(!llvm.ptr) -> i64
shard.grid @mesh(shape = 1x1x2) {weft.mesh_axes = ["dp", "tp", "pp"]}
func.func @main(%x: tensor<4xf32> {weft.name = "x"}) -> (tensor<4xf32> {weft.name = "y"}) attributes {weft.pipeline_axis = 2 : i64} {
  %0 = weft.tanh %x {weft.stage = 0 : i64} : tensor<4xf32>
  %1 = weft.exp %0 {weft.stage = 0 : i64} : tensor<4xf32>
  %2 = weft.neg %1 {weft.stage = 1 : i64} : tensor<4xf32>
  return %2 : tensor<4xf32>
}
