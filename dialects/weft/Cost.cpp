//===- Cost.cpp - Floating-point work of weft ops -------------------------===//
//
// CostOpInterface::getFlops. Counts are per execution and approximate in the
// usual way: a multiply-add is 2, a transcendental or comparison is 1, data
// movement is free. Results saturate instead of overflowing.
//
//===----------------------------------------------------------------------===//
#include "dialects/weft/WeftOps.h"

#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace weft;

/// Elements of a statically shaped tensor; 0 for anything else.
static int64_t elements(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return 0;
  return tensor.getNumElements();
}

static int64_t elements(Value value) {
  return value ? elements(value.getType()) : 0;
}

/// The product of non-negative factors, saturating at INT64_MAX.
static int64_t product(std::initializer_list<int64_t> factors) {
  uint64_t result = 1;
  for (int64_t f : factors) {
    if (f <= 0)
      return 0;
    bool overflow = false;
    result =
        llvm::SaturatingMultiply(result, static_cast<uint64_t>(f), &overflow);
    if (overflow || result > static_cast<uint64_t>(INT64_MAX))
      return INT64_MAX;
  }
  return static_cast<int64_t>(result);
}

static int64_t sum(int64_t a, int64_t b) {
  int64_t result;
  return llvm::AddOverflow(a, b, result) ? INT64_MAX : result;
}

static int64_t volume(ArrayRef<int64_t> dims) {
  int64_t result = 1;
  for (int64_t d : dims)
    result = product({result, d});
  return result;
}

//===----------------------------------------------------------------------===//
// Elementwise: one operation per result element
//===----------------------------------------------------------------------===//

#define WEFT_FLOPS_PER_RESULT(OP)                                              \
  int64_t OP::getFlops() { return elements(getType()); }
WEFT_FLOPS_PER_RESULT(NegOp)
WEFT_FLOPS_PER_RESULT(SqrtOp)
WEFT_FLOPS_PER_RESULT(ExpOp)
WEFT_FLOPS_PER_RESULT(LogOp)
WEFT_FLOPS_PER_RESULT(TanhOp)
WEFT_FLOPS_PER_RESULT(ErfOp)
WEFT_FLOPS_PER_RESULT(ReluOp)
WEFT_FLOPS_PER_RESULT(SigmoidOp)
WEFT_FLOPS_PER_RESULT(SinOp)
WEFT_FLOPS_PER_RESULT(CosOp)
WEFT_FLOPS_PER_RESULT(FloorOp)
WEFT_FLOPS_PER_RESULT(CeilOp)
WEFT_FLOPS_PER_RESULT(RoundOp)
WEFT_FLOPS_PER_RESULT(AtanOp)
WEFT_FLOPS_PER_RESULT(NotOp)
WEFT_FLOPS_PER_RESULT(AddOp)
WEFT_FLOPS_PER_RESULT(SubOp)
WEFT_FLOPS_PER_RESULT(MulOp)
WEFT_FLOPS_PER_RESULT(DivOp)
WEFT_FLOPS_PER_RESULT(PowOp)
WEFT_FLOPS_PER_RESULT(RemOp)
WEFT_FLOPS_PER_RESULT(MaxOp)
WEFT_FLOPS_PER_RESULT(MinOp)
WEFT_FLOPS_PER_RESULT(AndOp)
WEFT_FLOPS_PER_RESULT(OrOp)
WEFT_FLOPS_PER_RESULT(EqualOp)
WEFT_FLOPS_PER_RESULT(LessOp)
WEFT_FLOPS_PER_RESULT(GreaterOp)
WEFT_FLOPS_PER_RESULT(LessEqualOp)
WEFT_FLOPS_PER_RESULT(GreaterEqualOp)
WEFT_FLOPS_PER_RESULT(WhereOp)
WEFT_FLOPS_PER_RESULT(CastOp)
#undef WEFT_FLOPS_PER_RESULT

//===----------------------------------------------------------------------===//
// Linear algebra and convolution
//===----------------------------------------------------------------------===//

int64_t MatMulOp::getFlops() {
  // result [batch..., M, N]; each element is a K-long dot product.
  auto lhs = dyn_cast<RankedTensorType>(getLhs().getType());
  if (!lhs || lhs.getRank() < 2 || !lhs.hasStaticShape())
    return 0;
  int64_t k = getTransposeA() ? lhs.getDimSize(lhs.getRank() - 2)
                              : lhs.getDimSize(lhs.getRank() - 1);
  return product({2, elements(getType()), k});
}

int64_t ConvOp::getFlops() {
  // Each output element is a dot product over C/group channels and the
  // kernel window: weight.dims[1:] = [C/group, K1..Ks].
  auto weight = dyn_cast<RankedTensorType>(getWeight().getType());
  if (!weight || weight.getRank() < 2 || !weight.hasStaticShape())
    return 0;
  int64_t outputs = elements(getType());
  int64_t flops =
      product({2, outputs, volume(weight.getShape().drop_front(1))});
  return getBias() ? sum(flops, outputs) : flops;
}

//===----------------------------------------------------------------------===//
// Pooling and normalization
//===----------------------------------------------------------------------===//

int64_t MaxPoolOp::getFlops() {
  // One comparison per window element.
  return product({elements(getType()), volume(getKernelShape())});
}

int64_t AvgPoolOp::getFlops() {
  // One add per window element and a divide per output.
  int64_t outputs = elements(getType());
  return sum(product({outputs, volume(getKernelShape())}), outputs);
}

int64_t BatchNormOp::getFlops() {
  // (x - mean) * rsqrt(var + eps) * scale + bias: subtract, multiply,
  // multiply, add per element, plus the per-channel rsqrt folded into one.
  return product({5, elements(getType())});
}

int64_t LayerNormOp::getFlops() {
  // Mean (add), variance (subtract, multiply, add), normalize (subtract,
  // multiply) and the affine scale (multiply) and bias (add).
  return product({getBias() ? 8 : 7, elements(getType())});
}

int64_t SoftmaxOp::getFlops() {
  // Max, subtract, exp, sum, divide.
  return product({5, elements(getType())});
}

int64_t LogSoftmaxOp::getFlops() {
  // Max, subtract, exp, sum, subtract the log-sum.
  return product({5, elements(getType())});
}

//===----------------------------------------------------------------------===//
// Reductions: one operation per input element
//===----------------------------------------------------------------------===//

int64_t ReduceSumOp::getFlops() { return elements(getInput()); }

int64_t ReduceMeanOp::getFlops() {
  return sum(elements(getInput()), elements(getType()));
}

int64_t ReduceMaxOp::getFlops() { return elements(getInput()); }

//===----------------------------------------------------------------------===//
// Data movement: no arithmetic
//===----------------------------------------------------------------------===//

int64_t TransposeOp::getFlops() { return 0; }
int64_t ConcatOp::getFlops() { return 0; }
int64_t SplitOp::getFlops() { return 0; }
// The kernels compare each element with the others of its row.
int64_t TopKOp::getFlops() {
  return getInput().getType().getNumElements() *
         getInput().getType().getDimSize(getAxis());
}
// A Philox draw (10 rounds of two 32-bit products) per four elements, and
// the scaling.
int64_t DropoutOp::getFlops() {
  return getInput().getType().getNumElements() * 6;
}
// A Philox block per four uniform elements (per two normal ones, which also
// take a logarithm, a root and a cosine).
int64_t RandomOp::getFlops() {
  int64_t n = getOutput().getType().getNumElements();
  return getDistribution() == "normal" ? n * 40 : n * 6;
}
int64_t SliceOp::getFlops() { return 0; }
int64_t GatherOp::getFlops() { return 0; }
int64_t BroadcastToOp::getFlops() { return 0; }
// Copies the kept triangle and zeroes the rest.
int64_t TriluOp::getFlops() { return 0; }

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

int64_t SoftmaxCrossEntropyOp::getFlops() {
  // A log-softmax over the scores (5 per element), then per label a pick,
  // a weight multiply and the reduction's add, and the mean's divide.
  return sum(product({5, elements(getScores())}),
             product({3, elements(getLabels())}));
}

//===----------------------------------------------------------------------===//
// Backward ops
//===----------------------------------------------------------------------===//

// One add per update.
int64_t ScatterAddOp::getFlops() { return elements(getUpdates()); }

int64_t ConvGradInputOp::getFlops() {
  // The transposed convolution: as many multiply-adds as the forward op.
  auto weight = dyn_cast<RankedTensorType>(getWeight().getType());
  if (!weight || weight.getRank() < 2 || !weight.hasStaticShape())
    return 0;
  return product(
      {2, elements(getGrad()), volume(weight.getShape().drop_front(1))});
}

int64_t ConvGradWeightOp::getFlops() {
  // One multiply-add per (result gradient element, weight window element).
  auto weight = dyn_cast<RankedTensorType>(getType());
  if (!weight || weight.getRank() < 2 || !weight.hasStaticShape())
    return 0;
  return product(
      {2, elements(getGrad()), volume(weight.getShape().drop_front(1))});
}

int64_t MaxPoolGradOp::getFlops() {
  // The forward comparisons again to find each window's maximum, one add
  // per window.
  int64_t windows = elements(getGrad());
  return sum(product({windows, volume(getKernelShape())}), windows);
}

int64_t AvgPoolGradOp::getFlops() {
  // A divide per window and an add per window element.
  int64_t windows = elements(getGrad());
  return sum(product({windows, volume(getKernelShape())}), windows);
}

int64_t LayerNormGradOp::getFlops() {
  // Statistics again (4), the normalized input (2), the scale and bias sums
  // (3) and the input gradient's two row sums and combination (5).
  return product({14, elements(getInput())});
}

/// Multiply-adds of one attention product pass: every (query, key) pair
/// seen, times the head sizes (D for the scores, Dv for the values), twice;
/// a causal mask sees about half the pairs.
static int64_t attentionFlops(Value query, Value key, Value value, bool causal,
                              bool seqMajor) {
  auto q = dyn_cast<RankedTensorType>(query.getType());
  auto k = dyn_cast<RankedTensorType>(key.getType());
  auto v = dyn_cast<RankedTensorType>(value.getType());
  if (!q || !k || !v || q.getRank() < 2 || !q.hasStaticShape() ||
      !k.hasStaticShape() || !v.hasStaticShape())
    return 0;
  const int64_t sk = k.getDimSize(k.getRank() - (seqMajor ? 3 : 2));
  const int64_t d = q.getShape().back(), dv = v.getShape().back();
  int64_t pairs = product({elements(query) / std::max<int64_t>(d, 1), sk});
  if (causal)
    pairs /= 2;
  // The products, and the softmax's few operations per score.
  return sum(product({2, pairs, d + dv}), product({5, pairs}));
}

int64_t AttentionOp::getFlops() {
  return attentionFlops(getQuery(), getKey(), getValue(), getCausal(),
                        getSeqMajor());
}

int64_t AttentionGradOp::getFlops() {
  // The scores again, then the value, probability, query and key gradients:
  // five products where the forward has two.
  const int64_t forward = attentionFlops(getQuery(), getKey(), getValue(),
                                         getCausal(), getSeqMajor());
  return product({5, forward}) / 2;
}

int64_t SoftmaxGradOp::getFlops() {
  // A product, a row sum, a subtract and a multiply (log: exp instead).
  return product({4, elements(getOutput())});
}

int64_t SoftmaxCrossEntropyGradOp::getFlops() {
  // The softmax again (5 per element), minus one-hot and the scaling (2).
  return sum(product({7, elements(getScores())}), elements(getLabels()));
}

int64_t SliceGradOp::getFlops() { return 0; }
