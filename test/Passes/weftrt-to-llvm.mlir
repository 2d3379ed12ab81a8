// RUN: weft-opt %s -weftrt-to-llvm | FileCheck %s

// The signature's "launches" name each launch's kernel and its tensors'
// types, operands then results (from the descriptor), for traces.
// CHECK-LABEL: module
// CHECK: llvm.mlir.global external constant @weft_model_signature("{\22arena_alignment\22:64,\22arena_bytes\22:64,\22format_version\22:1,\22inputs\22:[{\22dtype\22:\22f32\22,\22name\22:\22x\22,\22shape\22:[4]}],\22launches\22:[{\22kernel\22:\22binary\22,\22tensors\22:[\224xf32\22,\224xf32\22,\224xf32\22]}],\22mode\22:\22inference\22,\22outputs\22:[{\22dtype\22:\22f32\22,\22name\22:\22y\22,\22shape\22:[4]}],\22params\22:[{\22dtype\22:\22f32\22,\22name\22:\22p\22,\22shape\22:[4]}]}\00")
// CHECK: llvm.func @weft_trace_launch(i64)
// CHECK: llvm.func @weft_model_run(%[[ARENA:.*]]: !llvm.ptr, %[[PARAMS:.*]]: !llvm.ptr, %[[INPUTS:.*]]: !llvm.ptr, %[[OUTPUTS:.*]]: !llvm.ptr)
// CHECK: %[[ARRAY:.*]] = llvm.alloca %{{.*}} x !llvm.ptr
// CHECK: %[[XP:.*]] = llvm.getelementptr %[[INPUTS]][0]
// CHECK: %[[X:.*]] = llvm.load %[[XP]] : !llvm.ptr -> !llvm.ptr
// CHECK: llvm.getelementptr %[[PARAMS]][0]
// CHECK: %[[OFF:.*]] = llvm.mlir.constant(0 : i64) : i64
// CHECK: %[[T:.*]] = llvm.getelementptr %[[ARENA]][%[[OFF]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK: llvm.store %[[X]], %{{.*}} : !llvm.ptr, !llvm.ptr
// CHECK: %[[DESC:.*]] = llvm.mlir.addressof @__weft_desc_0
// CHECK: llvm.call @weft_k_binary(%[[ARRAY]], %[[DESC]])
// Each launch's end is marked for traces, by its index in "launches".
// CHECK-NEXT: %[[I0:.*]] = llvm.mlir.constant(0 : i64) : i64
// CHECK-NEXT: llvm.call @weft_trace_launch(%[[I0]]) : (i64) -> ()
// CHECK: %[[C:.*]] = llvm.mlir.addressof @__weft_const_1
// CHECK: "llvm.intr.memcpy"
// CHECK: llvm.return
// CHECK: llvm.mlir.global private constant @__weft_desc_0(dense<[3, 0, 1, 4, 0, 1, 4, 0, 1, 4, 1, 0]> : tensor<12xi64>)
// CHECK: llvm.func @weft_k_binary(!llvm.ptr, !llvm.ptr)
// CHECK: llvm.mlir.global private constant @__weft_const_1("\01\00\00\00\02\00\00\00\03\00\00\00\04\00\00\00")
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
    %y = weftrt.output 0 : !weftrt.buffer
    weftrt.copy %c to %y {bytes = 16 : i64}
    return
  }
}
