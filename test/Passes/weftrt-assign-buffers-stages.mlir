// RUN: weft-opt %s -weftrt-assign-buffers | FileCheck %s

// A buffer only stage 0 uses and one only stage 1 uses share offset 2048
// though both are alive at once: no rank runs both stages. A buffer both
// stages use (%3, placed first as the largest) keeps its own place: 3 KiB,
// not 4. Each stage's ranks allocate its extent: stages 0 and 1 all 3 KiB,
// stage 2, with no buffer of its own, only the shared 2 KiB.
// CHECK: weftrt.arena_bytes = 3072 : i64
// CHECK-SAME: weftrt.stage_arena_bytes = array<i64: 3072, 3072, 2048>
// CHECK: %[[A:.*]] = weftrt.arena_slice {bytes = 1024 : i64, offset = 2048 : i64}
// CHECK: %[[B:.*]] = weftrt.arena_slice {bytes = 1024 : i64, offset = 2048 : i64}
// CHECK: %[[C:.*]] = weftrt.arena_slice {bytes = 2048 : i64, offset = 0 : i64}
func.func @weft_model_run() attributes {weftrt.mesh_shape = array<i64: 3>, weftrt.pipeline_axis = 0 : i64} {
  %0 = weftrt.input 0 : !weftrt.buffer
  %1 = weftrt.alloc {bytes = 1024 : i64} : !weftrt.buffer
  weftrt.launch "unary"(%0, %1) {desc = array<i64: 2, 0, 1, 256, 0, 1, 256, 1, 4>, weftrt.stage = 0 : i64}
  %2 = weftrt.alloc {bytes = 1024 : i64} : !weftrt.buffer
  weftrt.launch "unary"(%0, %2) {desc = array<i64: 2, 0, 1, 256, 0, 1, 256, 1, 4>, weftrt.stage = 1 : i64}
  %3 = weftrt.alloc {bytes = 2048 : i64} : !weftrt.buffer
  weftrt.launch "unary"(%1, %3) {desc = array<i64: 2, 0, 1, 256, 0, 1, 256, 1, 4>, weftrt.stage = 0 : i64}
  weftrt.launch "unary"(%2, %3) {desc = array<i64: 2, 0, 1, 256, 0, 1, 256, 1, 4>, weftrt.stage = 1 : i64}
  return
}
