//===- ShardingRulesData.cpp - Sharding of lookups, windows and losses ----===//
//
// The sharding rules of the ops that index into their data (slices and
// their gradients, gathers, scatter-adds), of the cross-entropy losses, and
// of the ops that split their batch only (convolutions, pools, batch
// normalization). The rest is in ShardingRules.cpp.
//
//===----------------------------------------------------------------------===//
#include "dialects/weft/ShardingRules.h"
#include "dialects/weft/ShardingRulesInternal.h"

#include "dialects/weft/WeftOps.h"

using namespace mlir;
using namespace weft;
using namespace weft::sharding;

namespace {

/// softmax_cross_entropy(_grad): scores [N, C, ...] and labels [N, ...]
/// split alike on the row dims. C stays split when it is in plain blocks
/// and there are no class weights (vocabulary parallelism: the partitioner
/// combines the log-sum-exp over its axes); else C is whole.
template <typename OpT>
FailureOr<Plan> crossEntropyOf(OpT op, ArrayRef<TensorSharding> in, bool isGrad,
                               std::string &error) {
  RankedTensorType scores = tensorType(op.getScores());
  TensorSharding s = in[0];
  s.partial.clear();
  DimSharding classes = s.dims[1];
  // Padding after the classes (weft-align-products) stays on one rank.
  if (classes.outer != 1 || op.getWeights() || op.getClasses())
    classes.clear();
  s.dims[1].clear();
  MeshAxes used = classes.axes;
  dedupeAxes(s.dims, used);
  TensorSharding labels = TensorSharding::replicated(scores.getRank() - 1);
  labels.dims[0] = s.dims[0];
  for (int64_t d = 2; d < scores.getRank(); ++d)
    labels.dims[d - 1] = s.dims[d];
  MeshAxes rowAxes = s.usedAxes();
  s.dims[1] = classes;
  Plan plan;
  plan.operands = {s, labels};
  if (op.getWeights()) {
    if (!rowAxes.empty()) {
      error = "class weights of a cross-entropy over split rows are not "
              "supported yet";
      return failure();
    }
    plan.operands.push_back(TensorSharding::replicated(1));
  }
  StringRef reduction = op.getReduction();
  if (isGrad)
    plan.operands.push_back(
        reduction == "none" ? labels : TensorSharding::replicated(0));
  if (isGrad) {
    plan.results.push_back(s);
  } else if (reduction == "none") {
    plan.results.push_back(labels);
  } else {
    TensorSharding r;
    r.partial = rowAxes;
    plan.results.push_back(r);
  }
  if (!classes.empty()) {
    plan.fixup = Plan::Fixup::ClassBlocks;
    plan.blockAxes = classes.axes;
    plan.countAxes = rowAxes;
  } else if (reduction == "mean" && !rowAxes.empty()) {
    plan.fixup = Plan::Fixup::CrossEntropyMean;
    plan.countAxes = rowAxes;
  }
  return plan;
}

} // namespace

/// slice (full input -> window) and slice_grad (window gradient -> full,
/// padded with zeros): dims the window leaves whole keep their split; a dim
/// the window cuts must be whole, unless the window is a run of whole
/// blocks of a strided split (q, k or v out of a packed projection split by
/// heads: a plain split of the window; k and v together: a split of its
/// two blocks), and back.
Plan weft::sharding::window(Operation *op, ArrayRef<TensorSharding> in,
                            bool grad) {
  auto starts = op->getAttrOfType<DenseI64ArrayAttr>("starts");
  auto steps = op->getAttrOfType<DenseI64ArrayAttr>("steps");
  RankedTensorType a = tensorType(op->getOperand(0));
  RankedTensorType b = tensorType(op->getResult(0));
  RankedTensorType full = grad ? b : a, part = grad ? a : b;
  TensorSharding operand = in[0], result = in[0];
  for (int64_t d = 0; d < full.getRank(); ++d) {
    int64_t n = full.getDimSize(d), size = part.getDimSize(d);
    int64_t start = starts[d], step = steps[d];
    if (n == size && step == 1)
      continue;
    const DimSharding &dim = in[0].dims[d];
    std::optional<DimSharding> kept =
        grad ? fullSplitOfWindow(n, start, size, step, dim)
             : windowSplit(n, start, size, step, dim);
    if (kept) {
      result.dims[d] = *kept;
      continue;
    }
    operand.dims[d].clear();
    result.dims[d].clear();
  }
  Plan plan;
  plan.operands.push_back(operand);
  plan.results.push_back(result);
  plan.fixup = Plan::Fixup::LocalStarts;
  return plan;
}

/// gather(data, indices): indices' splits carry over to the result dims
/// they become. Float data split along `axis` in plain blocks stays split
/// (each rank looks up its block; the result is a partial sum over those
/// axes); otherwise data is whole along `axis`.
Plan weft::sharding::gather(GatherOp op, ArrayRef<TensorSharding> in) {
  int64_t axis = op.getAxis();
  int64_t ri = op.getIndices().getType().getRank();
  TensorSharding data = in[0];
  DimSharding blocks = data.dims[axis];
  if (blocks.outer != 1 || !isFloat(op.getData()))
    blocks.clear();
  data.dims[axis].clear();
  data.partial.clear();
  TensorSharding indices = in[1];
  TensorSharding result;
  for (int64_t d = 0; d < axis; ++d)
    result.dims.push_back(data.dims[d]);
  for (int64_t d = 0; d < ri; ++d)
    result.dims.push_back(indices.dims[d]);
  for (int64_t d = axis + 1; d < static_cast<int64_t>(data.dims.size()); ++d)
    result.dims.push_back(data.dims[d]);
  MeshAxes used = blocks.axes;
  dedupeAxes(result.dims, used);
  for (int64_t d = 0; d < ri; ++d)
    indices.dims[d] = result.dims[axis + d];
  for (int64_t d = 0; d < axis; ++d)
    data.dims[d] = result.dims[d];
  for (int64_t d = axis + 1; d < static_cast<int64_t>(data.dims.size()); ++d)
    data.dims[d] = result.dims[d + ri - 1];
  data.dims[axis] = blocks;
  Plan plan;
  if (!blocks.empty()) {
    result.partial = blocks.axes;
    plan.fixup = Plan::Fixup::BlockGather;
    plan.blockAxes = blocks.axes;
  }
  plan.operands = {data, indices};
  plan.results.push_back(result);
  return plan;
}

/// scatter_add(indices, updates) -> data-shaped sum: split updates rows
/// scatter into partial sums of the whole result. The updates' other dims
/// (the result's dims other than `axis`) keep their splits: a batch split
/// before a gather along a spatial axis stays a batch split of its gradient.
Plan weft::sharding::scatterAdd(ScatterAddOp op, ArrayRef<TensorSharding> in) {
  int64_t axis = op.getAxis();
  int64_t ri = op.getIndices().getType().getRank();
  int64_t rank = op.getType().getRank();
  TensorSharding indices = in[0];
  TensorSharding updates = in[1];
  updates.partial.clear();
  MeshAxes rowAxes;
  for (int64_t d = 0; d < ri; ++d) {
    // Updates are [data[:axis], indices..., data[axis+1:]]; keep the index
    // dims' splits, which must agree between indices and updates.
    int64_t ud = axis + d;
    if (indices.dims[d] != updates.dims[ud])
      indices.dims[d] = updates.dims[ud] = {};
    rowAxes.append(indices.dims[d].allAxes());
  }
  // updates dim of result dim d (d != axis).
  auto updateDim = [&](int64_t d) { return d < axis ? d : d + ri - 1; };
  TensorSharding result = TensorSharding::replicated(rank);
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis)
      result.dims[d] = updates.dims[updateDim(d)];
  MeshAxes used = rowAxes;
  dedupeAxes(result.dims, used);
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis)
      updates.dims[updateDim(d)] = result.dims[d];
  Plan plan;
  plan.operands = {indices, updates};
  result.partial = rowAxes;
  plan.results.push_back(result);
  return plan;
}

/// conv / pooling / batch norm and their gradients: the batch dim (0) may
/// be split; channels and space are whole; weights whole. A weight gradient
/// is a partial sum over the batch axes.
Plan weft::sharding::batchOnly(Operation *op, ArrayRef<TensorSharding> in) {
  // The activations: batch norm's input (of any rank from 2: BatchNorm1d's
  // [N, C] too; the rest are [C] vectors), the others' operands of rank 3
  // and up but for a convolution's weight.
  auto isActivation = [&](unsigned i) {
    Value operand = op->getOperand(i);
    if (isa<BatchNormOp>(op))
      return i == 0;
    if (isa<ConvOp, ConvGradInputOp>(op) && i == 1)
      return false;
    return tensorType(operand).getRank() >= 3;
  };
  DimSharding batch;
  for (unsigned i = 0; i < op->getNumOperands(); ++i)
    if (isActivation(i) && !in[i].dims[0].empty()) {
      batch = in[i].dims[0];
      break;
    }
  Plan plan;
  for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
    TensorSharding s =
        TensorSharding::replicated(tensorType(operand).getRank());
    if (isActivation(i))
      s.dims[0] = batch;
    plan.operands.push_back(s);
  }
  for (Value r : op->getResults()) {
    TensorSharding s = TensorSharding::replicated(tensorType(r).getRank());
    if (isa<ConvGradWeightOp>(op))
      s.partial = batch.allAxes();
    else
      s.dims[0] = batch;
    plan.results.push_back(s);
  }
  return plan;
}

FailureOr<Plan> weft::sharding::crossEntropy(SoftmaxCrossEntropyOp op,
                                             ArrayRef<TensorSharding> in,
                                             std::string &error) {
  return crossEntropyOf(op, in, /*isGrad=*/false, error);
}

FailureOr<Plan> weft::sharding::crossEntropy(SoftmaxCrossEntropyGradOp op,
                                             ArrayRef<TensorSharding> in,
                                             std::string &error) {
  return crossEntropyOf(op, in, /*isGrad=*/true, error);
}

std::optional<DimSharding> weft::windowSplit(int64_t n, int64_t start,
                                             int64_t size, int64_t step,
                                             const DimSharding &full) {
  if (full.empty() || !full.outerAxes.empty() || full.outer <= 1 || step != 1 ||
      n % full.outer != 0)
    return std::nullopt;
  int64_t block = n / full.outer;
  if (start % block != 0 || size % block != 0)
    return std::nullopt;
  return DimSharding(full.axes, size / block);
}

std::optional<DimSharding> weft::fullSplitOfWindow(int64_t n, int64_t start,
                                                   int64_t size, int64_t step,
                                                   const DimSharding &window) {
  if (window.empty() || !window.outerAxes.empty() || step != 1 ||
      size % window.outer != 0)
    return std::nullopt;
  int64_t block = size / window.outer;
  if (n % block != 0 || n / block <= 1 || start % block != 0)
    return std::nullopt;
  return DimSharding(window.axes, n / block);
}
