//===- WeftGradOps.td - Backward ops of the weft dialect --------*- tablegen -*-===//
//
// Ops that only gradient rules (GradientRules*.cpp) create: the parts of a
// derivative that no forward op expresses. Each runs as one of the runtime's
// backward kernels (KernelABI.h, "Backward kernels"), f32 on the CPU. Their
// shape rules are in ShapeRules.cpp, verifiers in Verifiers.cpp, kernels in
// RuntimeLowering.cpp and costs in Cost.cpp, like every other op. Included
// from WeftOps.td.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_GRAD_OPS_TD
#define WEFT_GRAD_OPS_TD

def Weft_ScatterAddOp : Weft_ComputeOp<"scatter_add"> {
  let summary = "Sums slices into a zero tensor at indices (gather's gradient)";
  let description = [{
    result = 0, then for every index position p:
    result[.., indices[p], ..] += updates[.., p, ..], the index sitting in
    dim `axis` of the result. updates has the shape weft.gather with the same
    indices and axis would produce from the result:
    result.dims[:axis] + indices.dims + result.dims[axis+1:]. Repeated indices
    accumulate; negative ones count from the end.
  }];
  let arguments = (ins Weft_IndexTensor:$indices, Weft_FloatTensor:$updates,
                   I64Attr:$axis);
  let results = (outs Weft_FloatTensor:$result);
  let assemblyFormat = [{
    $indices `,` $updates attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Weft_ConvGradInputOp : Weft_ComputeOp<"conv_grad_input", [Weft_Differentiable]> {
  let summary = "Gradient of weft.conv with respect to its input";
  let description = [{
    `grad` is the gradient of the convolution's result, `weight` its weight;
    the result has the shape of the convolution's input, which the attributes
    (those of the forward op) do not determine alone (strides drop rows).
    It is also ONNX ConvTranspose (with `grad` its input X and `weight` its
    W [C, M/group, K...]), so it has gradients of its own.
  }];
  let arguments = (ins Weft_FloatTensor:$grad, Weft_FloatTensor:$weight,
                   DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                   DenseI64ArrayAttr:$dilations,
                   DefaultValuedAttr<I64Attr, "1">:$group);
  let results = (outs Weft_FloatTensor:$input_grad);
  let assemblyFormat = [{
    $grad `,` $weight attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Weft_ConvGradWeightOp : Weft_ComputeOp<"conv_grad_weight"> {
  let summary = "Gradient of weft.conv with respect to its weight";
  let description = [{
    `input` is the convolution's input, `grad` the gradient of its result;
    the result has the weight's shape [M, C/group, K1..Ks].
  }];
  let arguments = (ins Weft_FloatTensor:$input, Weft_FloatTensor:$grad,
                   DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                   DenseI64ArrayAttr:$dilations,
                   DefaultValuedAttr<I64Attr, "1">:$group);
  let results = (outs Weft_FloatTensor:$weight_grad);
  let assemblyFormat = [{
    $input `,` $grad attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Weft_MaxPoolGradOp : Weft_ComputeOp<"max_pool_grad", [InferTypeOpAdaptor]> {
  let summary = "Gradient of weft.max_pool with respect to its input";
  let description = [{
    Each window's gradient goes to the window's first maximum (PyTorch's
    choice); windows overlapping one position add up. The attributes are the
    forward op's; `grad` has the forward result's shape.
  }];
  let arguments = (ins Weft_FloatTensor:$input, Weft_FloatTensor:$grad,
                   DenseI64ArrayAttr:$kernel_shape, DenseI64ArrayAttr:$strides,
                   DenseI64ArrayAttr:$pads, DenseI64ArrayAttr:$dilations,
                   DefaultValuedAttr<BoolAttr, "false">:$ceil_mode);
  let results = (outs Weft_FloatTensor:$input_grad);
  let assemblyFormat = [{
    $input `,` $grad attr-dict `:` functional-type(operands, results)
  }];
}

def Weft_AvgPoolGradOp : Weft_ComputeOp<"avg_pool_grad"> {
  let summary = "Gradient of weft.avg_pool with respect to its input";
  let description = [{
    Spreads each window's gradient evenly over the window's elements (the
    divisor counts the padding with `count_include_pad`). The attributes are
    the forward op's; the result has the forward input's shape.
  }];
  let arguments = (ins Weft_FloatTensor:$grad, DenseI64ArrayAttr:$kernel_shape,
                   DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                   DefaultValuedAttr<BoolAttr, "false">:$ceil_mode,
                   DefaultValuedAttr<BoolAttr, "false">:$count_include_pad);
  let results = (outs Weft_FloatTensor:$input_grad);
  let assemblyFormat = "$grad attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Weft_LayerNormGradOp : Weft_ComputeOp<"layer_norm_grad", [InferTypeOpAdaptor]> {
  let summary = "Gradients of weft.layer_norm: input, scale and bias";
  let description = [{
    Recomputes the statistics from `input`. Results: the input's gradient,
    then the scale's and the bias's (both of the scale's type; the bias
    gradient is simply unused when the forward op has no bias).
  }];
  let arguments = (ins Weft_FloatTensor:$input, Weft_FloatTensor:$scale,
                   Weft_FloatTensor:$grad, I64Attr:$axis,
                   DefaultValuedAttr<F64Attr, "1e-5">:$epsilon);
  let results = (outs Weft_FloatTensor:$input_grad,
                      Weft_FloatTensor:$scale_grad,
                      Weft_FloatTensor:$bias_grad);
  let assemblyFormat = [{
    $input `,` $scale `,` $grad attr-dict `:` functional-type(operands, results)
  }];
}

def Weft_AttentionGradOp : Weft_ComputeOp<"attention_grad", [InferTypeOpAdaptor]> {
  let summary = "Gradients of weft.attention: query, key and value";
  let description = [{
    `result` and `lse` are the forward op's results, `grad` the result's
    gradient; the attributes are the forward op's. The probabilities are
    recomputed from the scores and `lse`. Results have the types of query,
    key and value; all but `lse` share one dtype.
  }];
  let arguments = (ins Weft_FloatTensor:$query, Weft_FloatTensor:$key,
                   Weft_FloatTensor:$value, Weft_FloatTensor:$result,
                   Weft_FloatTensor:$lse, Weft_FloatTensor:$grad,
                   F64Attr:$scale, DefaultValuedAttr<BoolAttr, "false">:$causal,
                   DefaultValuedAttr<BoolAttr, "false">:$seq_major);
  let results = (outs Weft_FloatTensor:$query_grad,
                      Weft_FloatTensor:$key_grad,
                      Weft_FloatTensor:$value_grad);
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $result `,` $lse `,` $grad attr-dict `:`
    functional-type(operands, results)
  }];
}

def Weft_SoftmaxGradOp : Weft_ComputeOp<"softmax_grad", [InferTypeOpAdaptor]> {
  let summary = "Gradient of weft.softmax (or weft.log_softmax with `log`)";
  let description = [{
    `output` is the forward op's result y, `grad` its gradient g. softmax:
    y * (g - sum(g * y)); log_softmax: g - exp(y) * sum(g), sums along `axis`.
  }];
  let arguments = (ins Weft_FloatTensor:$output, Weft_FloatTensor:$grad,
                   I64Attr:$axis, DefaultValuedAttr<BoolAttr, "false">:$log);
  let results = (outs Weft_FloatTensor:$input_grad);
  let assemblyFormat = [{
    $output `,` $grad attr-dict `:` functional-type(operands, results)
  }];
}

def Weft_SoftmaxCrossEntropyGradOp
    : Weft_ComputeOp<"softmax_cross_entropy_grad", [InferTypeOpAdaptor]> {
  let summary = "Gradient of weft.softmax_cross_entropy with respect to scores";
  let description = [{
    Operands and attributes are the forward op's, plus `loss_grad`, the
    gradient of its result (same shape as that result). The result has the
    scores' type; it is 0 in the padding entries (see `classes`).
  }];
  let arguments = (ins Weft_FloatTensor:$scores, Weft_IndexTensor:$labels,
                   Optional<Weft_FloatTensor>:$weights,
                   Weft_FloatTensor:$loss_grad,
                   DefaultValuedAttr<StrAttr, "\"mean\"">:$reduction,
                   OptionalAttr<I64Attr>:$ignore_index,
                   OptionalAttr<I64Attr>:$classes);
  let results = (outs Weft_FloatTensor:$scores_grad);
  let assemblyFormat = [{
    $scores `,` $labels (`weights` $weights^)? `,` $loss_grad attr-dict `:`
    functional-type(operands, results)
  }];
}

def Weft_SliceGradOp : Weft_ComputeOp<"slice_grad"> {
  let summary = "Gradient of weft.slice: the slice's gradient placed in zeros";
  let description = [{
    The result has the forward input's shape: zero except
    result[start + i * step] = grad[i] per dim, with weft.slice's `starts`
    and `steps`.
  }];
  let arguments = (ins Weft_FloatTensor:$grad, DenseI64ArrayAttr:$starts,
                   DenseI64ArrayAttr:$steps);
  let results = (outs Weft_FloatTensor:$input_grad);
  let assemblyFormat = "$grad attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

#endif // WEFT_GRAD_OPS_TD
