// RUN: weft-opt %s -split-input-file -weft-partition -cse | FileCheck %s

// Vocabulary-parallel embedding on a dp x tp mesh under ZeRO-3: the table
// is split by rows over [tp, dp]. The lookup gathers the table over dp only
// (each tp rank keeps its block of the vocabulary), shifts the tokens by
// the block's start (weft.mesh_offset over tp), masks the tokens outside
// it, and sums the ranks' lookups with one all_reduce over tp. The
// gradient scatters only this block's tokens into the block (no whole-table
// scatter) and one reduce_scatter over dp completes the rows this rank
// stores.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[TOK:.*]]: tensor<2x3xi64>
// CHECK: %[[TABLE:.*]] = weft.param "embed" {{.*}} : tensor<4x8xf32>
// CHECK: %[[BLOCK:.*]] = shard.all_gather %[[TABLE]] on @mesh grid_axes = [0] gather_axis = 0 : tensor<4x8xf32> -> tensor<8x8xf32>
// CHECK: %[[NEG:.*]] = weft.less %[[TOK]], %{{.*}} : (tensor<2x3xi64>, tensor<i64>) -> tensor<2x3xi1>
// CHECK: %[[WRAP:.*]] = weft.where %[[NEG]]
// CHECK: %[[START:.*]] = weft.mesh_offset on @mesh grid_axes = [1] block = 8 : tensor<i64>
// CHECK: %[[LOCAL:.*]] = weft.sub %[[WRAP]], %[[START]]
// CHECK: %[[IN:.*]] = weft.and
// CHECK: %[[SAFE:.*]] = weft.where %[[IN]], %[[LOCAL]]
// CHECK: %[[ROWS:.*]] = weft.gather %[[BLOCK]], %[[SAFE]] {axis = 0 : i64} : (tensor<8x8xf32>, tensor<2x3xi64>) -> tensor<2x3x8xf32>
// CHECK: %[[MASK:.*]] = weft.reshape %[[IN]] : tensor<2x3xi1> to tensor<2x3x1xi1>
// CHECK: %[[MINE:.*]] = weft.where %[[MASK]], %[[ROWS]]
// CHECK: %[[EMB:.*]] = shard.all_reduce %[[MINE]] on @mesh grid_axes = [1] : tensor<2x3x8xf32> -> tensor<2x3x8xf32>
// CHECK: %[[UPD:.*]] = weft.where %[[MASK]], %[[EMB]]
// CHECK: %[[GRAD:.*]] = weft.scatter_add %[[SAFE]], %[[UPD]] {axis = 0 : i64} : (tensor<2x3xi64>, tensor<2x3x8xf32>) -> tensor<8x8xf32>
// CHECK: %[[MYROWS:.*]] = shard.reduce_scatter %[[GRAD]] on @mesh grid_axes = [0] scatter_axis = 0 : tensor<8x8xf32> -> tensor<4x8xf32>
// CHECK: weft.sgd_update %[[TABLE]], %[[MYROWS]]
// CHECK-NOT: tensor<16x8xf32>
// CHECK: return
shard.grid @mesh(shape = 2x2) {weft.mesh_axes = ["dp", "tp"]}
func.func @main(%tok: tensor<4x3xi64> {weft.name = "tokens", weft.shard = {dims = [array<i16: 0>, array<i16>], partial = array<i16>}}) -> (tensor<4x3x8xf32> {weft.name = "h"}) {
  %table = weft.param "embed" {weft.shard = {dims = [array<i16: 1, 0>, array<i16>], partial = array<i16>}, weft.zero_axes = array<i16: 0>} : tensor<16x8xf32>
  %buf = weft.param "embed.momentum" {weft.role = "optimizer_state", weft.shard = {dims = [array<i16: 1, 0>, array<i16>], partial = array<i16>}} : tensor<16x8xf32>
  %step = weft.param "step" : tensor<i64>
  %0 = weft.gather %table, %tok {axis = 0 : i64} : (tensor<16x8xf32>, tensor<4x3xi64>) -> tensor<4x3x8xf32>
  %seed = weft.constant dense<1.000000e+00> : tensor<4x3x8xf32>
  %g = weft.scatter_add %tok, %0 {axis = 0 : i64} : (tensor<4x3xi64>, tensor<4x3x8xf32>) -> tensor<16x8xf32>
  %1:2 = weft.sgd_update %table, %g, buffer %buf, %step {lr = 1.000000e-01 : f64, momentum = 9.000000e-01 : f64} : (tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<i64>) -> (tensor<16x8xf32>, tensor<16x8xf32>)
  weft.param_update "embed", %1#0 : tensor<16x8xf32>
  weft.param_update "embed.momentum", %1#1 : tensor<16x8xf32>
  return %0 : tensor<4x3x8xf32>
}

// -----

// Vocabulary-parallel cross-entropy: the scores are split by class over tp
// (a column-parallel head) and by rows over dp. The log-sum-exp combines
// the blocks' maxima (all_reduce max) and sums of exponentials; the label's
// score comes from the block holding it; the mean divides by the counted
// labels of every dp rank. The gradient reuses the forward's log-sum-exp
// and stays split by class.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%{{.*}}: tensor<4x4xf32> {{.*}}, %[[Y:.*]]: tensor<4xi64>
// CHECK: %[[S:.*]] = weft.matmul %{{.*}}, %{{.*}} : (tensor<4x4xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
// CHECK: %[[LMAX:.*]] = weft.reduce_max %[[S]] {axes = array<i64: 1>} : (tensor<4x3xf32>) -> tensor<4x1xf32>
// CHECK: %[[MAX:.*]] = shard.all_reduce %[[LMAX]] on @mesh grid_axes = [1] reduction = max : tensor<4x1xf32> -> tensor<4x1xf32>
// CHECK: %[[SH:.*]] = weft.sub %[[S]], %[[MAX]]
// CHECK: %[[E:.*]] = weft.exp %[[SH]]
// CHECK: %[[LSUM:.*]] = weft.reduce_sum %[[E]] {axes = array<i64: 1>}
// CHECK: %[[SUM:.*]] = shard.all_reduce %[[LSUM]] on @mesh grid_axes = [1] : tensor<4x1xf32> -> tensor<4x1xf32>
// CHECK: %[[LOG:.*]] = weft.log %[[SUM]]
// CHECK: %[[LSE:.*]] = weft.add %[[LOG]], %[[MAX]]
// CHECK: %[[START:.*]] = weft.mesh_offset on @mesh grid_axes = [1] block = 3 : tensor<i64>
// CHECK: %[[IDS:.*]] = weft.add %{{.*}}, %[[START]] : (tensor<1x3xi64>, tensor<i64>) -> tensor<1x3xi64>
// CHECK: %[[HOT:.*]] = weft.equal %[[IDS]], %{{.*}} : (tensor<1x3xi64>, tensor<4x1xi64>) -> tensor<4x3xi1>
// CHECK: %[[KEPT:.*]] = weft.not
// CHECK: %[[PICK:.*]] = weft.where %[[HOT]], %[[S]]
// CHECK: %[[LPICK:.*]] = weft.reduce_sum %[[PICK]] {axes = array<i64: 1>}
// CHECK: %[[TGT:.*]] = shard.all_reduce %[[LPICK]] on @mesh grid_axes = [1] : tensor<4x1xf32> -> tensor<4x1xf32>
// CHECK: weft.sub %[[LSE]], %[[TGT]]
// CHECK: %[[ONES:.*]] = weft.cast %[[KEPT]] : tensor<4xi1> to tensor<4xf32>
// CHECK: %[[LCOUNT:.*]] = weft.reduce_sum %[[ONES]]
// CHECK: %[[COUNT:.*]] = shard.all_reduce %[[LCOUNT]] on @mesh grid_axes = [0] : tensor<f32> -> tensor<f32>
// CHECK: %[[LOSS:.*]] = weft.div %{{.*}}, %[[COUNT]]
// CHECK: %[[P:.*]] = weft.sub %[[S]], %[[LSE]]
// CHECK: %[[PROB:.*]] = weft.exp %[[P]]
// CHECK: %[[ONEHOT:.*]] = weft.cast %[[HOT]] : tensor<4x3xi1> to tensor<4x3xf32>
// CHECK: %[[DIFF:.*]] = weft.sub %[[PROB]], %[[ONEHOT]]
// CHECK: %[[DS:.*]] = weft.mul %[[DIFF]], %{{.*}} : (tensor<4x3xf32>, tensor<4x1xf32>) -> tensor<4x3xf32>
// CHECK: shard.all_reduce %[[LOSS]] on @mesh grid_axes = [0]
// CHECK: shard.all_gather %[[DS]] on @mesh grid_axes = [0] gather_axis = 0
// CHECK-NOT: weft.softmax_cross_entropy
shard.grid @mesh(shape = 2x2) {weft.mesh_axes = ["dp", "tp"]}
func.func @main(%h: tensor<8x4xf32> {weft.name = "h", weft.shard = {dims = [array<i16: 0>, array<i16>], partial = array<i16>}},
                %y: tensor<8xi64> {weft.name = "y", weft.shard = {dims = [array<i16: 0>], partial = array<i16>}}) -> (tensor<f32> {weft.name = "loss"}, tensor<8x6xf32> {weft.name = "dscores"}) {
  %w = weft.param "head" {weft.shard = {dims = [array<i16>, array<i16: 1>], partial = array<i16>}} : tensor<4x6xf32>
  %s = weft.matmul %h, %w : (tensor<8x4xf32>, tensor<4x6xf32>) -> tensor<8x6xf32>
  %l = weft.softmax_cross_entropy %s, %y {ignore_index = -100 : i64} : (tensor<8x6xf32>, tensor<8xi64>) -> tensor<f32>
  %one = weft.constant dense<1.000000e+00> : tensor<f32>
  %g = weft.softmax_cross_entropy_grad %s, %y, %one {ignore_index = -100 : i64} : (tensor<8x6xf32>, tensor<8xi64>, tensor<f32>) -> tensor<8x6xf32>
  return %l, %g : tensor<f32>, tensor<8x6xf32>
}

// -----

// With class weights the classes stay whole: the scores are gathered and
// the cross-entropy runs as is.
// CHECK-LABEL: func.func @main
// CHECK: %[[S:.*]] = weft.matmul {{.*}} -> tensor<8x3xf32>
// CHECK: %[[ALL:.*]] = shard.all_gather %[[S]] on @mesh grid_axes = [1] gather_axis = 1 : tensor<8x3xf32> -> tensor<8x6xf32>
// CHECK: weft.softmax_cross_entropy %[[ALL]]
// CHECK-NOT: weft.mesh_offset
shard.grid @mesh(shape = 1x2) {weft.mesh_axes = ["dp", "tp"]}
func.func @main(%h: tensor<8x4xf32> {weft.name = "h"}, %y: tensor<8xi64> {weft.name = "y"}) -> (tensor<f32> {weft.name = "loss"}) {
  %w = weft.param "head" {weft.shard = {dims = [array<i16>, array<i16: 1>], partial = array<i16>}} : tensor<4x6xf32>
  %cw = weft.param "class_weights" : tensor<6xf32>
  %s = weft.matmul %h, %w : (tensor<8x4xf32>, tensor<4x6xf32>) -> tensor<8x6xf32>
  %l = weft.softmax_cross_entropy %s, %y, %cw : (tensor<8x6xf32>, tensor<8xi64>, tensor<6xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A partial sum cannot stay partial over an axis its result is split over:
// the row-parallel product's partial sums are completed before they meet a
// column-split weight.
// CHECK-LABEL: func.func @main
// CHECK: %[[P:.*]] = weft.matmul %{{.*}}, %{{.*}} : (tensor<4x3xf32>, tensor<3x4xf32>) -> tensor<4x4xf32>
// CHECK: %[[SUM:.*]] = shard.all_reduce %[[P]] on @mesh grid_axes = [1] : tensor<4x4xf32> -> tensor<4x4xf32>
// CHECK: weft.matmul %[[SUM]], %{{.*}} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
shard.grid @mesh(shape = 1x2) {weft.mesh_axes = ["dp", "tp"]}
func.func @main(%d: tensor<4x6xf32> {weft.name = "d", weft.shard = {dims = [array<i16>, array<i16: 1>], partial = array<i16>}}) -> (tensor<4x8xf32> {weft.name = "out"}) {
  %head = weft.param "head" {weft.shard = {dims = [array<i16: 1>, array<i16>], partial = array<i16>}} : tensor<6x4xf32>
  %up = weft.param "up" {weft.shard = {dims = [array<i16>, array<i16: 1>], partial = array<i16>}} : tensor<4x8xf32>
  %0 = weft.matmul %d, %head : (tensor<4x6xf32>, tensor<6x4xf32>) -> tensor<4x4xf32>
  %1 = weft.matmul %0, %up : (tensor<4x4xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}
