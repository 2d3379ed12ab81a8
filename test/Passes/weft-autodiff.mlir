// RUN: weft-opt %s -split-input-file -weft-autodiff | FileCheck %s
// RUN: split-file %s %t
// RUN: weft-opt %t/options.mlir -weft-autodiff="loss-index=1 freeze=mask,*.frozen" | FileCheck %s --check-prefix=OPTIONS

// Broadcasting: the bias [4] and the column [3, 1] were stretched to
// [2, 3, 4]; their gradients are summed over the stretched dims and reshaped
// back. The seed d loss = 1 reaches the elementwise ops broadcast from the
// reduce_sum's kept dims. @main returns the loss and one gradient per
// parameter, named, with the trainable names on the function.
// CHECK-LABEL: func.func @main
// CHECK-SAME: -> (tensor<f32> {weft.name = "loss"}, tensor<4xf32> {weft.name = "grad:bias"}, tensor<3x1xf32> {weft.name = "grad:col"})
// CHECK-SAME: attributes {weft.trainable = ["bias", "col"]}
// CHECK: %[[B:.*]] = weft.param "bias"
// CHECK: %[[C:.*]] = weft.param "col"
// CHECK: %[[S:.*]] = weft.add %{{.*}}, %[[B]]
// CHECK: %[[M:.*]] = weft.mul %[[S]], %[[C]]
// CHECK: %[[L:.*]] = weft.reduce_sum %[[M]]
// CHECK: %[[ONE:.*]] = weft.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[ONEK:.*]] = weft.reshape %[[ONE]] : tensor<f32> to tensor<1x1x1xf32>
// CHECK: %[[G:.*]] = weft.broadcast_to %[[ONEK]] : tensor<1x1x1xf32> to tensor<2x3x4xf32>
// CHECK: %[[GS:.*]] = weft.mul %[[G]], %[[C]]
// CHECK: %[[GC:.*]] = weft.mul %[[G]], %[[S]]
// CHECK: %[[RC:.*]] = weft.reduce_sum %[[GC]] {axes = array<i64: 0, 2>} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
// CHECK: %[[DC:.*]] = weft.reshape %[[RC]] : tensor<1x3x1xf32> to tensor<3x1xf32>
// CHECK: %[[RB:.*]] = weft.reduce_sum %[[GS]] {axes = array<i64: 0, 1>} : (tensor<2x3x4xf32>) -> tensor<1x1x4xf32>
// CHECK: %[[DB:.*]] = weft.reshape %[[RB]] : tensor<1x1x4xf32> to tensor<4xf32>
// CHECK: return %[[L]], %[[DB]], %[[DC]] : tensor<f32>, tensor<4xf32>, tensor<3x1xf32>
func.func @main(%x: tensor<2x3x4xf32>) -> tensor<f32> {
  %b = weft.param "bias" : tensor<4xf32>
  %c = weft.param "col" : tensor<3x1xf32>
  %s = weft.add %x, %b : (tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
  %m = weft.mul %s, %c : (tensor<2x3x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>
  %l = weft.reduce_sum %m {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// TopK: the values' gradient goes back to the positions the indices name,
// flattened (each element's offset outside the axis, plus index * the axis'
// stride) and placed by one scatter_add over the flattened input; the
// indices have no gradient.
// CHECK-LABEL: func.func @main
// CHECK: %[[V:.*]], %[[I:.*]] = weft.topk %[[X:.*]] {axis = 0 : i64, k = 2 : i64}
// CHECK: %[[OFF:.*]] = weft.constant dense<{{\[}}[0, 1, 2], [0, 1, 2]]> : tensor<2x3xi64>
// CHECK: %[[STRIDE:.*]] = weft.constant dense<3> : tensor<i64>
// CHECK: %[[ALONG:.*]] = weft.mul %[[I]], %[[STRIDE]]
// CHECK: %[[POS:.*]] = weft.add %[[OFF]], %[[ALONG]]
// CHECK: %[[FLAT:.*]] = weft.reshape %[[POS]] : tensor<2x3xi64> to tensor<6xi64>
// CHECK: %[[UPD:.*]] = weft.reshape %{{.*}} : tensor<2x3xf32> to tensor<6xf32>
// CHECK: %[[S:.*]] = weft.scatter_add %[[FLAT]], %[[UPD]] {axis = 0 : i64} : (tensor<6xi64>, tensor<6xf32>) -> tensor<12xf32>
// CHECK: %[[DX:.*]] = weft.reshape %[[S]] : tensor<12xf32> to tensor<4x3xf32>
// CHECK: return %{{.*}}, %[[DX]]
func.func @main() -> tensor<f32> {
  %x = weft.param "x" : tensor<4x3xf32>
  %v, %i = weft.topk %x {axis = 0 : i64, k = 2 : i64} : tensor<4x3xf32> -> tensor<2x3xf32>, tensor<2x3xi64>
  %l = weft.reduce_sum %v {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Matrix products differentiate into matrix products with transpose flags:
// for C = A B^T, dA = g B and dB = g^T A; for C = A^T B^T, dA = B^T g^T and
// dB = g^T A^T. A weight shared by a batch gets one product with the batch
// folded into the contraction ([P*M, K]^T @ [P*M, N]), not P products and a
// sum.
// CHECK-LABEL: func.func @main
// CHECK-SAME: attributes {weft.trainable = ["w", "v", "u"]}
// CHECK: %[[W:.*]] = weft.param "w" : tensor<4x3xf32>
// CHECK: %[[V:.*]] = weft.param "v" : tensor<5x2xf32>
// CHECK: %[[U:.*]] = weft.param "u" : tensor<4x6xf32>
// CHECK: %[[H:.*]] = weft.matmul %[[X:.*]], %[[W]] {transpose_b = true}
// CHECK: weft.matmul %[[H]], %[[V]] {transpose_a = true, transpose_b = true}
// CHECK: %[[GK:.*]] = weft.broadcast_to %{{.*}} to tensor<2x3x6xf32>
// CHECK: %[[GY:.*]] = weft.broadcast_to %{{.*}} to tensor<4x5xf32>
// CHECK: %[[Z2:.*]] = weft.reshape %arg1 : tensor<2x3x4xf32> to tensor<6x4xf32>
// CHECK: %[[G2:.*]] = weft.reshape %[[GK]] : tensor<2x3x6xf32> to tensor<6x6xf32>
// CHECK: %[[DU:.*]] = weft.matmul %[[Z2]], %[[G2]] {transpose_a = true} : (tensor<6x4xf32>, tensor<6x6xf32>) -> tensor<4x6xf32>
// CHECK-NOT: weft.reduce_sum
// CHECK: %[[DH:.*]] = weft.matmul %[[V]], %[[GY]] {transpose_a = true, transpose_b = true} : (tensor<5x2xf32>, tensor<4x5xf32>) -> tensor<2x4xf32>
// CHECK: %[[DV:.*]] = weft.matmul %[[GY]], %[[H]] {transpose_a = true, transpose_b = true} : (tensor<4x5xf32>, tensor<2x4xf32>) -> tensor<5x2xf32>
// CHECK: %[[DW:.*]] = weft.matmul %[[DH]], %[[X]] {transpose_a = true} : (tensor<2x4xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
// CHECK: return %{{.*}}, %[[DW]], %[[DV]], %[[DU]]
func.func @main(%x: tensor<2x3xf32>, %z: tensor<2x3x4xf32>) -> tensor<f32> {
  %w = weft.param "w" : tensor<4x3xf32>
  %v = weft.param "v" : tensor<5x2xf32>
  %u = weft.param "u" : tensor<4x6xf32>
  %h = weft.matmul %x, %w {transpose_b = true} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
  %y = weft.matmul %h, %v {transpose_a = true, transpose_b = true} : (tensor<2x4xf32>, tensor<5x2xf32>) -> tensor<4x5xf32>
  %k = weft.matmul %z, %u : (tensor<2x3x4xf32>, tensor<4x6xf32>) -> tensor<2x3x6xf32>
  %l1 = weft.reduce_mean %y {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x5xf32>) -> tensor<f32>
  %l2 = weft.reduce_sum %k {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<2x3x6xf32>) -> tensor<f32>
  %l = weft.add %l1, %l2 : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A value used twice (%h in h * h) collects both contributions with an add;
// a parameter read by two weft.param ops of one name (tied) gets the sum of
// both, in the order of the ops. The other result is dropped, and an
// integer parameter is not trainable.
// CHECK-LABEL: func.func @main
// CHECK-SAME: -> (tensor<f32> {weft.name = "loss"}, tensor<3xf32> {weft.name = "grad:w"})
// CHECK-SAME: attributes {weft.trainable = ["w"]}
// CHECK: %[[W1:.*]] = weft.param "w"
// CHECK: %[[A:.*]] = weft.mul %{{.*}}, %[[W1]]
// CHECK: %[[H:.*]] = weft.tanh %[[A]]
// CHECK: weft.mul %[[H]], %[[H]]
// CHECK: %[[W2:.*]] = weft.param "w"
// CHECK: %[[G:.*]] = weft.broadcast_to
// CHECK: %[[DW2R:.*]] = weft.reduce_sum %[[G]] {axes = array<i64: 0>}
// CHECK: %[[DW2:.*]] = weft.reshape %[[DW2R]] : tensor<1x3xf32> to tensor<3xf32>
// CHECK: %[[DH1:.*]] = weft.mul %[[G]], %[[H]]
// CHECK: %[[DH2:.*]] = weft.mul %[[G]], %[[H]]
// CHECK: %[[DH:.*]] = weft.add %[[DH1]], %[[DH2]]
// CHECK: %[[DA:.*]] = weft.mul %[[DH]], %{{.*}}
// CHECK: %[[DW1P:.*]] = weft.mul %[[DA]], %{{.*}}
// CHECK: %[[DW1R:.*]] = weft.reduce_sum %[[DW1P]] {axes = array<i64: 0>}
// CHECK: %[[DW1:.*]] = weft.reshape %[[DW1R]]
// CHECK: %[[DW:.*]] = weft.add %[[DW1]], %[[DW2]] : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
// CHECK: return %{{.*}}, %[[DW]] : tensor<f32>, tensor<3xf32>
func.func @main(%x: tensor<2x3xf32>) -> (tensor<f32>, tensor<2x3xf32>) {
  %w1 = weft.param "w" : tensor<3xf32>
  %n = weft.param "steps" : tensor<3xi64>
  %a = weft.mul %x, %w1 : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %h = weft.tanh %a : tensor<2x3xf32>
  %h2 = weft.mul %h, %h : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %w2 = weft.param "w" : tensor<3xf32>
  %b = weft.add %h2, %w2 : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %l = weft.reduce_sum %b {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf32>) -> tensor<f32>
  return %l, %b : tensor<f32>, tensor<2x3xf32>
}

// -----

// The backward ops: gather's gradient is a scatter_add, slice's a
// slice_grad, conv's the two conv gradients and the bias sum, max_pool's,
// layer_norm's and softmax's their own ops. Indices computed from a float
// parameter (a shape-only path through a cast) carry no gradient, so the
// cast to i64 needs no rule, and that parameter is not trained at all.
// CHECK-LABEL: func.func @main
// CHECK-SAME: -> (tensor<f32> {weft.name = "loss"}, tensor<5x2xf32> {weft.name = "grad:table"}
// CHECK-SAME: attributes {weft.trainable = ["table", "w", "b", "scale"]}
// CHECK: %[[T:.*]] = weft.param "table" : tensor<5x2xf32>
// CHECK: %[[W:.*]] = weft.param "w"
// CHECK: %[[SC:.*]] = weft.param "scale"
// CHECK: %[[IDX:.*]] = weft.cast %{{.*}} : tensor<3xf32> to tensor<3xi64>
// CHECK: %[[E:.*]] = weft.gather %[[T]], %[[IDX]]
// CHECK: %[[X:.*]] = weft.reshape %[[E]] : tensor<3x2xf32> to tensor<1x1x3x2xf32>
// CHECK: %[[Y:.*]] = weft.conv %[[X]], %[[W]]
// CHECK: %[[P:.*]] = weft.max_pool %[[Y]]
// CHECK: %[[N:.*]] = weft.layer_norm %[[P]], %[[SC]]
// CHECK: %[[Q:.*]] = weft.softmax %[[N]]
// CHECK: %[[DN:.*]] = weft.softmax_grad %[[Q]], %{{.*}} {axis = 3 : i64}
// CHECK: %[[DP:.*]], %[[DSC:.*]], %{{.*}} = weft.layer_norm_grad %[[P]], %[[SC]], %[[DN]] {axis = 2 : i64}
// CHECK: %[[DY:.*]] = weft.max_pool_grad %[[Y]], %[[DP]]
// CHECK: %[[DX:.*]] = weft.conv_grad_input %[[DY]], %[[W]]
// CHECK: %[[DW:.*]] = weft.conv_grad_weight %[[X]], %[[DY]]
// CHECK: %[[DB:.*]] = weft.reduce_sum %[[DY]] {axes = array<i64: 0, 2, 3>, keepdims = false} : (tensor<1x1x4x3xf32>) -> tensor<1xf32>
// CHECK: %[[DE:.*]] = weft.reshape %[[DX]] : tensor<1x1x3x2xf32> to tensor<3x2xf32>
// CHECK: %[[DT:.*]] = weft.scatter_add %[[IDX]], %[[DE]] {axis = 0 : i64} : (tensor<3xi64>, tensor<3x2xf32>) -> tensor<5x2xf32>
// CHECK: return %{{.*}}, %[[DT]], %[[DW]], %[[DB]], %[[DSC]]
func.func @main() -> tensor<f32> {
  %table = weft.param "table" : tensor<5x2xf32>
  %pick = weft.param "pick" : tensor<4xf32>
  %w = weft.param "w" : tensor<1x1x2x2xf32>
  %b = weft.param "b" : tensor<1xf32>
  %scale = weft.param "scale" : tensor<2x2xf32>
  %s = weft.slice %pick {starts = array<i64: 3>, steps = array<i64: -1>} : (tensor<4xf32>) -> tensor<3xf32>
  %idx = weft.cast %s : tensor<3xf32> to tensor<3xi64>
  %e = weft.gather %table, %idx {axis = 0 : i64} : (tensor<5x2xf32>, tensor<3xi64>) -> tensor<3x2xf32>
  %x = weft.reshape %e : tensor<3x2xf32> to tensor<1x1x3x2xf32>
  %y = weft.conv %x, %w, %b {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x1x3x2xf32>, tensor<1x1x2x2xf32>, tensor<1xf32>) -> tensor<1x1x4x3xf32>
  %p = weft.max_pool %y {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 1>} : (tensor<1x1x4x3xf32>) -> tensor<1x1x2x2xf32>
  %n = weft.layer_norm %p, %scale {axis = 2 : i64} : (tensor<1x1x2x2xf32>, tensor<2x2xf32>) -> tensor<1x1x2x2xf32>
  %q = weft.softmax %n {axis = 3 : i64} : tensor<1x1x2x2xf32>
  %l = weft.reduce_max %q {axes = array<i64: 0, 1, 2, 3>, keepdims = false} : (tensor<1x1x2x2xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A layer norm that rounds its result to bf16 (a cast weft-fuse-elementwise
// folded in) differentiates as that cast after it would: the bf16 gradient
// (here the reader's cast's gradient) is widened before layer_norm_grad.
// CHECK-LABEL: func.func @main
// CHECK: %[[SC:.*]] = weft.param "scale"
// CHECK: weft.layer_norm %{{.*}}, %[[SC]] {axis = 1 : i64} : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xbf16>
// CHECK: %[[DW:.*]] = weft.cast %{{.*}} : tensor<2x4xf32> to tensor<2x4xbf16>
// CHECK-NEXT: %[[G:.*]] = weft.cast %[[DW]] : tensor<2x4xbf16> to tensor<2x4xf32>
// CHECK-NEXT: weft.layer_norm_grad %{{.*}}, %[[SC]], %[[G]] {axis = 1 : i64} : (tensor<2x4xf32>, tensor<4xf32>, tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>)
func.func @main(%x: tensor<2x4xf32>) -> tensor<f32> {
  %scale = weft.param "scale" : tensor<4xf32>
  %n = weft.layer_norm %x, %scale {axis = 1 : i64} : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xbf16>
  %w = weft.cast %n : tensor<2x4xbf16> to tensor<2x4xf32>
  %l = weft.reduce_sum %w {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A sum of bf16 with an f32 result (a widening weft-fold-casts folded in)
// differentiates as that widening before it would: the broadcast f32
// gradient is narrowed to the input's bf16.
// CHECK-LABEL: func.func @main
// CHECK: weft.reduce_sum %{{.*}} {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x4xbf16>) -> tensor<f32>
// CHECK: %[[B:.*]] = weft.broadcast_to %{{.*}} : tensor<1x1xf32> to tensor<2x4xf32>
// CHECK-NEXT: %[[N:.*]] = weft.cast %[[B]] : tensor<2x4xf32> to tensor<2x4xbf16>
// CHECK-NEXT: weft.cast %[[N]] : tensor<2x4xbf16> to tensor<2x4xf32>
func.func @main(%x: tensor<2x4xf32>) -> tensor<f32> {
  %w = weft.param "w" : tensor<2x4xf32>
  %p = weft.mul %x, %w : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %h = weft.cast %p : tensor<2x4xf32> to tensor<2x4xbf16>
  %l = weft.reduce_sum %h {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x4xbf16>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// d sin(x) = cos(x) and d cos(x) = -sin(x).
// CHECK-LABEL: func.func @main
// CHECK: %[[X:.*]] = weft.param "x"
// CHECK: %[[S:.*]] = weft.sin %[[X]]
// CHECK: %[[C:.*]] = weft.cos %[[S]]
// CHECK: %[[SS:.*]] = weft.sin %[[S]]
// CHECK: %[[GS:.*]] = weft.mul %{{.*}}, %[[SS]]
// CHECK: %[[DS:.*]] = weft.neg %[[GS]]
// CHECK: %[[CX:.*]] = weft.cos %[[X]]
// CHECK: weft.mul %[[DS]], %[[CX]]
func.func @main() -> tensor<f32> {
  %x = weft.param "x" : tensor<3xf32>
  %s = weft.sin %x : tensor<3xf32>
  %c = weft.cos %s : tensor<3xf32>
  %l = weft.reduce_sum %c {axes = array<i64: 0>, keepdims = false} : (tensor<3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// batch_norm with statistics computed in the graph (training-mode
// BatchNormalization): besides dx = g k (k = scale / sqrt(var + eps)),
// dscale and dbias, the mean gets -sum(g) k and the variance
// -sum(g (x - mean)) scale / 2 / (var + eps)^(3/2), which the reduce_means'
// rules carry on to x. (Running statistics, parameters or constants, get
// none.)
// CHECK-LABEL: func.func @main
// CHECK: %[[X:.*]] = weft.param "x"
// CHECK: %[[S:.*]] = weft.param "s"
// CHECK: %[[MC:.*]] = weft.reshape %{{.*}} : tensor<1x3xf32> to tensor<3xf32>
// CHECK: %[[VC:.*]] = weft.reshape %{{.*}} : tensor<1x3xf32> to tensor<3xf32>
// CHECK: weft.batch_norm %[[X]], %[[S]], %{{.*}}, %[[MC]], %[[VC]]
// CHECK: %[[SQ:.*]] = weft.sqrt
// CHECK: %[[INV:.*]] = weft.div %{{.*}}, %[[SQ]]
// CHECK: %[[K:.*]] = weft.mul %[[S]], %[[INV]]
// CHECK: %[[CENTERED:.*]] = weft.sub %[[X]], %[[MC]]
// CHECK: %[[GC:.*]] = weft.mul %{{.*}}, %[[CENTERED]]
// CHECK: %[[SUMGC:.*]] = weft.reduce_sum %[[GC]] {axes = array<i64: 0>, keepdims = false}
// CHECK: %[[DSCALE:.*]] = weft.mul %[[SUMGC]], %[[INV]]
// CHECK: %[[DBIAS:.*]] = weft.reduce_sum %{{.*}} {axes = array<i64: 0>, keepdims = false}
// CHECK: %[[DBK:.*]] = weft.mul %[[DBIAS]], %[[K]]
// CHECK: %[[DMEAN:.*]] = weft.neg %[[DBK]]
// CHECK: %[[INV2:.*]] = weft.mul %[[INV]], %[[INV]]
// CHECK: %[[INV3:.*]] = weft.mul %[[INV]], %[[INV2]]
// CHECK: %[[HALF:.*]] = weft.constant dense<-5.000000e-01>
// CHECK: %[[F:.*]] = weft.mul %[[INV3]], %[[HALF]]
// CHECK: %[[SS:.*]] = weft.mul %[[SUMGC]], %[[S]]
// CHECK: %[[DVAR:.*]] = weft.mul %[[SS]], %[[F]]
// CHECK: weft.reshape %[[DVAR]] : tensor<3xf32> to tensor<1x3xf32>
// CHECK: weft.reshape %[[DMEAN]] : tensor<3xf32> to tensor<1x3xf32>
// CHECK: return %{{.*}}, %{{.*}}, %[[DSCALE]], %[[DBIAS]]
func.func @main() -> tensor<f32> {
  %x = weft.param "x" : tensor<4x3xf32>
  %s = weft.param "s" : tensor<3xf32>
  %b = weft.param "b" : tensor<3xf32>
  %m = weft.reduce_mean %x {axes = array<i64: 0>} : (tensor<4x3xf32>) -> tensor<1x3xf32>
  %c = weft.sub %x, %m : (tensor<4x3xf32>, tensor<1x3xf32>) -> tensor<4x3xf32>
  %sq = weft.mul %c, %c : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %v = weft.reduce_mean %sq {axes = array<i64: 0>} : (tensor<4x3xf32>) -> tensor<1x3xf32>
  %mc = weft.reshape %m : tensor<1x3xf32> to tensor<3xf32>
  %vc = weft.reshape %v : tensor<1x3xf32> to tensor<3xf32>
  %y = weft.batch_norm %x, %s, %b, %mc, %vc : (tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %l = weft.reduce_sum %y {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Fake quantization as the importer builds it: a straight-through round
// passes the gradient unchanged (a plain one passes none), so only the
// saturation's selects mask it; the scale, a parameter marked frozen on any
// of its uses, does not train.
// CHECK-LABEL: func.func @main
// CHECK-SAME: -> (tensor<f32> {weft.name = "loss"}, tensor<4xf32> {weft.name = "grad:w"})
// CHECK-SAME: attributes {weft.trainable = ["w"]}
// CHECK: %[[W:.*]] = weft.param "w"
// CHECK: %[[S1:.*]] = weft.param "scale" {frozen}
// CHECK: %[[S2:.*]] = weft.param "scale" :
// CHECK: %[[D:.*]] = weft.div %[[W]], %[[S1]]
// CHECK: weft.round %[[D]] {straight_through}
// CHECK: %[[SAT:.*]] = weft.greater
// CHECK: %[[G:.*]] = weft.broadcast_to
// CHECK: %[[GQ:.*]] = weft.mul %[[G]], %[[S2]]
// CHECK: %[[M:.*]] = weft.where %[[SAT]], %{{.*}}, %[[GQ]]
// CHECK: %[[DW:.*]] = weft.div %[[M]], %[[S1]]
// CHECK: return %{{.*}}, %[[DW]] : tensor<f32>, tensor<4xf32>
func.func @main() -> tensor<f32> {
  %w = weft.param "w" : tensor<4xf32>
  %s = weft.param "scale" {frozen} : tensor<f32>
  %s2 = weft.param "scale" : tensor<f32>
  %d = weft.div %w, %s : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %r = weft.round %d {straight_through} : tensor<4xf32>
  %hi = weft.constant dense<1.270000e+02> : tensor<f32>
  %sat = weft.greater %r, %hi : (tensor<4xf32>, tensor<f32>) -> tensor<4xi1>
  %q = weft.where %sat, %hi, %r : (tensor<4xi1>, tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  %dq = weft.mul %q, %s2 : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %floor = weft.round %dq : tensor<4xf32>
  %both = weft.add %dq, %floor : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %l = weft.reduce_sum %both {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// reduce_max routes the gradient to the positions equal to the maximum,
// shared equally among ties; softmax_cross_entropy's scores get its
// gradient, the labels none. With the default options result 0 is the loss
// and every float parameter it depends on trains (`unused` does not: like
// PyTorch's optimizers, which skip a parameter whose .grad is None);
// OPTIONS below is the same function with loss-index=1 and `mask` frozen.
// CHECK-LABEL: func.func @main
// CHECK-SAME: attributes {weft.trainable = ["mask", "w"]}
// CHECK: %[[S:.*]] = weft.matmul
// CHECK: %[[L:.*]] = weft.softmax_cross_entropy %[[S]], %[[LABELS:.*]] :
// CHECK: %[[ONE:.*]] = weft.constant dense<1.000000e+00> : tensor<f32>
// CHECK: weft.softmax_cross_entropy_grad %[[S]], %[[LABELS]], %[[ONE]] : (tensor<2x3xf32>, tensor<2xi64>, tensor<f32>) -> tensor<2x3xf32>
// CHECK: return %[[L]], %{{.*}}, %{{.*}} : tensor<f32>, tensor<3xf32>, tensor<3x3xf32>

// OPTIONS-LABEL: func.func @main
// OPTIONS-SAME: -> (tensor<f32> {weft.name = "loss"}, tensor<3x3xf32> {weft.name = "grad:w"})
// OPTIONS-SAME: attributes {weft.trainable = ["w"]}
// OPTIONS: %[[S:.*]] = weft.matmul
// OPTIONS-NOT: weft.softmax_cross_entropy
// OPTIONS: %[[L:.*]] = weft.reduce_max %[[S]] {axes = array<i64: 0, 1>, keepdims = false}
// OPTIONS: %[[ONE:.*]] = weft.constant dense<1.000000e+00> : tensor<f32>
// OPTIONS: %[[LK:.*]] = weft.reshape %[[L]] : tensor<f32> to tensor<1x1xf32>
// OPTIONS: %[[IS:.*]] = weft.equal %[[S]], %[[LK]] : (tensor<2x3xf32>, tensor<1x1xf32>) -> tensor<2x3xi1>
// OPTIONS: %[[MASK:.*]] = weft.cast %[[IS]] : tensor<2x3xi1> to tensor<2x3xf32>
// OPTIONS: %[[COUNT:.*]] = weft.reduce_sum %[[MASK]] {axes = array<i64: 0, 1>} : (tensor<2x3xf32>) -> tensor<1x1xf32>
// OPTIONS: %[[GK:.*]] = weft.reshape %[[ONE]] : tensor<f32> to tensor<1x1xf32>
// OPTIONS: %[[SHARE:.*]] = weft.div %[[GK]], %[[COUNT]]
// OPTIONS: %[[DS:.*]] = weft.mul %[[MASK]], %[[SHARE]] : (tensor<2x3xf32>, tensor<1x1xf32>) -> tensor<2x3xf32>
// OPTIONS: %[[DW:.*]] = weft.matmul %{{.*}}, %[[DS]] {transpose_a = true}
// OPTIONS: return %[[L]], %[[DW]] : tensor<f32>, tensor<3x3xf32>

//--- options.mlir
func.func @main(%x: tensor<2x3xf32>, %labels: tensor<2xi64>) -> (tensor<f32>, tensor<f32>) {
  %m = weft.param "mask" : tensor<3xf32>
  %w = weft.param "w" : tensor<3x3xf32>
  %unused = weft.param "unused" : tensor<7xf32>
  %a = weft.mul %x, %m : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %s = weft.matmul %a, %w : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x3xf32>
  %l0 = weft.softmax_cross_entropy %s, %labels {reduction = "mean"} : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<f32>
  %l1 = weft.reduce_max %s {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf32>) -> tensor<f32>
  return %l0, %l1 : tensor<f32>, tensor<f32>
}

