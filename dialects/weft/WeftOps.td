//===- WeftOps.td - Ops of the weft graph dialect ---------------*- tablegen -*-===//
//
// Static-shape tensor ops. Element types: f32, f16, bf16, f64, i64, i32, i8,
// ui8 and i1 (bool). Broadcasting follows numpy (and ONNX multidirectional
// broadcasting). Shape rules live in ShapeRules.cpp, verifiers in
// Verifiers.cpp, folders in Folders.cpp, kernels in RuntimeLowering.cpp,
// costs in Cost.cpp and gradient rules in GradientRules*.cpp. The backward
// ops those rules build are in WeftGradOps.td.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_OPS_TD
#define WEFT_OPS_TD

include "dialects/weft/WeftDialect.td"
include "dialects/weft/WeftInterfaces.td"
include "mlir/IR/OpBase.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/IR/CommonTypeConstraints.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Weft_Tensor : RankedTensorOf<[F32, F16, BF16, F64, I64, I32, I8, UI8, I1]>;
def Weft_FloatTensor : RankedTensorOf<[F32, F16, BF16, F64]>;
def Weft_IndexTensor : RankedTensorOf<[I64, I32]>;
def Weft_BoolTensor : RankedTensorOf<[I1]>;

class Weft_Op<string mnemonic, list<Trait> traits = []>
    : Op<Weft_Dialect, mnemonic, traits>;

// An op with a gradient rule (GradientRules*.cpp), differentiated by
// weft-autodiff.
defvar Weft_Differentiable = DeclareOpInterfaceMethods<Weft_GradientOpInterface>;

// An op lowered to one runtime kernel and costed by the cost model.
class Weft_ComputeOp<string mnemonic, list<Trait> traits = []>
    : Weft_Op<mnemonic, !listconcat(traits, [Pure,
        DeclareOpInterfaceMethods<Weft_KernelOpInterface>,
        DeclareOpInterfaceMethods<Weft_CostOpInterface>])>;

//===----------------------------------------------------------------------===//
// Values from outside the graph
//===----------------------------------------------------------------------===//

def Weft_ConstantOp : Weft_Op<"constant", [ConstantLike, Pure,
    AllTypesMatch<["value", "result"]>]> {
  let summary = "A constant tensor held in the IR";
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Weft_Tensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
  let hasVerifier = 1;
  let builders = [OpBuilder<(ins "::mlir::ElementsAttr":$value), [{
    build($_builder, $_state, value.getType(), value);
  }]>];
}

def Weft_ParamOp : Weft_Op<"param", [Pure]> {
  let summary = "A model parameter (ONNX initializer) held outside the IR";
  let description = [{
    The data lives in the model's parameter table (frontends/onnx/ParamTable.h),
    keyed by `name`, so large models do not bloat the IR. Float parameters are
    what training treats as trainable, except those `frozen` marks (on any
    use of the name): the importer marks the scales of QuantizeLinear and
    of the DequantizeLinear after one, which PyTorch's fake-quantize holds
    as buffers, and the parameters the forward updates (running
    statistics).
  }];
  let arguments = (ins StrAttr:$name, UnitAttr:$frozen);
  let results = (outs Weft_Tensor:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

class Weft_UnaryOp<string mnemonic, Type operandType = Weft_FloatTensor,
                   list<Trait> traits = []>
    : Weft_ComputeOp<mnemonic, !listconcat(traits, [SameOperandsAndResultType])> {
  let arguments = (ins operandType:$input);
  let results = (outs operandType:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasFolder = 1;
}

def Weft_NegOp : Weft_UnaryOp<"neg", RankedTensorOf<[F32, F16, BF16, F64, I64, I32, I8]>,
                              [Weft_Differentiable]> {
  let summary = "Elementwise negation";
}
def Weft_SqrtOp : Weft_UnaryOp<"sqrt", Weft_FloatTensor, [Weft_Differentiable]> {
  let summary = "Elementwise square root";
}
def Weft_ExpOp : Weft_UnaryOp<"exp", Weft_FloatTensor, [Weft_Differentiable]> {
  let summary = "Elementwise e^x";
}
def Weft_LogOp : Weft_UnaryOp<"log", Weft_FloatTensor, [Weft_Differentiable]> {
  let summary = "Elementwise natural logarithm";
}
def Weft_TanhOp : Weft_UnaryOp<"tanh", Weft_FloatTensor, [Weft_Differentiable]> {
  let summary = "Elementwise tanh";
}
def Weft_ErfOp : Weft_UnaryOp<"erf", Weft_FloatTensor, [Weft_Differentiable]> {
  let summary = "Elementwise Gauss error function";
}
def Weft_ReluOp : Weft_UnaryOp<"relu", RankedTensorOf<[F32, F16, BF16, F64, I64, I32, I8]>,
                               [Weft_Differentiable]> {
  let summary = "Elementwise max(x, 0)";
}
def Weft_SigmoidOp : Weft_UnaryOp<"sigmoid", Weft_FloatTensor, [Weft_Differentiable]> {
  let summary = "Elementwise 1/(1+e^-x)";
}
def Weft_SinOp : Weft_UnaryOp<"sin", Weft_FloatTensor, [Weft_Differentiable]> {
  let summary = "Elementwise sine (radians)";
}
def Weft_CosOp : Weft_UnaryOp<"cos", Weft_FloatTensor, [Weft_Differentiable]> {
  let summary = "Elementwise cosine (radians)";
}
def Weft_FloorOp : Weft_UnaryOp<"floor", Weft_FloatTensor, [Weft_Differentiable]> {
  let summary = "Elementwise round toward -inf (zero gradient)";
}
def Weft_CeilOp : Weft_UnaryOp<"ceil", Weft_FloatTensor, [Weft_Differentiable]> {
  let summary = "Elementwise round toward +inf (zero gradient)";
}
def Weft_RoundOp : Weft_UnaryOp<"round", Weft_FloatTensor, [Weft_Differentiable]> {
  let summary = "Elementwise round to nearest, ties to even";
  let description = [{
    Flat almost everywhere, so no gradient reaches the input, as in PyTorch;
    with `straight_through` the gradient passes unchanged instead (the
    straight-through estimator of fake quantization: the importer's
    QuantizeLinear, so that QDQ pairs train as PyTorch's fake-quantize does).
  }];
  let arguments = (ins Weft_FloatTensor:$input, UnitAttr:$straight_through);
}
def Weft_AtanOp : Weft_UnaryOp<"atan", Weft_FloatTensor, [Weft_Differentiable]> {
  let summary = "Elementwise arctangent (radians, in (-pi/2, pi/2))";
}
def Weft_NotOp : Weft_UnaryOp<"not", Weft_BoolTensor> { let summary = "Logical not"; }

// Binary ops broadcast their operands; both have one element type.
class Weft_BinaryOp<string mnemonic, Type operandType = Weft_Tensor,
                    list<Trait> traits = []>
    : Weft_ComputeOp<mnemonic, !listconcat(traits, [InferTypeOpAdaptor])> {
  let arguments = (ins operandType:$lhs, operandType:$rhs);
  let results = (outs operandType:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
  let hasFolder = 1;
}

def Weft_AddOp : Weft_BinaryOp<"add", Weft_Tensor, [Commutative, Weft_Differentiable]> {
  let summary = "Elementwise sum with broadcasting";
}
def Weft_SubOp : Weft_BinaryOp<"sub", Weft_Tensor, [Weft_Differentiable]> {
  let summary = "Elementwise difference with broadcasting";
}
def Weft_MulOp : Weft_BinaryOp<"mul", Weft_Tensor, [Commutative, Weft_Differentiable]> {
  let summary = "Elementwise product with broadcasting";
}
def Weft_DivOp : Weft_BinaryOp<"div", Weft_Tensor, [Weft_Differentiable]> {
  let summary = "Elementwise quotient with broadcasting (integers truncate toward zero)";
}
def Weft_PowOp : Weft_BinaryOp<"pow", Weft_Tensor, [Weft_Differentiable]> {
  let summary = "Elementwise power with broadcasting";
}
def Weft_RemOp : Weft_BinaryOp<"rem", Weft_Tensor, [Weft_Differentiable]> {
  let summary = "Elementwise remainder of truncated division with broadcasting";
  let description = [{
    lhs - rhs * trunc(lhs / rhs) computed exactly: C's fmod for floats
    (the result takes the dividend's sign; fmod(x, inf) = x, fmod(x, 0) and
    fmod(inf, y) are NaN) and C's % for integers (a zero divisor stops the
    run with an error).
  }];
}
def Weft_MaxOp : Weft_BinaryOp<"max", Weft_Tensor, [Commutative, Weft_Differentiable]> {
  let summary = "Elementwise maximum with broadcasting";
  let description = [{
    Equal operands share the gradient equally (torch.maximum).
  }];
}
def Weft_MinOp : Weft_BinaryOp<"min", Weft_Tensor, [Commutative, Weft_Differentiable]> {
  let summary = "Elementwise minimum with broadcasting";
  let description = [{
    Equal operands share the gradient equally (torch.minimum).
  }];
}
def Weft_AndOp : Weft_BinaryOp<"and", Weft_BoolTensor, [Commutative]> {
  let summary = "Logical and with broadcasting";
}
def Weft_OrOp : Weft_BinaryOp<"or", Weft_BoolTensor, [Commutative]> {
  let summary = "Logical or with broadcasting";
}

// Comparisons broadcast their operands and produce i1.
class Weft_CompareOp<string mnemonic, list<Trait> traits = []>
    : Weft_ComputeOp<mnemonic, !listconcat(traits, [InferTypeOpAdaptor])> {
  let arguments = (ins Weft_Tensor:$lhs, Weft_Tensor:$rhs);
  let results = (outs Weft_BoolTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
  let hasFolder = 1;
}

def Weft_EqualOp : Weft_CompareOp<"equal", [Commutative]> { let summary = "lhs == rhs"; }
def Weft_LessOp : Weft_CompareOp<"less"> { let summary = "lhs < rhs"; }
def Weft_GreaterOp : Weft_CompareOp<"greater"> { let summary = "lhs > rhs"; }
def Weft_LessEqualOp : Weft_CompareOp<"less_equal"> { let summary = "lhs <= rhs"; }
def Weft_GreaterEqualOp : Weft_CompareOp<"greater_equal"> { let summary = "lhs >= rhs"; }

def Weft_WhereOp : Weft_ComputeOp<"where", [InferTypeOpAdaptor, Weft_Differentiable]> {
  let summary = "Select x where cond holds, else y, with broadcasting";
  let arguments = (ins Weft_BoolTensor:$condition, Weft_Tensor:$x, Weft_Tensor:$y);
  let results = (outs Weft_Tensor:$result);
  let assemblyFormat = [{
    $condition `,` $x `,` $y attr-dict `:` functional-type(operands, results)
  }];
  let hasFolder = 1;
}

def Weft_CastOp : Weft_ComputeOp<"cast", [Weft_Differentiable]> {
  let summary = "Converts elements to the result's element type";
  let description = [{
    Same shape. Float to integer truncates toward zero; to i1 yields x != 0;
    f32 to f16/bf16 rounds to nearest even.
  }];
  let arguments = (ins Weft_Tensor:$input);
  let results = (outs Weft_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasFolder = 1;
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Linear algebra and convolution
//===----------------------------------------------------------------------===//

def Weft_MatMulOp : Weft_ComputeOp<"matmul", [InferTypeOpAdaptor, Weft_Differentiable]> {
  let summary = "Batched matrix product with broadcast batch dimensions";
  let description = [{
    Both operands have rank >= 2; the last two dims are the matrices
    (transposed first when `transpose_a` / `transpose_b` is set), the leading
    dims broadcast. ONNX MatMul's 1-D operands and Gemm's alpha/beta/C are
    normalized at import. bf16 or f16 operands may give an f32 result (the
    product accumulated in f32 and not rounded): weft-fuse-elementwise
    folds a widening cast into the product that way.
  }];
  let arguments = (ins Weft_FloatTensor:$lhs, Weft_FloatTensor:$rhs,
                   DefaultValuedAttr<BoolAttr, "false">:$transpose_a,
                   DefaultValuedAttr<BoolAttr, "false">:$transpose_b);
  let results = (outs Weft_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
  let hasCanonicalizer = 1;
  let extraClassDeclaration = [{
    /// The inferred type, or an f32 result from bf16/f16 operands.
    static bool isCompatibleReturnTypes(::mlir::TypeRange inferred,
                                        ::mlir::TypeRange actual);
  }];
}

def Weft_ConvOp : Weft_ComputeOp<"conv", [InferTypeOpAdaptor, Weft_Differentiable]> {
  let summary = "N-D convolution (cross-correlation) over NC... tensors";
  let description = [{
    input [N, C, D1..Ds], weight [M, C/group, K1..Ks], optional bias [M].
    `pads` holds the s begin paddings then the s end paddings.
  }];
  let arguments = (ins Weft_FloatTensor:$input, Weft_FloatTensor:$weight,
                   Optional<Weft_FloatTensor>:$bias,
                   DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                   DenseI64ArrayAttr:$dilations,
                   DefaultValuedAttr<I64Attr, "1">:$group);
  let results = (outs Weft_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Pooling and normalization
//===----------------------------------------------------------------------===//

def Weft_MaxPoolOp : Weft_ComputeOp<"max_pool", [InferTypeOpAdaptor, Weft_Differentiable]> {
  let summary = "Max pooling over the spatial dims of an NC... tensor";
  let arguments = (ins Weft_FloatTensor:$input, DenseI64ArrayAttr:$kernel_shape,
                   DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                   DenseI64ArrayAttr:$dilations,
                   DefaultValuedAttr<BoolAttr, "false">:$ceil_mode);
  let results = (outs Weft_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

def Weft_AvgPoolOp : Weft_ComputeOp<"avg_pool", [InferTypeOpAdaptor, Weft_Differentiable]> {
  let summary = "Average pooling over the spatial dims of an NC... tensor";
  let arguments = (ins Weft_FloatTensor:$input, DenseI64ArrayAttr:$kernel_shape,
                   DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                   DefaultValuedAttr<BoolAttr, "false">:$ceil_mode,
                   DefaultValuedAttr<BoolAttr, "false">:$count_include_pad);
  let results = (outs Weft_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

def Weft_BatchNormOp : Weft_ComputeOp<"batch_norm", [InferTypeOpAdaptor, Weft_Differentiable]> {
  let summary = "Batch normalization with running statistics (inference form)";
  let arguments = (ins Weft_FloatTensor:$input, Weft_FloatTensor:$scale,
                   Weft_FloatTensor:$bias, Weft_FloatTensor:$mean,
                   Weft_FloatTensor:$variance,
                   DefaultValuedAttr<F64Attr, "1e-5">:$epsilon);
  let results = (outs Weft_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $scale `,` $bias `,` $mean `,` $variance attr-dict `:`
    functional-type(operands, results)
  }];
}

def Weft_LayerNormOp : Weft_ComputeOp<"layer_norm", [InferTypeOpAdaptor, Weft_Differentiable]> {
  let summary = "Layer normalization over the dims from `axis` on";
  let description = [{
    scale (and the optional bias) hold the normalized shape, input.dims[axis:].
    `axis` is non-negative. An f32 layer norm may give a bf16 or f16 result
    (normalized in f32, each value rounded once as a cast would round it):
    weft-fuse-elementwise folds a narrowing cast into it that way.
  }];
  let arguments = (ins Weft_FloatTensor:$input, Weft_FloatTensor:$scale,
                   Optional<Weft_FloatTensor>:$bias, I64Attr:$axis,
                   DefaultValuedAttr<F64Attr, "1e-5">:$epsilon);
  let results = (outs Weft_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $scale (`,` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The inferred type, or a bf16/f16 result from an f32 input.
    static bool isCompatibleReturnTypes(::mlir::TypeRange inferred,
                                        ::mlir::TypeRange actual);
  }];
}

class Weft_SoftmaxLikeOp<string mnemonic>
    : Weft_ComputeOp<mnemonic, [SameOperandsAndResultType, Weft_Differentiable]> {
  let arguments = (ins Weft_FloatTensor:$input, I64Attr:$axis);
  let results = (outs Weft_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasVerifier = 1;
}
def Weft_SoftmaxOp : Weft_SoftmaxLikeOp<"softmax"> {
  let summary = "Softmax along one non-negative axis";
}
def Weft_LogSoftmaxOp : Weft_SoftmaxLikeOp<"log_softmax"> {
  let summary = "Log of softmax along one non-negative axis";
}

def Weft_AttentionOp : Weft_ComputeOp<"attention", [InferTypeOpAdaptor, Weft_Differentiable]> {
  let summary = "Scaled dot-product attention without the score matrix";
  let description = [{
    result = softmax(scale * query key^T) value over the last two dims, the
    leading dims being independent problems: query [..., Sq, D], key
    [..., Sk, D], value [..., Sk, Dv], result [..., Sq, Dv], all of one
    dtype (f32, bf16 or f16) and the same leading dims. With `causal`,
    query i sees key j only when j <= i + Sk - Sq. `lse` ([..., Sq], f32)
    is each query's log-sum-exp of its scaled scores, which the gradient
    reads instead of the probabilities. weft-fuse-attention makes it from
    a product, a scale, a causal mask, a softmax and a second product; the
    runtime's kernel never writes the Sq x Sk scores to memory. With
    `seq_major` the heads come after the sequence, as a projection lays
    them out before the usual transpose: query [..., Sq, H, D], key [...,
    Sk, H, D], value [..., Sk, H, Dv], result [..., Sq, H, Dv], lse [..., H,
    Sq]; each (batch, head) is one problem, and no transpose moves them.
  }];
  let arguments = (ins Weft_FloatTensor:$query, Weft_FloatTensor:$key,
                   Weft_FloatTensor:$value, F64Attr:$scale,
                   DefaultValuedAttr<BoolAttr, "false">:$causal,
                   DefaultValuedAttr<BoolAttr, "false">:$seq_major);
  let results = (outs Weft_FloatTensor:$result, Weft_FloatTensor:$lse);
  let assemblyFormat = [{
    $query `,` $key `,` $value attr-dict `:` functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

// `axes` are non-negative, ascending and unique; empty is not allowed (the
// importer turns ONNX's "empty means all" / noop_with_empty_axes into either a
// full axis list or no op).
class Weft_ReduceOp<string mnemonic, Type operandType = Weft_Tensor>
    : Weft_ComputeOp<mnemonic, [InferTypeOpAdaptor, Weft_Differentiable]> {
  let arguments = (ins operandType:$input, DenseI64ArrayAttr:$axes,
                   DefaultValuedAttr<BoolAttr, "true">:$keepdims);
  let results = (outs operandType:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}
def Weft_ReduceSumOp : Weft_ReduceOp<"reduce_sum"> {
  let summary = "Sum over axes";
  let description = [{
    A bf16 input may give an f32 result (each element widened as it is
    read, the sum in f32): weft-fold-casts folds a widening cast into the
    sum that way.
  }];
  let extraClassDeclaration = [{
    /// The inferred type, or an f32 result from a bf16 input.
    static bool isCompatibleReturnTypes(::mlir::TypeRange inferred,
                                        ::mlir::TypeRange actual);
  }];
}
def Weft_ReduceMeanOp : Weft_ReduceOp<"reduce_mean", Weft_FloatTensor> {
  let summary = "Mean over axes";
}
def Weft_ReduceMaxOp : Weft_ReduceOp<"reduce_max"> {
  let summary = "Maximum over axes";
  let description = [{
    The gradient goes to the elements equal to the maximum, shared equally
    when several are (PyTorch's amax); weft.max_pool's goes to the first.
  }];
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

def Weft_ReshapeOp : Weft_Op<"reshape", [Pure, Weft_Differentiable]> {
  let summary = "Reinterprets the elements in a new static shape";
  let description = [{
    ONNX Reshape, Flatten, Squeeze and Unsqueeze all import as this op. No data
    moves: the lowering makes the result a view of the operand.
  }];
  let arguments = (ins Weft_Tensor:$input);
  let results = (outs Weft_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasFolder = 1;
  let hasVerifier = 1;
}

def Weft_TransposeOp : Weft_ComputeOp<"transpose", [InferTypeOpAdaptor, Weft_Differentiable]> {
  let summary = "Permutes dimensions: result.dims[i] = input.dims[permutation[i]]";
  let arguments = (ins Weft_Tensor:$input, DenseI64ArrayAttr:$permutation);
  let results = (outs Weft_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}

def Weft_ConcatOp : Weft_ComputeOp<"concat", [InferTypeOpAdaptor, Weft_Differentiable]> {
  let summary = "Joins tensors along a non-negative axis";
  let arguments = (ins Variadic<Weft_Tensor>:$inputs, I64Attr:$axis);
  let results = (outs Weft_Tensor:$result);
  let assemblyFormat = "$inputs attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}

def Weft_SplitOp : Weft_ComputeOp<"split", [Weft_Differentiable]> {
  let summary = "Cuts a tensor along an axis into pieces sized by the result types";
  let arguments = (ins Weft_Tensor:$input, I64Attr:$axis);
  let results = (outs Variadic<Weft_Tensor>:$results);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Weft_SliceOp : Weft_ComputeOp<"slice", [Weft_Differentiable]> {
  let summary = "Strided window; one start and step per dimension";
  let description = [{
    Dimension d of the result takes result.dims[d] elements of the input,
    starting at `starts[d]` (0 <= start < input.dims[d], already clamped)
    and stepping by `steps[d]` (non-zero, may be negative).
  }];
  let arguments = (ins Weft_Tensor:$input, DenseI64ArrayAttr:$starts,
                   DenseI64ArrayAttr:$steps);
  let results = (outs Weft_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
  let hasVerifier = 1;
}

def Weft_GatherOp : Weft_ComputeOp<"gather", [InferTypeOpAdaptor, Weft_Differentiable]> {
  let summary = "Takes slices of data along `axis` at the given indices";
  let description = [{
    result shape: data.dims[:axis] + indices.dims + data.dims[axis+1:].
    Negative indices count from the end.
  }];
  let arguments = (ins Weft_Tensor:$data, Weft_IndexTensor:$indices, I64Attr:$axis);
  let results = (outs Weft_Tensor:$result);
  let assemblyFormat = "$data `,` $indices attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}

def Weft_BroadcastToOp : Weft_ComputeOp<"broadcast_to", [Weft_Differentiable]> {
  let summary = "Broadcasts the operand to the result's shape (ONNX Expand)";
  let arguments = (ins Weft_Tensor:$input);
  let results = (outs Weft_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasFolder = 1;
  let hasVerifier = 1;
}

def Weft_TopKOp : Weft_ComputeOp<"topk", [InferTypeOpAdaptor, Weft_Differentiable]> {
  let summary = "The k largest (or smallest) elements along an axis, sorted";
  let description = [{
    values and their indices (i64) along `axis`, which has extent k in both
    results: the largest first (`largest`, the default) or the smallest
    first. Equal elements keep index order; NaN counts as larger than any
    number (PyTorch's topk). Only `values` has a gradient: each element's
    goes back to the input position it came from.
  }];
  let arguments = (ins Weft_Tensor:$input, I64Attr:$k, I64Attr:$axis,
                   DefaultValuedAttr<BoolAttr, "true">:$largest);
  let results = (outs Weft_Tensor:$values, Weft_IndexTensor:$indices);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($values) `,` type($indices)";
}

def Weft_TriluOp : Weft_ComputeOp<"trilu", [SameOperandsAndResultType, Weft_Differentiable]> {
  let summary = "Keeps the upper or lower triangle of the last two dims";
  let arguments = (ins Weft_Tensor:$input, DefaultValuedAttr<BoolAttr, "true">:$upper,
                   DefaultValuedAttr<I64Attr, "0">:$k);
  let results = (outs Weft_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Weft_DropoutOp : Weft_ComputeOp<"dropout", [Weft_Differentiable]> {
  let summary = "Training-mode dropout with a counter-based random mask";
  let description = [{
    output = input * mask / (1 - ratio), where mask keeps an element when its
    uniform draw in [0, 1) is at least `ratio`. The draw of an element is a
    function of `seed`, `stream` (one per dropout of the model), `step` (the
    training step, a rank-0 i64) and the element's position in the whole
    tensor of shape `global_shape`: Philox4x32-10 (Salmon et al., 2011) keyed
    by the seed, counting over (position / 4, step, stream), word position % 4,
    its top 24 bits. `offsets` (rank-1 i64, one per dim) is where this
    tensor's block starts in the whole one: zeros before partitioning, the
    rank's block start (weft.mesh_offset) after. So every plan draws the
    single-device run's masks, and a recomputed forward draws the same ones.
  }];
  let arguments = (ins Weft_FloatTensor:$input, 0DTensorOf<[I64]>:$step,
                   1DTensorOf<[I64]>:$offsets, F64Attr:$ratio, I64Attr:$seed,
                   I64Attr:$stream, DenseI64ArrayAttr:$global_shape);
  let results = (outs Weft_FloatTensor:$output, Weft_BoolTensor:$mask);
  let assemblyFormat = [{
    $input `,` $step `,` $offsets attr-dict `:` type($input) `,` type($step)
    `,` type($offsets) `->` type($output) `,` type($mask)
  }];
  let hasVerifier = 1;
}

def Weft_RandomOp : Weft_ComputeOp<"random", [Weft_Differentiable]> {
  let summary = "Counter-based random numbers, uniform or normal";
  let description = [{
    Every element of the result is a draw of `distribution`: "uniform" in
    [a, b), or "normal" with mean a and standard deviation b. `like` gives
    the shape (its values are not read; the result's element type may
    differ). Draws come from weft.dropout's generator, Philox4x32-10 keyed by
    `seed`: a uniform element at position p of the whole tensor of shape
    `global_shape` takes the top 24 bits of word p % 4 of the block counted
    (p / 4, step, stream); a normal element takes the two words 2 (p % 2) and
    2 (p % 2) + 1 of the block counted (p / 2, step, stream) through the
    Box-Muller transform. `offsets` is where this tensor's block starts in
    the whole one (the partitioner moves it as it moves a dropout's), so
    every plan draws the single-device numbers; `step` (rank-0 i64) is the
    training step, so each step draws anew. No gradient reaches `like`.
  }];
  let arguments = (ins Weft_Tensor:$like, 0DTensorOf<[I64]>:$step,
                   1DTensorOf<[I64]>:$offsets, StrAttr:$distribution,
                   F64Attr:$a, F64Attr:$b, I64Attr:$seed, I64Attr:$stream,
                   DenseI64ArrayAttr:$global_shape);
  let results = (outs Weft_FloatTensor:$output);
  let assemblyFormat = [{
    $like `,` $step `,` $offsets attr-dict `:` type($like) `,` type($step)
    `,` type($offsets) `->` type($output)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

def Weft_SoftmaxCrossEntropyOp
    : Weft_ComputeOp<"softmax_cross_entropy", [InferTypeOpAdaptor, Weft_Differentiable]> {
  let summary = "Cross entropy of softmax(scores) against class labels";
  let description = [{
    scores [N, C, d1..dk], labels [N, d1..dk], optional weights [C].
    `reduction` is "mean", "sum" or "none"; labels equal to `ignore_index`
    contribute nothing (and are left out of the mean's denominator). With
    `classes`, only the first `classes` entries of dim 1 are classes (the
    rest is padding, an aligned LM head's, that no loss reads) and weights
    hold `classes` values. bf16 and f16 scores are computed in f32 and give
    an f32 loss.
  }];
  let arguments = (ins Weft_FloatTensor:$scores, Weft_IndexTensor:$labels,
                   Optional<Weft_FloatTensor>:$weights,
                   DefaultValuedAttr<StrAttr, "\"mean\"">:$reduction,
                   OptionalAttr<I64Attr>:$ignore_index,
                   OptionalAttr<I64Attr>:$classes);
  let results = (outs Weft_FloatTensor:$result);
  let assemblyFormat = [{
    $scores `,` $labels (`,` $weights^)? attr-dict `:` functional-type(operands, results)
  }];
}

include "dialects/weft/WeftGradOps.td"

include "dialects/weft/WeftTrainingOps.td"

include "dialects/weft/WeftCommOps.td"

include "dialects/weft/WeftFusionOps.td"

#endif // WEFT_OPS_TD
