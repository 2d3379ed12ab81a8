// RUN: weft-opt %s -weftrt-to-llvm=target=cuda | FileCheck %s
// RUN: weft-opt %s -weftrt-to-llvm=target=cpu | FileCheck %s --check-prefix=CPU

// target=cuda: the buffers are GPU memory. A constant's pointer is its device
// copy (weft_rt_constant with the model's own constant id, the host global
// and its size), a copy is weft_rt_copy instead of memcpy, and the signature
// says so. Launches and descriptors are as for the cpu target.
// CHECK-LABEL: module
// CHECK: llvm.mlir.global external constant @weft_model_signature("{{.*}}\22target\22:\22cuda\22}\00")
// CHECK: llvm.func @weft_model_run(%[[ARENA:.*]]: !llvm.ptr, %[[PARAMS:.*]]: !llvm.ptr, %[[INPUTS:.*]]: !llvm.ptr, %[[OUTPUTS:.*]]: !llvm.ptr)
// CHECK: %[[ARRAY:.*]] = llvm.alloca %{{.*}} x !llvm.ptr
// CHECK: llvm.call @weft_k_binary(%[[ARRAY]], %{{.*}})
// CHECK: %[[HOST0:.*]] = llvm.mlir.addressof @__weft_const_1 : !llvm.ptr
// CHECK-NEXT: %[[ID0:.*]] = llvm.mlir.constant(0 : i64) : i64
// CHECK-NEXT: %[[SIZE0:.*]] = llvm.mlir.constant(16 : i64) : i64
// CHECK-NEXT: %[[C0:.*]] = llvm.call @weft_rt_constant(%[[ID0]], %[[HOST0]], %[[SIZE0]]) : (i64, !llvm.ptr, i64) -> !llvm.ptr
// CHECK: %[[HOST1:.*]] = llvm.mlir.addressof @__weft_const_2 : !llvm.ptr
// CHECK-NEXT: %[[ID1:.*]] = llvm.mlir.constant(1 : i64) : i64
// CHECK-NEXT: %[[SIZE1:.*]] = llvm.mlir.constant(1 : i64) : i64
// CHECK-NEXT: llvm.call @weft_rt_constant(%[[ID1]], %[[HOST1]], %[[SIZE1]])
// CHECK: %[[YP:.*]] = llvm.getelementptr %[[OUTPUTS]][0]
// CHECK-NEXT: %[[Y:.*]] = llvm.load %[[YP]] : !llvm.ptr -> !llvm.ptr
// CHECK: %[[N:.*]] = llvm.mlir.constant(16 : i64) : i64
// CHECK-NEXT: llvm.call @weft_rt_copy(%[[Y]], %[[C0]], %[[N]]) : (!llvm.ptr, !llvm.ptr, i64) -> ()
// CHECK-NOT: llvm.intr.memcpy
// CHECK: llvm.return
// The host globals stay: the runtime uploads them.
// CHECK-DAG: llvm.func @weft_rt_constant(i64, !llvm.ptr, i64) -> !llvm.ptr
// CHECK-DAG: llvm.func @weft_rt_copy(!llvm.ptr, !llvm.ptr, i64)
// CHECK-DAG: llvm.mlir.global private constant @__weft_const_1("\01\00\00\00\02\00\00\00\03\00\00\00\04\00\00\00")
// CHECK-DAG: llvm.mlir.global private constant @__weft_const_2("\01")
// CHECK-NOT: weft_rt_load_i64

// The cpu target is unchanged: addresses of the globals, memcpy, no target
// in the signature.
// CPU-NOT: target
// CPU-NOT: weft_rt_
// CPU: "llvm.intr.memcpy"
module {
  func.func @weft_model_run() attributes {
      weftrt.arena_bytes = 64 : i64,
      weftrt.inputs = [{name = "x", type = tensor<4xf32>}],
      weftrt.params = [{name = "p", type = tensor<4xf32>}],
      weftrt.outputs = [{name = "y", type = tensor<4xf32>}]} {
    %x = weftrt.input 0 : !weftrt.buffer
    %p = weftrt.param 0 : !weftrt.buffer
    %t = weftrt.arena_slice {bytes = 16 : i64, offset = 0 : i64} : !weftrt.buffer
    weftrt.launch "binary"(%x, %p, %t) {desc = array<i64: 3, 0, 1, 4, 0, 1, 4, 0, 1, 4, 1, 0>}
    %c = weftrt.constant dense<[1, 2, 3, 4]> : tensor<4xi32> : !weftrt.buffer
    %b = weftrt.constant dense<true> : tensor<i1> : !weftrt.buffer
    %y = weftrt.output 0 : !weftrt.buffer
    weftrt.copy %c to %y {bytes = 16 : i64}
    return
  }
}
