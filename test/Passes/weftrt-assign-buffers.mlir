// RUN: weft-opt %s -weftrt-assign-buffers -split-input-file | FileCheck %s

// A chain a -> b -> c -> d: a and b are both live while b is computed, so
// they get different offsets; c reuses a's bytes once a is dead. The arena is
// the peak of two 256-byte buffers.
// CHECK-LABEL: func.func @weft_model_run()
// CHECK-SAME: weftrt.arena_bytes = 512
// CHECK: %[[A:.*]] = weftrt.arena_slice {bytes = 256 : i64, offset = 0 : i64}
// CHECK: %[[B:.*]] = weftrt.arena_slice {bytes = 256 : i64, offset = 256 : i64}
// CHECK: %[[C:.*]] = weftrt.arena_slice {bytes = 256 : i64, offset = 0 : i64}
// CHECK-NOT: weftrt.alloc
func.func @weft_model_run() {
  %x = weftrt.input 0 : !weftrt.buffer
  %a = weftrt.alloc {bytes = 256 : i64} : !weftrt.buffer
  weftrt.launch "unary"(%x, %a) {desc = array<i64: 2, 0, 1, 64, 0, 1, 64, 1, 2>}
  %b = weftrt.alloc {bytes = 256 : i64} : !weftrt.buffer
  weftrt.launch "unary"(%a, %b) {desc = array<i64: 2, 0, 1, 64, 0, 1, 64, 1, 2>}
  %c = weftrt.alloc {bytes = 256 : i64} : !weftrt.buffer
  weftrt.launch "unary"(%b, %c) {desc = array<i64: 2, 0, 1, 64, 0, 1, 64, 1, 2>}
  %y = weftrt.output 0 : !weftrt.buffer
  weftrt.launch "unary"(%c, %y) {desc = array<i64: 2, 0, 1, 64, 0, 1, 64, 1, 2>}
  return
}

// -----

// Sizes are rounded up to 64-byte alignment; a buffer used late stays live and
// blocks its bytes for the ones allocated meanwhile.
// CHECK-LABEL: func.func @weft_model_run()
// CHECK-SAME: weftrt.arena_bytes = 192
// CHECK: weftrt.arena_slice {bytes = 4 : i64, offset = 128 : i64}
// CHECK: weftrt.arena_slice {bytes = 100 : i64, offset = 0 : i64}
// CHECK: weftrt.arena_slice {bytes = 8 : i64, offset = 0 : i64}
func.func @weft_model_run() {
  %x = weftrt.input 0 : !weftrt.buffer
  %keep = weftrt.alloc {bytes = 4 : i64} : !weftrt.buffer
  weftrt.launch "unary"(%x, %keep) {desc = array<i64: 2, 0, 1, 1, 0, 1, 1, 1, 2>}
  %big = weftrt.alloc {bytes = 100 : i64} : !weftrt.buffer
  weftrt.launch "unary"(%x, %big) {desc = array<i64: 2, 0, 1, 25, 0, 1, 25, 1, 2>}
  %small = weftrt.alloc {bytes = 8 : i64} : !weftrt.buffer
  weftrt.launch "unary"(%x, %small) {desc = array<i64: 2, 0, 1, 2, 0, 1, 2, 1, 2>}
  %y = weftrt.output 0 : !weftrt.buffer
  weftrt.launch "binary"(%keep, %small, %y) {desc = array<i64: 3, 0, 1, 1, 0, 1, 2, 0, 1, 2, 1, 0>}
  return
}
