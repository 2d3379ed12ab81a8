// RUN: weft-opt %s | weft-opt | FileCheck %s

// CHECK-LABEL: func.func @all_ops
func.func @all_ops() {
  // CHECK: %[[I:.*]] = weftrt.input 0 : !weftrt.buffer
  %i = weftrt.input 0 : !weftrt.buffer
  // CHECK: %[[P:.*]] = weftrt.param 1 : !weftrt.buffer
  %p = weftrt.param 1 : !weftrt.buffer
  // CHECK: %[[O:.*]] = weftrt.output 0 : !weftrt.buffer
  %o = weftrt.output 0 : !weftrt.buffer
  // CHECK: weftrt.constant dense<1> : tensor<2xi64> : !weftrt.buffer
  %c = weftrt.constant dense<1> : tensor<2xi64> : !weftrt.buffer
  // CHECK: %[[A:.*]] = weftrt.alloc {bytes = 16 : i64} : !weftrt.buffer
  %a = weftrt.alloc {bytes = 16 : i64} : !weftrt.buffer
  // CHECK: weftrt.arena_slice {bytes = 16 : i64, offset = 64 : i64} : !weftrt.buffer
  %s = weftrt.arena_slice {bytes = 16 : i64, offset = 64 : i64} : !weftrt.buffer
  // CHECK: weftrt.launch "binary"(%[[I]], %[[P]], %[[A]]) {desc = array<i64: 3, 0, 1, 4, 0, 1, 4, 0, 1, 4, 1, 0>}
  weftrt.launch "binary"(%i, %p, %a) {desc = array<i64: 3, 0, 1, 4, 0, 1, 4, 0, 1, 4, 1, 0>}
  // CHECK: weftrt.copy %[[A]] to %[[O]] {bytes = 16 : i64}
  weftrt.copy %a to %o {bytes = 16 : i64}
  return
}
