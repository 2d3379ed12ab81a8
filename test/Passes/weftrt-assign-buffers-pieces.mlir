// RUN: weft-opt %s -weftrt-assign-buffers="place-pieces=true" -split-input-file | FileCheck %s
// RUN: weft-opt %s -weftrt-assign-buffers -split-input-file | FileCheck %s --check-prefix=OFF

// A bucket of two gradients (a concat whose pieces lie one after the other,
// weftrt.piece_offsets) is filled where each gradient is made: the pieces
// are placed inside the bucket at their offsets, the concat goes away, and
// the bucket lives from the first piece's making. Its unpacking (a split
// that is the bucket's last reader) reads the pieces in place.
// CHECK-LABEL: func.func @weft_model_run()
// CHECK-SAME: weftrt.arena_bytes = 384
// CHECK: %[[G1:.*]] = weftrt.arena_slice {bytes = 256 : i64, offset = [[B:[0-9]+]] : i64}
// CHECK: weftrt.launch "unary"(%{{.*}}, %[[G1]])
// CHECK: %[[G2:.*]] = weftrt.arena_slice {bytes = 128 : i64, offset = [[B2:[0-9]+]] : i64}
// CHECK: weftrt.launch "unary"(%{{.*}}, %[[G2]])
// CHECK-NOT: "concat"
// CHECK: %[[W:.*]] = weftrt.arena_slice {bytes = 384 : i64, offset = [[B]] : i64}
// CHECK: weftrt.launch "all_reduce_start"(%[[W]], %[[W]])
// CHECK: weftrt.launch "comm_wait"(%[[W]])
// CHECK: %[[P1:.*]] = weftrt.arena_slice {bytes = 256 : i64, offset = [[B]] : i64}
// CHECK: %[[P2:.*]] = weftrt.arena_slice {bytes = 128 : i64, offset = [[B2]] : i64}
// CHECK-NOT: "split"
// CHECK: weftrt.launch "unary"(%[[P1]],
// CHECK: weftrt.launch "unary"(%[[P2]],
// Without the option the copies stay.
// OFF-LABEL: func.func @weft_model_run()
// OFF: "concat"
// OFF: "split"
func.func @weft_model_run() {
  %x = weftrt.input 0 : !weftrt.buffer
  %g1 = weftrt.alloc {bytes = 256 : i64} : !weftrt.buffer
  weftrt.launch "unary"(%x, %g1) {desc = array<i64: 2, 0, 1, 64, 0, 1, 64, 1, 2>}
  %g2 = weftrt.alloc {bytes = 128 : i64} : !weftrt.buffer
  weftrt.launch "unary"(%x, %g2) {desc = array<i64: 2, 0, 1, 32, 0, 1, 32, 1, 2>}
  %w = weftrt.alloc {bytes = 384 : i64} : !weftrt.buffer
  weftrt.launch "concat"(%g1, %g2, %w) {desc = array<i64: 3, 0, 1, 64, 0, 1, 32, 0, 1, 96, 1, 0>, weftrt.piece_offsets = array<i64: 0, 256>}
  weftrt.launch "all_reduce_start"(%w, %w) {desc = array<i64: 2, 0, 1, 96, 0, 1, 96, 4, 0, 0, 1, 0>}
  weftrt.launch "comm_wait"(%w) {desc = array<i64: 1, 0, 1, 96, 1, 0>}
  %p1 = weftrt.alloc {bytes = 256 : i64} : !weftrt.buffer
  %p2 = weftrt.alloc {bytes = 128 : i64} : !weftrt.buffer
  weftrt.launch "split"(%w, %p1, %p2) {desc = array<i64: 3, 0, 1, 96, 0, 1, 64, 0, 1, 32, 1, 0>, weftrt.piece_offsets = array<i64: 0, 256>}
  %y0 = weftrt.output 0 : !weftrt.buffer
  weftrt.launch "unary"(%p1, %y0) {desc = array<i64: 2, 0, 1, 64, 0, 1, 64, 1, 2>}
  %y1 = weftrt.output 1 : !weftrt.buffer
  weftrt.launch "unary"(%p2, %y1) {desc = array<i64: 2, 0, 1, 32, 0, 1, 32, 1, 2>}
  return
}

// -----

// A piece read after the concat (its bytes would change under the bucket's
// in-place reduction) keeps its own buffer, and so does the whole concat;
// a split whose whole is read afterwards keeps its copies too.
// CHECK-LABEL: func.func @weft_model_run()
// CHECK: "concat"
// CHECK: "split"
func.func @weft_model_run() {
  %x = weftrt.input 0 : !weftrt.buffer
  %g1 = weftrt.alloc {bytes = 256 : i64} : !weftrt.buffer
  weftrt.launch "unary"(%x, %g1) {desc = array<i64: 2, 0, 1, 64, 0, 1, 64, 1, 2>}
  %g2 = weftrt.alloc {bytes = 128 : i64} : !weftrt.buffer
  weftrt.launch "unary"(%x, %g2) {desc = array<i64: 2, 0, 1, 32, 0, 1, 32, 1, 2>}
  %w = weftrt.alloc {bytes = 384 : i64} : !weftrt.buffer
  weftrt.launch "concat"(%g1, %g2, %w) {desc = array<i64: 3, 0, 1, 64, 0, 1, 32, 0, 1, 96, 1, 0>, weftrt.piece_offsets = array<i64: 0, 256>}
  %y0 = weftrt.output 0 : !weftrt.buffer
  weftrt.launch "unary"(%g1, %y0) {desc = array<i64: 2, 0, 1, 64, 0, 1, 64, 1, 2>}
  %p1 = weftrt.alloc {bytes = 256 : i64} : !weftrt.buffer
  %p2 = weftrt.alloc {bytes = 128 : i64} : !weftrt.buffer
  weftrt.launch "split"(%w, %p1, %p2) {desc = array<i64: 3, 0, 1, 96, 0, 1, 64, 0, 1, 32, 1, 0>, weftrt.piece_offsets = array<i64: 0, 256>}
  %y1 = weftrt.output 1 : !weftrt.buffer
  weftrt.launch "unary"(%w, %y1) {desc = array<i64: 2, 0, 1, 96, 0, 1, 96, 1, 2>}
  %y2 = weftrt.output 2 : !weftrt.buffer
  weftrt.launch "binary"(%p1, %p2, %y2) {desc = array<i64: 3, 0, 1, 64, 0, 1, 32, 0, 1, 64, 1, 0>}
  return
}
