// RUN: weft-opt %s -split-input-file -weft-partition | FileCheck %s

// Data parallel on a 1-D use of the mesh: the batch is split over "dp" (axis
// 0); the weight gradient contracts the split rows, so it is a partial sum
// that one all_reduce over dp completes before the update. The mean over
// the split rows is rescaled to the global count, and the loss is summed.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[X:.*]]: tensor<4x16xf32> {{.*}}, %[[Y:.*]]: tensor<4x4xf32>
// CHECK: %[[W:.*]] = weft.param "w" : tensor<16x4xf32>
// CHECK: %[[P:.*]] = weft.matmul %[[X]], %[[W]] : (tensor<4x16xf32>, tensor<16x4xf32>) -> tensor<4x4xf32>
// CHECK: %[[D:.*]] = weft.sub %[[P]], %[[Y]] : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
// CHECK: %[[M:.*]] = weft.reduce_mean %{{.*}} : (tensor<4x4xf32>) -> tensor<f32>
// CHECK: %[[HALF:.*]] = weft.constant dense<5.000000e-01> : tensor<f32>
// CHECK: %[[L:.*]] = weft.mul %[[M]], %[[HALF]]
// The seed of the gradient, a splat of the global shape, is rebuilt at the
// local one.
// CHECK: weft.constant dense<3.125000e-02> : tensor<4x4xf32>
// CHECK: %[[GW:.*]] = weft.matmul %[[X]], %{{.*}} {transpose_a = true} : (tensor<4x16xf32>, tensor<4x4xf32>) -> tensor<16x4xf32>
// The update is linear in the gradient: the partial sum passes the scaling
// by lr and is completed right before the subtraction needs it whole.
// CHECK: %[[STEP:.*]] = weft.mul %[[GW]], %{{.*}}
// CHECK: %[[SUM:.*]] = shard.all_reduce %[[STEP]] on @mesh grid_axes = [0] : tensor<16x4xf32> -> tensor<16x4xf32>
// CHECK: %[[NEW:.*]] = weft.sub %[[W]], %[[SUM]]
// CHECK: weft.param_update "w", %[[NEW]] : tensor<16x4xf32>
// CHECK: %[[LS:.*]] = shard.all_reduce %[[L]] on @mesh grid_axes = [0] : tensor<f32> -> tensor<f32>
// CHECK: return %[[LS]]
shard.grid @mesh(shape = 2x1) {weft.mesh_axes = ["dp", "tp"]}
func.func @main(%x: tensor<8x16xf32> {weft.name = "x", weft.shard = {dims = [array<i16: 0>, array<i16>], partial = array<i16>}},
                %y: tensor<8x4xf32> {weft.name = "y", weft.shard = {dims = [array<i16: 0>, array<i16>], partial = array<i16>}}) -> (tensor<f32> {weft.name = "loss"}) {
  %w = weft.param "w" : tensor<16x4xf32>
  %0 = weft.matmul %x, %w : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  %1 = weft.sub %0, %y : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  %2 = weft.mul %1, %1 : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  %3 = weft.reduce_mean %2 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<8x4xf32>) -> tensor<f32>
  %seed = weft.constant dense<3.125000e-02> : tensor<8x4xf32>
  %4 = weft.mul %1, %seed : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  %5 = weft.matmul %x, %4 {transpose_a = true} : (tensor<8x16xf32>, tensor<8x4xf32>) -> tensor<16x4xf32>
  %lr = weft.constant dense<1.000000e-01> : tensor<f32>
  %6 = weft.mul %5, %lr : (tensor<16x4xf32>, tensor<f32>) -> tensor<16x4xf32>
  %7 = weft.sub %w, %6 : (tensor<16x4xf32>, tensor<16x4xf32>) -> tensor<16x4xf32>
  weft.param_update "w", %7 : tensor<16x4xf32>
  return %3 : tensor<f32>
}

// -----

// A 2-D mesh (dp x tp): Megatron's column- then row-parallel pair. w1 is
// split by columns and w2 by rows over "tp" (axis 1): the hidden layer stays
// split, the second product leaves partial sums over tp, and the mean over
// the dp-split rows adds dp: one all_reduce over both axes completes it.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[X:.*]]: tensor<4x16xf32>
// CHECK: %[[W1:.*]] = weft.param "w1" {{.*}} : tensor<16x16xf32>
// CHECK: %[[W2:.*]] = weft.param "w2" {{.*}} : tensor<16x4xf32>
// CHECK: %[[H:.*]] = weft.matmul %[[X]], %[[W1]] : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
// CHECK: %[[A:.*]] = weft.tanh %[[H]] : tensor<4x16xf32>
// CHECK: %[[Y:.*]] = weft.matmul %[[A]], %[[W2]] : (tensor<4x16xf32>, tensor<16x4xf32>) -> tensor<4x4xf32>
// CHECK: %[[M:.*]] = weft.reduce_mean %[[Y]]
// CHECK: %[[L:.*]] = weft.mul %[[M]], %{{.*}}
// CHECK: %[[S:.*]] = shard.all_reduce %[[L]] on @mesh grid_axes = [1, 0] : tensor<f32> -> tensor<f32>
// CHECK: return %[[S]]
shard.grid @mesh(shape = 2x2) {weft.mesh_axes = ["dp", "tp"]}
func.func @main(%x: tensor<8x16xf32> {weft.name = "x", weft.shard = {dims = [array<i16: 0>, array<i16>], partial = array<i16>}}) -> (tensor<f32> {weft.name = "loss"}) {
  %w1 = weft.param "w1" {weft.shard = {dims = [array<i16>, array<i16: 1>], partial = array<i16>}} : tensor<16x32xf32>
  %w2 = weft.param "w2" {weft.shard = {dims = [array<i16: 1>, array<i16>], partial = array<i16>}} : tensor<32x4xf32>
  %h = weft.matmul %x, %w1 : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %a = weft.tanh %h : tensor<8x32xf32>
  %y = weft.matmul %a, %w2 : (tensor<8x32xf32>, tensor<32x4xf32>) -> tensor<8x4xf32>
  %s = weft.reduce_mean %y {axes = array<i64: 0, 1>, keepdims = false} : (tensor<8x4xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// Sequence-major tokens [seq, batch, d] merged to rows [seq * batch, d]:
// the rank's rows are strided (outer 6) yet stay local; a softmax across the
// rows needs them whole, and the gather interleaves the blocks back through
// a [outer, rest] view.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[X:.*]]: tensor<6x2x8xf32>
// CHECK: %[[R:.*]] = weft.reshape %[[X]] : tensor<6x2x8xf32> to tensor<12x8xf32>
// CHECK: %[[V:.*]] = weft.reshape %[[R]] : tensor<12x8xf32> to tensor<6x2x8xf32>
// CHECK: %[[G:.*]] = shard.all_gather %[[V]] on @mesh grid_axes = [0] gather_axis = 1 : tensor<6x2x8xf32> -> tensor<6x4x8xf32>
// CHECK: %[[W:.*]] = weft.reshape %[[G]] : tensor<6x4x8xf32> to tensor<24x8xf32>
// CHECK: weft.softmax %[[W]] {axis = 0 : i64} : tensor<24x8xf32>
shard.grid @mesh(shape = 2x1) {weft.mesh_axes = ["dp", "tp"]}
func.func @main(%x: tensor<6x4x8xf32> {weft.shard = {dims = [array<i16>, array<i16: 0>, array<i16>], partial = array<i16>}}) -> tensor<24x8xf32> {
  %0 = weft.reshape %x : tensor<6x4x8xf32> to tensor<24x8xf32>
  %1 = weft.softmax %0 {axis = 0 : i64} : tensor<24x8xf32>
  return %1 : tensor<24x8xf32>
}

// -----

// The mean of a cross-entropy over split rows: each rank sums its rows and
// divides by the global count of labels that are not ignore_index.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[S:.*]]: tensor<2x5xf32> {{.*}}, %[[L:.*]]: tensor<2xi64>
// CHECK: %[[SUM:.*]] = weft.softmax_cross_entropy %[[S]], %[[L]] {ignore_index = -100 : i64, reduction = "sum"}
// CHECK: %[[IGN:.*]] = weft.constant dense<-100> : tensor<i64>
// CHECK: %[[EQ:.*]] = weft.equal %[[L]], %[[IGN]]
// CHECK: %[[KEPT:.*]] = weft.not %[[EQ]]
// CHECK: %[[ONES:.*]] = weft.cast %[[KEPT]] : tensor<2xi1> to tensor<2xf32>
// CHECK: %[[LOCAL:.*]] = weft.reduce_sum %[[ONES]]
// CHECK: %[[COUNT:.*]] = shard.all_reduce %[[LOCAL]] on @mesh grid_axes = [0] : tensor<f32> -> tensor<f32>
// CHECK: %[[MEAN:.*]] = weft.div %[[SUM]], %[[COUNT]]
// CHECK: %[[LOSS:.*]] = shard.all_reduce %[[MEAN]] on @mesh grid_axes = [0]
// CHECK: return %[[LOSS]]
shard.grid @mesh(shape = 4x1) {weft.mesh_axes = ["dp", "tp"]}
func.func @main(%s: tensor<8x5xf32> {weft.shard = {dims = [array<i16: 0>, array<i16>], partial = array<i16>}},
                %l: tensor<8xi64> {weft.shard = {dims = [array<i16: 0>], partial = array<i16>}}) -> tensor<f32> {
  %0 = weft.softmax_cross_entropy %s, %l {ignore_index = -100 : i64} : (tensor<8x5xf32>, tensor<8xi64>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Convolution: the batch is split, the weight gradient is a partial sum.
// CHECK-LABEL: func.func @main
// CHECK: %[[GW:.*]] = weft.conv_grad_weight %{{.*}}, %{{.*}} {{.*}} : (tensor<2x3x6x6xf32>, tensor<2x4x6x6xf32>) -> tensor<4x3x3x3xf32>
// CHECK: %[[R:.*]] = shard.all_reduce %[[GW]] on @mesh grid_axes = [0] : tensor<4x3x3x3xf32> -> tensor<4x3x3x3xf32>
// CHECK: return %[[R]]
shard.grid @mesh(shape = 2x1) {weft.mesh_axes = ["dp", "tp"]}
func.func @main(%x: tensor<4x3x6x6xf32> {weft.shard = {dims = [array<i16: 0>, array<i16>, array<i16>, array<i16>], partial = array<i16>}},
                %g: tensor<4x4x6x6xf32> {weft.shard = {dims = [array<i16: 0>, array<i16>, array<i16>, array<i16>], partial = array<i16>}}) -> tensor<4x3x3x3xf32> {
  %0 = weft.conv_grad_weight %x, %g {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<4x3x6x6xf32>, tensor<4x4x6x6xf32>) -> tensor<4x3x3x3xf32>
  return %0 : tensor<4x3x3x3xf32>
}

// -----

// ZeRO: the optimizer state (and with ZeRO-3 the parameter) is split over
// dp. The partial gradient meets a split update: one reduce_scatter adds it
// up and leaves each rank its rows; a whole parameter is cut locally
// (all_slice); the split new value is gathered back for a whole parameter.
// CHECK-LABEL: func.func @main
// CHECK: %[[W:.*]] = weft.param "w" : tensor<8x4xf32>
// CHECK: %[[M:.*]] = weft.param "m" {{.*}} : tensor<4x4xf32>
// CHECK: %[[G:.*]] = weft.matmul %{{.*}}, %{{.*}} {transpose_a = true} : (tensor<2x8xf32>, tensor<2x4xf32>) -> tensor<8x4xf32>
// CHECK: %[[GS:.*]] = shard.reduce_scatter %[[G]] on @mesh grid_axes = [0] scatter_axis = 0 : tensor<8x4xf32> -> tensor<4x4xf32>
// CHECK: %[[NM:.*]] = weft.add %[[M]], %[[GS]] : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
// CHECK: weft.param_update "m", %[[NM]] : tensor<4x4xf32>
// CHECK: %[[WS:.*]] = shard.all_slice %[[W]] on @mesh grid_axes = [0] slice_axis = 0 : tensor<8x4xf32> -> tensor<4x4xf32>
// CHECK: %[[NW:.*]] = weft.sub %[[WS]], %[[NM]] : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
// CHECK: %[[WG:.*]] = shard.all_gather %[[NW]] on @mesh grid_axes = [0] gather_axis = 0 : tensor<4x4xf32> -> tensor<8x4xf32>
// CHECK: weft.param_update "w", %[[WG]] : tensor<8x4xf32>
shard.grid @mesh(shape = 2x1) {weft.mesh_axes = ["dp", "tp"]}
func.func @main(%x: tensor<4x8xf32> {weft.shard = {dims = [array<i16: 0>, array<i16>], partial = array<i16>}},
                %g: tensor<4x4xf32> {weft.shard = {dims = [array<i16: 0>, array<i16>], partial = array<i16>}}) {
  %w = weft.param "w" : tensor<8x4xf32>
  %m = weft.param "m" {weft.shard = {dims = [array<i16: 0>, array<i16>], partial = array<i16>}} : tensor<8x4xf32>
  %0 = weft.matmul %x, %g {transpose_a = true} : (tensor<4x8xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  %1 = weft.add %m, %0 : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  weft.param_update "m", %1 : tensor<8x4xf32>
  %2 = weft.sub %w, %1 : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  weft.param_update "w", %2 : tensor<8x4xf32>
  return
}

// -----

// ZeRO under tensor parallelism: the parameter's columns are split over
// tp, the optimizer state's over [tp, dp], and the gradient is a partial
// sum over dp of tp blocks. The update runs on the state's block: one
// reduce_scatter over dp completes the gradient into it, each rank cuts
// its dp block out of its parameter's tp block (all_slice over dp alone:
// no communication), and the new block is gathered over dp alone back to
// the tp block. Nothing moves over tp, and the state is never gathered.
// CHECK-LABEL: func.func @main
// CHECK: %[[W:.*]] = weft.param "w" {{.*}} : tensor<8x2xf32>
// CHECK: %[[M:.*]] = weft.param "m" {{.*}} : tensor<8x1xf32>
// CHECK: %[[V:.*]] = weft.param "v" {{.*}} : tensor<8x1xf32>
// CHECK-NOT: grid_axes = [1]
// CHECK-DAG: %[[WS:.*]] = shard.all_slice %[[W]] on @mesh grid_axes = [0] slice_axis = 1 : tensor<8x2xf32> -> tensor<8x1xf32>
// CHECK-DAG: %[[GS:.*]] = shard.reduce_scatter %{{.*}} on @mesh grid_axes = [0] scatter_axis = 1 : tensor<8x2xf32> -> tensor<8x1xf32>
// CHECK: %[[NW:.*]], %[[NM:.*]], %[[NV:.*]] = weft.adamw_update %[[WS]], %[[GS]], %[[M]], %[[V]], {{.*}} : tensor<8x1xf32>, tensor<i64>
// CHECK-NOT: grid_axes = [1]
// CHECK: %[[WG:.*]] = shard.all_gather %[[NW]] on @mesh grid_axes = [0] gather_axis = 1 : tensor<8x1xf32> -> tensor<8x2xf32>
// CHECK: weft.param_update "w", %[[WG]] : tensor<8x2xf32>
// CHECK: weft.param_update "m", %[[NM]] : tensor<8x1xf32>
// CHECK: weft.param_update "v", %[[NV]] : tensor<8x1xf32>
shard.grid @mesh(shape = 2x2) {weft.mesh_axes = ["dp", "tp"]}
func.func @main(%g: tensor<8x4xf32> {weft.shard = {dims = [array<i16>, array<i16: 1>], partial = array<i16: 0>}}) {
  %w = weft.param "w" {weft.shard = {dims = [array<i16>, array<i16: 1>], partial = array<i16>}} : tensor<8x4xf32>
  %m = weft.param "m" {weft.role = "optimizer_state", weft.shard = {dims = [array<i16>, array<i16: 1, 0>], partial = array<i16>}} : tensor<8x4xf32>
  %v = weft.param "v" {weft.role = "optimizer_state", weft.shard = {dims = [array<i16>, array<i16: 1, 0>], partial = array<i16>}} : tensor<8x4xf32>
  %step = weft.constant dense<1> : tensor<i64>
  %nw, %nm, %nv = weft.adamw_update %w, %g, %m, %v, %step {beta1 = 9.000000e-01 : f64, beta2 = 0.999 : f64, eps = 1.000000e-08 : f64, lr = 1.000000e-03 : f64, weight_decay = 0.0 : f64} : tensor<8x4xf32>, tensor<i64>
  weft.param_update "w", %nw : tensor<8x4xf32>
  weft.param_update "m", %nm : tensor<8x4xf32>
  weft.param_update "v", %nv : tensor<8x4xf32>
  return
}

// -----

// ZeRO for a weight replicated over tp (a row-parallel layer's bias): its
// gradient is a partial sum over tp and dp, its optimizer state split over
// dp. The sum over tp is completed first (all_reduce over tp alone), then
// one reduce_scatter over dp leaves each rank its block.
// CHECK-LABEL: func.func @main
// CHECK: %[[B:.*]] = weft.param "b" : tensor<8xf32>
// CHECK-DAG: %[[BS:.*]] = shard.all_slice %[[B]] on @mesh grid_axes = [0] slice_axis = 0 : tensor<8xf32> -> tensor<4xf32>
// CHECK-DAG: %[[T:.*]] = shard.all_reduce %{{.*}} on @mesh grid_axes = [1] : tensor<8xf32> -> tensor<8xf32>
// CHECK-DAG: %[[GS:.*]] = shard.reduce_scatter %[[T]] on @mesh grid_axes = [0] scatter_axis = 0 : tensor<8xf32> -> tensor<4xf32>
// CHECK: weft.adamw_update %[[BS]], %[[GS]], {{.*}} : tensor<4xf32>, tensor<i64>
shard.grid @mesh(shape = 2x2) {weft.mesh_axes = ["dp", "tp"]}
func.func @main(%g: tensor<8xf32> {weft.shard = {dims = [array<i16>], partial = array<i16: 1, 0>}}) {
  %b = weft.param "b" : tensor<8xf32>
  %m = weft.param "m" {weft.role = "optimizer_state", weft.shard = {dims = [array<i16: 0>], partial = array<i16>}} : tensor<8xf32>
  %v = weft.param "v" {weft.role = "optimizer_state", weft.shard = {dims = [array<i16: 0>], partial = array<i16>}} : tensor<8xf32>
  %step = weft.constant dense<1> : tensor<i64>
  %nb, %nm, %nv = weft.adamw_update %b, %g, %m, %v, %step {beta1 = 9.000000e-01 : f64, beta2 = 0.999 : f64, eps = 1.000000e-08 : f64, lr = 1.000000e-03 : f64, weight_decay = 0.0 : f64} : tensor<8xf32>, tensor<i64>
  weft.param_update "b", %nb : tensor<8xf32>
  weft.param_update "m", %nm : tensor<8xf32>
  weft.param_update "v", %nv : tensor<8xf32>
  return
}

// -----

// Attention's reshape under dp x tp: [seq, batch, heads * dims] with the
// batch split over dp and the heads over tp becomes [seq, batch * heads,
// dims], whose middle dim carries both splits (tp on heads, dp on the
// batch major to it): every rank keeps its 2 x 1 of the 4 x 2 (batch,
// head) pairs with no communication, and the reshape back to
// [seq * batch, heads * dims] splits rows over dp (strided) and columns
// over tp. Flattening everything cannot keep both splits: the operand is
// gathered, first over tp on the heads, then over dp on the batch.
// CHECK-LABEL: func.func @main
// CHECK-SAME: %[[X:.*]]: tensor<3x2x4xf32>
// CHECK: %[[A:.*]] = weft.reshape %[[X]] : tensor<3x2x4xf32> to tensor<3x2x4xf32>
// CHECK: %[[T:.*]] = weft.transpose %[[A]] {{.*}} -> tensor<2x3x4xf32>
// CHECK: weft.tanh %[[T]] : tensor<2x3x4xf32>
// CHECK: %[[B:.*]] = weft.transpose {{.*}} -> tensor<3x2x4xf32>
// CHECK: %[[Y:.*]] = weft.reshape %[[B]] : tensor<3x2x4xf32> to tensor<6x4xf32>
// CHECK: %[[V:.*]] = weft.reshape %[[B]] : tensor<3x2x4xf32> to tensor<3x2x1x4xf32>
// CHECK: %[[H:.*]] = shard.all_gather %[[V]] on @mesh grid_axes = [1] gather_axis = 2 : tensor<3x2x1x4xf32> -> tensor<3x2x2x4xf32>
// CHECK: %[[BH:.*]] = shard.all_gather %[[H]] on @mesh grid_axes = [0] gather_axis = 1 : tensor<3x2x2x4xf32> -> tensor<3x4x2x4xf32>
// CHECK: %[[W:.*]] = weft.reshape %[[BH]] : tensor<3x4x2x4xf32> to tensor<3x8x4xf32>
// CHECK: weft.reshape %[[W]] : tensor<3x8x4xf32> to tensor<96xf32>
// CHECK: %[[YV:.*]] = weft.reshape %[[Y]] : tensor<6x4xf32> to tensor<3x2x4xf32>
// CHECK: shard.all_gather %[[YV]] on @mesh grid_axes = [0] gather_axis = 1 : tensor<3x2x4xf32> -> tensor<3x4x4xf32>
// CHECK: shard.all_gather %{{.*}} on @mesh grid_axes = [1] gather_axis = 1 : tensor<12x4xf32> -> tensor<12x8xf32>
shard.grid @mesh(shape = 2x2) {weft.mesh_axes = ["dp", "tp"]}
func.func @main(%x: tensor<3x4x8xf32> {weft.name = "x", weft.shard = {dims = [array<i16>, array<i16: 0>, array<i16: 1>], partial = array<i16>}}) -> (tensor<12x8xf32> {weft.name = "y"}, tensor<96xf32> {weft.name = "flat"}) {
  %0 = weft.reshape %x : tensor<3x4x8xf32> to tensor<3x8x4xf32>
  %1 = weft.transpose %0 {permutation = array<i64: 1, 0, 2>} : (tensor<3x8x4xf32>) -> tensor<8x3x4xf32>
  %2 = weft.tanh %1 : tensor<8x3x4xf32>
  %3 = weft.transpose %2 {permutation = array<i64: 1, 0, 2>} : (tensor<8x3x4xf32>) -> tensor<3x8x4xf32>
  %4 = weft.reshape %3 : tensor<3x8x4xf32> to tensor<12x8xf32>
  %5 = weft.reshape %3 : tensor<3x8x4xf32> to tensor<96xf32>
  return %4, %5 : tensor<12x8xf32>, tensor<96xf32>
}

// -----

// A gather along a spatial axis (Pad's reflect, Resize) of a batch split
// over dp, and its gradient: both stay split along the batch, with no
// collective until the function's result is made whole (the scatter_add
// keeps the updates' other dims' splits).
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>
// CHECK-NOT: shard.
// CHECK: %[[I:.*]] = weft.constant dense<[1, 0, 1, 2, 3, 2]> : tensor<6xi64>
// CHECK: %[[Y:.*]] = weft.gather %[[X]], %[[I]] {axis = 2 : i64} : (tensor<2x3x4xf32>, tensor<6xi64>) -> tensor<2x3x6xf32>
// CHECK: %[[G:.*]] = weft.scatter_add %[[I]], %[[Y]] {axis = 2 : i64} : (tensor<6xi64>, tensor<2x3x6xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT: %[[W:.*]] = shard.all_gather %[[G]] on @mesh grid_axes = [0] gather_axis = 0 : tensor<2x3x4xf32> -> tensor<4x3x4xf32>
// CHECK-NEXT: return %[[W]]
shard.grid @mesh(shape = 2x1) {weft.mesh_axes = ["dp", "tp"]}
func.func @main(%x: tensor<4x3x4xf32> {weft.name = "x", weft.shard = {dims = [array<i16: 0>, array<i16>, array<i16>], partial = array<i16>}}) -> (tensor<4x3x4xf32> {weft.name = "g"}) {
  %i = weft.constant dense<[1, 0, 1, 2, 3, 2]> : tensor<6xi64>
  %y = weft.gather %x, %i {axis = 2 : i64} : (tensor<4x3x4xf32>, tensor<6xi64>) -> tensor<4x3x6xf32>
  %g = weft.scatter_add %i, %y {axis = 2 : i64} : (tensor<6xi64>, tensor<4x3x6xf32>) -> tensor<4x3x4xf32>
  return %g : tensor<4x3x4xf32>
}

// -----

// A partial sum (a vocabulary-parallel embedding's rows, say) times a whole
// weight: the product is linear in it, so the partial sum passes through the
// matmul and one all_reduce completes the product. (The rule used to sum the
// operand first and pass its partial sum on as well: two all_reduces, the
// result counted twice.)
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[X:.*]]: tensor<6x4xf32>
// CHECK-NOT: shard.
// CHECK: %[[W:.*]] = weft.param "w"
// CHECK-NOT: shard.
// CHECK: %[[P:.*]] = weft.matmul %[[X]], %[[W]] {transpose_b = true} : (tensor<6x4xf32>, tensor<3x4xf32>) -> tensor<6x3xf32>
// CHECK-NEXT: %[[S:.*]] = shard.all_reduce %[[P]] on @mesh grid_axes = [1] : tensor<6x3xf32> -> tensor<6x3xf32>
// CHECK-NOT: shard.
// CHECK: return %[[S]]
shard.grid @mesh(shape = 1x2) {weft.mesh_axes = ["dp", "tp"]}
func.func @main(%x: tensor<6x4xf32> {weft.name = "x", weft.shard = {dims = [array<i16>, array<i16>], partial = array<i16: 1>}}) -> (tensor<6x3xf32> {weft.name = "y"}) {
  %w = weft.param "w" : tensor<3x4xf32>
  %y = weft.matmul %x, %w {transpose_b = true} : (tensor<6x4xf32>, tensor<3x4xf32>) -> tensor<6x3xf32>
  return %y : tensor<6x3xf32>
}

// -----

// TopK along the features of a batch split over dp: each rank ranks its
// own rows, no collective until the results are made whole.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[X:.*]]: tensor<2x8xf32>
// CHECK-NEXT: %[[V:.*]], %[[I:.*]] = weft.topk %[[X]] {axis = 1 : i64, k = 3 : i64} : tensor<2x8xf32> -> tensor<2x3xf32>, tensor<2x3xi64>
// CHECK-NEXT: shard.all_gather %[[V]] on @mesh grid_axes = [0] gather_axis = 0 : tensor<2x3xf32> -> tensor<4x3xf32>
// CHECK-NEXT: shard.all_gather %[[I]] on @mesh grid_axes = [0] gather_axis = 0 : tensor<2x3xi64> -> tensor<4x3xi64>
shard.grid @mesh(shape = 2x1) {weft.mesh_axes = ["dp", "tp"]}
func.func @main(%x: tensor<4x8xf32> {weft.name = "x", weft.shard = {dims = [array<i16: 0>, array<i16>], partial = array<i16>}}) -> (tensor<4x3xf32> {weft.name = "v"}, tensor<4x3xi64> {weft.name = "i"}) {
  %v, %i = weft.topk %x {axis = 1 : i64, k = 3 : i64} : tensor<4x8xf32> -> tensor<4x3xf32>, tensor<4x3xi64>
  return %v, %i : tensor<4x3xf32>, tensor<4x3xi64>
}

// -----

// Training-mode batch norm over a dp-split batch (BatchNorm1d's [N, C]):
// the batch statistics are means over the split rows, so partial sums that
// one all_reduce each completes; the completed mean serves both the
// centering and the norm (its reshape does not sum it again), and the norm
// itself runs on the local rows. The gradient of a mean over the split
// rows broadcasts a partial sum: its [1, C] input is all-reduced and each
// rank broadcasts its own rows, no reduce_scatter of the [N, C] broadcast.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[X:.*]]: tensor<4x3xf32>
// CHECK: %[[M:.*]] = weft.reduce_mean %[[X]] {axes = array<i64: 0>} : (tensor<4x3xf32>) -> tensor<1x3xf32>
// CHECK: %[[MH:.*]] = weft.mul %[[M]], %{{.*}}
// CHECK: %[[MS:.*]] = shard.all_reduce %[[MH]] on @mesh grid_axes = [0] : tensor<1x3xf32> -> tensor<1x3xf32>
// CHECK: weft.sub %[[X]], %[[MS]]
// CHECK: %[[MC:.*]] = weft.reshape %[[MS]] : tensor<1x3xf32> to tensor<3xf32>
// The variance's reshape is summed at its source, then moved again.
// CHECK: %[[VS:.*]] = shard.all_reduce %{{.*}} on @mesh grid_axes = [0] : tensor<1x3xf32> -> tensor<1x3xf32>
// CHECK: %[[VC:.*]] = weft.reshape %[[VS]] : tensor<1x3xf32> to tensor<3xf32>
// CHECK: %[[Y:.*]] = weft.batch_norm %[[X]], %{{.*}}, %{{.*}}, %[[MC]], %[[VC]] : (tensor<4x3xf32>, {{.*}}) -> tensor<4x3xf32>
// CHECK: %[[G:.*]] = weft.reduce_sum %[[Y]] {axes = array<i64: 0>} : (tensor<4x3xf32>) -> tensor<1x3xf32>
// CHECK: %[[GS:.*]] = shard.all_reduce %[[G]] on @mesh grid_axes = [0] : tensor<1x3xf32> -> tensor<1x3xf32>
// CHECK: %[[GB:.*]] = weft.broadcast_to %[[GS]] : tensor<1x3xf32> to tensor<4x3xf32>
// CHECK: weft.mul %[[GB]], %[[X]]
shard.grid @mesh(shape = 2) {weft.mesh_axes = ["dp"]}
func.func @main(%x: tensor<8x3xf32> {weft.name = "x", weft.shard = {dims = [array<i16: 0>, array<i16>], partial = array<i16>}}) -> (tensor<f32> {weft.name = "loss"}) {
  %s = weft.param "s" : tensor<3xf32>
  %b = weft.param "b" : tensor<3xf32>
  %m = weft.reduce_mean %x {axes = array<i64: 0>} : (tensor<8x3xf32>) -> tensor<1x3xf32>
  %c = weft.sub %x, %m : (tensor<8x3xf32>, tensor<1x3xf32>) -> tensor<8x3xf32>
  %sq = weft.mul %c, %c : (tensor<8x3xf32>, tensor<8x3xf32>) -> tensor<8x3xf32>
  %v = weft.reduce_mean %sq {axes = array<i64: 0>} : (tensor<8x3xf32>) -> tensor<1x3xf32>
  %mc = weft.reshape %m : tensor<1x3xf32> to tensor<3xf32>
  %vc = weft.reshape %v : tensor<1x3xf32> to tensor<3xf32>
  %y = weft.batch_norm %x, %s, %b, %mc, %vc : (tensor<8x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<8x3xf32>
  %g = weft.reduce_sum %y {axes = array<i64: 0>} : (tensor<8x3xf32>) -> tensor<1x3xf32>
  %gb = weft.broadcast_to %g : tensor<1x3xf32> to tensor<8x3xf32>
  %z = weft.mul %gb, %x : (tensor<8x3xf32>, tensor<8x3xf32>) -> tensor<8x3xf32>
  %l = weft.reduce_sum %z {axes = array<i64: 0, 1>, keepdims = false} : (tensor<8x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Dropout draws from each element's position in the whole tensor: on a
// dp x tp block its offsets become the block's start, a weft.mesh_offset per
// split dim (block = the local extent), so every plan draws the
// single-device masks.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[X:.*]]: tensor<4x3xf32>
// CHECK: %[[STEP:.*]] = weft.param "weft.step"
// CHECK: %[[ZERO:.*]] = weft.constant dense<0> : tensor<2xi64>
// CHECK: %[[ROWS:.*]] = weft.mesh_offset on @mesh grid_axes = [0] block = 4 {weft.position} : tensor<i64>
// CHECK: %[[E0:.*]] = weft.constant dense<[1, 0]> : tensor<2xi64>
// CHECK: %[[R:.*]] = weft.mul %[[E0]], %[[ROWS]]
// CHECK: %[[O1:.*]] = weft.add %[[ZERO]], %[[R]]
// CHECK: %[[COLS:.*]] = weft.mesh_offset on @mesh grid_axes = [1] block = 3 {weft.position} : tensor<i64>
// CHECK: %[[E1:.*]] = weft.constant dense<[0, 1]> : tensor<2xi64>
// CHECK: %[[C:.*]] = weft.mul %[[E1]], %[[COLS]]
// CHECK: %[[O2:.*]] = weft.add %[[O1]], %[[C]]
// CHECK: weft.dropout %[[X]], %[[STEP]], %[[O2]] {global_shape = array<i64: 8, 6>, {{.*}}} : tensor<4x3xf32>, tensor<i64>, tensor<2xi64> -> tensor<4x3xf32>, tensor<4x3xi1>
shard.grid @mesh(shape = 2x2) {weft.mesh_axes = ["dp", "tp"]}
func.func @main(%x: tensor<8x6xf32> {weft.name = "x", weft.shard = {dims = [array<i16: 0>, array<i16: 1>], partial = array<i16>}}) -> (tensor<f32> {weft.name = "loss"}) {
  %step = weft.param "weft.step" {weft.role = "step"} : tensor<i64>
  %off = weft.constant dense<0> : tensor<2xi64>
  %y, %m = weft.dropout %x, %step, %off {global_shape = array<i64: 8, 6>, ratio = 2.500000e-01 : f64, seed = 0 : i64, stream = 0 : i64} : tensor<8x6xf32>, tensor<i64>, tensor<2xi64> -> tensor<8x6xf32>, tensor<8x6xi1>
  %l = weft.reduce_sum %y {axes = array<i64: 0, 1>, keepdims = false} : (tensor<8x6xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// weft.random is moved like a dropout: its `like` (here x, split over dp and
// tp) gives the block, and its offsets become the block's start. It draws
// an f64 tensor against f32 `like` values (only the shape is read).
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[X:.*]]: tensor<4x3xf32>
// CHECK: %[[STEP:.*]] = weft.param "weft.step"
// CHECK: %[[ROWS:.*]] = weft.mesh_offset on @mesh grid_axes = [0] block = 4 {weft.position} : tensor<i64>
// CHECK: %[[COLS:.*]] = weft.mesh_offset on @mesh grid_axes = [1] block = 3 {weft.position} : tensor<i64>
// CHECK: %[[O2:.*]] = weft.add %{{.*}}, %{{.*}} : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
// CHECK: weft.random %[[X]], %[[STEP]], %[[O2]] {a = 0.000000e+00 : f64, b = 1.000000e+00 : f64, distribution = "normal", global_shape = array<i64: 8, 6>, seed = 7 : i64, stream = 1 : i64} : tensor<4x3xf32>, tensor<i64>, tensor<2xi64> -> tensor<4x3xf64>
shard.grid @mesh(shape = 2x2) {weft.mesh_axes = ["dp", "tp"]}
func.func @main(%x: tensor<8x6xf32> {weft.name = "x", weft.shard = {dims = [array<i16: 0>, array<i16: 1>], partial = array<i16>}}) -> (tensor<f64> {weft.name = "loss"}) {
  %step = weft.param "weft.step" {weft.role = "step"} : tensor<i64>
  %off = weft.constant dense<0> : tensor<2xi64>
  %y = weft.random %x, %step, %off {a = 0.0 : f64, b = 1.0 : f64, distribution = "normal", global_shape = array<i64: 8, 6>, seed = 7 : i64, stream = 1 : i64} : tensor<8x6xf32>, tensor<i64>, tensor<2xi64> -> tensor<8x6xf64>
  %l = weft.reduce_sum %y {axes = array<i64: 0, 1>, keepdims = false} : (tensor<8x6xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// weft.random on rows split in strided blocks: the [outer, rest] view, as
// for a dropout.
// CHECK-LABEL: func.func @main
// CHECK: %[[R:.*]] = weft.reshape %{{.*}} : tensor<6x2x8xf32> to tensor<12x8xf32>
// CHECK: %[[V:.*]] = weft.reshape %[[R]] : tensor<12x8xf32> to tensor<6x2x8xf32>
// CHECK: %[[Y:.*]] = weft.random %[[V]], %{{.*}}, %{{.*}} {a = -1.000000e+00 : f64, b = 1.000000e+00 : f64, distribution = "uniform", global_shape = array<i64: 6, 4, 8>, {{.*}}} : tensor<6x2x8xf32>, tensor<i64>, tensor<3xi64> -> tensor<6x2x8xf32>
// CHECK: %[[YL:.*]] = weft.reshape %[[Y]] : tensor<6x2x8xf32> to tensor<12x8xf32>
// CHECK: weft.reduce_sum %[[YL]]
shard.grid @mesh(shape = 2x1) {weft.mesh_axes = ["dp", "tp"]}
func.func @main(%x: tensor<6x4x8xf32> {weft.name = "x", weft.shard = {dims = [array<i16>, array<i16: 0>, array<i16>], partial = array<i16>}}) -> (tensor<f32> {weft.name = "loss"}) {
  %0 = weft.reshape %x : tensor<6x4x8xf32> to tensor<24x8xf32>
  %step = weft.param "weft.step" {weft.role = "step"} : tensor<i64>
  %off = weft.constant dense<0> : tensor<2xi64>
  %y = weft.random %0, %step, %off {a = -1.0 : f64, b = 1.0 : f64, distribution = "uniform", global_shape = array<i64: 24, 8>, seed = 0 : i64, stream = 0 : i64} : tensor<24x8xf32>, tensor<i64>, tensor<2xi64> -> tensor<24x8xf32>
  %l = weft.reduce_sum %y {axes = array<i64: 0, 1>, keepdims = false} : (tensor<24x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A dropout on rows split in strided blocks ([seq, batch] merged, outer 6):
// it runs on the [outer, rest] view, whose rest is split in plain blocks
// (the same row-major positions), between two reshapes.
// CHECK-LABEL: func.func @main
// CHECK: %[[R:.*]] = weft.reshape %{{.*}} : tensor<6x2x8xf32> to tensor<12x8xf32>
// CHECK: %[[STEP:.*]] = weft.param "weft.step"
// CHECK: %[[ZERO:.*]] = weft.constant dense<0> : tensor<3xi64>
// CHECK: %[[START:.*]] = weft.mesh_offset on @mesh grid_axes = [0] block = 2 {weft.position} : tensor<i64>
// CHECK: %[[E:.*]] = weft.constant dense<[0, 1, 0]> : tensor<3xi64>
// CHECK: %[[M:.*]] = weft.mul %[[E]], %[[START]]
// CHECK: %[[OFF:.*]] = weft.add %[[ZERO]], %[[M]]
// CHECK: %[[V:.*]] = weft.reshape %[[R]] : tensor<12x8xf32> to tensor<6x2x8xf32>
// CHECK: %[[Y:.*]], %[[MASK:.*]] = weft.dropout %[[V]], %[[STEP]], %[[OFF]] {global_shape = array<i64: 6, 4, 8>, {{.*}}} : tensor<6x2x8xf32>, tensor<i64>, tensor<3xi64> -> tensor<6x2x8xf32>, tensor<6x2x8xi1>
// CHECK: %[[YL:.*]] = weft.reshape %[[Y]] : tensor<6x2x8xf32> to tensor<12x8xf32>
// CHECK: weft.reduce_sum %[[YL]]
shard.grid @mesh(shape = 2x1) {weft.mesh_axes = ["dp", "tp"]}
func.func @main(%x: tensor<6x4x8xf32> {weft.name = "x", weft.shard = {dims = [array<i16>, array<i16: 0>, array<i16>], partial = array<i16>}}) -> (tensor<f32> {weft.name = "loss"}) {
  %0 = weft.reshape %x : tensor<6x4x8xf32> to tensor<24x8xf32>
  %step = weft.param "weft.step" {weft.role = "step"} : tensor<i64>
  %off = weft.constant dense<0> : tensor<2xi64>
  %y, %m = weft.dropout %0, %step, %off {global_shape = array<i64: 24, 8>, ratio = 5.000000e-01 : f64, seed = 0 : i64, stream = 0 : i64} : tensor<24x8xf32>, tensor<i64>, tensor<2xi64> -> tensor<24x8xf32>, tensor<24x8xi1>
  %l = weft.reduce_sum %y {axes = array<i64: 0, 1>, keepdims = false} : (tensor<24x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A split that moves from one dim to another over the same axis (a
// cross-attention's scores gradient under sequence parallelism: made with
// the keys split, wanted split by queries): one all_to_all sends each rank
// its queries' rows of every key block. (Cutting the queries first and then
// gathering the keys joined key blocks of other ranks' queries.)
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[Q:.*]]: tensor<4x8xf32> {{.*}}, %[[K:.*]]: tensor<8x4xf32>
// CHECK-NOT: shard.all_gather
// CHECK: %[[S:.*]] = shard.all_to_all %[[K]] on @mesh grid_axes = [0] split_axis = 0 concat_axis = 1 : tensor<8x4xf32> -> tensor<4x8xf32>
// CHECK-NOT: shard.all_slice
// CHECK: weft.add %[[Q]], %[[S]] : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
shard.grid @mesh(shape = 2) {weft.mesh_axes = ["tp"]}
func.func @main(%q: tensor<8x8xf32> {weft.name = "q", weft.shard = {dims = [array<i16: 0>, array<i16>], partial = array<i16>}}, %k: tensor<8x8xf32> {weft.name = "k", weft.shard = {dims = [array<i16>, array<i16: 0>], partial = array<i16>}}) -> (tensor<f32> {weft.name = "loss"}) {
  %0 = weft.add %q, %k : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %l = weft.reduce_sum %0 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<8x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A learned token broadcast over the whole batch and joined to the batch's
// rows (ViT's class token): the join keeps the rows' split, and the
// broadcast is made at the rank's rows instead of the rows being gathered.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[X:.*]]: tensor<2x16x8xf32>
// CHECK: %[[T:.*]] = weft.param "token" : tensor<1x1x8xf32>
// CHECK-NOT: shard.all_gather
// CHECK: %[[B:.*]] = weft.broadcast_to %[[T]] : tensor<1x1x8xf32> to tensor<2x1x8xf32>
// CHECK: weft.concat %[[B]], %[[X]] {axis = 1 : i64} : (tensor<2x1x8xf32>, tensor<2x16x8xf32>) -> tensor<2x17x8xf32>
shard.grid @mesh(shape = 2x1) {weft.mesh_axes = ["dp", "tp"]}
func.func @main(%x: tensor<4x16x8xf32> {weft.name = "x", weft.shard = {dims = [array<i16: 0>, array<i16>, array<i16>], partial = array<i16>}}) -> (tensor<f32> {weft.name = "loss"}) {
  %t = weft.param "token" : tensor<1x1x8xf32>
  %b = weft.broadcast_to %t : tensor<1x1x8xf32> to tensor<4x1x8xf32>
  %0 = weft.concat %b, %x {axis = 1 : i64} : (tensor<4x1x8xf32>, tensor<4x16x8xf32>) -> tensor<4x17x8xf32>
  %l = weft.reduce_sum %0 {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<4x17x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
