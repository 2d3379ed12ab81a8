// RUN: weft-opt %s -weft-annotate-sharding="dp=4" | FileCheck %s
// RUN: weft-opt %s -weft-annotate-sharding="dp=2 tp=2" | FileCheck %s --check-prefix=MESH2D
// RUN: weft-opt %s -weft-annotate-sharding | FileCheck %s --check-prefix=ONE
// RUN: weft-opt %s -weft-annotate-sharding="dp=4 zero=1" | FileCheck %s --check-prefix=ZERO1
// RUN: weft-opt %s -weft-annotate-sharding="dp=4 zero=3" | FileCheck %s --check-prefix=ZERO3
// RUN: weft-opt %s -weft-annotate-sharding="dp=2 microbatches=4" | FileCheck %s --check-prefix=MB
// RUN: weft-opt %s -weft-annotate-sharding="microbatches=2" | FileCheck %s --check-prefix=MB1
// RUN: weft-opt %s -weft-annotate-sharding="dp=2 pp=2 tp=2 microbatches=2" | FileCheck %s --check-prefix=PPTP
// RUN: weft-opt %s -weft-annotate-sharding="pp=2 tp=2 sequence-parallel=1" | FileCheck %s --check-prefix=SEQ

// With pipeline stages the grid is dp x pp x tp (x mb): tp is the last
// device axis, so a tp group is adjacent ranks (one node's fast links) and
// pipeline neighbours are tp ranks apart. Rows split over dp then mb; the
// tensor-parallel weight and a sequence split go over axis 2.
// PPTP: shard.grid @mesh(shape = 2x2x2x2) {weft.mesh_axes = ["dp", "pp", "tp", "mb"]}
// PPTP: weft.name = "x", weft.shard = {dims = [array<i16: 0, 3>, array<i16>], partial = array<i16>}
// PPTP: weft.param "w" {weft.shard = {dims = [array<i16>, array<i16: 2>], partial = array<i16>}}
// SEQ: shard.grid @mesh(shape = 1x2x2) {weft.mesh_axes = ["dp", "pp", "tp"]}
// SEQ: weft.name = "x", weft.shard = {dims = [array<i16>, array<i16: 2>], partial = array<i16>}

// Microbatches are a third, last mesh axis "mb": each dp rank's rows are cut
// into its microbatches after the dp split (weft-microbatch turns the axis
// into repetition after partitioning).
// MB: shard.grid @mesh(shape = 2x1x4) {weft.mesh_axes = ["dp", "tp", "mb"]}
// MB-SAME: {{$}}
// MB: weft.name = "x", weft.shard = {dims = [array<i16: 0, 2>, array<i16>], partial = array<i16>}
// MB1: shard.grid @mesh(shape = 1x1x2) {weft.mesh_axes = ["dp", "tp", "mb"]}
// MB1: weft.name = "x", weft.shard = {dims = [array<i16: 2>, array<i16>], partial = array<i16>}

// The mesh is dp x tp; every input is split along its batch dim over "dp"
// (axis 0); parameters are left whole.
// CHECK: shard.grid @mesh(shape = 4x1) {weft.mesh_axes = ["dp", "tp"]}
// CHECK-LABEL: func.func @main
// CHECK-SAME: %{{.*}}: tensor<8x16xf32> {weft.name = "x", weft.shard = {dims = [array<i16: 0>, array<i16>], partial = array<i16>}}
// CHECK-SAME: %{{.*}}: tensor<8xi64> {weft.name = "labels", weft.shard = {dims = [array<i16: 0>], partial = array<i16>}}
// CHECK: weft.param "w" : tensor<16x4xf32>
// MESH2D: shard.grid @mesh(shape = 2x2) {weft.mesh_axes = ["dp", "tp"]}
// MESH2D: weft.shard = {dims = [array<i16: 0>, array<i16>], partial = array<i16>}
// With dp=1 nothing is split.
// ONE: shard.grid @mesh(shape = 1x1)
// ONE-NOT: weft.shard
// ZeRO-1 cuts the optimizer state over dp along the first dim 4 divides
// (a tensor with none stays whole); ZeRO-3 also the trained parameters,
// marked as split for storage only (weft.zero_axes).
// ZERO1: weft.param "w" : tensor<16x4xf32>
// ZERO1: weft.param "m.w" {weft.role = "optimizer_state", weft.shard = {dims = [array<i16: 0>, array<i16>], partial = array<i16>}} : tensor<16x4xf32>
// ZERO1: weft.param "m.b" {weft.role = "optimizer_state", weft.shard = {dims = [array<i16>, array<i16: 0>], partial = array<i16>}} : tensor<3x8xf32>
// ZERO1: weft.param "m.odd" {weft.role = "optimizer_state"} : tensor<3xf32>
// ZERO3: weft.param "w" {weft.shard = {dims = [array<i16: 0>, array<i16>], partial = array<i16>}, weft.zero_axes = array<i16: 0>} : tensor<16x4xf32>
// ZERO3: weft.param "frozen" : tensor<16x4xf32>
func.func @main(%x: tensor<8x16xf32> {weft.name = "x"}, %l: tensor<8xi64> {weft.name = "labels"}) -> tensor<8x4xf32> attributes {weft.trainable = ["w"]} {
  %w = weft.param "w" : tensor<16x4xf32>
  %m = weft.param "m.w" {weft.role = "optimizer_state"} : tensor<16x4xf32>
  %mb = weft.param "m.b" {weft.role = "optimizer_state"} : tensor<3x8xf32>
  %mo = weft.param "m.odd" {weft.role = "optimizer_state"} : tensor<3xf32>
  %f = weft.param "frozen" : tensor<16x4xf32>
  %0 = weft.matmul %x, %w : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}
