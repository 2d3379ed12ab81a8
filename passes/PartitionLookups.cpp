//===- PartitionLookups.cpp - Lookups into split tables -------------------===//
//
// The part of weft-partition (passes/Partition.cpp) that expands ops whose
// sharding rule asks for a fixup by this rank's block: a gather from a
// table split by rows (each rank looks up its rows, zeros elsewhere: a
// partial sum; reduce-scattered along the sequence when the indices came
// split), the vocabulary-parallel cross-entropy and its gradient (the
// log-sum-exp and the label's score combined over the class axes), the
// labels counted over split rows for a mean, and a scatter_add's sum
// rebuilt split along its axis.
//
//===----------------------------------------------------------------------===//
#include "passes/Partitioner.h"

#include "dialects/weft/GradientRules.h"
#include "passes/Reshard.h"
#include "passes/VocabParallel.h"

using namespace mlir;
using namespace weft;
using namespace weft::partition;

/// A lookup into a table split by rows (a vocabulary-parallel embedding)
/// whose indices came split over the table's axes (the tokens' sequence
/// under sequence parallelism) and were gathered for it: its partial sums
/// are reduce-scattered back to the indices' split, as Megatron's
/// sequence-parallel embedding does, rather than summed whole on every
/// rank (the sequence would then stay whole downstream).
LogicalResult Partitioner::scatterLookup(GatherOp op,
                                         const TensorSharding &indices,
                                         const ShardingPlan &plan) {
  Value result = op.getResult();
  TensorSharding want = values[result].sharding;
  int64_t axis = op.getAxis();
  bool scattered = false;
  for (auto [d, dim] : llvm::enumerate(indices.dims)) {
    DimSharding &out = want.dims[axis + d];
    if (scattered || dim.empty() || dim.outer != 1 || !out.empty() ||
        !plan.operands[1].dims[d].empty() || dim.axes != want.partial)
      continue;
    out = dim;
    want.partial.clear();
    scattered = true;
  }
  if (!scattered)
    return success();
  FailureOr<Value> v = reshard(result, want, op);
  if (failed(v))
    return failure();
  values[result] = {*v, want};
  return success();
}

/// Whether each of the (local) labels is counted: not its cross-entropy's
/// ignore_index. Null without an ignore_index.
Value Partitioner::keptLabels(Operation *op, Value labels) {
  auto ignore = op->getAttrOfType<IntegerAttr>("ignore_index");
  if (!ignore)
    return {};
  Location loc = op->getLoc();
  auto t = cast<RankedTensorType>(labels.getType());
  auto scalarType = RankedTensorType::get({}, t.getElementType());
  Value ignored = ConstantOp::create(
      b, loc, scalarType,
      DenseElementsAttr::get(
          scalarType, b.getIntegerAttr(t.getElementType(), ignore.getInt())));
  auto boolType = t.clone(b.getI1Type());
  Value eq = EqualOp::create(b, loc, boolType, labels, ignored);
  return NotOp::create(b, loc, boolType, eq);
}

/// The number of labels a cross-entropy counts, over all ranks of `axes`
/// (the axes its rows are split over): those not equal to its ignore_index
/// (all of them without one). `labels` is this rank's block, as the op
/// reads it.
Value Partitioner::countedLabels(Operation *op, Value labels,
                                 const MeshAxes &axes) {
  if (Value cached = labelCounts[labels])
    return cached;
  Location loc = op->getLoc();
  auto scalarF32 = RankedTensorType::get({}, b.getF32Type());
  auto t = cast<RankedTensorType>(labels.getType());
  Value count;
  if (Value kept = keptLabels(op, labels)) {
    Value ones = gradient::castTo(b, loc, kept, b.getF32Type());
    SmallVector<int64_t> all;
    for (int64_t d = 0; d < t.getRank(); ++d)
      all.push_back(d);
    count = all.empty() ? ones : gradient::reduceSum(b, loc, ones, all, false);
    if (!axes.empty())
      count = shard::AllReduceOp::create(b, loc, scalarF32, mesh.symbol, axes,
                                         count, shard::ReductionKind::Sum);
  } else {
    count = gradient::scalar(
        b, loc, b.getF32Type(),
        static_cast<double>(t.getNumElements() * mesh.groupSize(axes)));
  }
  labelCounts[labels] = count;
  return count;
}

/// A scatter_add (the gradient of an embedding) computed whole but wanted
/// split along its axis: each rank scatters only the indices in its block
/// instead (the sum stays partial over the axes it was).
std::optional<LocalValue> Partitioner::splitScatter(Value value,
                                                    const LocalValue &cur,
                                                    const TensorSharding &to) {
  auto scatter = value.getDefiningOp<ScatterAddOp>();
  if (!scatter || !scatterOperands.count(scatter))
    return std::nullopt;
  int64_t axis = scatter.getAxis();
  const DimSharding &want = to.dims[axis];
  if (!cur.sharding.dims[axis].empty() || want.outer != 1)
    return std::nullopt;
  // The leading axes of the wanted split that are not partial sums.
  MeshAxes blockAxes;
  for (MeshAxis a : want.axes) {
    if (llvm::is_contained(cur.sharding.partial, a))
      break;
    blockAxes.push_back(a);
  }
  if (blockAxes.empty())
    return std::nullopt;
  TensorSharding split = cur.sharding;
  split.dims[axis] = DimSharding(blockAxes);
  std::string error;
  FailureOr<RankedTensorType> type =
      localType(scatter.getType(), split, mesh, error);
  if (failed(type))
    return std::nullopt;
  auto [indices, updates] = scatterOperands[scatter];
  vocab::Builder vb(b, mesh, blockAxes);
  Location loc = scatter.getLoc();
  vocab::LocalIndices local = vb.localIndices(
      loc, indices, scatter.getType().getDimSize(axis), type->getDimSize(axis));
  return LocalValue{vb.scatterAdd(loc, local, updates, axis, *type), split};
}

/// The rank's part of a lookup into data split along the looked-up dim:
/// a gather of a row-split table, a cross-entropy (or its gradient) over
/// class-split scores (VocabParallel.h).
FailureOr<SmallVector<Value>>
Partitioner::expandLookup(Operation *op, const ShardingPlan &plan,
                          IRMapping &mapping) {
  Location loc = op->getLoc();
  vocab::Builder vb(b, mesh, plan.blockAxes);
  auto operand = [&](unsigned i) { return mapping.lookup(op->getOperand(i)); };
  if (auto gather = dyn_cast<GatherOp>(op)) {
    FailureOr<RankedTensorType> type = local(gather, plan.results[0], op);
    if (failed(type))
      return failure();
    int64_t axis = gather.getAxis();
    Value data = operand(0);
    vocab::LocalIndices indices = vb.localIndices(
        loc, operand(1), gather.getData().getType().getDimSize(axis),
        cast<RankedTensorType>(data.getType()).getDimSize(axis));
    return SmallVector<Value>{vb.gather(loc, data, indices, axis, *type)};
  }
  // softmax_cross_entropy(_grad): scores, labels, [loss_grad].
  auto ce = dyn_cast<SoftmaxCrossEntropyOp>(op);
  auto ceGrad = dyn_cast<SoftmaxCrossEntropyGradOp>(op);
  if (!ce && !ceGrad)
    return op->emitError("has no vocabulary-parallel form");
  Value scores = operand(0), labels = operand(1);
  auto scoresType = cast<RankedTensorType>(scores.getType());
  auto labelsType = cast<RankedTensorType>(labels.getType());
  Value &lse = logSumExps[scores];
  if (!lse)
    lse = vb.logSumExp(loc, scores);
  Value mask = vb.labelMask(loc, scores, labels);
  StringRef reduction = ce ? ce.getReduction() : ceGrad.getReduction();
  Value kept = keptLabels(op, labels);
  SmallVector<int64_t> rowShape(scoresType.getShape());
  rowShape[1] = 1;
  Value zero = gradient::scalarLike(b, loc, scores, 0.0);
  if (ce) {
    Value rows = gradient::reshape(
        b, loc, gradient::sub(b, loc, lse, vb.labelScores(loc, scores, mask)),
        labelsType.getShape());
    if (kept)
      rows = WhereOp::create(b, loc, rows.getType(), kept, rows, zero);
    if (reduction == "none")
      return SmallVector<Value>{rows};
    SmallVector<int64_t> all;
    for (int64_t d = 0; d < labelsType.getRank(); ++d)
      all.push_back(d);
    Value total = gradient::reduceSum(b, loc, rows, all, false);
    if (reduction == "mean")
      total = gradient::div(b, loc, total,
                            countedLabels(op, labels, plan.countAxes));
    return SmallVector<Value>{total};
  }
  // d loss / d scores = (softmax - onehot) times each row's loss gradient.
  Value coef = operand(ceGrad.getWeights() ? 3 : 2);
  if (reduction == "none")
    coef = gradient::reshape(b, loc, coef, rowShape);
  else if (reduction == "mean")
    coef =
        gradient::div(b, loc, coef, countedLabels(op, labels, plan.countAxes));
  if (kept) {
    Value keptRows = gradient::reshape(b, loc, kept, rowShape);
    coef = WhereOp::create(b, loc, keptRows, coef, zero);
  }
  Value shifted = gradient::sub(b, loc, scores, lse);
  Value probs = ExpOp::create(b, loc, shifted.getType(), shifted);
  Value onehot = gradient::castTo(b, loc, mask, scoresType.getElementType());
  return SmallVector<Value>{
      gradient::mul(b, loc, gradient::sub(b, loc, probs, onehot), coef)};
}
