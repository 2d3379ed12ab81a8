//===- RuntimeLowering.cpp - Which runtime kernel runs each weft op -------===//
//
// KernelOpInterface for every compute op: the kernel name and the attribute
// values, in the layout runtime/include/weft/runtime/KernelABI.h documents.
// The tensors themselves are described by the lowering pass.
//
//===----------------------------------------------------------------------===//
#include "dialects/weft/WeftOps.h"

#include "weft/runtime/KernelABI.h"

using namespace mlir;
using namespace weft;

static void appendAll(SmallVectorImpl<int64_t> &attrs, ArrayRef<int64_t> xs) {
  attrs.append(xs.begin(), xs.end());
}

/// group, strides, pads, dilations: the geometry conv and its two gradients
/// share, in KernelABI.h's order.
template <typename ConvLike>
static void appendConvGeometry(ConvLike op, SmallVectorImpl<int64_t> &attrs) {
  attrs.push_back(op.getGroup());
  appendAll(attrs, op.getStrides());
  appendAll(attrs, op.getPads());
  appendAll(attrs, op.getDilations());
}

/// kernel_shape, strides, pads: the window every pooling kernel starts with.
template <typename PoolLike>
static void appendPoolWindow(PoolLike op, SmallVectorImpl<int64_t> &attrs) {
  appendAll(attrs, op.getKernelShape());
  appendAll(attrs, op.getStrides());
  appendAll(attrs, op.getPads());
}

#define WEFT_OPCODE_KERNEL(OP, KERNEL, CODE)                                   \
  StringRef OP::getKernelName() { return KERNEL; }                             \
  void OP::getKernelAttributes(SmallVectorImpl<int64_t> &attrs) {              \
    attrs.push_back(CODE);                                                     \
  }

WEFT_OPCODE_KERNEL(NegOp, "unary", WEFT_UNARY_NEG)
WEFT_OPCODE_KERNEL(SqrtOp, "unary", WEFT_UNARY_SQRT)
WEFT_OPCODE_KERNEL(ExpOp, "unary", WEFT_UNARY_EXP)
WEFT_OPCODE_KERNEL(LogOp, "unary", WEFT_UNARY_LOG)
WEFT_OPCODE_KERNEL(TanhOp, "unary", WEFT_UNARY_TANH)
WEFT_OPCODE_KERNEL(ErfOp, "unary", WEFT_UNARY_ERF)
WEFT_OPCODE_KERNEL(ReluOp, "unary", WEFT_UNARY_RELU)
WEFT_OPCODE_KERNEL(SigmoidOp, "unary", WEFT_UNARY_SIGMOID)
WEFT_OPCODE_KERNEL(SinOp, "unary", WEFT_UNARY_SIN)
WEFT_OPCODE_KERNEL(CosOp, "unary", WEFT_UNARY_COS)
WEFT_OPCODE_KERNEL(FloorOp, "unary", WEFT_UNARY_FLOOR)
WEFT_OPCODE_KERNEL(CeilOp, "unary", WEFT_UNARY_CEIL)
WEFT_OPCODE_KERNEL(RoundOp, "unary", WEFT_UNARY_ROUND)
WEFT_OPCODE_KERNEL(AtanOp, "unary", WEFT_UNARY_ATAN)
WEFT_OPCODE_KERNEL(NotOp, "unary", WEFT_UNARY_NOT)

WEFT_OPCODE_KERNEL(AddOp, "binary", WEFT_BINARY_ADD)
WEFT_OPCODE_KERNEL(SubOp, "binary", WEFT_BINARY_SUB)
WEFT_OPCODE_KERNEL(MulOp, "binary", WEFT_BINARY_MUL)
WEFT_OPCODE_KERNEL(DivOp, "binary", WEFT_BINARY_DIV)
WEFT_OPCODE_KERNEL(PowOp, "binary", WEFT_BINARY_POW)
WEFT_OPCODE_KERNEL(RemOp, "binary", WEFT_BINARY_REM)
WEFT_OPCODE_KERNEL(MaxOp, "binary", WEFT_BINARY_MAX)
WEFT_OPCODE_KERNEL(MinOp, "binary", WEFT_BINARY_MIN)
WEFT_OPCODE_KERNEL(AndOp, "binary", WEFT_BINARY_AND)
WEFT_OPCODE_KERNEL(OrOp, "binary", WEFT_BINARY_OR)

WEFT_OPCODE_KERNEL(EqualOp, "compare", WEFT_CMP_EQ)
WEFT_OPCODE_KERNEL(LessOp, "compare", WEFT_CMP_LT)
WEFT_OPCODE_KERNEL(GreaterOp, "compare", WEFT_CMP_GT)
WEFT_OPCODE_KERNEL(LessEqualOp, "compare", WEFT_CMP_LE)
WEFT_OPCODE_KERNEL(GreaterEqualOp, "compare", WEFT_CMP_GE)

#undef WEFT_OPCODE_KERNEL

// Reductions: opcode, then the number of axes and the axes.
#define WEFT_REDUCE_KERNEL(OP, CODE)                                           \
  StringRef OP::getKernelName() { return "reduce"; }                           \
  void OP::getKernelAttributes(SmallVectorImpl<int64_t> &attrs) {              \
    attrs.push_back(CODE);                                                     \
    attrs.push_back(getAxes().size());                                         \
    appendAll(attrs, getAxes());                                               \
  }
WEFT_REDUCE_KERNEL(ReduceSumOp, WEFT_REDUCE_SUM)
WEFT_REDUCE_KERNEL(ReduceMeanOp, WEFT_REDUCE_MEAN)
WEFT_REDUCE_KERNEL(ReduceMaxOp, WEFT_REDUCE_MAX)
#undef WEFT_REDUCE_KERNEL

StringRef WhereOp::getKernelName() { return "where"; }
void WhereOp::getKernelAttributes(SmallVectorImpl<int64_t> &) {}

StringRef CastOp::getKernelName() { return "cast"; }
void CastOp::getKernelAttributes(SmallVectorImpl<int64_t> &) {}

StringRef MatMulOp::getKernelName() { return "matmul"; }
void MatMulOp::getKernelAttributes(SmallVectorImpl<int64_t> &attrs) {
  attrs.push_back(getTransposeA());
  attrs.push_back(getTransposeB());
}

StringRef ConvOp::getKernelName() { return "conv"; }
void ConvOp::getKernelAttributes(SmallVectorImpl<int64_t> &attrs) {
  attrs.push_back(getBias() ? 1 : 0);
  appendConvGeometry(*this, attrs);
}

StringRef MaxPoolOp::getKernelName() { return "max_pool"; }
void MaxPoolOp::getKernelAttributes(SmallVectorImpl<int64_t> &attrs) {
  appendPoolWindow(*this, attrs);
  appendAll(attrs, getDilations());
}

StringRef AvgPoolOp::getKernelName() { return "avg_pool"; }
void AvgPoolOp::getKernelAttributes(SmallVectorImpl<int64_t> &attrs) {
  attrs.push_back(getCountIncludePad());
  appendPoolWindow(*this, attrs);
}

StringRef BatchNormOp::getKernelName() { return "batch_norm"; }
void BatchNormOp::getKernelAttributes(SmallVectorImpl<int64_t> &attrs) {
  attrs.push_back(weftDoubleToAttr(getEpsilon().convertToDouble()));
}

StringRef LayerNormOp::getKernelName() { return "layer_norm"; }
void LayerNormOp::getKernelAttributes(SmallVectorImpl<int64_t> &attrs) {
  attrs.push_back(getAxis());
  attrs.push_back(weftDoubleToAttr(getEpsilon().convertToDouble()));
  attrs.push_back(getBias() ? 1 : 0);
}

StringRef SoftmaxOp::getKernelName() { return "softmax"; }
void SoftmaxOp::getKernelAttributes(SmallVectorImpl<int64_t> &attrs) {
  attrs.push_back(getAxis());
  attrs.push_back(0);
}

StringRef LogSoftmaxOp::getKernelName() { return "softmax"; }
void LogSoftmaxOp::getKernelAttributes(SmallVectorImpl<int64_t> &attrs) {
  attrs.push_back(getAxis());
  attrs.push_back(1);
}

StringRef TransposeOp::getKernelName() { return "transpose"; }
void TransposeOp::getKernelAttributes(SmallVectorImpl<int64_t> &attrs) {
  appendAll(attrs, getPermutation());
}

StringRef ConcatOp::getKernelName() { return "concat"; }
void ConcatOp::getKernelAttributes(SmallVectorImpl<int64_t> &attrs) {
  attrs.push_back(getAxis());
}

StringRef SplitOp::getKernelName() { return "split"; }
void SplitOp::getKernelAttributes(SmallVectorImpl<int64_t> &attrs) {
  attrs.push_back(getAxis());
}

StringRef SliceOp::getKernelName() { return "slice"; }
void SliceOp::getKernelAttributes(SmallVectorImpl<int64_t> &attrs) {
  appendAll(attrs, getStarts());
  appendAll(attrs, getSteps());
}

StringRef GatherOp::getKernelName() { return "gather"; }
void GatherOp::getKernelAttributes(SmallVectorImpl<int64_t> &attrs) {
  attrs.push_back(getAxis());
}

StringRef TopKOp::getKernelName() { return "topk"; }
void TopKOp::getKernelAttributes(SmallVectorImpl<int64_t> &attrs) {
  attrs.push_back(getAxis());
  attrs.push_back(getLargest() ? 1 : 0);
}

StringRef DropoutOp::getKernelName() { return "dropout"; }
void DropoutOp::getKernelAttributes(SmallVectorImpl<int64_t> &attrs) {
  attrs.push_back(weftDoubleToAttr(getRatio().convertToDouble()));
  attrs.push_back(getSeed());
  attrs.push_back(getStream());
  appendAll(attrs, getGlobalShape());
}

StringRef RandomOp::getKernelName() { return "random"; }
void RandomOp::getKernelAttributes(SmallVectorImpl<int64_t> &attrs) {
  attrs.push_back(getDistribution() == "normal" ? 1 : 0);
  attrs.push_back(weftDoubleToAttr(getA().convertToDouble()));
  attrs.push_back(weftDoubleToAttr(getB().convertToDouble()));
  attrs.push_back(getSeed());
  attrs.push_back(getStream());
  appendAll(attrs, getGlobalShape());
}

StringRef BroadcastToOp::getKernelName() { return "expand"; }
void BroadcastToOp::getKernelAttributes(SmallVectorImpl<int64_t> &) {}

StringRef TriluOp::getKernelName() { return "trilu"; }
void TriluOp::getKernelAttributes(SmallVectorImpl<int64_t> &attrs) {
  attrs.push_back(getUpper());
  attrs.push_back(getK());
}

StringRef SoftmaxCrossEntropyOp::getKernelName() { return "softmax_xent"; }
void SoftmaxCrossEntropyOp::getKernelAttributes(
    SmallVectorImpl<int64_t> &attrs) {
  StringRef reduction = getReduction();
  attrs.push_back(reduction == "none"  ? WEFT_LOSS_NONE
                  : reduction == "sum" ? WEFT_LOSS_SUM
                                       : WEFT_LOSS_MEAN);
  std::optional<int64_t> ignore = getIgnoreIndex();
  attrs.push_back(ignore ? 1 : 0);
  attrs.push_back(ignore ? *ignore : 0);
  attrs.push_back(getWeights() ? 1 : 0);
  attrs.push_back(0); // has_log_prob: log-probabilities import as log_softmax
  if (std::optional<int64_t> classes = getClasses())
    attrs.push_back(*classes);
}

//===----------------------------------------------------------------------===//
// Backward kernels (KernelABI.h, "Backward kernels")
//===----------------------------------------------------------------------===//

StringRef ScatterAddOp::getKernelName() { return "scatter_add"; }
void ScatterAddOp::getKernelAttributes(SmallVectorImpl<int64_t> &attrs) {
  attrs.push_back(getAxis());
}

StringRef ConvGradInputOp::getKernelName() { return "conv_grad_input"; }
void ConvGradInputOp::getKernelAttributes(SmallVectorImpl<int64_t> &attrs) {
  appendConvGeometry(*this, attrs);
}

StringRef ConvGradWeightOp::getKernelName() { return "conv_grad_weight"; }
void ConvGradWeightOp::getKernelAttributes(SmallVectorImpl<int64_t> &attrs) {
  appendConvGeometry(*this, attrs);
}

StringRef MaxPoolGradOp::getKernelName() { return "max_pool_grad"; }
void MaxPoolGradOp::getKernelAttributes(SmallVectorImpl<int64_t> &attrs) {
  appendPoolWindow(*this, attrs);
  appendAll(attrs, getDilations());
}

StringRef AvgPoolGradOp::getKernelName() { return "avg_pool_grad"; }
void AvgPoolGradOp::getKernelAttributes(SmallVectorImpl<int64_t> &attrs) {
  attrs.push_back(getCountIncludePad());
  appendPoolWindow(*this, attrs);
}

StringRef LayerNormGradOp::getKernelName() { return "layer_norm_grad"; }
void LayerNormGradOp::getKernelAttributes(SmallVectorImpl<int64_t> &attrs) {
  attrs.push_back(getAxis());
  attrs.push_back(weftDoubleToAttr(getEpsilon().convertToDouble()));
}

StringRef AttentionOp::getKernelName() { return "attention"; }
void AttentionOp::getKernelAttributes(SmallVectorImpl<int64_t> &attrs) {
  attrs.push_back(weftDoubleToAttr(getScale().convertToDouble()));
  attrs.push_back(getCausal() ? 1 : 0);
  if (getSeqMajor())
    attrs.push_back(1);
}

StringRef AttentionGradOp::getKernelName() { return "attention_grad"; }
void AttentionGradOp::getKernelAttributes(SmallVectorImpl<int64_t> &attrs) {
  attrs.push_back(weftDoubleToAttr(getScale().convertToDouble()));
  attrs.push_back(getCausal() ? 1 : 0);
  if (getSeqMajor())
    attrs.push_back(1);
}

StringRef SoftmaxGradOp::getKernelName() { return "softmax_grad"; }
void SoftmaxGradOp::getKernelAttributes(SmallVectorImpl<int64_t> &attrs) {
  attrs.push_back(getAxis());
  attrs.push_back(getLog() ? 1 : 0);
}

StringRef SoftmaxCrossEntropyGradOp::getKernelName() {
  return "softmax_xent_grad";
}
void SoftmaxCrossEntropyGradOp::getKernelAttributes(
    SmallVectorImpl<int64_t> &attrs) {
  StringRef reduction = getReduction();
  attrs.push_back(reduction == "none"  ? WEFT_LOSS_NONE
                  : reduction == "sum" ? WEFT_LOSS_SUM
                                       : WEFT_LOSS_MEAN);
  std::optional<int64_t> ignore = getIgnoreIndex();
  attrs.push_back(ignore ? 1 : 0);
  attrs.push_back(ignore ? *ignore : 0);
  attrs.push_back(getWeights() ? 1 : 0);
  if (std::optional<int64_t> classes = getClasses())
    attrs.push_back(*classes);
}

StringRef SliceGradOp::getKernelName() { return "slice_grad"; }
void SliceGradOp::getKernelAttributes(SmallVectorImpl<int64_t> &attrs) {
  appendAll(attrs, getStarts());
  appendAll(attrs, getSteps());
}
